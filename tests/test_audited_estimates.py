"""`judgeops audit apply`'s quotable numbers (tasks/aggregate/audited_estimates.py): every judge's and the
consensus's accuracy and the first class's share, prediction-powered from the audit's labels and every task's
verdicts, in text and `--json`, with a label budget and `--fail-under` gates; and the bad audits refused in one
line. Their coverage over many audit draws is bench/audited_estimates.py's (BENCHMARKS.md)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgeops.cli import main
from judgeops.tasks.aggregate.synthetic import make_panel

FIELDS = {"estimate", "ci", "labels_only_ci", "n_labels", "effective_labels", "lam", "method"}


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A 600-task panel whose best judge is order-sensitive beside a clique, its votes and truth as files, and a
    stratified audit of 50 tasks filled with the truth (as a person would)."""
    folder = tmp_path_factory.mktemp("audited")
    panel = make_panel("below_chance_order", n_tasks=600, seed=5)
    votes, truth, proposal = folder / "votes.csv", folder / "truth.csv", folder / "audit.csv"
    panel.votes[["task", "worker", "label", "run"]].to_csv(votes, index=False)
    panel.truth.rename_axis("task").reset_index().to_csv(truth, index=False)
    assert main(["audit", "propose", str(votes), "--k", "50", "--out", str(proposal)]) == 0
    filled = pd.read_csv(proposal)
    filled["label"] = filled["task"].map(panel.truth)
    filled.to_csv(proposal, index=False)
    return panel, votes, truth, proposal


def test_every_number_is_quoted_with_an_interval_that_covers_the_truth(audited, tmp_path, capsys):
    panel, votes, truth, proposal = audited
    out = tmp_path / "pred.csv"
    capsys.readouterr()
    assert main(["audit", "apply", str(votes), "--labels", str(proposal), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    estimates = summary["estimates"]
    # what --out wrote, scored on every task: the consensus's accuracy the estimate is about
    written = pd.read_csv(out).set_index("task")["label"]
    measured = float((written == panel.truth.reindex(written.index)).mean())
    consensus = estimates["consensus_accuracy"]
    assert set(consensus) == FIELDS and consensus["n_labels"] == 50
    assert consensus["ci"][0] <= measured <= consensus["ci"][1]
    assert consensus["ci"][1] - consensus["ci"][0] > 0.02  # never zero wide
    votes_frame = panel.votes
    right = (
        (votes_frame["label"] == votes_frame["task"].map(panel.truth)).groupby(votes_frame["worker"]).mean()
    )
    assert set(estimates["judges"]) == {str(j) for j in right.index}
    for judge, share in right.items():
        e = estimates["judges"][str(judge)]["accuracy"]
        assert set(e) == FIELDS and e["ci"][0] <= share <= e["ci"][1], (judge, share, e)
    # each judge's error rates, "A" the positive class (their coverage over draws: tests/test_prediction_powered.py)
    for judge, rows in votes_frame.groupby("worker"):
        truth_of = rows["task"].map(panel.truth)
        rates = estimates["judges"][str(judge)]
        for rate, says, truth_is in (("fpr", "A", "B"), ("fnr", "B", "A")):
            measured_rate = float((rows["label"][truth_of == truth_is] == says).mean())
            assert set(rates[rate]) == FIELDS and rates[rate]["method"].endswith("a ratio (linearised)")
            assert (
                rates[rate]["ci"][0] < rates[rate]["ci"][1]
                and abs(rates[rate]["estimate"] - measured_rate) < 0.2
            )
    first = float((panel.truth == "A").mean())
    assert summary["first_class"] == "A"
    assert estimates["first_share"]["ci"][0] <= first <= estimates["first_share"]["ci"][1]
    # pinned on this seed (the estimator is deterministic given the audit): a change in it shows here
    assert consensus["estimate"] == pytest.approx(0.802150, abs=1e-4)
    assert consensus["ci"] == pytest.approx([0.701497, 0.902803], abs=1e-5)
    # the label budget: labels in all for ± 0.03, more than the 50 there are
    budget = summary["label_budget"]
    assert budget["consensus_accuracy"] > 50 and all(n is None or n > 50 for n in budget["judges"].values())


def test_the_text_names_each_number_its_interval_and_its_budget(audited, capsys):
    _, votes, _, proposal = audited
    capsys.readouterr()
    assert main(["audit", "apply", str(votes), "--labels", str(proposal)]) == 0
    printed = capsys.readouterr().out
    assert "estimates from 50 labels and every task's verdicts (prediction-powered" in printed
    line = next(x for x in printed.splitlines() if x.strip().startswith("consensus accuracy:"))
    assert "[0.701, 0.903] (90 %; labels alone [" in line and "labels in all)" in line


def test_fail_under_gates_on_the_interval_s_lower_end(audited, capsys):
    _, votes, _, proposal = audited
    base = ["audit", "apply", str(votes), "--labels", str(proposal)]
    assert main([*base, "--fail-under", "consensus_accuracy_lo=0.7"]) == 0
    capsys.readouterr()
    assert main([*base, "--fail-under", "consensus_accuracy_lo=0.75", "--fail-under", "j4=0.5"]) == 2
    printed = capsys.readouterr().out.splitlines()
    assert (
        printed[-1] == "gate failed: the 90 % interval's lower end of consensus_accuracy is 0.701, under 0.75"
    )
    assert main([*base, "--fail-under", "consensus_accuracy_lo=0.75", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["gates_failed"]
    assert main([*base, "--fail-under", "nobody_lo=0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no estimate has that name; known: consensus_accuracy, first_share, j0" in err[0]


@pytest.mark.parametrize("case", ["no label", "only skips", "one label", "an unknown task", "one judge"])
def test_a_bad_audit_is_refused_in_one_line_and_nothing_is_written(audited, tmp_path, capsys, case):
    panel, votes, _, proposal = audited
    filled = pd.read_csv(proposal)
    if case == "no label":
        filled["label"] = np.nan
    elif case == "only skips":
        filled["label"] = "skip"
    elif case == "one label":
        filled.loc[1:, "label"] = np.nan
    elif case == "an unknown task":
        filled.loc[0, "task"] = 10_000
    else:
        votes = tmp_path / "one-judge.csv"
        panel.votes[panel.votes["worker"] == "j4"][["task", "worker", "label"]].to_csv(votes, index=False)
    labels, out = tmp_path / "labels.csv", tmp_path / "pred.csv"
    filled.to_csv(labels, index=False)
    capsys.readouterr()
    assert main(["audit", "apply", str(votes), "--labels", str(labels), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("judgeops audit: "), err
    assert not out.exists()


def test_propose_says_how_many_labels_before_any_label(audited):
    """Before an audit the predictions are not trusted: the labels-only worst case over the label-free interval
    (this panel's interval is [0, 1]: it cannot be read without labels, so p = 1/2 and 752 labels)."""
    from judgeops import api

    _, votes, _, _ = audited
    said = api.labels_to_ask(str(votes), 50)
    assert said.startswith("label budget: about 752 labels for the consensus's accuracy ± 0.03 (90 %)")
    assert "(702 more after these)" in said
