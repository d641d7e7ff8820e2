"""The openai backend against a real OpenAI-compatible server: llama.cpp serving SmolLM2's GGUF."""

from __future__ import annotations

import importlib.util

import pytest

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import get_backend, judge_variants, run_judge, units_for
from judgeops.tasks.judges.cache import CallCache

pytestmark = [
    pytest.mark.llama_server,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None,
        reason="llama-cpp-python is not installed (it builds from source; .ci/run builds it in the background)",
    ),
]


@pytest.fixture(scope="module")
def server():
    from tests.llama_server import LlamaServer

    with LlamaServer() as s:
        yield s


@pytest.fixture(scope="module")
def built():
    items = ingest_items([BankSource(n_items=8, seed=4)]).items
    return items, construct(items, ConstructionConfig())


def test_llama_cpp_returns_top_logprobs_and_agrees_with_the_local_backend(server, built, tmp_path):
    items, b = built
    plain = b["variants"][b["variants"]["presentation"] == "plain"].head(8)
    context = b["pairs"].merge(items, on="item_id").set_index("pair_id")
    units = units_for(plain, plain["pair_id"].map(context["question"]), plain["pair_id"].map(context["gold"]))
    remote = JudgeConfig(
        name="llama", backend="openai", model="smollm2", base_url=server.url, max_concurrency=2
    )
    local = JudgeConfig(name="local", backend="local", model="smollm2-135m-instruct")
    with CallCache(tmp_path / "c.sqlite") as cache:
        over_http = run_judge(remote, units, cache)
        in_process = run_judge(local, units, cache)
    for unit in units:
        r, here = over_http[unit.unit_id].decision, in_process[unit.unit_id].decision
        assert r.error is None and r.verdict in ("A", "B")
        assert 0 < r.p_first <= 1  # 1.0 where B is not among the top 20 tokens
        assert abs(r.p_first - here.p_first) < 0.25  # Q4_1 in llama.cpp vs de-quantised fp32 in transformers
    graded = [u for u in units if 0 < over_http[u.unit_id].decision.p_first < 1]
    assert len(graded) >= len(units) // 2  # probabilities from top_logprobs, not from the text alone
    agree = sum(
        over_http[u.unit_id].decision.verdict == in_process[u.unit_id].decision.verdict for u in units
    )
    assert agree >= len(units) - 2


def test_a_flow_sized_batch_over_llama_cpp_is_cached(server, built, tmp_path, monkeypatch):
    items, b = built
    judge = JudgeConfig(
        name="llama", backend="openai", model="smollm2", base_url=server.url, max_concurrency=2, max_pairs=2
    )
    cache = str(tmp_path / "c.sqlite")
    cold = judge_variants(b["variants"], b["pairs"], items, [judge], "r", cache_path=cache)
    assert len(cold) == 12 and cold["error"].isna().all()
    backend_calls = []

    def count(j):
        backend_calls.append(j)
        return get_backend(j)

    monkeypatch.setattr("judgeops.tasks.judges.get_backend", count)
    warm = judge_variants(b["variants"], b["pairs"], items, [judge], "r", cache_path=cache)
    assert backend_calls == [] and warm["cached"].all()
