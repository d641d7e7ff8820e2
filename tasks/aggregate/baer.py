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

Labels: BAER is trained. With `dev_labels` (a labelled development split) it learns from those tasks only.
Without them it is label-free in the self-training sense: it learns from the confident pseudo-labels of
Dawid–Skene on the same votes (posterior ≥ `pseudo_confidence`), and can then be no better than its teacher
at choosing which side of a sign-symmetric panel is right (see BENCHMARKS.md, regime v).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict

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
    def __init__(self, seed: int, lam: float | None = None):
        self.seed, self.lam = seed, lam

    def fit(self, phi: np.ndarray, y: np.ndarray) -> _Stacking:
        self.rms_ = np.sqrt((phi**2).mean(axis=0))
        self.rms_[self.rms_ < 1e-12] = 1.0
        x = phi / self.rms_
        xa, ya = np.vstack([x, -x]), np.concatenate([y, -y])
        best, best_loss = self.lam or LAMBDAS[0], np.inf
        folds = KFold(5, shuffle=True, random_state=self.seed) if len(y) >= 10 else None
        for lam in LAMBDAS if folds is not None and self.lam is None else ():
            loss = 0.0
            for train, test in folds.split(x):
                m = self._model(lam).fit(
                    np.vstack([x[train], -x[train]]), np.concatenate([y[train], -y[train]])
                )
                p = np.clip(m.predict_proba(x[test])[:, 1], 1e-9, 1 - 1e-9)
                loss -= np.sum(np.where(y[test] > 0, np.log(p), np.log(1 - p)))
            if loss < best_loss:
                best, best_loss = lam, loss
        self.lambda_ = best
        self.model_ = self._model(best).fit(xa, ya)
        return self

    def _model(self, lam: float) -> LogisticRegression:
        return LogisticRegression(C=1.0 / lam, fit_intercept=False, max_iter=2000)

    def score(self, phi: np.ndarray) -> np.ndarray:
        return (phi / self.rms_) @ self.model_.coef_.ravel()  # odd in φ: no intercept


class _Routing:
    def __init__(self, seed: int, kind: str | None = None):
        self.seed, self.kind = seed, kind

    def fit(self, z: np.ndarray, delta: np.ndarray, y: np.ndarray) -> _Routing:
        feats = _route_features(z, delta)
        right = (np.sign(z) == y[:, None]).ravel().astype(int)
        has = (np.sign(z) != 0).ravel()
        feats, right = feats[has], right[has]
        candidates = {
            "logistic": LogisticRegression(max_iter=2000),
            "forest": RandomForestClassifier(
                n_estimators=FOREST_TREES, max_depth=5, min_samples_leaf=8, random_state=self.seed, n_jobs=1
            ),
        }
        self.cv_loss_ = {}
        if len(np.unique(right)) < 2 or len(right) < 10:
            self.kind_, self.constant_ = "constant", float(right.mean()) if len(right) else 0.5
            return self
        if self.kind in candidates or np.bincount(right).min() < 5:  # kind fixed, or too few to compare
            self.kind_ = self.kind if self.kind in candidates else "logistic"
            self.model_ = candidates[self.kind_].fit(feats, right)
            return self
        folds = StratifiedKFold(5, shuffle=True, random_state=self.seed)
        for name, model in candidates.items():
            p = np.clip(
                cross_val_predict(model, feats, right, cv=folds, method="predict_proba")[:, 1], 1e-9, 1
            )
            self.cv_loss_[name] = float(
                -np.mean(np.where(right == 1, np.log(p), np.log(np.clip(1 - p, 1e-9, 1))))
            )
        self.kind_ = min(self.cv_loss_, key=self.cv_loss_.get)
        self.model_ = candidates[self.kind_].fit(feats, right)
        return self

    def reliability(self, z: np.ndarray, delta: np.ndarray) -> np.ndarray:
        if self.kind_ == "constant":
            return np.full(z.shape, self.constant_)
        return self.model_.predict_proba(_route_features(z, delta))[:, 1].reshape(z.shape)

    def proba(self, z: np.ndarray, delta: np.ndarray) -> np.ndarray:
        """P(classes[0]) per task: the most reliable voting expert's sign, at its reliability."""
        rel = np.where(np.sign(z) != 0, self.reliability(z, delta), -np.inf)
        pick = np.argmax(rel, axis=1)
        r = rel[np.arange(len(z)), pick]
        s = np.sign(z[np.arange(len(z)), pick])
        return np.where(np.isfinite(r), 0.5 + s * (np.clip(r, 0, 1) - 0.5), 0.5)


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
        self.stacking_ = _Stacking(self.seed).fit(phi[known], y[known])
        self.routing_ = _Routing(self.seed).fit(z[known], delta[known], y[known])
        conditions = category if category is not None else np.full(len(tasks), "all")
        self.heads_, self.cv_accuracy_ = self._choose_heads(phi, z, delta, y, conditions)
        p_stack = 1.0 / (1.0 + np.exp(-self.stacking_.score(phi)))
        p_route = self.routing_.proba(z, delta)
        use_route = np.array([self.heads_.get(c, "stacking") == "routing" for c in conditions])
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

    def _choose_heads(self, phi, z, delta, y, conditions) -> tuple[dict, dict]:
        if self.head != "auto":
            return {str(c): self.head for c in np.unique(conditions)}, {}
        known = ~np.isnan(y)
        correct = {"stacking": np.full(len(y), np.nan), "routing": np.full(len(y), np.nan)}
        idx = np.flatnonzero(known)
        for train, test in KFold(5, shuffle=True, random_state=self.seed).split(idx):
            tr, te = idx[train], idx[test]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stack = _Stacking(self.seed, self.stacking_.lambda_).fit(phi[tr], y[tr])
                route = _Routing(self.seed, self.routing_.kind_).fit(z[tr], delta[tr], y[tr])
            correct["stacking"][te] = np.sign(stack.score(phi[te])) == y[te]
            correct["routing"][te] = np.sign(route.proba(z[te], delta[te]) - 0.5) == y[te]
        heads, accuracy = {}, {}
        for c in map(str, np.unique(conditions)):
            rows = known & (conditions == c)
            accuracy[c] = {
                h: float(np.nanmean(v[rows])) if rows.any() else float("nan") for h, v in correct.items()
            }
            heads[c] = "routing" if accuracy[c]["routing"] > accuracy[c]["stacking"] else "stacking"
        return heads, accuracy
