"""Perturbation consistency, the consistency-weighted vote, position-aware Dawid–Skene and auto: pinned on
hand-checkable fixtures, against ground truth on the synthetic regimes (vi) and (vii) with known
parameters, and auto's guard (never more than a point below majority vote) on every fixed regime."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from judgeops.tasks.aggregate import get_aggregator
from judgeops.tasks.aggregate.auto import CHOICES, SCORES
from judgeops.tasks.aggregate.consistency import consistency_signals, implied_accuracy, pairwise_agreement
from judgeops.tasks.aggregate.synthetic import REGIMES, best_single_judge, make_panel

warnings.filterwarnings("ignore", category=UserWarning)


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def fixture() -> pd.DataFrame:
    """Two items × two presentations × two orders. Judge a never changes its mind; b always picks the
    first shown; c changes with the presentation on item 1 only."""
    rows = []
    for item, truth in ((1, "A"), (2, "B")):
        for pres in ("plain", "padded"):
            for run in ("AB", "BA"):
                first = run[0]
                c = truth if (item == 2 or pres == "plain") else {"A": "B", "B": "A"}[truth]
                for worker, label in (("a", truth), ("b", first), ("c", c)):
                    rows.append(
                        {"task": f"{item}:{pres}", "item": item, "worker": worker, "run": run, "label": label}
                    )
    return pd.DataFrame(rows)


def test_signals_on_a_hand_checked_fixture():
    sig = consistency_signals(fixture()).set_index("worker")
    # a: every pair agrees; b: the two orders always disagree, presentations (same order) always agree
    assert sig.loc["a", "order_consistency"] == 1.0 and sig.loc["a", "presentation_consistency"] == 1.0
    assert sig.loc["b", "order_consistency"] == 0.0 and sig.loc["b", "presentation_consistency"] == 1.0
    assert sig.loc["b", "position_bias"] == 1.0 and sig.loc["a", "position_bias"] == 0.5
    # c: orders always agree (4 tasks, 4 pairs); presentations agree on item 2 only (2 of 4 pairs)
    assert sig.loc["c", "order_pairs"] == 4 and sig.loc["c", "order_consistency"] == 1.0
    assert sig.loc["c", "presentation_pairs"] == 4 and sig.loc["c", "presentation_consistency"] == 0.5
    assert sig.loc["c", "agreement"] == pytest.approx(6 / 8)
    assert sig.loc["b", "weight"] == pytest.approx(
        np.log(implied_accuracy(0.5) / (1 - implied_accuracy(0.5)))
    )


def test_implied_accuracy_inverts_the_agreement_of_independent_runs():
    q = np.array([0.5, 0.6, 0.8, 0.95])
    assert np.allclose(implied_accuracy(q**2 + (1 - q) ** 2), q)
    assert implied_accuracy(0.3) == 0.5  # below ½ agreement: no evidence, not a negative accuracy
    agree, pairs = pairwise_agreement(np.array([4]), np.array([3]))
    assert (agree[0], pairs[0]) == (3.0, 6.0)


def test_the_signals_track_known_position_bias_and_accuracy():
    """(v): content per run right with probability a_j, else 'first shown' with probability b_j. Share of
    first shown = b + (1 − b)/2; agreement of the two orders = b·(stuff) — checked against simulation."""
    panel = make_panel("below_chance_order", n_tasks=4000, seed=3)
    sig = consistency_signals(panel.votes).set_index("worker")
    for judge, b in panel.params["position_bias"].items():
        assert sig.loc[judge, "position_bias"] == pytest.approx(b + (1 - b) / 2, abs=0.02)


def test_cwv_and_ds_position_follow_the_stable_judge_in_regime_vi():
    panel = make_panel("adversarial_surface", n_tasks=1800, seed=1)
    mv = accuracy(get_aggregator("mv").fit_predict(panel.votes), panel.truth)
    best = best_single_judge(panel)
    cwv = accuracy(get_aggregator("cwv").fit_predict(panel.votes), panel.truth)
    pds = accuracy(get_aggregator("ds_position").fit_predict(panel.votes), panel.truth)
    assert mv < 0.5  # most judges follow the cue to the wrong answer (measured 0.41)
    assert cwv >= best - 0.02 and pds >= best - 0.01  # measured 0.975, 0.994 vs best 0.992
    assert pds >= mv + 0.2


def test_the_dependence_correction_discounts_a_clique_in_regime_vii():
    panel = make_panel("clique_shared_bias", n_tasks=1800, seed=1)
    corrected = get_aggregator("cwv").fit(panel.votes)
    plain = get_aggregator("cwv", dependence=False).fit(panel.votes)
    clique = [j for j, b in panel.params["cue"].items() if b > 0]
    others = [j for j in corrected.multiplicity_.index if j not in clique]
    assert corrected.multiplicity_[clique].min() > corrected.multiplicity_[others].max()
    assert accuracy(corrected.labels_, panel.truth) > accuracy(plain.labels_, panel.truth) + 0.05
    assert accuracy(corrected.labels_, panel.truth) >= best_single_judge(panel) - 0.01


def test_ds_position_recovers_position_bias_and_absorbs_order_driven_votes():
    panel = make_panel("below_chance_order", n_tasks=3000, seed=2)
    fit = get_aggregator("ds_position").fit(panel.votes)
    for judge, b in panel.params["position_bias"].items():
        assert fit.position_bias_[judge] == pytest.approx(b + (1 - b) / 2, abs=0.02)
    # a judge that always says "first shown" carries no evidence: its fitted confusion ignores the truth
    votes = pd.concat(
        [
            panel.votes,
            panel.votes[panel.votes["worker"] == "j0"].assign(
                worker="always_first", label=lambda d: np.where(d["run"] == "AB", "A", "B")
            ),
        ]
    )
    errors = get_aggregator("ds_position").fit(votes).errors_.loc["always_first"]
    assert abs(errors.loc["first_class_first", "A"] - errors.loc["first_class_first", "B"]) < 0.01


@pytest.mark.parametrize("regime", REGIMES)
def test_auto_is_never_more_than_a_point_below_majority_vote(regime):
    panel = make_panel(regime, n_tasks=1200, seed=5)
    mv = accuracy(get_aggregator("mv").fit_predict(panel.votes), panel.truth)
    auto = get_aggregator("auto").fit(panel.votes)
    assert accuracy(auto.labels_, panel.truth) >= mv - 0.01
    assert auto.choice_ in (*CHOICES, SCORES) and auto.reason_  # SCORES: the votes carry graded scores


def test_auto_says_what_it_chose_and_why():
    auto = get_aggregator("auto").fit(make_panel("adversarial_surface", n_tasks=900, seed=0).votes)
    assert auto.choice_ == "ds_position+cwv"
    assert "keeps its verdict best" in auto.reason_ and auto.evidence_["best_implied_accuracy"] > 0.9
    votes = make_panel("independent", n_tasks=900, seed=0).votes
    plain = get_aggregator("auto").fit(votes.drop(columns="score"))  # labels only
    assert plain.choice_ == "dawid_skene" and "conditionally independent" in plain.reason_
    scored = get_aggregator("auto").fit(votes)  # the graded scores beside the votes
    assert scored.choice_ == "care_tensor" and "scores say more than their votes" in scored.reason_
    clique = get_aggregator("auto").fit(make_panel("many_weak_correlated", n_tasks=900, seed=0).votes)
    assert clique.choice_ == "cwv" and "err in correlated groups" in clique.reason_
    assert clique.evidence_["effective_judges"] < clique.evidence_["n_judges"]


def test_families_draw_different_parameters_per_seed_and_record_them():
    one = make_panel("clique_shared_bias", n_tasks=300, seed=1, family=True)
    two = make_panel("clique_shared_bias", n_tasks=300, seed=2, family=True)
    assert one.params["family"] and one.params["content"] != two.params["content"]
    again = make_panel("clique_shared_bias", n_tasks=300, seed=1, family=True)
    pd.testing.assert_frame_equal(one.votes, again.votes)
    assert set(one.votes["presentation"]) == {"plain", "polished", "padded"}
    assert set(one.votes["run"]) == {"AB", "BA"}
