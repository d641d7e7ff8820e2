"""Dawid–Skene with a per-judge position term, started from the consistency-weighted vote.

Model (ALGORITHMS.md §8). Each task t has a true label y_t ∈ {first class, second class}; each run of a task
shows the two candidates in some order, and f ∈ {first class shown first, second class shown first,
unknown} is that run's context. Judge j's vote in a run is drawn from a confusion that depends on the
context:

    θ_j[f, y] = P(j votes the first class | true label y, context f),

runs independent given y. The plain Dawid–Skene model is θ_j[f, y] = θ_j[y]; with f the model can say
"this judge votes for whatever is shown first" (θ_j[A-first, y] high and θ_j[B-first, y] low for both y),
and then such verdicts carry no evidence about y — the position term absorbs them. A judge that reads with
probability r_j (then right with probability a_j) and otherwise picks the first shown with probability b_j
is the special case θ_j[f, y] = r_j·(a_j if y = first class else 1 − a_j) + (1 − r_j)·(b_j if f = first class
shown else 1 − b_j); the free 2 × 2 table per judge contains it. Both display orders of every task are
observed, so the position part is identified from the swap.

EM: E-step posterior over y_t from the class priors and θ; M-step θ and priors from the posteriors, with a
Beta(1, 1) prior on every θ (a cell seen on few votes stays near ½). Correlated judges: each judge's
log-likelihood terms are divided by its effective multiplicity m_j from the consistency-weighted vote's
dependence correction (cwv.py), a composite likelihood in which a clique of m judges sharing a bias counts
about once rather than m times (`tempered=False`: the plain product).

The mirror: flipping every y_t and every θ_j[f, ·] leaves the likelihood unchanged, so EM converges to
whichever mode its start is nearer. The start here is the consistency-weighted vote (cwv.py), not the
majority vote; after convergence the fit is oriented so that the judges it finds better than chance carry
more consistency weight than those it finds worse (`mirrored_` records a flip). This is the same
assumption as the weights': consistent judges are better than chance. It holds where judges err because of
position or surface; it fails where judges are stable but wrong, and where position bias is independent
of accuracy (regime v): there the fit is as good as its start.

>>> votes = pd.DataFrame({"task": [1, 1, 2, 2] * 3, "worker": list("aaaabbbbcccc"),
...                       "run": ["AB", "BA"] * 6, "label": list("AABB" "ABAB" "ABAB")})
>>> fit = PositionDawidSkene().fit(votes)  # a is consistent; b and c say "the first shown" every time
>>> fit.labels_.tolist(), fit.position_bias_.tolist()
(['A', 'B'], [0.5, 1.0, 1.0])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import (
    BinaryAggregator,
    binary_classes,
    check_frame,
    check_iterations,
    dev_series,
)
from judgeops.tasks.aggregate.consistency import shown_first
from judgeops.tasks.aggregate.cwv import ConsistencyWeightedVote

CONTEXTS = ("first_class_first", "second_class_first", "unknown")


class PositionDawidSkene(BinaryAggregator):
    """Fitted: `errors_` ((worker, context) × true label: P(votes the first class)), `priors_`,
    `accuracy_` (worker: P(right), averaged over contexts and the fitted class balance),
    `position_bias_` (worker: P(votes the candidate shown first), on runs with a known context),
    `multiplicity_` (worker: the tempering divisor), `init_` ("consistency" or "mv"), `mirrored_`,
    `fallbacks_` (what it could not do: no display order to model), `loss_history_`, `probas_`, `labels_`."""

    def __init__(
        self,
        n_iter: int = 100,
        tol: float = 1e-6,
        init: str = "consistency",
        classes: tuple[str, str] | None = None,
        tempered: bool = True,
    ):
        self.n_iter, self.tol, self.init, self.classes, self.tempered = n_iter, tol, init, classes, tempered

    def fit(
        self,
        df: pd.DataFrame,
        start: ConsistencyWeightedVote | None = None,
        dev_labels: pd.Series | None = None,
        dev_weights: pd.Series | None = None,
    ) -> PositionDawidSkene:
        """`start`: a consistency-weighted vote already fitted on these votes with these classes (auto has
        one); without it, one is fitted here (semi-supervised too, where labels are given).

        `dev_labels` (task → label, e.g. an audit; `dev_weights` their inclusion weights, used by the cwv start):
        semi-supervised EM — a labelled task's posterior is fixed to its label at every step, so the labels
        enter every judge's confusion as evidence and hold EM in the mode they agree with (no orientation by
        consistency is needed)."""
        if self.init not in ("consistency", "mv"):
            raise ValueError(f"PositionDawidSkene: init must be 'consistency' or 'mv', got {self.init!r}")
        check_iterations(self.n_iter, self.tol, "PositionDawidSkene")
        df = check_frame(df, "label", "PositionDawidSkene")
        classes = binary_classes(df["label"], self.classes, "PositionDawidSkene")
        df = df[df["label"].isin(classes)]
        tasks = pd.Index(sorted(df["task"].unique()), name="task")
        workers = pd.Index(sorted(df["worker"].unique()), name="worker")
        t, w = tasks.get_indexer(df["task"]), workers.get_indexer(df["worker"])
        vote = (df["label"] == classes[0]).to_numpy(dtype=float)
        first = shown_first(df, classes)
        ctx = np.full(len(df), 2)
        self.fallbacks_ = []
        if first is None:
            self.fallbacks_.append(
                "no display order in the votes (no `run` named by the labels in display order, no `shown_first`): "
                "no position term; fitted as Dawid–Skene tempered by the judges' dependence"
            )
        else:
            ctx = np.where(first.to_numpy() == classes[0], 0, np.where(first.to_numpy() == classes[1], 1, 2))
        self._rows = (t, w, ctx, vote, len(tasks), len(workers))

        known = dev_series(dev_labels, classes, tasks) if dev_labels is not None else None
        self._clamped = None
        if known is not None:
            rows = np.flatnonzero(known.notna().to_numpy())
            self._clamped = (rows, (known.to_numpy()[rows] > 0).astype(float))
        if self.init == "consistency":
            cwv = (
                start
                if start is not None
                else ConsistencyWeightedVote(classes=classes).fit(
                    df, dev_labels=dev_labels, dev_weights=dev_weights
                )
            )
            post = cwv.probas_[classes[0]].reindex(tasks).to_numpy()
            weights = cwv.weights_.reindex(workers).to_numpy()
            multiplicity = cwv.multiplicity_.reindex(workers).to_numpy()
        else:
            post = pd.Series(vote).groupby(t).mean().reindex(range(len(tasks))).to_numpy()
            weights, multiplicity = np.ones(len(workers)), np.ones(len(workers))
        self._tau = 1.0 / multiplicity if self.tempered else np.ones(len(workers))
        self.multiplicity_ = pd.Series(multiplicity, index=workers, name="multiplicity")
        post = self._clamp(np.clip(post, 1e-3, 1 - 1e-3))  # a confident start, not a frozen one
        self.loss_history_ = []
        for _ in range(self.n_iter):
            prior, theta = self._m_step(post)
            post, loglik = self._e_step(prior, theta)
            post = self._clamp(post)
            self.loss_history_.append(loglik)
            if len(self.loss_history_) > 1 and abs(loglik - self.loss_history_[-2]) < self.tol * max(
                1, abs(loglik)
            ):
                break
        prior, theta = self._m_step(post)
        accuracy = self._accuracy(prior, theta)
        # labelled tasks hold EM in the mode they agree with; without labels, the consistency weights decide
        labelled = self._clamped is not None and len(self._clamped[0]) > 0
        self.mirrored_ = not labelled and bool(np.nansum(weights * (accuracy - 0.5)) < 0)
        if self.mirrored_:  # the other mode of the same likelihood
            post, prior, theta = 1 - post, prior[::-1], theta[:, :, ::-1]
            accuracy = self._accuracy(prior, theta)
        self.init_ = self.init
        index = pd.MultiIndex.from_product([workers, CONTEXTS], names=["worker", "context"])
        self.errors_ = pd.DataFrame(theta.reshape(-1, 2), index=index, columns=list(classes))
        self.priors_ = pd.Series(prior, index=list(classes), name="prior")
        self.accuracy_ = pd.Series(accuracy, index=workers, name="accuracy")
        known = ctx < 2
        said_first = np.where(ctx == 0, vote, 1 - vote)
        self.position_bias_ = (
            pd.Series(said_first[known])
            .groupby(w[known])
            .mean()
            .reindex(range(len(workers)))
            .set_axis(workers)
            .rename("position_bias")
        )
        return self._finish(post, tasks, classes)

    def _clamp(self, post: np.ndarray) -> np.ndarray:
        if self._clamped is None:
            return post
        post = post.copy()
        post[self._clamped[0]] = self._clamped[1]
        return post

    def _m_step(self, post: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        t, w, ctx, vote, _, n_w = self._rows
        p_y = np.stack([post[t], 1 - post[t]], axis=1)  # per row: P(y = first), P(y = second)
        hits = np.ones((n_w, 3, 2))  # Beta(1, 1): one pseudo-vote each way
        total = np.full((n_w, 3, 2), 2.0)
        np.add.at(hits, (w, ctx), p_y * vote[:, None])
        np.add.at(total, (w, ctx), p_y)
        prior = np.array([post.mean(), 1 - post.mean()]) if len(post) else np.array([0.5, 0.5])
        return np.clip(prior, 1e-6, 1 - 1e-6), hits / total

    def _e_step(self, prior: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, float]:
        t, w, ctx, vote, n_t, _ = self._rows
        th = theta[w, ctx]  # rows × (y = first, y = second)
        log_lik = (vote[:, None] * np.log(th) + (1 - vote[:, None]) * np.log(1 - th)) * self._tau[w, None]
        log_post = np.tile(np.log(prior), (n_t, 1))
        np.add.at(log_post, t, log_lik)
        top = log_post.max(axis=1, keepdims=True)
        norm = top[:, 0] + np.log(np.exp(log_post - top).sum(axis=1))
        return np.exp(log_post[:, 0] - norm), float(norm.sum())

    def _accuracy(self, prior: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """P(right) per judge: θ[f, first] for y = first, 1 − θ[f, second] for y = second, averaged over the
        contexts the judge was seen in (weighted by its votes) and the class priors."""
        _, w, ctx, _, _, n_w = self._rows
        seen = np.zeros((n_w, 3))
        np.add.at(seen, (w, ctx), 1.0)
        share = seen / np.maximum(seen.sum(axis=1, keepdims=True), 1)
        right = prior[0] * theta[:, :, 0] + prior[1] * (1 - theta[:, :, 1])
        return (share * right).sum(axis=1)
