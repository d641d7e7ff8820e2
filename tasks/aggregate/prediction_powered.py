"""Prediction-powered estimates: a few labels plus every unlabelled verdict, turned into a valid interval.

Any number a team quotes is a mean of a per-task quantity Y over the workload — the consensus is right, a judge
is right, the first candidate is better. The audit gives Y on n labelled tasks; the panel gives on every task
a prediction f of Y from the votes alone (the consensus's posterior of its own label, ...). PPI++ (Angelopoulos,
Duchi & Zrnic, arXiv 2311.01453) estimates the mean as

    θ̂_λ = mean_unlabelled(λ f) + mean_labelled(Y − λ f),

unbiased for any f and any fixed λ: the labels correct ("rectify") the predictions' bias. Its variance is
Var(λ f)/N + Var(Y − λ f)/n, least at λ* = Cov(Y, f) / ((1 + n/N) Var(f)), estimated from the data and clipped
to [0, 1]: λ = 0 is the labels-only mean, so a useless f costs nothing in expectation, and λ = 1 is plain PPI.
`ppi_mean` is ppi_py's θ̂ ± z σ̂ exactly; `prediction_powered`, the one quoted, uses unbiased variances and
Student's t at the labels' effective size (the normal interval undercovered at k = 25-50). `effective_labels`
says what the verdicts were worth: the number of labels a labels-only mean would need for the same variance,
n · Var(Y) / (n σ̂²).

Weights. A task drawn with inclusion probability π gets weight 1/π; the weights of each set are normalised to
mean 1, as in `ppi_py` (its `w`, `w_unlabeled`), so the rectifier is a Hájek (ratio) mean of Y − λ f over the
workload. Give the unlabelled tasks weights too (stratum size over its unlabelled count), so that their mean of
f stands for the whole workload and not the strata the audit sampled less. The variance treats the weighted
terms as independent draws (with replacement); what the weights cost is their spread, a factor mean(w²) on the
rectifier's variance. A large stratum resting on a handful of labels, none of them wrong, is not caught by it
(0.85 of draws covered at k = 25 on saturated posteriors), so where the audit's strata are known, pass them.

Strata (a stratified audit, as `audit propose` draws one; stratified PPI, Fisch et al., arXiv 2406.04291). The
workload is the union of strata h of N_h tasks, n_h of them labelled, W_h = N_h / N. Within each stratum the
labelled tasks are a simple random sample, so

    θ̂ = Σ_h W_h [ mean_unlabelled,h(λ f) + mean_labelled,h(Y − λ f) ],
    Var(θ̂) = Σ_h W_h² [ λ² s²_h(f) / (N_h − n_h) + s̃²_h(Y − λ f) / n_h ],

unbiased for any λ (one λ for all strata, tuned on the whole audit: a stratum's handful of labels cannot tune its
own). The floors: s̃²_h is the residual's variance within the stratum but never below its variance over the whole
audit; and never below the variance with Agresti–Caffo's two pseudo-labels added (a Y = 0 and a Y = 1 at the
stratum's mean prediction, at the ends of Y's range `bounds`). Six labels on a stratum, all right, are often
drawn by chance where a tenth are wrong; without the floor that stratum would count as known exactly
(bench/prediction_powered.py: 0.81 of draws covered on a misleading family at k = 25). The same holds where the
labels differ but the predictions matched every one of them (saturated posteriors, right on every audited task:
a judge's interval was 0.001 wide, and random audits covered 0.82-0.85 of draws, before the floor held there
too; bench/audited_estimates.py). Where the labels do contradict the predictions the floor rarely binds. The
interval is Student's t at Satterthwaite's degrees of freedom (a stratum of 6 labels has 5, whatever the others
have). The floors are conservative where strata truly differ: the price of not trusting a few labels about a
large stratum. The labels-only interval beside it is the same formula at λ = 0.

What it assumes: the audit was drawn by its stated design before its labels were seen (propose, then label),
and f was computed without the audited labels. At fewer than `MIN_NORMAL` labels, or where the rectifier shows
no variation in the sample (all Y − λ f alike: the normal interval would be zero wide), the interval is the
labels-only exact one (Clopper–Pearson for a 0/1 quantity), never a zero-width one.

Written here, not imported: `ppi_py` (MIT) is the reference and pulls in numba and statsmodels for what is a few
lines of numpy; tests/test_prediction_powered.py pins our numbers to values it computed (to 1e-9).

A ratio (a judge's FPR: its votes for the first class among the tasks whose truth is the second, a class the
predictions only guess): `workload_ratio`, the ratio of two prediction-powered means with the delta method's
interval (the Z-estimator form of PPI).

label_budget(...) answers "how many labels for ± w": the n at which z σ(n) ≤ w, with σ²(n) from the current
audit's variances, or with no audit the labels-only worst case over the label-free interval.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

# fewer labels than this: the exact labels-only interval (the normal approximation is not trusted)
MIN_NORMAL = 10


@dataclass(frozen=True)
class Estimate:
    """One quoted number: the estimate, its interval, the labels-only interval at the same labels, how many
    labels there were and what the verdicts were worth in labels, and how it was made."""

    estimate: float
    ci: tuple[float, float]
    labels_only_ci: tuple[float, float]
    n_labels: int
    effective_labels: float
    lam: float
    method: str

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


def _weights(w, n: int) -> np.ndarray:
    if w is None:
        return np.ones(n)
    w = np.asarray(w, dtype=float)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights: {n} positive finite numbers expected")
    return w / w.mean()


def tuned_lambda(y, f, f_unlabelled, w=None, w_unlabelled=None) -> float:
    """PPI++'s power-tuning λ for a mean, clipped to [0, 1]: Cov(Y, f) over (1 + n/N) Var(f), the covariance from
    the labelled tasks and the variance from all of them (ppi_py's `_calc_lam_glm` for a mean, the same number)."""
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabelled))
    n, big_n = len(y), len(fu)
    w, wu = _weights(w, n), _weights(w_unlabelled, big_n)
    # the λ = 1 estimate: with unequal weights the centred terms below depend on it
    centre = (wu * fu).mean() + (w * (y - f)).mean()
    g, h, hu = w * (y - centre), w * (f - centre), wu * (fu - centre)
    covariance = ((g - g.mean()) * (h - h.mean())).sum() / n
    variance = np.var(np.concatenate([h, hu]), ddof=1)
    if variance == 0 or not np.isfinite(variance):
        return 0.0
    return float(np.clip(covariance / ((1 + n / big_n) * variance), 0.0, 1.0))


def ppi_mean(y, f, f_unlabelled, alpha: float = 0.1, w=None, w_unlabelled=None, lam: float | None = None):
    """(estimate, (lo, hi), λ) of the mean of Y: PPI++ with λ tuned (or the given one), the normal interval at
    level 1 − α. `y`, `f`: the labelled tasks' quantity and prediction; `f_unlabelled`: the others' predictions;
    `w`, `w_unlabelled`: inverse inclusion weights (normalised to mean 1 within each set)."""
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabelled))
    n, big_n = len(y), len(fu)
    if n == 0 or big_n == 0 or len(f) != n:
        raise ValueError("ppi_mean: labelled tasks with a prediction each, and unlabelled ones, are needed")
    w, wu = _weights(w, n), _weights(w_unlabelled, big_n)
    lam = tuned_lambda(y, f, fu, w, wu) if lam is None else float(lam)
    estimate = float((wu * lam * fu).mean() + (w * (y - lam * f)).mean())
    sigma = math.sqrt(np.var(wu * lam * fu) / big_n + np.var(w * (y - lam * f)) / n)
    half = stats.norm.ppf(1 - alpha / 2) * sigma
    return estimate, (estimate - half, estimate + half), lam


def labels_only_interval(y, alpha: float = 0.1, w=None) -> tuple[float, float]:
    """The labels-only interval of a mean at level 1 − α: Clopper–Pearson for a quantity in [0, 1] (with weights,
    at Kish's effective sample size), a t interval otherwise. Never zero wide where there are labels. For a share
    (a judge's votes right on a task: 0, 1/2, 1) it is conservative: a [0, 1] quantity's variance is at most
    μ(1 − μ), the Bernoulli's, and a judge right on exactly half of every task's votes must not get [0.5, 0.5]."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    w = _weights(w, n)
    mean = float((w * y).mean())
    if ((y >= 0.0) & (y <= 1.0)).all():
        n_eff = n / float((w**2).mean())  # Kish: what unequal weights leave of n
        k = mean * n_eff
        low = stats.beta.ppf(alpha / 2, k, n_eff - k + 1) if k > 0 else 0.0
        high = stats.beta.ppf(1 - alpha / 2, k + 1, n_eff - k) if k < n_eff else 1.0
        return float(low), float(high)
    if n < 2:
        return float("-inf"), float("inf")
    half = stats.t.ppf(1 - alpha / 2, n - 1) * math.sqrt(np.var(w * y, ddof=1) / n)
    return mean - half, mean + half


def prediction_powered(
    y,
    f,
    f_unlabelled,
    alpha: float = 0.1,
    w=None,
    w_unlabelled=None,
    bounds=(0.0, 1.0),
    strata=None,
    strata_unlabelled=None,
):
    """The Estimate of the mean of Y a team can quote: PPI++ where it is trusted, the exact labels-only interval
    where it is not (fewer than MIN_NORMAL labels, or no variation in the labels or the rectifier), clipped to
    `bounds`. `strata`, `strata_unlabelled`: each task's stratum, for a stratified audit (then `w` is not used:
    the strata's sizes and samples are the weights)."""
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabelled))
    n = len(y)
    if strata is not None:
        return _stratified(y, f, fu, alpha, np.asarray(strata), np.asarray(strata_unlabelled), bounds)
    exact, wn = labels_only_interval(y, alpha, w), _weights(w, n)
    clip = functools.partial(_clip, bounds=bounds)
    labels_mean = clip((wn * y).mean()) if n else float("nan")  # (normalised weights: 1 + 2e-16 is not 1)
    if n < MIN_NORMAL:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, f"labels only (exact): {n} labels")
    estimate, _, lam = ppi_mean(y, f, fu, alpha, w, w_unlabelled)
    wun = _weights(w_unlabelled, len(fu))
    if np.ptp(y) == 0 or np.ptp(wn * (y - lam * f)) == 0:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, "labels only (exact): no variation")
    # small-sample form of ppi_mean's interval: unbiased variances, and Student's t at the labels' effective size
    sigma2 = np.var(wun * lam * fu, ddof=1) / len(fu) + np.var(wn * (y - lam * f), ddof=1) / n
    df = n / float((wn**2).mean()) - 1  # Kish: what unequal weights leave of n
    half = stats.t.ppf(1 - alpha / 2, max(df, 1.0)) * math.sqrt(sigma2)
    low, high = estimate - half, estimate + half
    labels_var = np.var(wn * y, ddof=1) / n
    effective = float(n * labels_var / sigma2) if sigma2 > 0 else float(n)
    return Estimate(
        clip(estimate), (clip(low), clip(high)), exact, n, effective, lam, "prediction-powered (PPI++)"
    )


def _stratified(y, f, fu, alpha, strata, strata_unlabelled, bounds) -> Estimate:
    """`prediction_powered` for a stratified audit: the stratified PPI++ estimate and its floored variance (the
    module's docstring); the labels-only interval is the same at λ = 0."""
    n = len(y)
    if len(strata) != n or len(strata_unlabelled) != len(fu):
        raise ValueError("prediction_powered: one stratum per task, labelled and unlabelled")
    names = np.unique(strata)
    missing = set(np.unique(strata_unlabelled)) - set(names)
    if missing:
        raise ValueError(f"prediction_powered: strata without a label: {sorted(map(str, missing))[:5]}")
    sizes = np.array([(strata == h).sum() + (strata_unlabelled == h).sum() for h in names], dtype=float)
    share = sizes / sizes.sum()
    # each labelled task's weight, its stratum's share over its labels (mean 1): for λ and the exact interval
    w = np.empty(n)
    for h, s in zip(names, share, strict=True):
        w[strata == h] = s / (strata == h).sum()
    w = w / w.mean()
    exact = labels_only_interval(y, alpha, w)
    labels_mean = _clip((w * y).mean(), bounds)
    if n < MIN_NORMAL:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, f"labels only (exact): {n} labels")

    def form(lam: float) -> tuple[float, float, float]:
        """(estimate, variance, Satterthwaite's degrees of freedom) at λ."""
        estimate, variance, df = _rectifier(y - lam * f, lam * f, strata, names, share, bounds)
        for h, s in zip(names, share, strict=True):
            fh = fu[strata_unlabelled == h]
            estimate += s * lam * fh.mean() if len(fh) else 0.0
            variance += s**2 * lam**2 * np.var(fh, ddof=1) / len(fh) if len(fh) > 1 else 0.0
        return estimate, variance, df

    lam = tuned_lambda(y, f, fu, w, _stratum_weights(strata_unlabelled, names, share))
    if np.ptp(y) == 0 or np.ptp(y - lam * f) == 0:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, "labels only (exact): no variation")
    method = f"prediction-powered (stratified PPI++, {len(names)} strata)"
    return _t_estimate(form(lam), form(0.0), n, lam, method, alpha, bounds)


def _clip(value: float, bounds: tuple[float, float]) -> float:
    return float(min(max(value, bounds[0]), bounds[1]))


def _t_estimate(powered, labels_only, n: int, lam: float, method: str, alpha: float, bounds) -> Estimate:
    """The Estimate from (estimate, variance, degrees of freedom) at the tuned λ and at λ = 0 (the labels-only
    interval of the same design): t intervals clipped to `bounds`, and what the verdicts were worth in labels."""

    def interval(estimate: float, variance: float, df: float) -> tuple[float, float]:
        half = stats.t.ppf(1 - alpha / 2, df) * math.sqrt(variance)
        return _clip(estimate - half, bounds), _clip(estimate + half, bounds)

    effective = float(n * labels_only[1] / powered[1]) if powered[1] > 0 else float(n)
    return Estimate(
        _clip(powered[0], bounds), interval(*powered), interval(*labels_only), n, effective, lam, method
    )


def _rectifier(residual, prediction, strata, names, share, bounds) -> tuple[float, float, float]:
    """Σ_h W_h mean_h(residual), its variance Σ_h W_h² s̃²_h / n_h with the floors of the module's docstring, and
    Satterthwaite's degrees of freedom for it."""
    pooled = np.var(residual, ddof=1)
    estimate, terms = 0.0, []
    for h, s in zip(names, share, strict=True):
        r = residual[strata == h]
        spread = max(np.var(r, ddof=1) if len(r) > 1 else 0.0, pooled)
        # never below Agresti–Caffo's: one pseudo-label Y = 0 and one Y = 1 at the stratum's mean prediction. It
        # binds where the audit saw no label contradict the predictions (a stratum whose labels all agree, or
        # saturated posteriors right on every audited task): such a stratum is not known exactly
        centre = prediction[strata == h].mean()
        spread = max(spread, np.var(np.concatenate([r, [bounds[0] - centre, bounds[1] - centre]]), ddof=1))
        estimate += s * r.mean()
        terms.append((s**2 * spread / len(r), max(len(r) - 1, 1)))
    variance = sum(t for t, _ in terms)
    df = variance**2 / sum(t**2 / d for t, d in terms) if variance > 0 else 1.0
    return estimate, variance, df


def workload_mean(y, f, f_all, weights=None, alpha: float = 0.1, bounds=(0.0, 1.0)) -> Estimate:
    """The mean of Y over a finite workload: every task's prediction f is known (`f_all`, the audited tasks' too),
    Y on the audited ones (`y`, `f`), drawn with inverse inclusion weights `weights` (`audit propose`'s: a
    stratum's size over its sample; None: a simple random sample).

    The mean of λ f over the workload is then known exactly, and only the rectifier is estimated:
    θ̂ = λ mean_all(f) + Σ_h W_h mean_h(Y − λ f), with the variance of `_rectifier` (the strata's floors). The
    strata are read off the weights (the tasks of one stratum share its weight; two strata sampled at the same
    rate are taken as one, which only forgoes a little precision) and W_h is the Hájek share Σ_h w / Σ w. The
    finite-population correction is left out (conservative). Fewer than MIN_NORMAL labels, or labels that all
    agree: the exact labels-only interval."""
    y, f, fa = (np.asarray(a, dtype=float) for a in (y, f, f_all))
    n = len(y)
    if n == 0 or len(f) != n or len(fa) < n:
        raise ValueError(
            "workload_mean: audited tasks with a prediction each, among the workload's, are needed"
        )
    w = _weights(weights, n)
    exact, labels_mean = labels_only_interval(y, alpha, w), _clip((w * y).mean(), bounds)
    if n < MIN_NORMAL:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, f"labels only (exact): {n} labels")
    lam = tuned_lambda(y, f, fa, w)
    if np.ptp(y) == 0 or np.ptp(y - lam * f) == 0:
        return Estimate(labels_mean, exact, exact, n, float(n), 0.0, "labels only (exact): no variation")
    strata = np.round(w, 9)
    names = np.unique(strata)
    share = np.array([w[strata == h].sum() for h in names]) / w.sum()
    rect, sigma2, df = _rectifier(y - lam * f, lam * f, strata, names, share, bounds)
    only = _rectifier(y, np.zeros(n), strata, names, share, bounds)
    method = "prediction-powered (PPI++" + (f", {len(names)} strata)" if len(names) > 1 else ")")
    return _t_estimate((lam * fa.mean() + rect, sigma2, df), only, n, lam, method, alpha, bounds)


def workload_ratio(a, g, a_f, g_f, a_all, g_all, weights=None, alpha: float = 0.1) -> Estimate | None:
    """The ratio Σ a / Σ g over a finite workload, where g in [0, 1] says how much a task belongs to the
    subpopulation (a judge's FNR: g = [the truth is the positive class], a = g × the share of its votes there that
    say negative): a mean of Y over the tasks whose truth is a class, a class no prediction knows for sure.

    `a`, `g`: on the audited tasks; `a_f`, `g_f`: their predictions there (g's: the label-free posterior of the
    class; a's: the same times what is known of the task, its votes); `a_all`, `g_all`: the predictions on every
    task of the workload. Linearised (a Z-estimator, as PPI does any M-estimation): θ solves E[a − θ g] = 0.
    At the ratio of the two prediction-powered means, θ₀ = Â / Ĝ, the quantity z = a − θ₀ g (prediction
    a_f − θ₀ g_f) has a mean E[z] = E[a] − θ₀ E[g], so θ = θ₀ + E[z] / E[g]: `workload_mean` of z (its
    interval, weights and strata) divided by Ĝ gives θ's estimate (a one-step correction of θ₀) and interval.
    The delta method leaves out Ĝ's own uncertainty, second order where E[z] is near 0, as it is at θ₀. The
    labels-only interval beside it is Clopper–Pearson's on the audited tasks of the subpopulation. Fewer than
    MIN_NORMAL audited tasks in it (Σ g): that exact interval alone. None where no audited task is in it."""
    a, g, a_f, g_f, a_all, g_all = (np.asarray(v, dtype=float) for v in (a, g, a_f, g_f, a_all, g_all))
    w = _weights(weights, len(a))
    inside = g > 0
    if not inside.any():
        return None
    share = a[inside] / g[inside]
    exact = labels_only_interval(share, alpha, w[inside] * g[inside])
    labels_ratio = _clip((w * a).sum() / (w * g).sum(), (0.0, 1.0))
    n = int(inside.sum())
    if g.sum() < MIN_NORMAL:
        return Estimate(labels_ratio, exact, exact, n, float(n), 0.0, f"labels only (exact): {n} labels")
    big_a = workload_mean(a, a_f, a_all, weights, alpha).estimate
    big_g = workload_mean(g, g_f, g_all, weights, alpha).estimate
    if big_g <= 0:
        return Estimate(labels_ratio, exact, exact, n, float(n), 0.0, "labels only (exact): no variation")
    theta = big_a / big_g
    z = workload_mean(
        a - theta * g, a_f - theta * g_f, a_all - theta * g_all, weights, alpha, bounds=(-theta, 1.0 - theta)
    )
    if z.method.startswith("labels only"):
        return Estimate(labels_ratio, exact, exact, n, float(n), 0.0, z.method)
    # Student's t at the subpopulation's labels, not the whole audit's: its n labels carry the information
    widen = stats.t.ppf(1 - alpha / 2, max(g.sum() - 1, 1)) / stats.t.ppf(1 - alpha / 2, len(a) - 1)
    move = lambda v: _clip(theta + (z.estimate + widen * (v - z.estimate)) / big_g, (0.0, 1.0))  # noqa: E731
    return Estimate(
        move(z.estimate),
        (move(z.ci[0]), move(z.ci[1])),
        exact,
        n,
        z.effective_labels * n / len(a),  # in labels of the subpopulation
        z.lam,
        z.method + ", a ratio (linearised)",
    )


def _stratum_weights(strata_unlabelled, names, share) -> np.ndarray:
    """The unlabelled tasks' weights: their stratum's share over its unlabelled count (mean 1 after `_weights`)."""
    w = np.ones(len(strata_unlabelled))
    for h, s in zip(names, share, strict=True):
        members = strata_unlabelled == h
        if members.any():
            w[members] = s / members.sum()
    return w


def label_budget(
    half_width: float = 0.03,
    alpha: float = 0.1,
    y=None,
    f=None,
    f_unlabelled=None,
    label_free_interval: tuple[float, float] | None = None,
    assurance: float = 0.85,
) -> int | None:
    """How many labels in all give an interval of ± `half_width` at level 1 − α.

    With an audit (`y`, `f`, `f_unlabelled`): the smallest n with z² (Var(λ f)/N + V/n) ≤ w², λ the current
    audit's and V its residual variance Var(Y − λ f) at its upper `assurance` bound (χ² on the audit's n − 1
    degrees of freedom): a budget at the point estimate would fall short about half the time, this one in
    about 1 − assurance of draws. None where the predictions' own variance already exceeds w² (no number of
    labels reaches it). Without one: the labels-only worst case over the label-free interval,
    z² p(1 − p)/w² at the p in the interval nearest 1/2 (0.25 with no interval): the predictions are not
    trusted before any label has checked them."""
    z2 = stats.norm.ppf(1 - alpha / 2) ** 2
    if y is None:
        low, high = label_free_interval or (0.0, 1.0)
        p = min(max(0.5, low), high)
        return math.ceil(z2 * p * (1 - p) / half_width**2)
    y, f, fu = (np.asarray(a, dtype=float) for a in (y, f, f_unlabelled))
    lam, n = tuned_lambda(y, f, fu), len(y)
    room = half_width**2 / z2 - np.var(lam * fu, ddof=1) / len(fu)
    if room <= 0:
        return None
    residual = np.var(y - lam * f, ddof=1) * (n - 1) / stats.chi2.ppf(1 - assurance, n - 1)
    return max(n, math.ceil(residual / room))
