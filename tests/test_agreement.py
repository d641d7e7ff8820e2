"""Judges and consensus against people, and people against each other: pinned against scikit-learn's Cohen's κ
and Krippendorff's published example, and as `judgeops audit apply` prints them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from judgeops.cli import main
from judgeops.tasks.aggregate.agreement import annotators, judge_vs_human, krippendorff_alpha
from judgeops.tasks.aggregate.synthetic import make_panel


def test_weighted_kappa_and_accuracy_are_scikit_learns_and_the_interval_holds_them():
    rng = np.random.default_rng(0)
    tasks = [f"t{i}" for i in range(200)]
    human = pd.Series(rng.choice(["A", "B"], 200, p=[0.7, 0.3]), index=tasks)
    weights = pd.Series(rng.uniform(0.5, 3.0, 200), index=tasks)
    said = np.where(rng.random(200) < 0.8, human, np.where(human == "A", "B", "A"))
    votes = pd.DataFrame({"task": tasks, "worker": "j", "label": said})
    row = judge_vs_human(votes, human, weights, n_boot=500).iloc[0]
    w = weights.to_numpy()
    assert row["kappa"] == pytest.approx(cohen_kappa_score(said, human, sample_weight=w), abs=1e-12)
    assert row["accuracy"] == pytest.approx(np.average(said == human.to_numpy(), weights=w), abs=1e-12)
    assert row["kappa_low"] < row["kappa"] < row["kappa_high"] and row["n_tasks"] == 200
    assert row["accuracy_high"] - row["accuracy_low"] < 0.15  # 200 tasks: a few points either side


def test_a_judge_that_always_says_the_majority_class_is_accurate_and_agrees_by_chance_only():
    human = pd.Series(["A"] * 90 + ["B"] * 10, index=[str(i) for i in range(100)])
    votes = pd.DataFrame({"task": human.index, "worker": "always_a", "label": "A"})
    row = judge_vs_human(votes, human, n_boot=200).iloc[0]
    assert row["accuracy"] == pytest.approx(0.9) and row["kappa"] == pytest.approx(0.0)


def test_a_judges_runs_all_count_and_a_consensus_is_scored_beside_it():
    human = pd.Series({"1": "A", "2": "B", "3": "A", "4": "B"})
    votes = pd.DataFrame(
        {"task": ["1", "1", "2", "2", "3", "3", "4", "4"], "worker": "j", "label": list("AAABAABB")}
    )
    consensus = {"mv": pd.Series({"1": "A", "2": "B", "3": "B", "4": "B", "5": "A"})}
    rows = judge_vs_human(votes, human, consensus=consensus, n_boot=100).set_index("who")
    assert rows.loc["j", "accuracy"] == pytest.approx(7 / 8) and rows.loc["j", "n_tasks"] == 4
    assert rows.loc["mv", "accuracy"] == pytest.approx(3 / 4) and rows.loc["mv", "kind"] == "consensus"


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the worked example with missing values:
# four observers, twelve units
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorffs_alpha_is_his_published_value_at_every_level(level, published):
    data = np.array(KRIPPENDORFF_2011, dtype=float)  # None → NaN: a value not given
    assert krippendorff_alpha(data, level) == pytest.approx(published, abs=5e-4)


def test_krippendorffs_alpha_at_its_edges():
    perfect = np.array([[1, 2, 3, 1], [1, 2, 3, 1]], dtype=float)
    assert krippendorff_alpha(perfect) == 1.0
    assert np.isnan(krippendorff_alpha(np.array([[1, 1, 1], [1, 1, 1]], dtype=float)))  # no variation
    assert np.isnan(krippendorff_alpha(np.array([[1, np.nan], [np.nan, 2]], dtype=float)))  # nothing pairs
    # two observers always apart on a binary label: systematic disagreement, α below 0
    assert krippendorff_alpha(np.array([[0, 1, 0, 1], [1, 0, 1, 0]], dtype=float)) < 0
    # nominal α does not depend on the codes' values; the raters' order and the units' order do not matter
    data = np.array(KRIPPENDORFF_2011, dtype=float)
    recoded = np.where(np.isnan(data), np.nan, 10 * data + 7)
    assert krippendorff_alpha(recoded) == pytest.approx(krippendorff_alpha(data), abs=1e-12)
    shuffled = data[::-1][:, np.random.default_rng(0).permutation(data.shape[1])]
    for level in ("nominal", "ordinal", "interval", "ratio"):
        assert krippendorff_alpha(shuffled, level) == pytest.approx(
            krippendorff_alpha(data, level), abs=1e-12
        )
    with pytest.raises(ValueError, match="level of measurement"):
        krippendorff_alpha(data, "cardinal")


def test_krippendorffs_alpha_is_his_published_example_and_conflicts_are_listed():
    """Krippendorff (2011), nominal data: α = 0.743, from people's labels in the audit's long form."""
    data = KRIPPENDORFF_2011
    long = pd.DataFrame(
        [
            (f"u{u}", f"r{r}", str(v))
            for r, row in enumerate(data)
            for u, v in enumerate(row)
            if v is not None
        ],
        columns=["task", "annotator", "label"],
    )
    people, adjudicated = annotators(long, n_boot=200)
    assert people.alpha == pytest.approx(0.743, abs=5e-4) and people.kappa is None
    assert people.n_annotators == 4 and people.n_tasks == 11  # u11 has one label only
    assert people.alpha_low < people.alpha < people.alpha_high
    assert people.conflicts == ["u1", "u5", "u7"]
    assert adjudicated["u1"] == "2" and np.isnan(adjudicated["u5"])  # 1, 2, 3, 4: no majority


def test_two_reviewers_in_the_audit_file_are_compared_and_their_majority_is_used(tmp_path, capsys):
    panel = make_panel("independent", n_tasks=300, seed=0)
    votes = tmp_path / "votes.csv"
    panel.votes[["task", "worker", "label"]].to_csv(votes, index=False)
    audited = panel.truth.iloc[:40]
    rows = [(t, "ann", lab) for t, lab in audited.items()]
    flipped = {t: ("B" if lab == "A" else "A") for t, lab in audited.iloc[:4].items()}
    rows += [(t, "bob", flipped.get(t, lab)) for t, lab in audited.items()]
    labels = tmp_path / "labels.csv"
    pd.DataFrame(rows, columns=["task", "annotator", "label"]).to_csv(labels, index=False)
    assert main(["audit", "apply", str(votes), "--labels", str(labels), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_labels"] == 36  # the four conflicts wait for adjudication
    people = out["annotators"]
    assert people["n_annotators"] == 2 and len(people["conflicts"]) == 4
    assert people["kappa"] == pytest.approx(people["alpha"], abs=0.05) and people["kappa"] > 0.7
    kinds = {(r["kind"], r["who"]) for r in out["human_agreement"]}
    assert ("consensus", "auto") in kinds and ("consensus", "mv") in kinds
    assert {w for k, w in kinds if k == "judge"} == set(panel.votes["worker"].astype(str))
    assert main(["audit", "apply", str(votes), "--labels", str(labels)]) == 0
    printed = capsys.readouterr().out
    assert "Krippendorff's α" in printed and "agreement with people" in printed


@pytest.mark.parametrize(
    "rows, field",
    [
        ([("0", "", "A"), ("1", "bob", "B")], "field 'annotator'"),
        ([("0", None, "A"), ("0", None, "B")], "is labelled twice"),
    ],
)
def test_an_audit_file_with_a_nameless_or_twice_labelled_row_is_one_line_naming_it(
    tmp_path, capsys, rows, field
):
    panel = make_panel("independent", n_tasks=50, seed=0)
    votes, labels = tmp_path / "votes.csv", tmp_path / "labels.csv"
    panel.votes[["task", "worker", "label"]].to_csv(votes, index=False)
    table = pd.DataFrame(rows, columns=["task", "annotator", "label"])
    (table if table["annotator"].notna().any() else table.drop(columns="annotator")).to_csv(
        labels, index=False
    )
    assert main(["audit", "apply", str(votes), "--labels", str(labels)]) == 2
    err = capsys.readouterr().err.strip()
    assert field in err and str(labels) in err and "\n" not in err and ("row 2" in err or "row 3" in err)
