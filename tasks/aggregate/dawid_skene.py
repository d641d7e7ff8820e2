"""Dawid–Skene (1979): each worker has a confusion matrix; EM over the tasks' latent true labels.

The estimator interface is crowd-kit's (`fit(df)` on a long frame `task, worker, label`; a missing vote
is a missing row; fitted attributes end in `_`), and so are the fitted values: the toy YSDA fixtures of
crowd-kit's own tests pin iterations 0 and 1 (tests/test_aggregate.py). Written here rather than imported
because crowd-kit 1.4.2 needs nltk to import and parts of it break with scikit-learn 1.9 (STACK_NOTES);
the algorithm is a few vectorised numpy lines.

- Initialisation (iteration 0): majority-vote proportions per task, priors = their mean, confusion
  matrices from them (M-step).
- Each iteration: E-step (posterior over true labels from priors and confusion matrices, in log space),
  then M-step (priors and confusion matrices from the posteriors).
- Stops after `n_iter` iterations, or earlier when the evidence lower bound changes by less than `tol`.
- Labels (`fit(df, dev_labels=...)`, e.g. an audit): semi-supervised EM — a labelled task's posterior is its
  label, fixed at every E-step, so the labels enter the confusion matrices and the priors as evidence instead
  of only scoring the result; the unlabelled tasks are inferred as before.
- Runs: several rows of one (task, worker) (e.g. a `run` column naming both display orders) are that judge's
  repeated votes, each an observation of the same confusion matrix: the runs are modelled, not averaged. (As
  workers of their own, one confusion per judge and run, it was 0.91 on LLMBar Natural against 0.95: twice
  the parameters from 100 tasks; the same within a point on the pairwise families.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import TIE, check_frame, check_iterations


def known_rows(
    dev_labels: pd.Series | None, tasks: pd.Index, labels: pd.Index, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """(task positions, label positions) of the labelled tasks among `tasks` (labels of tasks the votes lack are
    ignored); a label that is not one of `labels` is a ValueError naming it."""
    if dev_labels is None:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    known = pd.Series(dev_labels).dropna()
    unknown = sorted(set(known.unique()) - set(labels), key=str)
    if unknown:
        raise ValueError(f"{name}: labels {unknown[:5]} are not among the votes' labels {list(labels)}")
    at = tasks.get_indexer(known.index)
    mine = at >= 0
    return at[mine], labels.get_indexer(known.to_numpy()[mine])


class DawidSkene:
    """Fitted: `probas_` (task × label), `labels_` (task; exact ties → `tie`, where crowd-kit takes the
    first label),
    `priors_` (label), `errors_` ((worker, observed label) × true label: P(observed | true)), `loss_history_`."""

    def __init__(self, n_iter: int = 100, tol: float = 1e-5):
        self.n_iter, self.tol = n_iter, tol

    def fit(self, data: pd.DataFrame, dev_labels: pd.Series | None = None) -> DawidSkene:
        """`dev_labels`: task → known label (an audit): those tasks' posteriors are fixed to their labels."""
        check_iterations(self.n_iter, self.tol, "DawidSkene")
        data = check_frame(data, "label", "DawidSkene")[["task", "worker", "label"]]
        tasks = pd.Index(sorted(data["task"].unique()), name="task")
        workers = pd.Index(sorted(data["worker"].unique()), name="worker")
        labels = pd.Index(sorted(data["label"].unique()), name="label")
        self._known = known_rows(dev_labels, tasks, labels, "DawidSkene")
        t = tasks.get_indexer(data["task"])
        w = workers.get_indexer(data["worker"])
        obs = labels.get_indexer(data["label"])
        n_t, n_w, k = len(tasks), len(workers), len(labels)
        self._shape = (t, w, obs, n_t, n_w, k)

        votes = np.zeros((n_t, k))
        np.add.at(votes, (t, obs), 1.0)
        probas = self._clamp(votes / np.maximum(votes.sum(axis=1, keepdims=True), 1))  # iteration 0: MV
        priors, errors = self._m_step(probas)
        self.loss_history_ = []
        for _ in range(self.n_iter):
            probas = self._clamp(self._e_step(priors, errors))
            priors, errors = self._m_step(probas)
            self.loss_history_.append(self._elbo(probas, priors, errors))
            if self.tol > 0 and len(self.loss_history_) > 1:
                if abs(self.loss_history_[-1] - self.loss_history_[-2]) < self.tol:
                    break

        self.probas_ = pd.DataFrame(probas, index=tasks, columns=labels)
        tied = self.probas_.eq(self.probas_.max(axis=1), axis=0).sum(axis=1) > 1
        self.labels_ = self.probas_.idxmax(axis=1).astype(object).where(~tied, TIE).rename("agg_label")
        self.priors_ = pd.Series(priors, index=labels, name="prior")
        index = pd.MultiIndex.from_product([workers, labels], names=["worker", "label"])
        self.errors_ = pd.DataFrame(errors.reshape(n_w * k, k), index=index, columns=labels)
        return self

    def fit_predict(self, data: pd.DataFrame) -> pd.Series:
        return self.fit(data).labels_

    def fit_predict_proba(self, data: pd.DataFrame) -> pd.DataFrame:
        return self.fit(data).probas_

    def _clamp(self, probas: np.ndarray) -> np.ndarray:
        rows, cols = self._known
        if len(rows):
            probas = probas.copy()
            probas[rows] = 0.0
            probas[rows, cols] = 1.0
        return probas

    def _m_step(self, probas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Priors, and errors[w, observed, true] = Σ posterior mass of `true` on w's `observed` votes,
        normalised over `observed` for each worker and true label."""
        t, w, obs, _, n_w, k = self._shape
        priors = probas.mean(axis=0) if len(probas) else np.zeros(k)
        errors = np.zeros((n_w, k, k))
        np.add.at(errors, (w, obs), probas[t])
        totals = errors.sum(axis=1, keepdims=True)
        errors = np.divide(errors, totals, out=np.zeros_like(errors), where=totals > 0)
        return priors, errors

    def _e_step(self, priors: np.ndarray, errors: np.ndarray) -> np.ndarray:
        t, w, obs, n_t, _, k = self._shape
        with np.errstate(divide="ignore"):
            log_post = np.tile(np.log(priors), (n_t, 1))
            np.add.at(log_post, t, np.log(errors[w, obs]))  # each vote: log P(observed | true) for every true
        top = log_post.max(axis=1, keepdims=True)
        top[~np.isfinite(top)] = 0.0
        post = np.exp(log_post - top)
        total = post.sum(axis=1, keepdims=True)
        return np.divide(post, total, out=np.full_like(post, 1.0 / k), where=total > 0)

    def _elbo(self, probas: np.ndarray, priors: np.ndarray, errors: np.ndarray) -> float:
        t, w, obs, *_ = self._shape
        with np.errstate(divide="ignore", invalid="ignore"):
            joint = np.log(priors)[None, :] + np.zeros_like(probas)
            np.add.at(joint, t, np.log(errors[w, obs]))
            expected = np.where(probas > 0, probas * joint, 0.0).sum()
            entropy = -np.where(probas > 0, probas * np.log(probas), 0.0).sum()
        return float(expected + entropy)
