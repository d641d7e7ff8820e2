"""`auto` and the layouts every method reads: ties decided, runs never collapsed, the dependence check on
independent panels of growing size, and the readings auto takes on the regime families with known truth."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from judgeops.cli import main
from judgeops.tasks.aggregate import AGGREGATORS, get_aggregator
from judgeops.tasks.aggregate.auto import CHOICES
from judgeops.tasks.aggregate.synthetic import REGIMES, make_panel

warnings.filterwarnings("ignore", category=UserWarning)


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def test_auto_decides_every_task_some_judge_decided():
    """Four judges, two tasks on which the vote is split 2–2 (MV ties both): auto leaves no tie."""
    votes = pd.DataFrame(
        {
            "task": [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4,
            "worker": list("abcd") * 4,
            "label": list("AABBABBAAAABBBBA"),
        }
    )
    assert (get_aggregator("mv").fit(votes).labels_ == "tie").sum() == 2
    assert (get_aggregator("auto").fit(votes).labels_ == "tie").sum() == 0


def test_a_tie_is_broken_by_the_next_reading_then_the_most_reliable_judge_then_the_majority_class():
    from judgeops.tasks.aggregate.auto import _break_ties

    tasks = pd.Index([1, 2, 3, 4], name="task")
    post = pd.DataFrame(
        {
            "ds_position+cwv": [0.5, 0.5, 0.5, 0.9],
            "dawid_skene": [0.2, 0.5, 0.5, 0.9],
            "cwv": [0.5, 0.5, 0.5, 0.9],
            "mv": [0.5, 0.5, 0.5, 1.0],
        },
        index=tasks,
    )
    votes = pd.DataFrame(
        {"task": [2, 2, 3, 3], "worker": ["strong", "weak", "strong", "weak"], "label": ["B", "A", "A", "B"]}
    )

    class Weights:
        weights_ = pd.Series({"strong": 2.0, "weak": 0.5})

    final, counts = _break_ties(post["ds_position+cwv"], post, "ds_position+cwv", votes, Weights, ("A", "B"))
    assert counts == {"dawid_skene": 1, "most_reliable_judge": 2}
    assert final[1] < 0.5 and final[2] < 0.5 and final[3] > 0.5  # task 1: DS says B; 2, 3: the strong judge
    assert (final - 0.5).abs().loc[[1, 2, 3]].max() < 1e-5  # decided, with the confidence of a coin
    nothing = pd.DataFrame({c: [0.5, 0.9] for c in post.columns}, index=pd.Index([5, 6], name="task"))
    final, counts = _break_ties(nothing["mv"], nothing, "mv", votes.iloc[:0], Weights, ("A", "B"))
    assert counts == {"majority_class": 1} and final[5] > 0.5


@pytest.mark.parametrize("regime", ["below_chance_order", "order_invariant_clique", "binary_confounded"])
def test_auto_leaves_no_ties_on_panels_where_majority_vote_leaves_many(regime):
    panel = make_panel(regime, n_tasks=600, seed=2, family=True)
    votes = panel.votes[["task", "worker", "label", *[c for c in ("run", "item") if c in panel.votes]]]
    assert (get_aggregator("auto").fit(votes).labels_ == "tie").sum() == 0


# -- runs: the judge + run layout against judge × run workers, every method --------------------------------------


@pytest.fixture(scope="module")
def two_layouts():
    """One pairwise panel (versions of one model beside a strong judge, both orders, three presentations) in the
    two layouts: each judge's orders as runs, and each (judge, order) as a worker of its own."""
    panel = make_panel("versions", n_tasks=600, seed=1, family=True)
    runs = panel.votes
    workers = runs.assign(worker=runs["worker"] + "·" + runs["run"]).drop(columns=["run", "item"])
    return runs, workers, panel.truth


@pytest.mark.parametrize("method", sorted(AGGREGATORS))
def test_the_judge_and_run_layout_never_does_worse_than_judge_by_run_workers(method, two_layouts):
    runs, workers, truth = two_layouts
    params = {"input": "label"} if method == "baer" else {}
    kind = "label" if method == "baer" else AGGREGATORS[method]
    cols = ["task", "worker", kind]
    with_runs = get_aggregator(method, **params).fit(runs[[*cols, "run", "item"]])
    as_workers = get_aggregator(method, **params).fit(workers[cols])
    assert accuracy(with_runs.labels_, truth) >= accuracy(as_workers.labels_, truth) - 0.01


def test_the_evaluate_flow_gives_every_method_the_runs():
    """aggregate_panel fits every method on the votes with their `run` column (panel._fit_one)."""
    from judgeops.tasks.aggregate import panel as module

    seen = {}

    class Spy:
        def __init__(self, name):
            self.name = name

        def fit(self, df):
            seen[self.name] = list(df.columns)
            raise ValueError("spy")

    votes = pd.DataFrame(
        {
            "task": [0, 0, 1, 1],
            "worker": ["a"] * 4,
            "run": ["AB", "BA"] * 2,
            "shown_first": ["A", "B"] * 2,
            "item": [0, 0, 1, 1],
            "label": ["A", "A", "B", "B"],
            "score": [0.9, 0.8, 0.1, 0.2],
        }
    )
    original = module.get_aggregator
    module.get_aggregator = lambda name, **params: Spy(name)
    try:
        for method in ("mv", "dawid_skene", "ws", "care_svd", "auto"):
            with pytest.raises(ValueError):
                module._fit_one(method, votes, {})
    finally:
        module.get_aggregator = original
    assert all("run" in cols for cols in seen.values()), seen


# -- the dependence check does not make a large independent panel a clique ---------------------------------------


def independent_panel(n_tasks: int, n_judges: int, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_tasks)
    acc = rng.uniform(0.55, 0.9, n_judges)
    right = rng.random((n_tasks, n_judges)) < acc
    said = np.where(right, y[:, None], 1 - y[:, None])
    votes = pd.DataFrame(
        {
            "task": np.repeat(np.arange(n_tasks), n_judges),
            "worker": np.tile([f"j{i}" for i in range(n_judges)], n_tasks),
            "label": np.where(said.ravel() == 1, "A", "B"),
        }
    )
    return votes, pd.Series(np.where(y == 1, "A", "B"))


@pytest.mark.parametrize("n_tasks, n_judges", [(500, 5), (5_000, 12), (50_000, 20)])
def test_independent_panels_of_growing_size_are_read_by_dawid_skene(n_tasks, n_judges):
    votes, truth = independent_panel(n_tasks, n_judges)
    auto = get_aggregator("auto").fit(votes)
    ds = get_aggregator("dawid_skene").fit(votes)
    assert auto.choice_ == "dawid_skene", auto.reason_
    assert accuracy(auto.labels_, truth) >= accuracy(ds.labels_, truth) - 0.005
    assert auto.evidence_["agreeing_beyond"] is None  # no pair of independent judges carries a second signal


# -- the families: auto against majority vote and its own candidates ---------------------------------------------


@pytest.mark.parametrize("regime", REGIMES[7:])
def test_auto_on_the_new_families_is_never_more_than_a_point_below_majority_vote(regime):
    panel = make_panel(regime, n_tasks=900, seed=0, family=True)
    votes = panel.votes[["task", "worker", "label", *[c for c in ("run", "item") if c in panel.votes]]]
    auto = get_aggregator("auto").fit(votes)
    mv = accuracy(get_aggregator("mv").fit(votes).labels_, panel.truth)
    assert auto.choice_ in CHOICES and accuracy(auto.labels_, panel.truth) >= mv - 0.01


def test_versions_of_one_model_do_not_outvote_the_strong_judge():
    """(viii): the versions err together; the consistency reading weighs the stable strong judge (measured 0.97
    against majority vote's 0.90 on this draw)."""
    panel = make_panel("versions", n_tasks=1200, seed=0, family=True)
    auto = get_aggregator("auto").fit(panel.votes)
    mv = accuracy(get_aggregator("mv").fit(panel.votes).labels_, panel.truth)
    assert auto.choice_ == "ds_position+cwv"
    assert accuracy(auto.labels_, panel.truth) >= mv + 0.03


# -- ds_position says when it has no display order; shown_first works with 0/1 labels -----------------------------


def test_ds_position_without_display_order_says_it_fell_back(tmp_path, capsys):
    panel = make_panel("independent", n_tasks=200, seed=0)
    path = tmp_path / "votes.csv"
    panel.votes[["task", "worker", "label"]].to_csv(path, index=False)
    assert main(["aggregate", str(path), "--method", "ds_position", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert "no display order" in summary["fallbacks"][0]
    assert main(["aggregate", str(path), "--method", "ds_position"]) == 0
    assert "ds_position fell back: no display order" in capsys.readouterr().out


def test_shown_first_is_read_with_integer_labels(tmp_path, capsys):
    """0/1 labels with a 0/1 `shown_first` (and no run names the labels): ds_position reads the display order,
    exactly as with A/B labels."""
    panel = make_panel("adversarial_surface", n_tasks=300, seed=3)
    votes = panel.votes.assign(shown_first=np.where(panel.votes["run"] == "AB", "A", "B"))
    spell = {"A": 1, "B": 0}
    results = {}
    for name, frame in {
        "letters": votes.assign(run=votes["run"].map({"AB": "first", "BA": "second"})),
        "integers": votes.assign(
            label=votes["label"].map(spell),
            shown_first=votes["shown_first"].map(spell),
            run=votes["run"].map({"AB": "first", "BA": "second"}),
        ),
    }.items():
        path = tmp_path / f"{name}.csv"
        frame[["task", "worker", "label", "run", "shown_first"]].to_csv(path, index=False)
        assert main(["aggregate", str(path), "--method", "ds_position", "--json"]) == 0
        results[name] = json.loads(capsys.readouterr().out)
        assert "fallbacks" not in results[name]
    assert results["letters"]["ties"] == results["integers"]["ties"]


# -- auto for scores ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("regime", ["independent", "clique", "confounder_independent"])
def test_auto_on_scores_ranks_at_least_as_well_as_the_average(regime):
    from scipy.stats import kendalltau

    panel = make_panel(regime, n_tasks=900, seed=1, family=True)
    votes = panel.votes[["task", "worker", "score"]]
    y = (panel.truth == "A").astype(float)

    def tau(est) -> float:
        return float(kendalltau(est.probas_["A"].reindex(y.index), y).statistic)

    auto = get_aggregator("auto", input="score").fit(votes)
    assert auto.choice_ in ("avg", "uws", "care_svd", "care_tensor") and auto.reason_
    assert tau(auto) >= tau(get_aggregator("avg").fit(votes)) - 0.01


def test_votes_with_graded_scores_are_read_by_care_tensor_and_0_1_scores_are_not(tmp_path, capsys):
    """A clique shown once: the votes alone cannot tell its shared error from the truth (auto's vote readings
    measured 0.64 on the family), the scores beside them can (CARE-Tensor 0.95 on this draw). Scores that only
    repeat the votes (0/1) leave auto on the votes."""
    panel = make_panel("clique", n_tasks=900, seed=1, family=True)
    votes = panel.votes[["task", "worker", "label", "score"]]
    with_scores = get_aggregator("auto").fit(votes)
    votes_only = get_aggregator("auto").fit(votes[["task", "worker", "label"]])
    assert with_scores.choice_ == "care_tensor" and "scores" in with_scores.reason_
    assert votes_only.choice_ != "care_tensor"
    assert accuracy(with_scores.labels_, panel.truth) >= accuracy(votes_only.labels_, panel.truth) + 0.15
    binary = votes.assign(score=(votes["label"] == "A").astype(float))
    assert get_aggregator("auto").fit(binary).choice_ == votes_only.choice_
    confidence = votes.assign(score=np.abs(votes["score"]))  # sure of its vote, whichever side: not P(A)
    unread = get_aggregator("auto").fit(confidence)
    assert unread.choice_ == votes_only.choice_ and unread.evidence_["score_separates_votes"] < 0.9
    path = tmp_path / "votes.csv"  # the command line keeps the score column for auto
    votes.to_csv(path, index=False)
    assert main(["aggregate", str(path), "--method", "auto", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["choice"] == "care_tensor"


def test_auto_reads_a_score_file_and_keeps_its_scores_on_the_judges_scale(tmp_path, capsys):
    panel = make_panel("clique", n_tasks=400, seed=1, family=True)
    votes, truth = tmp_path / "scores.csv", tmp_path / "truth.csv"
    panel.votes[["task", "worker", "score"]].to_csv(votes, index=False)
    (panel.truth == "A").astype(float).rename("score").rename_axis("task").reset_index().to_csv(
        truth, index=False
    )
    assert main(["aggregate", str(votes), "--method", "auto", "--truth", str(truth), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # CARE-Tensor's order on the judges' own scale (its posterior is not): MAE is defined, τ is CARE-Tensor's
    assert out["choice"] == "care_tensor" and out["score_scale"] == "input"
    assert out["scored"]["mae"] is not None and "mae_unavailable" not in out["scored"]
    assert out["scored"]["kendall_tau"] > 0.6  # measured 0.68; the judges' average: 0.17
    assert main(["aggregate", str(votes), "--method", "avg", "--truth", str(truth), "--json"]) == 0
    avg = json.loads(capsys.readouterr().out)
    assert avg["score_scale"] == "input" and avg["scored"]["mae"] is not None
    assert avg["scored"]["kendall_tau"] < out["scored"]["kendall_tau"]


def test_score_votes_against_0_1_truth_say_that_a_is_the_higher_score(tmp_path, capsys):
    panel = make_panel("independent", n_tasks=100, seed=0)
    votes, truth = tmp_path / "scores.csv", tmp_path / "truth.csv"
    panel.votes[["task", "worker", "score"]].to_csv(votes, index=False)
    panel.truth.map({"A": 1, "B": 0}).rename("label").rename_axis("task").reset_index().to_csv(
        truth, index=False
    )
    assert main(["aggregate", str(votes), "--method", "care_tensor", "--truth", str(truth)]) == 2
    err = capsys.readouterr().err
    assert "the first candidate has the higher score" in err and str(truth) in err and "\n" not in err.strip()


def test_the_evaluate_flow_runs_auto_on_scores_when_configured_and_estimates_every_method():
    """aggregation.params {auto: {input: score}}: auto reads the judges' P(first) per run; every method's accuracy
    is still estimated without labels under auto's reading of the labels."""
    from judgeops.tasks.aggregate.panel import aggregate_panel

    panel = make_panel("versions", n_tasks=300, seed=0, family=True)
    v = panel.votes
    pair = v["task"].str.split(":").str[0]
    variants = pd.DataFrame(
        {
            "variant_id": v["task"] + ":" + v["run"],
            "pair_id": pair,
            "presentation": v["presentation"],
            "order": v["run"],
        }
    ).drop_duplicates("variant_id")
    verdicts = pd.DataFrame(
        {
            "judge_id": v["worker"],
            "variant_id": v["task"] + ":" + v["run"],
            # in the display frame: "A" is the answer shown first, which is the canonical A in run AB
            "verdict": np.where((v["label"] == "A") == (v["run"] == "AB"), "A", "B"),
            "p_first": np.where(v["run"] == "AB", v["score"], 1 - v["score"]),
        }
    )
    out = aggregate_panel(verdicts, variants, ["mv", "auto"], params={"auto": {"input": "score"}})
    notes = out["aggregation_notes"].set_index("method")
    assert notes.loc["auto", "choice"] in ("avg", "uws", "care_svd", "care_tensor")
    assert notes["estimated_accuracy"].between(0, 1).all() and notes["estimated_ci_low"].notna().all()
    assert (out["consensus"].query("method == 'auto'")["label"].isin(["A", "B"])).all()
