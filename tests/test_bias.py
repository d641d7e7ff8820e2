"""Pointwise bias: examinee answers judged alone, FPR / FNR / DirectionalBias per judge × examinee."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import judge_responses
from judgeops.tasks.judges.programmatic import consistency_errors
from judgeops.tasks.profile.bias import leniency, pointwise_bias
from tests.openai_server import ServerProcess


def test_rates_match_hand_computed_values_and_self_evaluation_is_marked():
    responses = pd.DataFrame(
        {
            "response_id": [f"r{i}" for i in range(10)],
            "examinee": ["e1"] * 4 + ["jm"] * 3 + ["e3"] * 3,
            "is_correct": [True, True, False, False, True, False, False, True, True, None],
        }
    )
    says = [
        "correct",
        "correct",
        "correct",
        "incorrect",  # e1: FPR 1/2, FNR 0/2
        "incorrect",
        "correct",
        "tie",  # jm: right answer called wrong (FNR 1/1); FPR 1/1; a tie
        "correct",
        "correct",
        "correct",
    ]  # e3: no wrong answers: FPR undefined; r9 has no truth
    verdicts = pd.DataFrame(
        {"judge_id": "j", "response_id": responses["response_id"], "verdict": says, "variant_id": None}
    )
    judges = [{"name": "j", "model": "jm", "family": "fam"}]
    bias = pointwise_bias(verdicts, responses, judges).set_index("examinee")
    assert bias.loc["e1", ["fpr", "fnr", "directional_bias"]].tolist() == [0.5, 0.0, 0.5]
    assert bias.loc["e1", "n"] == 4 and bias.loc["e1", "examinee_accuracy"] == 0.5
    assert bias.loc["jm", ["fpr", "fnr"]].tolist() == [1.0, 1.0] and bias.loc["jm", "n_missing"] == 1
    assert bias.loc["jm", "self_evaluation"] and not bias.loc["e1", "self_evaluation"]
    assert np.isnan(bias.loc["e3", "fpr"]) and bias.loc["e3", "fnr"] == 0 and bias.loc["e3", "n"] == 2


def test_leniency_is_the_correlation_of_fpr_with_examinee_accuracy():
    bias = pd.DataFrame(
        {
            "judge_id": "j",
            "examinee": ["a", "b", "c"],
            "fpr": [0.1, 0.3, 0.5],
            "examinee_accuracy": [0.2, 0.5, 0.8],
        }
    )
    (row,) = leniency(bias)
    assert row["kind"] == "leniency" and row["estimate"] == pytest.approx(1.0) and row["n"] == 3


@pytest.fixture(scope="module")
def examinees():
    """Three examinees answering judgerEva items: the correct answer or the flawed one, at different rates."""
    items = ingest_items([BankSource(n_items=24, seed=5)]).items
    pairs = construct(items, ConstructionConfig())["pairs"].drop_duplicates("item_id")
    rng = np.random.default_rng(0)
    rows = []
    for name, skill in {"strong": 0.9, "middling": 0.6, "weak": 0.3}.items():
        for p in pairs.itertuples():
            right = rng.random() < skill
            rows.append(
                {
                    "response_id": f"{name}-{p.item_id}",
                    "item_id": p.item_id,
                    "examinee": name,
                    "text": p.answer_correct if right else p.answer_flawed,
                    "is_correct": right,
                }
            )
    return items, pd.DataFrame(rows)


def test_llm_and_programmatic_judges_check_answers_alone(examinees, tmp_path):
    items, responses = examinees
    server = ServerProcess(tmp_path / "requests.jsonl")
    try:
        judges = [
            JudgeConfig(
                name="http", backend="openai", model="test-model", base_url=server.url, max_retries=2
            ),
            JudgeConfig(name="numeric_consistency", backend="programmatic", model="numeric_consistency"),
            JudgeConfig(
                name="sampled", backend="openai", model="test-model", base_url=server.url, max_pairs=10
            ),
        ]
        verdicts = judge_responses(responses, items, judges, "r", str(tmp_path / "cache.sqlite"))
        sent = len(server.entries())
        again = judge_responses(responses, items, judges, "r", str(tmp_path / "cache.sqlite"))
        assert len(server.entries()) == sent  # a rerun is served by the call cache
    finally:
        server.stop()
    assert (verdicts["protocol"] == "response_check").all() and verdicts["variant_id"].isna().all()
    assert (
        verdicts["verdict"].isin(["correct", "incorrect"]).all()
        and again["cached"][verdicts["judge_id"] != "numeric_consistency"].all()
    )
    assert (verdicts["judge_id"] == "sampled").sum() == 10  # max_pairs caps the responses judged
    bias = pointwise_bias(verdicts, responses, [j.model_dump() for j in judges]).set_index(
        ["judge_id", "examinee"]
    )
    # both judges say "correct" exactly when no arithmetic or comparison fails (the server's judge and the
    # heuristic share that rule), so the rates follow from the answers themselves
    ok = responses.assign(says=[not consistency_errors(t) for t in responses["text"]])
    for examinee, g in ok.groupby("examinee"):
        fpr = g.loc[~g["is_correct"], "says"].mean()
        fnr = (~g.loc[g["is_correct"], "says"]).mean()
        for judge in ("http", "numeric_consistency"):
            assert bias.loc[(judge, examinee), "fpr"] == pytest.approx(fpr)
            assert bias.loc[(judge, examinee), "fnr"] == pytest.approx(fnr)
    assert bias.loc[("http", "weak"), "n"] == (responses["examinee"] == "weak").sum()
