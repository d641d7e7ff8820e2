"""BAER: candidate-symmetric evidence heads (ALGORITHMS.md §7; the BAER paper, §3).

Every head returns a signed score s with s(q, b, a) = −s(q, a, b): swapping a pair's candidates flips the
decision and keeps its confidence, by construction rather than by hope.

Evidence per expert k (a judge, or a judge × protocol) on a task: its runs u_km (e.g. both display orders,
each mapped to the canonical candidate) give p_k = mean u_km, order instability δ_k = max − min,
z_k = logit p_k and the shrunk z̃_k = z_k/(1 + 4δ_k); a missing expert has p = .5 (z = 0).

- stacking: features φ = [z_k, z̃_k for every k; mean z × category indicators], each scaled by its training
  RMS; logistic regression with NO intercept on the sign-augmented set {(φ, y), (−φ, −y)}, so the fitted
  score is odd in φ; the penalty λ ∈ {10, 1, .1, .01, .001} by 5-fold cross-validated log loss.
- routing: a model of P(expert k is right) from candidate-invariant features (expert id, |z_k|, δ_k, the
  share of other experts agreeing with k's sign); each task takes the most reliable expert's sign, with
  that reliability as its confidence. Logistic regression vs random forest (depth 5, min leaf 8), the one
  with the better 5-fold CV log loss.
- head selection: stacking or routing per condition (`category` column, else one condition) by 5-fold CV
  accuracy on the labelled tasks, chosen once and frozen in `heads_`.

One 5-fold pass over the labelled tasks (held out by task) serves all three choices: the penalty, the routing
model and the head (`BAER._cross_fit`); the penalty path is warm-started.

Labels: BAER is trained. With `dev_labels` (a labelled development split) it learns from those tasks only.
Without them it is label-free in the self-training sense: it learns from the confident pseudo-labels of
Dawid–Skene on the same votes (posterior ≥ `pseudo_confidence`), and can then be no better than its teacher
at choosing which side of a sign-symmetric panel is right (see BENCHMARKS.md, regime v).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.special import expit
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from judgeops.tasks.aggregate._base import BinaryAggregator, check_frame, dev_series, resolve_classes
from judgeops.tasks.aggregate.dawid_skene import DawidSkene

LAMBDAS = (10.0, 1.0, 0.1, 0.01, 0.001)
FOREST_TREES = 10  # the routing forest: as accurate as 20 trees on the regime families, in half the time


def evidence(df: pd.DataFrame, kind: str, classes: tuple[str, str], eps: float = 0.02):
    """(tasks, experts, p, δ, z, z̃) from a long frame; p = P(classes[0]) per run (labels → 1/0)."""
    if kind == "label":
        df = df.assign(score=(df["label"] == classes[0]).astype(float))
    elif ((df["score"] < 0) | (df["score"] > 1)).any():
        raise ValueError("BAER reads probabilities: every score must lie in [0, 1]")
    grouped = df.groupby(["task", "worker"])["score"]
    p = grouped.mean().unstack()
    delta = (grouped.max() - grouped.min()).unstack().reindex_like(p)
    p_arr = np.clip(p.to_numpy(dtype=float), eps, 1 - eps)
    p_arr = np.where(np.isnan(p_arr), 0.5, p_arr)
    d_arr = np.nan_to_num(delta.to_numpy(dtype=float), nan=0.0)
    z = np.log(p_arr / (1 - p_arr))
    return p.index, p.columns, p_arr, d_arr, z, z / (1 + 4 * d_arr)


def _stack_features(z: np.ndarray, zt: np.ndarray, category: np.ndarray | None) -> np.ndarray:
    mean_z = z.mean(axis=1, keepdims=True)
    if category is None:
        return np.hstack([z, zt, mean_z])
    levels = np.unique(category)
    return np.hstack([z, zt, mean_z * (category[:, None] == levels[None, :])])


def _route_features(z: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """(task × expert) rows of candidate-invariant features: expert one-hot, |z|, δ, agreement."""
    n, k = z.shape
    sign = np.sign(z)
    voting = (sign != 0).sum(axis=1, keepdims=True)
    agree = (sign[:, :, None] == sign[:, None, :]).sum(axis=2) - 1  # other experts with the same sign
    share = np.where(sign != 0, agree / np.maximum(voting - 1, 1), 0.0)
    ids = np.tile(np.eye(k), (n, 1))
    return np.hstack([ids, np.abs(z).reshape(-1, 1), delta.reshape(-1, 1), share.reshape(-1, 1)])


class _Stacking:
    def __init__(self, lam: float):
        self.lambda_ = lam

    def fit(self, phi: np.ndarray, y: np.ndarray) -> _Stacking:
        self.rms_ = _rms(phi)
        x = phi / self.rms_
        self.model_ = _odd_logistic(self.lambda_).fit(np.vstack([x, -x]), np.concatenate([y, -y]))
        return self

    def score(self, phi: np.ndarray) -> np.ndarray:
        return (phi / self.rms_) @ self.model_.coef_.ravel()  # odd in φ: no intercept

    @staticmethod
    def path(phi: np.ndarray, y: np.ndarray, held_out: np.ndarray) -> dict[float, np.ndarray]:
        """The held-out scores of every penalty in LAMBDAS, strongest first, each fit starting from the last
        one's weights (sklearn's warm start: the path costs little more than one fit)."""
        rms = _rms(phi)
        x, xh = phi / rms, held_out / rms
        model = _odd_logistic(LAMBDAS[0]).set_params(warm_start=True)
        xa, ya = np.vstack([x, -x]), np.concatenate([y, -y])
        return {lam: xh @ model.set_params(C=1.0 / lam).fit(xa, ya).coef_.ravel() for lam in LAMBDAS}


def _rms(phi: np.ndarray) -> np.ndarray:
    rms = np.sqrt((phi**2).mean(axis=0))
    return np.where(rms < 1e-12, 1.0, rms)


def _odd_logistic(lam: float) -> LogisticRegression:
    return LogisticRegression(C=1.0 / lam, fit_intercept=False, max_iter=2000)


ROUTERS = ("logistic", "forest")


class _Routing:
    def __init__(self, seed: int, kind: str):
        self.seed, self.kind = seed, kind

    def fit(self, z: np.ndarray, delta: np.ndarray, y: np.ndarray) -> _Routing:
        feats = _route_features(z, delta)
        right = (np.sign(z) == y[:, None]).ravel().astype(int)
        has = (np.sign(z) != 0).ravel()
        feats, right = feats[has], right[has]
        if len(np.unique(right)) < 2 or len(right) < 10:
            self.kind_, self.constant_ = "constant", float(right.mean()) if len(right) else 0.5
            return self
        self.kind_ = self.kind
        if self.kind == "forest":
            model = RandomForestClassifier(
                n_estimators=FOREST_TREES, max_depth=5, min_samples_leaf=8, random_state=self.seed, n_jobs=1
            )
        else:
            model = LogisticRegression(max_iter=2000)
        self.model_ = model.fit(feats, right)
        return self

    def reliability(self, z: np.ndarray, delta: np.ndarray) -> np.ndarray:
        if self.kind_ == "constant":
            return np.full(z.shape, self.constant_)
        return self.model_.predict_proba(_route_features(z, delta))[:, 1].reshape(z.shape)

    def proba(self, z: np.ndarray, delta: np.ndarray) -> np.ndarray:
        return _route(self.reliability(z, delta), z)


def _route(reliability: np.ndarray, z: np.ndarray) -> np.ndarray:
    """P(classes[0]) per task: the most reliable voting expert's sign, at its reliability."""
    rel = np.where(np.sign(z) != 0, reliability, -np.inf)
    pick = np.argmax(rel, axis=1)
    r = rel[np.arange(len(z)), pick]
    s = np.sign(z[np.arange(len(z)), pick])
    return np.where(np.isfinite(r), 0.5 + s * (np.clip(r, 0, 1) - 0.5), 0.5)


def _log_loss(p: np.ndarray, right: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(np.where(right, p, 1 - p), 1e-9, 1))))


class BAER(BinaryAggregator):
    """Fitted: `heads_` (condition → "stacking" | "routing"), `cv_accuracy_`, `stacking_`, `routing_`,
    `experts_`, `trained_on_` ("dev_labels" | "pseudo_labels"), `probas_`, `labels_`.

    `max_train`: the heads learn from at most this many (pseudo-)labelled tasks, a random sample. Stacking has
    two weights per expert and routing a handful of shared ones, so 300 tasks pin them: on 24 judges × 5,000
    tasks × 2 orders the fit went from 5.3 s to ~0.4 s with the same accuracy (bench/aggregate.py).

    Input: `task, worker, score` (P(first class) per run, in [0, 1]) or `task, worker, label`; optional
    `category` (the condition) and several rows per (task, worker) for runs (display orders)."""

    def __init__(
        self,
        head: str = "auto",
        input: str = "score",
        classes: tuple[str, str] | None = None,
        pseudo_confidence: float = 0.9,
        seed: int = 0,
        max_train: int = 300,
    ):
        self.head, self.input, self.classes = head, input, classes
        self.pseudo_confidence, self.seed, self.max_train = pseudo_confidence, seed, max_train

    def fit(self, df: pd.DataFrame, dev_labels: pd.Series | None = None) -> BAER:
        if self.head not in ("auto", "stacking", "routing"):
            raise ValueError(f"BAER: head must be auto, stacking or routing, got {self.head!r}")
        df = check_frame(df, self.input, "BAER", min_workers=1)
        classes = resolve_classes(df, self.input, self.classes, "BAER")
        tasks, experts, _, delta, z, zt = evidence(df, self.input, classes)
        category = None
        if "category" in df.columns:
            category = df.groupby("task")["category"].first().reindex(tasks).astype(str).to_numpy()
        y = self._targets(df, tasks, classes, dev_labels)
        known = ~np.isnan(y)
        if known.sum() < 10 or len(np.unique(y[known])) < 2:
            raise ValueError(
                f"BAER needs at least 10 labelled tasks of both classes to train on; got {int(known.sum())}"
            )
        if known.sum() > self.max_train:  # the heads have ~2 parameters per expert: a sample pins them
            keep = np.random.default_rng(self.seed).choice(
                np.flatnonzero(known), self.max_train, replace=False
            )
            y = np.where(np.isin(np.arange(len(y)), keep), y, np.nan)
            known = ~np.isnan(y)
        phi = _stack_features(z, zt, category)
        conditions = category if category is not None else np.full(len(tasks), "all")
        # dozens of L-BFGS fits on ≤ 300 × 2k matrices: BLAS threads only contend there (4× slower on 2 cores)
        with threadpool_limits(limits=1, user_api="blas"):
            lam, kind, correct = self._cross_fit(phi, z, delta, y)
            self.stacking_ = _Stacking(lam).fit(phi[known], y[known])
            self.routing_ = _Routing(self.seed, kind).fit(z[known], delta[known], y[known])
        self.heads_, self.cv_accuracy_ = self._choose_heads(correct, known, conditions)
        use_route = np.array([self.heads_.get(c, "stacking") == "routing" for c in conditions])
        p_stack = 1.0 / (1.0 + np.exp(-self.stacking_.score(phi)))
        p_route = self.routing_.proba(z, delta) if use_route.any() else p_stack  # the forest reads every vote
        self.experts_ = list(experts)
        return self._finish(np.where(use_route, p_route, p_stack), tasks, classes)

    def _targets(self, df, tasks, classes, dev_labels) -> np.ndarray:
        if dev_labels is not None:
            self.trained_on_ = "dev_labels"
            return dev_series(dev_labels, classes, tasks).to_numpy(dtype=float)
        self.trained_on_ = "pseudo_labels"
        if self.input == "label":
            votes = df
        else:  # a probability of exactly .5 is no vote
            votes = df.assign(label=np.where(df["score"] >= 0.5, classes[0], classes[1]))[df["score"] != 0.5]
        probas = DawidSkene().fit(votes[["task", "worker", "label"]]).probas_.reindex(tasks)
        p = probas[classes[0]].to_numpy() if classes[0] in probas else np.zeros(len(tasks))
        return np.where(
            p >= self.pseudo_confidence, 1.0, np.where(p <= 1 - self.pseudo_confidence, -1.0, np.nan)
        )

    def _cross_fit(self, phi, z, delta, y) -> tuple[float, str, dict]:
        """One 5-fold pass over the labelled tasks: every penalty of the stacking head and both routing models
        fitted on four folds, scored on the fifth. Picks the penalty and the routing model by held-out log
        loss (logistic where too few wrong votes to compare, < 5), and returns per task whether each head,
        so tuned, was right when held out (the heads' choice, `_choose_heads`). The folds hold out tasks, not
        votes, so no task's other votes leak into its held-out score."""
        idx = np.flatnonzero(~np.isnan(y))
        stack = {lam: np.full(len(y), np.nan) for lam in LAMBDAS}
        route = {kind: np.full(z.shape, np.nan) for kind in ROUTERS}
        with warnings.catch_warnings():  # a fold's fit may stop short of convergence: the loss judges it
            warnings.simplefilter("ignore")
            for train, test in KFold(5, shuffle=True, random_state=self.seed).split(idx):
                tr, te = idx[train], idx[test]
                for lam, scores in _Stacking.path(phi[tr], y[tr], phi[te]).items():
                    stack[lam][te] = scores
                for kind in ROUTERS:
                    fitted = _Routing(self.seed, kind).fit(z[tr], delta[tr], y[tr])
                    route[kind][te] = fitted.reliability(z[te], delta[te])
        yk = y[idx]
        lam = min(LAMBDAS, key=lambda lam: _log_loss(expit(stack[lam][idx]), yk > 0))
        voted = np.sign(z[idx]) != 0
        right = (np.sign(z[idx]) == yk[:, None])[voted]
        losses = {kind: _log_loss(route[kind][idx][voted], right) for kind in ROUTERS}
        kind = (
            "logistic"
            if np.bincount(right.astype(int), minlength=2).min() < 5
            else min(losses, key=losses.get)
        )
        correct = {"stacking": np.full(len(y), np.nan), "routing": np.full(len(y), np.nan)}
        correct["stacking"][idx] = np.sign(stack[lam][idx]) == yk
        correct["routing"][idx] = np.sign(_route(route[kind][idx], z[idx]) - 0.5) == yk
        return lam, kind, correct

    def _choose_heads(self, correct: dict, known: np.ndarray, conditions) -> tuple[dict, dict]:
        if self.head != "auto":
            return {str(c): self.head for c in np.unique(conditions)}, {}
        heads, accuracy = {}, {}
        for c in map(str, np.unique(conditions)):
            rows = known & (conditions == c)
            accuracy[c] = {
                h: float(np.nanmean(v[rows])) if rows.any() else float("nan") for h, v in correct.items()
            }
            heads[c] = "routing" if accuracy[c]["routing"] > accuracy[c]["stacking"] else "stacking"
        return heads, accuracy
