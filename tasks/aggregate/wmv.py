"""Calibrated weighted majority vote (the capability-bias paper; ALGORITHMS.md §4).

"Positive" is the first class (`classes[0]`, "A": the first candidate wins). With each judge's false
positive rate FPR_j = P(votes positive | truth negative) and false negative rate FNR_j:

- rule "spec_sens" (the paper's): predict positive iff Σ_{j votes +} (1 − FPR_j) > Σ_{j votes −} (1 − FNR_j),
  a positive vote weighted by the judge's specificity, a negative one by its sensitivity;
  confidence = the positive side's share of the two sums;
- rule "log_odds" (naive-Bayes optimal for independent judges): a positive vote adds log((1 − FNR)/FPR),
  a negative one log(FNR/(1 − FPR)); confidence = sigmoid of the sum (uniform prior: no class balance).

A judge with several runs of a task (both display orders) votes with the share of its runs.

Estimators of FPR/FNR (`error_rates`, also used by weekly recalibration):
- "disagreement" (label-free, the default): for each judge, the majority of the OTHER judges is the proxy
  truth (tasks where they tie are skipped); rates are Beta(1, 1)-smoothed proxy error rates. `n_iter` > 1
  repeats with the leave-one-out weighted vote as the proxy.
- "bayesian": Beta(α0, β0) prior per judge updated with a labelled audit set (`labels` on a few tasks);
  the posterior mean (α0 + FP)/(α0 + β0 + FP + TN).
- "stratified": the same per task bin (`stratum` column), combined with the bins' current mix in the data.
- "oracle": the true rates on every task (needs labels for all): the upper bound.
- "given": rates from elsewhere (`rates`: worker → (fpr, fnr)), e.g. the latest weekly calibration; a judge
  without given rates gets the disagreement estimate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import (
    BinaryAggregator,
    binary_classes,
    check_frame,
    dev_series,
    judge_of,
    run_workers,
)

ESTIMATORS = ("disagreement", "bayesian", "stratified", "oracle", "given")
RULES = ("spec_sens", "log_odds")


def _smoothed(pos: np.ndarray, total: np.ndarray, a0: float, b0: float) -> np.ndarray:
    return (a0 + pos) / (a0 + b0 + total)


def error_counts(share: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """judges × (FPR, FNR) × (errors, non-errors): [[FP, TN], [FN, TP]] per judge against a ±1 truth, one
    vector for every judge or one column per judge (NaN: unknown); share = fraction of runs voting +, and a
    missing vote (NaN) counts nowhere."""
    voted = ~np.isnan(share)
    x = np.where(voted, share, 0.0)
    t = truth if truth.ndim == 2 else truth[:, None]
    neg, pos = voted & (t < 0), voted & (t > 0)
    fp, tn = (x * neg).sum(axis=0), ((1 - x) * neg).sum(axis=0)
    fn, tp = ((1 - x) * pos).sum(axis=0), (x * pos).sum(axis=0)
    return np.stack([np.stack([fp, tn], -1), np.stack([fn, tp], -1)], 1)


def _sign_or_tie(lean: np.ndarray) -> np.ndarray:
    return np.where(np.abs(lean) > 1e-12, np.sign(lean), np.nan)


def loo_majority(share: np.ndarray) -> np.ndarray:
    """tasks × judges: the majority of the OTHER judges for each judge (±1; NaN where they tie)."""
    out = np.empty(share.shape)
    for j in range(share.shape[1]):
        out[:, j] = _sign_or_tie(np.nansum(2 * np.delete(share, j, axis=1) - 1, axis=1))
    return out


def _rates_against(
    share: np.ndarray, truth: np.ndarray, a0: float, b0: float
) -> tuple[np.ndarray, np.ndarray]:
    """FPR, FNR of every judge against a ±1 truth (NaN: unknown); share = fraction of runs voting +."""
    c = error_counts(share, truth)
    return _smoothed(c[:, 0, 0], c[:, 0].sum(-1), a0, b0), _smoothed(c[:, 1, 0], c[:, 1].sum(-1), a0, b0)


def _decide(share: np.ndarray, fpr: np.ndarray, fnr: np.ndarray, rule: str) -> np.ndarray:
    """P(positive) per task under the rule (0.5 where no judge voted)."""
    voted = ~np.isnan(share)
    x = np.where(voted, share, 0.0)
    y = np.where(voted, 1.0 - share, 0.0)
    if rule == "spec_sens":
        plus, minus = x @ (1 - fpr), y @ (1 - fnr)
        total = plus + minus
        return np.divide(plus, total, out=np.full(len(x), 0.5), where=total > 0)
    fpr, fnr = np.clip(fpr, 1e-6, 1 - 1e-6), np.clip(fnr, 1e-6, 1 - 1e-6)
    logit = x @ np.log((1 - fnr) / fpr) + y @ np.log(fnr / (1 - fpr))
    return 1.0 / (1.0 + np.exp(-logit))


def error_rates(
    share: pd.DataFrame,
    estimator: str = "disagreement",
    truth: pd.Series | None = None,
    strata: pd.Series | None = None,
    prior: tuple[float, float] = (1.0, 1.0),
    rule: str = "spec_sens",
    n_iter: int = 1,
) -> pd.DataFrame:
    """worker × (fpr, fnr): each judge's error rates by one of ESTIMATORS.

    share: tasks × workers, the fraction of a judge's runs voting positive (NaN: no vote);
    truth: task → ±1 (NaN unknown), the audit labels (bayesian, stratified) or all labels (oracle);
    strata: task → bin (stratified)."""
    if estimator not in ESTIMATORS or estimator == "given":
        raise ValueError(f"unknown estimator {estimator!r}; one of {ESTIMATORS[:-1]}")
    x = share.to_numpy(dtype=float)
    a0, b0 = prior
    if estimator == "disagreement":
        fpr, fnr = _rates_against(x, loo_majority(x), 1.0, 1.0)
        for _ in range(1, max(1, n_iter)):  # the leave-one-out weighted vote as the next proxy
            proxy = np.empty(x.shape)
            for j in range(x.shape[1]):
                others = np.delete(x, j, axis=1)
                proxy[:, j] = _sign_or_tie(
                    2 * _decide(others, np.delete(fpr, j), np.delete(fnr, j), rule) - 1
                )
            fpr, fnr = _rates_against(x, proxy, 1.0, 1.0)
    else:
        if truth is None:
            raise ValueError(
                f"the {estimator} estimator needs labels (audit labels, or all labels for oracle)"
            )
        y = truth.reindex(share.index).to_numpy(dtype=float)
        if estimator == "oracle" and np.isnan(y).any():
            raise ValueError(
                f"the oracle estimator needs a label for every task; {int(np.isnan(y).sum())} missing"
            )
        if estimator == "stratified":
            if strata is None:
                raise ValueError("the stratified estimator needs a `stratum` per task")
            bins = strata.reindex(share.index)
            mix = bins.value_counts(normalize=True)
            fpr, fnr = np.zeros(x.shape[1]), np.zeros(x.shape[1])
            for b, weight in mix.items():
                rows = (bins == b).to_numpy()
                f, n = _rates_against(x[rows], y[rows], a0, b0)
                fpr, fnr = fpr + weight * f, fnr + weight * n
        else:
            fpr, fnr = _rates_against(x, y, *((1.0, 1.0) if estimator == "oracle" else (a0, b0)))
    return pd.DataFrame({"fpr": fpr, "fnr": fnr}, index=share.columns)


class WeightedMajorityVote(BinaryAggregator):
    """Fitted: `errors_` (worker × fpr, fnr), `weights_` (worker × weight of a positive / negative vote),
    `probas_`, `labels_`. `fit(df, labels=None)`: labels are the audit set (bayesian, stratified) or the
    full truth (oracle); the label-free default never reads them. `stratified` reads a `stratum` column."""

    def __init__(
        self,
        rule: str = "spec_sens",
        estimator: str = "disagreement",
        prior: tuple[float, float] = (1.0, 1.0),
        n_iter: int = 1,
        classes: tuple[str, str] | None = None,
        rates: dict | None = None,
    ):
        self.rule, self.estimator, self.prior, self.n_iter = rule, estimator, prior, n_iter
        self.classes, self.rates = classes, rates

    def fit(self, df: pd.DataFrame, dev_labels: pd.Series | None = None) -> WeightedMajorityVote:
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; one of {RULES}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"unknown estimator {self.estimator!r}; one of {ESTIMATORS}")
        df = check_frame(
            df, "label", "WeightedMajorityVote", min_workers=2 if self.estimator == "disagreement" else 1
        )
        classes = binary_classes(df["label"], self.classes, "WeightedMajorityVote")
        df = run_workers(df).assign(
            label=(df["label"] == classes[0]).astype(float)
        )  # a (judge, run) a worker
        share = df.pivot_table(index="task", columns="worker", values="label", aggfunc="mean", sort=True)
        truth = dev_series(dev_labels, classes, share.index) if dev_labels is not None else None
        strata = None
        if self.estimator == "stratified":
            if "stratum" not in df.columns:
                raise ValueError("WeightedMajorityVote: the stratified estimator needs a `stratum` column")
            strata = df.groupby("task")["stratum"].first()
        if self.estimator == "given":
            given = pd.DataFrame.from_dict(self.rates or {}, orient="index", columns=["fpr", "fnr"])
            fallback = error_rates(share, "disagreement", rule=self.rule) if share.shape[1] > 1 else None
            # rates are given per judge: each of its runs takes them
            self.errors_ = given.reindex([judge_of(w) for w in share.columns]).set_axis(share.columns)
            if fallback is not None:
                self.errors_ = self.errors_.fillna(fallback)
            if self.errors_.isna().any().any():
                raise ValueError(
                    "WeightedMajorityVote: no given rates for some judges, and too few judges to estimate them"
                )
        else:
            self.errors_ = error_rates(
                share, self.estimator, truth, strata, self.prior, self.rule, self.n_iter
            )
        fpr, fnr = self.errors_["fpr"].to_numpy(), self.errors_["fnr"].to_numpy()
        if self.rule == "spec_sens":
            self.weights_ = pd.DataFrame({"positive": 1 - fpr, "negative": 1 - fnr}, index=share.columns)
        else:
            f, n = np.clip(fpr, 1e-6, 1 - 1e-6), np.clip(fnr, 1e-6, 1 - 1e-6)
            self.weights_ = pd.DataFrame(
                {"positive": np.log((1 - n) / f), "negative": np.log(n / (1 - f))}, index=share.columns
            )
        p = _decide(share.to_numpy(dtype=float), fpr, fnr, self.rule)
        return self._finish(p, share.index, classes)
