"""The accuracy of a consensus estimated without labels, and the identifiability diagnostic: against the truth of
synthetic panels with known parameters, and as `judgeops aggregate --json` prints them."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from judgeops.cli import main
from judgeops.tasks.aggregate import get_aggregator
from judgeops.tasks.aggregate.estimate import (
    audit_size,
    consensus_accuracy,
    identifiability,
    judge_accuracy,
    label_free_text,
    withheld,
)
from judgeops.tasks.aggregate.synthetic import Panel, make_panel

warnings.filterwarnings("ignore", category=UserWarning)


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def columns(votes: pd.DataFrame) -> pd.DataFrame:
    return votes[["task", "worker", "label", *[c for c in ("run", "item") if c in votes]]]


@pytest.mark.parametrize("regime", ["independent", "adversarial_surface", "versions"])
def test_where_the_reading_holds_the_estimate_is_within_two_points_and_its_interval_covers(regime):
    errors, covered = [], 0
    for seed in range(4):
        panel = make_panel(regime, n_tasks=900, seed=seed, family=True)
        auto = get_aggregator("auto").fit(columns(panel.votes))
        est = consensus_accuracy(auto, auto.labels_)
        true = accuracy(auto.labels_, panel.truth)
        errors.append(abs(est.estimate - true))
        covered += est.ci_low <= true <= est.ci_high
        assert est.ci_low <= est.estimate <= est.ci_high and est.n == panel.truth.size
    assert np.mean(errors) <= 0.02 and covered >= 3, (errors, covered)


@pytest.mark.parametrize("seed", [4, 7])
def test_versions_that_err_together_widen_the_interval_downward(seed):
    """Two to four versions of one model err together: every reading counts their agreement as more evidence
    than it is, and the estimate is optimistic (these draws: 0.974 for a true 0.955, 0.966 for 0.922, and the
    interval without the tempered reading started at 0.966 and 0.957). The tempered posterior is never more
    confident, and the interval now covers the truth."""
    from judgeops.tasks.aggregate.estimate import shared_error_multiplicity, tempered_posterior

    panel = make_panel("versions", n_tasks=1200, seed=seed, family=True)
    auto = get_aggregator("auto").fit(columns(panel.votes))
    p = auto.posteriors_[auto.choice_]
    m = shared_error_multiplicity(auto)
    assert m >= auto.evidence_["max_multiplicity"]  # the preferences share more than their votes show
    assert (abs(tempered_posterior(p, m) - 0.5) <= abs(p - 0.5) + 1e-12).all()
    est = consensus_accuracy(auto, auto.labels_)
    assert est.ci_low <= accuracy(auto.labels_, panel.truth) <= est.ci_high, est


def test_other_methods_and_judges_are_estimated_under_the_same_reading():
    panel = make_panel("versions", n_tasks=900, seed=2, family=True)
    votes = columns(panel.votes)
    auto = get_aggregator("auto").fit(votes)
    mv = get_aggregator("mv").fit(votes).labels_
    est = consensus_accuracy(auto, mv)  # a tie is no decision: it counts as wrong, as the scoring counts it
    assert abs(est.estimate - accuracy(mv, panel.truth)) <= 0.03
    judges = judge_accuracy(auto, votes).set_index("worker")
    joined = votes.merge(panel.truth.rename("truth"), left_on="task", right_index=True)
    true = (joined["label"] == joined["truth"]).groupby(joined["worker"]).mean()
    assert (judges["estimate"] - true).abs().max() <= 0.03
    assert judges["estimate"].idxmax() == true.idxmax()  # the strong judge is found without labels


def without_an_anchor(panel: Panel) -> Panel:
    """(x) without its order-sensitive LLM judge (j0): the reward models alone, whose consistency no judge can
    check (with j0, their accuracies are read off it: tests/test_consistency.py); other panels as they are."""
    if panel.params.get("regime") != "order_invariant_clique":
        return panel
    return Panel(panel.votes[panel.votes["worker"] != "j0"], panel.truth, panel.params)


@pytest.mark.parametrize(
    "regime, reason",
    [
        ("order_invariant_clique", "never changed with the display order"),
        ("many_weak_correlated", "err in correlated groups"),
    ],
)
def test_a_panel_that_labels_would_have_to_settle_is_named_with_how_many_to_audit(regime, reason):
    panel = without_an_anchor(make_panel(regime, n_tasks=900, seed=0, family=True))
    auto = get_aggregator("auto").fit(columns(panel.votes))
    ident = identifiability(auto, consensus_accuracy(auto, auto.labels_).estimate)
    assert not ident.identifiable and any(reason in r for r in ident.reasons)
    assert 20 <= ident.audit_k <= 900 and f"audit {ident.audit_k} items" in ident.warning


def test_good_judges_beside_a_clique_that_follows_a_confounder_are_flagged():
    """(xi) shown once: the clique outnumbers the good judges and follows a binary confounder; Dawid–Skene takes
    the confounder for the truth and is sure of it (estimate 1.00, truth about 0.5). The good judges agree with
    each other far beyond that consensus, and the panel is flagged."""
    panel = make_panel("binary_confounded", n_tasks=1200, seed=0, family=True)
    auto = get_aggregator("auto").fit(panel.votes[["task", "worker", "label"]])
    est = consensus_accuracy(auto, auto.labels_)
    assert auto.choice_ == "dawid_skene" and est.estimate > 0.95 > 0.6 > accuracy(auto.labels_, panel.truth)
    good = {n for n, load in panel.params["confounder"].items() if load < 1.0}
    ident = identifiability(auto, est.estimate)
    assert not ident.identifiable and any("beyond the consensus" in r for r in ident.reasons), ident.reasons
    assert set(auto.evidence_["agreeing_beyond"][:2]) <= good


@pytest.mark.parametrize(
    "regime, seed, alternative",
    [
        ("order_invariant_clique", 1, "chance"),  # reward models alone: estimate 0.99 (0.99–1.00), truth 0.54
        ("binary_confounded", 0, "chance"),  # estimate 1.00 (0.99–1.00), truth 0.49
        ("below_chance_order", 4, "mirror"),  # estimate 0.74 (0.67–0.79), truth 0.20
    ],
)
def test_an_unresolved_panel_s_interval_spans_the_readings_it_leaves_open(regime, seed, alternative):
    """Where the diagnostic names what the consensus may follow instead of the truth, the interval spans the
    consensus's accuracy under that alternative: down to chance (a second signal), or to the mirror image. On
    these draws the readings' own interval excluded the truth; the point estimate stays the reading's."""
    panel = without_an_anchor(make_panel(regime, n_tasks=1200, seed=seed, family=True))
    keep = ["task", "worker", "label", *[c for c in ("run", "item") if c in panel.votes]]
    auto = get_aggregator("auto").fit(panel.votes[keep])
    true = accuracy(auto.labels_, panel.truth)
    ident = identifiability(auto)
    assert ident.alternatives == [alternative], ident.reasons
    narrow = consensus_accuracy(auto, auto.labels_, ident.__class__(0.0, True))  # no alternative open
    wide = consensus_accuracy(auto, auto.labels_)
    assert not narrow.ci_low <= true <= narrow.ci_high, (narrow, true)
    assert wide.ci_low <= true <= wide.ci_high and wide.estimate == narrow.estimate, (wide, true)
    if alternative == "chance":
        assert wide.ci_low == pytest.approx(0.5 - 1.6448536 * 0.5 / np.sqrt(1200), abs=1e-6)
    else:
        assert wide.ci_low <= 1 - narrow.ci_high and wide.ci_high >= narrow.ci_high
        judges = judge_accuracy(auto, panel.votes[keep], ident)  # every judge's q ↦ 1 − q too
        assert (
            (judges["ci_low"] <= 1 - judges["estimate"]) & (1 - judges["estimate"] <= judges["ci_high"])
        ).all()


def test_a_resolvable_panel_gets_no_warning():
    panel = make_panel("versions", n_tasks=900, seed=0, family=True)
    auto = get_aggregator("auto").fit(columns(panel.votes))
    ident = identifiability(auto, 0.97)
    assert ident.identifiable and ident.warning == "" and ident.audit_k == 0 and ident.effective_judges > 3
    assert ident.alternatives == []  # and the interval is the readings' own


def test_the_audit_size_is_a_90_percent_margin_of_five_points():
    assert audit_size(0.5, 10_000) == 271  # 1.645² · ¼ / 0.05²
    assert audit_size(0.9, 10_000) == 98
    assert audit_size(0.99, 10_000) == 52 and audit_size(0.5, 50) == 50  # the estimate is taken as ≤ 0.95


def test_aggregate_json_prints_the_estimate_for_the_method_run(tmp_path, capsys):
    panel = make_panel("independent", n_tasks=60, seed=2, family=True)
    path = tmp_path / "votes.csv"
    columns(panel.votes).to_csv(path, index=False)
    for method in ("auto", "mv", "dawid_skene"):
        assert main(["aggregate", str(path), "--method", method, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        low, high = out["estimated_accuracy_ci"]
        # a 0.14-0.19-wide interval (60 tasks): bounds, the reason, the labels that would make a number; no point estimate
        assert out["estimated_accuracy"] is None and 0 <= low < high <= 1 and high - low > 0.10
        assert out["estimated_accuracy_withheld"].startswith("its 90 % interval is 0.1")
        assert out["label_budget"] > 100
        assert set(out["identifiability"]) == {
            "effective_judges",
            "identifiable",
            "reasons",
            "audit_k",
            "warning",
            "alternatives",
        }
        assert set(out["judges_estimated_accuracy"]) == set(panel.votes["worker"])
    assert main(["aggregate", str(path), "--method", "auto"]) == 0
    assert "label-free estimate: between 0." in capsys.readouterr().out


def test_a_label_free_accuracy_is_a_number_only_where_it_can_be_read_as_one():
    """Issue 46: a 50-point interval gates nothing, and the point estimate is the number people read."""
    assert withheld(0.90, 0.95) is None
    assert label_free_text(0.93, 0.90, 0.95) == "0.930 [0.900, 0.950] estimated without labels (90 %)"
    assert withheld(0.46, 0.99) == "its 90 % interval is 0.53 wide, over 0.10"
    assert withheld(0.90, 0.95, "a clique") == "the votes alone cannot pin it down (identifiability warning)"
    text = label_free_text(0.98, 0.46, 0.99, None)
    assert text.startswith("between 0.460 and 0.990 without labels, no point estimate") and "0.98" not in text
    assert (
        "about 752 audited labels make it ± 0.03" in text
    )  # the labels-only worst case, p = 1/2 in the interval


def test_scores_say_why_no_estimate(tmp_path, capsys):
    panel = make_panel("independent", n_tasks=200, seed=0)
    path = tmp_path / "scores.csv"
    panel.votes[["task", "worker", "score"]].to_csv(path, index=False)
    assert main(["aggregate", str(path), "--method", "avg", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "estimated_accuracy" not in out and "label votes" in out["estimated_accuracy_unavailable"]


def test_a_clique_read_from_the_scores_is_not_flagged_as_unresolvable():
    """(ii) shown once: on the votes alone the clique's shared error looks like the truth and the panel is flagged;
    with the scores beside them auto reads CARE-Tensor, whose second latent is the clique, and is right."""
    panel = make_panel("clique", n_tasks=900, seed=4, family=True)
    votes_only = get_aggregator("auto").fit(panel.votes[["task", "worker", "label"]])
    assert not identifiability(votes_only).identifiable
    scored = get_aggregator("auto").fit(panel.votes[["task", "worker", "label", "score"]])
    ident = identifiability(scored, consensus_accuracy(scored, scored.labels_).estimate)
    assert scored.choice_ == "care_tensor" and ident.identifiable, ident.reasons
    assert accuracy(scored.labels_, panel.truth) > 0.85
