import pandas as pd

from judgeops.tasks.aggregate import aggregate, consensus_as_verdicts
from judgeops.tasks.aggregate.mv import MajorityVote, ScoreAverage


def test_majority_vote_reports_ties_as_ties():
    votes = pd.DataFrame({"task": [1, 1, 1, 2, 2, 3], "worker": list("abcabc"), "label": list("ABAABB")})
    mv = MajorityVote().fit(votes)
    assert mv.labels_.to_dict() == {1: "A", 2: "tie", 3: "B"}
    assert mv.probas_.loc[1, "A"] == 2 / 3


def test_score_average():
    scores = pd.DataFrame({"task": [1, 1, 2], "worker": list("aba"), "score": [0.2, 0.6, 0.9]})
    assert ScoreAverage().fit_predict(scores).round(6).to_dict() == {1: 0.4, 2: 0.9}


def test_consensus_keeps_every_unit_even_without_votes():
    variants = pd.DataFrame({"variant_id": ["v1", "v2", "v3"]})
    verdicts = pd.DataFrame(
        {
            "judge_id": ["a", "b", "c", "a", "b", "a"],
            "variant_id": ["v1", "v1", "v1", "v2", "v2", "v3"],
            "verdict": ["A", "A", "B", "A", "B", None],
            "p_first": [0.9, 0.8, 0.1, 0.9, 0.1, None],
        }
    )
    c = aggregate(verdicts, variants, ["mv", "avg"]).set_index(["method", "unit_id"])
    assert c.loc[("mv", "v1"), "label"] == "A" and c.loc[("mv", "v1"), "n_votes"] == 3
    assert abs(c.loc[("mv", "v1"), "score"] - 1 / 3) < 1e-9
    assert c.loc[("mv", "v2"), "label"] == "tie"
    assert c.loc[("mv", "v3"), "label"] == "no_votes" and c.loc[("mv", "v3"), "n_votes"] == 0
    assert c.loc[("avg", "v2"), "label"] == "tie"
    as_verdicts = consensus_as_verdicts(c.reset_index())
    assert set(as_verdicts["judge_id"]) == {"panel:mv", "panel:avg"}
    assert as_verdicts["verdict"].isna().sum() == 2  # no_votes → missing verdict, counted wrong


def test_swapping_candidates_flips_the_panel_decision():
    variants = pd.DataFrame({"variant_id": ["v"]})
    fwd = pd.DataFrame(
        {"judge_id": list("abc"), "variant_id": "v", "verdict": list("AAB"), "p_first": [0.9, 0.7, 0.2]}
    )
    bwd = fwd.assign(verdict=fwd["verdict"].map({"A": "B", "B": "A"}), p_first=1 - fwd["p_first"])
    f = aggregate(fwd, variants, ["mv", "avg"]).set_index("method")
    b = aggregate(bwd, variants, ["mv", "avg"]).set_index("method")
    assert (f["score"] + b["score"]).abs().max() < 1e-9
    assert f.loc["mv", "label"] == "A" and b.loc["mv", "label"] == "B"
