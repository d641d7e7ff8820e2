"""Prediction-powered estimates (tasks/aggregate/prediction_powered.py): pinned to `ppi_py`'s numbers on a shared
fixture, and their claims shown over many random draws — the 90 % interval covers the truth in ≥ 88 % of draws
on families of predictions good, saturated, useless and misleading, audited at random or stratified; it is
narrower than the labels-only interval where the predictions track the truth and never much wider where they do
not; at a handful of labels it is the exact labels-only interval, never zero wide; and the label budget's labels
reach the asked half-width."""

from __future__ import annotations

import numpy as np
import pytest

from judgeops.tasks.aggregate.prediction_powered import (
    MIN_NORMAL,
    label_budget,
    labels_only_interval,
    ppi_mean,
    prediction_powered,
    workload_mean,
    workload_ratio,
)
from judgeops.tasks.aggregate.synthetic import (
    PREDICTION_FAMILIES,
    audit_sample,
    inclusion_weights,
    prediction_family,
)


def shared_fixture(signal: float):
    """No random numbers: the same arrays wherever it runs (ppi_py computed the pinned values on these)."""
    i, j = np.arange(40), np.arange(400)
    y = ((i * 7) % 10 < 7).astype(float)
    f = 0.2 + signal * y + 0.8 * ((i * 37 % 11) / 10 - 0.5)
    yu = ((j * 7) % 10 < 7).astype(float)
    fu = 0.2 + signal * yu + 0.8 * ((j * 37 % 11) / 10 - 0.5)
    return y, f, fu, 1.0 + (i % 3), 1.0 + 0.5 * (j % 4)


# ppi_py 0.2.3: ppi_mean_pointestimate and ppi_mean_ci(alpha=0.1) on shared_fixture(signal), with lam=None (PPI++),
# lam=1 (PPI) and lam=None with w and w_unlabeled
PPI_PY = {
    (0.6, "tuned"): (0.7090691220631866, 0.6265980389436906, 0.7915402051826826),
    (0.6, "ppi"): (0.7106, 0.6259807117875782, 0.7952192882124218),
    (0.6, "weighted"): (0.6816209764918626, 0.6080794766892652, 0.75516247629446),
    (0.1, "tuned"): (0.7042326755095918, 0.5883551404671277, 0.8201102105520559),
    (0.1, "ppi"): (0.7106, 0.5868377426555909, 0.8343622573444092),
    (0.1, "weighted"): (0.6885951682771678, 0.5724135506980814, 0.8047767858562542),
}


@pytest.mark.parametrize(("signal", "form"), list(PPI_PY))
def test_the_estimate_and_interval_are_ppi_pys(signal, form):
    y, f, fu, w, wu = shared_fixture(signal)
    kwargs = {"ppi": {"lam": 1.0}, "weighted": {"w": w, "w_unlabelled": wu}}.get(form, {})
    estimate, (low, high), lam = ppi_mean(y, f, fu, alpha=0.1, **kwargs)
    assert (estimate, low, high) == pytest.approx(PPI_PY[signal, form], abs=1e-9)
    # the tuned λ, interior where the predictions help only part-way (ppi_py's estimates above depend on it)
    expected = {
        (0.6, "tuned"): 0.855577553130795,
        (0.1, "tuned"): 0.3993090103388567,
        (0.1, "weighted"): 0.8147168531114372,
    }
    assert lam == pytest.approx(expected.get((signal, form), 1.0), abs=1e-9)


DRAWS = 400  # per family: the share covering known to ±1.5 points (1 sd at 0.9); bench/prediction_powered.py: 1,500


def estimate(design, y, f, picked, strata):
    rest = np.setdiff1d(np.arange(len(y)), picked)
    if design == "random":
        return prediction_powered(y[picked], f[picked], f[rest], 0.1)
    if design == "weights":
        return prediction_powered(y[picked], f[picked], f[rest], 0.1, *inclusion_weights(strata, picked))
    return prediction_powered(
        y[picked], f[picked], f[rest], 0.1, strata=strata[picked], strata_unlabelled=strata[rest]
    )


@pytest.mark.parametrize(("design", "k"), [("random", 50), ("strata", 25), ("strata", 50)])
def test_the_90_percent_interval_covers_the_truth_on_every_family(design, k):
    """A guard (the full grid, k = 25, 50, 100 at 1,500 draws each, is bench/prediction_powered.py's): the share
    of draws covering the truth within 2.5 sd of 90 %, and the width against the labels-only one of the same
    labels and design. The stratified audit at k = 25 puts 6 labels on three quarters of the workload: the
    stratified form with its floors (the weights alone covered 0.85 of draws on saturated posteriors there)."""
    rng = np.random.default_rng(50 + k + (design != "random"))
    shares, ratios = {}, {}
    for family in PREDICTION_FAMILIES:
        covered, widths = 0, []
        for _ in range(DRAWS):
            y, f = prediction_family(family, rng)
            picked, strata = audit_sample(rng, f, k, design != "random")
            est = estimate(design, y, f, picked, strata)
            covered += est.ci[0] <= y.mean() <= est.ci[1]
            widths.append((est.ci[1] - est.ci[0]) / (est.labels_only_ci[1] - est.labels_only_ci[0]))
        shares[family], ratios[family] = covered / DRAWS, float(np.mean(widths))
    assert min(shares.values()) >= 0.865, shares
    assert ratios["calibrated"] <= 0.85, ratios  # the verdicts are worth labels
    assert max(ratios.values()) <= 1.05, ratios  # and cost next to none where they are not


def test_a_stratum_whose_few_labels_all_agree_is_not_known_exactly():
    """Six labels on 1,500 tasks, all right; the other stratum's predictions near-perfect, so the pooled variance
    is tiny too: the big stratum's own variance is zero, its Agresti–Caffo floor (6 ones, a 0 and a 1) is not."""
    rng = np.random.default_rng(3)
    strata = np.repeat([0, 1], [500, 1500])
    y = (rng.random(2000) < np.where(strata == 0, 0.7, 0.9)).astype(float)
    f = np.where(strata == 0, 0.05 + 0.9 * y, 0.995)
    picked = np.concatenate([np.flatnonzero(strata == 0)[:19], np.flatnonzero((strata == 1) & (y == 1))[:6]])
    rest = np.setdiff1d(np.arange(2000), picked)
    est = prediction_powered(
        y[picked], f[picked], f[rest], strata=strata[picked], strata_unlabelled=strata[rest]
    )
    assert est.method == "prediction-powered (stratified PPI++, 2 strata)"
    floor = 0.75 * np.sqrt(0.125 / 6)  # the big stratum's share times its floored standard error
    assert est.estimate - est.ci[0] >= 1.6 * floor  # (its upper end is clipped at 1)
    assert est.ci[0] <= y.mean() <= est.ci[1]
    with pytest.raises(ValueError, match="strata without a label"):
        prediction_powered(y[:5], f[:5], f[5:], strata=strata[:5], strata_unlabelled=strata[5:])


def test_a_handful_of_labels_gets_the_exact_labels_only_interval_never_zero_wide():
    f_rest = np.full(500, 0.99)
    for y in (np.ones(5), np.ones(MIN_NORMAL + 2)):  # too few; all right and all predicted alike
        est = prediction_powered(y, np.full(len(y), 0.99), f_rest)
        assert est.method.startswith("labels only (exact)") and est.ci == est.labels_only_ci
        assert est.ci[1] == 1.0 and est.ci[0] < 0.85  # 5 of 5: [0.55, 1] at 90 %
    low, high = labels_only_interval(np.array([1.0, 0, 1, 1]))
    assert 0 < low < 0.75 < high < 1
    # a share (a position-biased judge right on exactly one of each task's two votes): no variation, yet no
    # zero-width interval — the run's data contract refused [0.5, 0.5] (data_contracts/suites.py, estimates)
    # labels all 1 under unequal weights: the mean of the normalised weights is 1 + 2e-16, the estimate not (the
    # run's contract refused first_share = 1.0000000000000002)
    weights = np.array([12.7, 12.7, 7.1, 40.2, 12.7, 12.7, 12.7, 7.1, 2.5, 40.2, 40.2, 1.0])
    for est in (
        workload_mean(np.ones(12), np.full(12, 0.9), np.full(200, 0.9), weights),
        prediction_powered(np.ones(12), np.full(12, 0.9), np.full(200, 0.9), 0.1, weights, np.ones(200)),
    ):
        assert est.estimate <= 1.0 and est.ci[1] <= 1.0
    halves = prediction_powered(np.full(30, 0.5), np.full(30, 0.7), np.full(300, 0.7))
    assert halves.method == "labels only (exact): no variation"
    assert halves.ci[0] < 0.4 and halves.ci[1] > 0.6


def test_the_label_budget_reaches_the_half_width_it_promises():
    rng = np.random.default_rng(7)
    reached, asked = [], []
    for _ in range(300):
        y, f = prediction_family("calibrated", rng, n_tasks=5000)
        first = rng.choice(len(y), 50, replace=False)
        rest = np.setdiff1d(np.arange(len(y)), first)
        need = label_budget(0.03, 0.1, y[first], f[first], f[rest])
        if need is None:
            continue
        more = np.concatenate([first, rng.choice(rest, need - 50, replace=False)])
        est = prediction_powered(y[more], f[more], f[np.setdiff1d(np.arange(len(y)), more)])
        reached.append((est.ci[1] - est.ci[0]) / 2 <= 0.03)
        asked.append(need)
    assert len(reached) >= 250 and np.mean(reached) >= 0.85, (np.mean(reached), np.median(asked))
    # without an audit: the labels-only worst case over the label-free interval
    assert label_budget(0.03, 0.1) == 752 and label_budget(0.03, 0.1, label_free_interval=(0.9, 0.97)) == 271


@pytest.mark.parametrize("stratified", [False, True])
def test_a_judge_s_error_rate_among_the_tasks_of_one_class_is_covered(stratified):
    """A judge's FNR (`workload_ratio`): the share of its votes that say negative among the tasks whose truth is
    positive, where which tasks are positive is itself only predicted. Over 300 audits of 60 tasks on workloads
    drawn afresh (positives 20-60 %, the posterior sharp or vague, the judge's FNR 5-40 %), the 90 % interval
    covers the workload's own FNR within 2.5 sd of 90 %, and is narrower than the labels alone where the
    posterior is informative."""
    rng = np.random.default_rng(11 + stratified)
    covered, ratios = [], []
    for _ in range(300):
        n_tasks, prevalence, fnr, sharp = (
            1500,
            rng.uniform(0.2, 0.6),
            rng.uniform(0.05, 0.4),
            rng.uniform(1, 4),
        )
        positive = (rng.random(n_tasks) < prevalence).astype(float)
        p = 1 / (
            1 + np.exp(-sharp * (2 * positive - 1) - rng.normal(0, 1, n_tasks))
        )  # the posterior of positive
        says_negative = np.where(positive == 1, rng.random(n_tasks) < fnr, rng.random(n_tasks) < 0.8).astype(
            float
        )
        picked, strata = audit_sample(rng, p, 60, stratified)
        w = inclusion_weights(strata, picked)[0] if stratified else None
        est = workload_ratio(
            positive[picked] * says_negative[picked],
            positive[picked],
            p[picked] * says_negative[picked],
            p[picked],
            p * says_negative,
            p,
            w,
        )
        truth = says_negative[positive == 1].mean()
        covered.append(est.ci[0] <= truth <= est.ci[1])
        ratios.append((est.ci[1] - est.ci[0]) / (est.labels_only_ci[1] - est.labels_only_ci[0]))
    assert np.mean(covered) >= 0.865, np.mean(covered)
    assert np.mean(ratios) <= 1.0, np.mean(ratios)
    # no audited task of the class: no number; a handful: the exact interval on them alone
    assert (
        workload_ratio(
            np.zeros(20), np.zeros(20), np.zeros(20), np.full(20, 0.1), np.zeros(99), np.full(99, 0.1)
        )
        is None
    )
    few = workload_ratio(
        np.r_[1.0, 0, 0], np.r_[1.0, 1, 0], np.r_[0.5, 0.5, 0], np.r_[0.9, 0.9, 0.2], np.ones(50), np.ones(50)
    )
    assert few.method == "labels only (exact): 2 labels" and few.ci[0] < 0.5 < few.ci[1]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="labelled tasks"):
        ppi_mean([], [], [0.5])
    with pytest.raises(ValueError, match="positive finite"):
        ppi_mean([1.0, 0.0], [0.9, 0.1], [0.5], w=[1.0, -1.0])
