"""`judgeops aggregate` on every input form a user brings (table-driven), and every bad input a clear error.

The same synthetic panel (regime vi: one stable strong judge, the rest fooled by a surface cue, every item in
both orders) is written with its labels spelled in each form; every method must give the same decisions up
to the renaming, and scoring against truth spelled the same way must give the same accuracy."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from judgeops.cli import main
from judgeops.tasks.aggregate import AGGREGATORS
from judgeops.tasks.aggregate.synthetic import make_panel

FORMS = {  # name → how "A" and "B" are spelled
    "A/B": ("A", "B"),
    "0/1 integers": (1, 0),
    "yes/no": ("yes", "no"),
    "true/false booleans": (True, False),
    "free strings": ("output_1 better", "output_2 better"),
}
LABEL_METHODS = sorted(m for m, kind in AGGREGATORS.items() if kind == "label" or m.startswith("care"))


@pytest.fixture(scope="module")
def panel():
    return make_panel("adversarial_surface", n_tasks=240, seed=3)


def write(tmp_path, panel, form: str, with_run: bool = True):
    first, second = FORMS[form]
    spell = {"A": first, "B": second}
    cols = ["task", "worker", "label", "run"] if with_run else ["task", "worker", "label"]
    votes = panel.votes[cols].assign(label=panel.votes["label"].map(spell))
    truth = panel.truth.map(spell).rename("label").rename_axis("task").reset_index()
    slug = f"{list(FORMS).index(form)}-{'run' if with_run else 'norun'}"
    v, t = tmp_path / f"votes-{slug}.csv", tmp_path / f"truth-{slug}.csv"
    votes.to_csv(v, index=False)
    truth.to_csv(t, index=False)
    return v, t


def summary(capsys, *args: str) -> dict:
    assert main(["aggregate", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", LABEL_METHODS)
def test_every_binary_spelling_gives_the_same_accuracy(method, panel, tmp_path, capsys):
    scores = {}
    for form in FORMS:
        votes, truth = write(tmp_path, panel, form)
        scores[form] = summary(capsys, str(votes), "--method", method, "--truth", str(truth))["scored"]
    accuracies = {form: round(s["accuracy"], 6) for form, s in scores.items()}
    assert len(set(accuracies.values())) == 1, accuracies  # the spelling changes nothing
    assert all(0 <= s["coverage"] <= 1 for s in scores.values())


def test_both_display_orders_as_runs_are_what_lets_the_consistency_methods_work(panel, tmp_path, capsys):
    both, truth = write(tmp_path, panel, "A/B", with_run=True)
    one_order = tmp_path / "one-order.csv"
    pd.read_csv(both).query("run == 'AB'").drop(columns="run").to_csv(one_order, index=False)
    seen = summary(capsys, str(both), "--method", "auto", "--truth", str(truth))
    blind = summary(capsys, str(one_order), "--method", "auto", "--truth", str(truth))
    assert seen["choice"] == "ds_position+cwv" and seen["scored"]["accuracy"] > 0.95  # measured 0.99
    # shown once, the panel is votes only: most judges follow the cue and nothing tells them apart
    assert blind["choice"] != "ds_position+cwv" and blind["scored"]["accuracy"] < 0.7


def test_k_class_labels_for_the_methods_that_take_them_and_a_clear_error_for_the_rest(tmp_path, capsys):
    rng = np.random.default_rng(0)
    truth = rng.choice(["cat", "dog", "eel"], 60)
    rows = [
        {
            "task": t,
            "worker": w,
            "label": truth[t] if rng.random() < 0.8 else rng.choice(["cat", "dog", "eel"]),
        }
        for t in range(60)
        for w in "abcde"
    ]
    votes, truth_file = tmp_path / "k.csv", tmp_path / "k-truth.csv"
    pd.DataFrame(rows).to_csv(votes, index=False)
    pd.DataFrame({"task": range(60), "label": truth}).to_csv(truth_file, index=False)
    for method in ("mv", "dawid_skene"):
        assert (
            summary(capsys, str(votes), "--method", method, "--truth", str(truth_file))["scored"]["accuracy"]
            > 0.85
        )
    assert main(["aggregate", str(votes), "--method", "ws"]) == 2
    assert "binary method but the votes carry 3 labels" in capsys.readouterr().err


def test_scores_are_scored_by_mae_and_kendall_tau(tmp_path, capsys):
    rng = np.random.default_rng(1)
    quality = rng.random(80)
    rows = [
        {"task": t, "worker": w, "score": quality[t] + rng.normal(0, 0.1)} for t in range(80) for w in "abcd"
    ]
    votes, truth = tmp_path / "s.csv", tmp_path / "s-truth.csv"
    pd.DataFrame(rows).to_csv(votes, index=False)
    pd.DataFrame({"task": range(80), "score": quality}).to_csv(truth, index=False)
    scored = summary(capsys, str(votes), "--method", "avg", "--truth", str(truth))["scored"]
    assert scored["kendall_tau"] > 0.8 and scored["mae"] < 0.1


def test_an_explicit_tie_label_is_counted_and_not_a_vote(tmp_path, capsys):
    votes = pd.DataFrame(
        {
            "task": [1, 1, 1, 2, 2, 2],
            "worker": list("abcabc"),
            "label": ["A", "A", "undecided", "B", "undecided", "undecided"],
        }
    )
    path = tmp_path / "ties.csv"
    votes.to_csv(path, index=False)
    out = summary(capsys, str(path), "--method", "mv", "--tie-label", "undecided")
    assert out["tie_votes"] == 3 and out["n_tasks"] == 2 and out["ties"] == 0


def test_mv_ties_are_reported_beside_accuracy_and_coverage(tmp_path, capsys):
    votes = pd.DataFrame({"task": [1, 1, 2, 2, 3, 3], "worker": list("ababab"), "label": list("AAABBB")})
    truth = pd.DataFrame({"task": [1, 2, 3], "label": ["A", "A", "B"]})
    v, t = tmp_path / "v.csv", tmp_path / "t.csv"
    votes.to_csv(v, index=False)
    truth.to_csv(t, index=False)
    scored = summary(capsys, str(v), "--method", "mv", "--truth", str(t))["scored"]
    assert scored["ties"] == 1 and scored["accuracy"] == pytest.approx(2 / 3)
    assert scored["accuracy_decided"] == 1.0 and scored["coverage"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("truth_rows", "message"),
    [
        ({"task": [1, 2, 3, 99], "label": list("AABA")}, "1 tasks not in the votes"),
        ({"task": [1, 2], "label": list("AA")}, "1 voted tasks without truth"),
        ({"task": [1, 2, 3, 3], "label": list("AABB")}, "1 duplicated tasks"),
        ({"task": [1, 2, 3], "label": [1, 0, 1]}, "truth labels ['0', '1'] are not labels the votes use"),
    ],
)
def test_bad_truth_is_a_clear_error_unless_partial_truth_is_allowed(truth_rows, message, tmp_path, capsys):
    votes = pd.DataFrame({"task": [1, 1, 2, 2, 3, 3], "worker": list("ababab"), "label": list("AAABBB")})
    v, t = tmp_path / "v.csv", tmp_path / "t.csv"
    votes.to_csv(v, index=False)
    pd.DataFrame(truth_rows).to_csv(t, index=False)
    assert main(["aggregate", str(v), "--method", "mv", "--truth", str(t)]) == 2
    err = capsys.readouterr().err
    assert message in err and str(t) in err
    if "not labels the votes use" not in message:
        assert main(["aggregate", str(v), "--method", "mv", "--truth", str(t), "--allow-partial-truth"]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the votes file is empty"),
        ("task,worker,label\n", "has a header but no rows"),
        ("task,worker\n1,a\n", "missing ['label']"),
    ],
)
def test_empty_or_unusable_vote_files_are_one_clear_line(content, message, tmp_path, capsys):
    path = tmp_path / "votes.csv"
    path.write_text(content)
    assert main(["aggregate", str(path), "--method", "mv"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and str(path) in err and len(err.splitlines()) == 1
