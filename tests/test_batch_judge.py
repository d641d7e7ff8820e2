"""A judge with `batch: true` against a real HTTP server speaking OpenAI's Files and Batch APIs and Anthropic's
Message Batches (tests/openai_batch_server.py), through the SDKs: one batch for the misses, the same verdicts as
one-by-one calls at half the cost, paid once across a crash, an expired batch finished by a second one, a failed
request counted and asked again; a whole evaluate flow."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time

import pytest

from judgeops.config import CostConfig, Price
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.judges.cache import CallCache
from judgeops.tasks.judges.coverage import coverage
from tests.conftest import http_judge, judge_all, small_config
from tests.openai_batch_server import BatchServerProcess

VERDICT = ["variant_id", "verdict"]


PROVIDERS = ["openai", "anthropic"]


@pytest.fixture
def batch_server(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")  # the stub checks none; the SDKs want one
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-batch")
    started: list[BatchServerProcess] = []

    def start(*flags: str) -> BatchServerProcess:
        started.append(BatchServerProcess(tmp_path / f"batches{len(started)}.jsonl", *flags))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def batch_judge(url: str, provider: str = "openai", **kw):
    return one_by_one(url, provider, batch=True, batch_poll_s=0.1, **kw)


def one_by_one(url: str, provider: str = "openai", **kw):
    if provider == "anthropic":  # the SDK's base URL has no /v1
        kw = {"backend": "anthropic", "model": "claude-test", "base_url": url.removesuffix("/v1"), **kw}
    return http_judge(url, **kw)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_misses_go_as_one_batch_with_the_verdicts_of_one_by_one_calls(
    built, tmp_path, batch_server, server_factory, provider, monkeypatch
):
    items, b = built
    server = batch_server("--batch-s", "0.5")
    written, put_many = [], CallCache.put_many  # every reply goes to the cache once
    monkeypatch.setattr(CallCache, "put_many", lambda c, *a: written.extend(a[2]) or put_many(c, *a))
    batched = judge_all(built, batch_judge(server.url, provider), tmp_path / "batch.sqlite")
    assert len(written) == len(set(written)) == len(batched)
    monkeypatch.setattr(CallCache, "put_many", put_many)
    (created,) = server.batches_created()
    if provider == "openai":
        assert created["path"] == "/v1/batches" and created["endpoint"] == "/v1/chat/completions"
    singly = judge_all(built, one_by_one(server_factory().url, provider), tmp_path / "calls.sqlite")
    assert created["n"] == len(batched) > 0
    by_variant = [v[VERDICT].sort_values("variant_id").reset_index(drop=True) for v in (batched, singly)]
    assert by_variant[0].equals(by_variant[1])
    judge = batch_judge(server.url, provider)
    prices = {judge.model: Price(input_per_1m=2.0, output_per_1m=8.0)}
    costs = [
        coverage(v, b["variants"], [j], prices=prices).iloc[0]["cost_usd"]
        for v, j in ((batched, judge), (singly, one_by_one(server.url, provider)))
    ]
    assert costs[1] > 0 and costs[0] == pytest.approx(costs[1] / 2)  # the same tokens at batch prices
    again = judge_all(built, judge, tmp_path / "batch.sqlite")  # every call a cache hit
    assert len(server.batches_created()) == 1 and len(again) == len(batched)
    with CallCache(tmp_path / "batch.sqlite") as cache:
        assert cache._rows("SELECT COUNT(*) FROM batches")[0][0] == 0  # collected: nothing left to resume


def test_a_json_verdict_in_a_message_batch_is_asked_as_a_forced_tool(
    built, tmp_path, batch_server, server_factory
):
    """verdict_format json on Anthropic's Message Batches: each request carries the verdict tool and tool_choice
    (as a live call does), and the tool_use blocks of the results are read as the verdicts."""
    server = batch_server("--batch-s", "0.2")
    structured = dict(rationale=True, verdict_format="json")
    batched = judge_all(built, batch_judge(server.url, "anthropic", **structured), tmp_path / "batch.sqlite")
    plain = judge_all(
        built, one_by_one(server_factory().url, "anthropic", rationale=True), tmp_path / "c.sqlite"
    )
    (created,) = server.batches_created()
    assert created["n"] == len(batched) > 0 and batched["error"].isna().all()
    assert (batched["rationale"] == "read from the fenced answers").all()  # the tool input's field
    by_variant = [v.set_index("variant_id")["verdict"].sort_index() for v in (batched, plain)]
    assert by_variant[0].equals(by_variant[1])


def test_an_azure_openai_global_batch_deployment(built, tmp_path, batch_server, monkeypatch):
    """`api_version` set: AzureOpenAI's paths with their api-version and api-key header, and the batch's endpoint and
    every request's url `/chat/completions` (the stub refuses anything else, as Azure does)."""
    monkeypatch.setenv("JUDGEOPS_AZURE_KEY", "azure-secret-key")
    server = batch_server("--batch-s", "0.3")
    judge = batch_judge(
        server.url.removesuffix("/v1"),
        model="my-batch-deployment",
        api_version="2024-10-21",
        api_key_env="JUDGEOPS_AZURE_KEY",
    )
    verdicts = judge_all(built, judge, tmp_path / "azure.sqlite")
    (created,) = server.batches_created()
    assert created["path"] == "/openai/batches" and created["endpoint"] == "/chat/completions"
    assert created["n"] == len(verdicts) > 0 and verdicts["error"].isna().all()
    assert verdicts["verdict"].isin(["A", "B"]).all()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_run_killed_while_its_batch_runs_polls_the_same_batch_when_rerun(
    built, tmp_path, batch_server, provider
):
    server = batch_server("--batch-s", "6")
    cache = tmp_path / "batch.sqlite"
    script = (
        "import sys; sys.path.insert(0, '.');"
        "from tests.conftest import built, judge_all;"
        "from tests.test_batch_judge import batch_judge;"
        f"judge_all(built.__wrapped__(), batch_judge({server.url!r}, {provider!r}), {str(cache)!r})"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 120
    while not server.batches_created() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)  # the id is in the cache right after the batch is created
    proc.kill()
    proc.wait()
    (created,) = server.batches_created()
    verdicts = judge_all(built, batch_judge(server.url, provider), cache)
    assert len(server.batches_created()) == 1  # the rerun polled the same batch: paid once
    assert len(verdicts) == created["n"] and verdicts["error"].isna().all()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_expired_batch_sends_only_what_it_did_not_answer_again(built, tmp_path, batch_server, provider):
    server = batch_server("--batch-s", "0.2", "--expire-first", "5")
    verdicts = judge_all(built, batch_judge(server.url, provider), tmp_path / "batch.sqlite")
    first, second = server.batches_created()
    assert second["n"] == first["n"] - 5
    assert verdicts["error"].isna().all() and len(verdicts) == first["n"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_request_that_failed_in_the_batch_is_counted_and_asked_again(
    built, tmp_path, batch_server, provider
):
    items, b = built
    marker = items["question"].iloc[0][:30]
    server = batch_server("--batch-s", "0.2", "--fail-marker", marker)
    judge = batch_judge(server.url, provider)
    verdicts = judge_all(built, judge, tmp_path / "batch.sqlite")
    table = coverage(verdicts, b["variants"], [judge]).iloc[0]
    failed = int(table["n_expected"] - table["n_answered"])
    assert failed > 0 and table["n_answered"] > 0
    again = judge_all(built, judge, tmp_path / "batch.sqlite")  # the failures were not cached
    assert server.batches_created()[-1]["n"] == failed and len(again) == len(verdicts)


def test_judges_that_wait_by_suspending_create_every_batch_then_say_what_the_run_waits_for(
    built, tmp_path, batch_server
):
    """`batch_wait: suspend`: no judge polls. Each creates its batch (the id in the cache at once) and the stage
    raises BatchPending naming both batches; once they have ended, the same stage reads them: one batch per judge
    in all, the verdicts complete."""
    from judgeops.tasks.judges.backends import BatchPending
    from judgeops.tasks.judges.runner import judge_variants

    items, b = built
    server = batch_server("--batch-s", "2")
    judges = [  # two models: no call of one is a call of the other
        batch_judge(server.url, name=f"gpt-{i}", model=f"m{i}", batch_wait="suspend", max_pairs=3 + i)
        for i in range(2)
    ]
    cache = str(tmp_path / "batch.sqlite")

    def judge():
        return judge_variants(b["variants"], b["pairs"], items, judges, "r", cache_path=cache)

    with pytest.raises(BatchPending) as waiting:
        judge()
    created = server.batches_created()
    assert [w["judge"] for w in waiting.value.batches] == ["gpt-0", "gpt-1"]
    assert [w["batch_id"] for w in waiting.value.batches] == [c["id"] for c in created]
    with pytest.raises(BatchPending):  # looked at again before they end: still waiting, nothing sent again
        judge()
    time.sleep(2.5)
    verdicts = judge()
    assert server.batches_created() == created and len(verdicts) == 6 * (3 + 4)
    assert verdicts["error"].isna().all()


def test_a_judge_whose_calls_another_judges_batch_asks_for_waits_for_that_batch(
    built, tmp_path, batch_server
):
    """Two judges of one model and account, one judging every pair and one a sample of them: the second's calls
    are all in the first's batch. It creates none, waits for that batch, and both read it: paid once."""
    from judgeops.tasks.judges.backends import BatchPending
    from judgeops.tasks.judges.runner import judge_variants

    items, b = built
    server = batch_server("--batch-s", "2")
    judges = [
        batch_judge(server.url, name="all", model="m", batch_wait="suspend"),
        batch_judge(server.url, name="sample", model="m", batch_wait="suspend", max_pairs=3),
    ]
    cache = str(tmp_path / "batch.sqlite")

    def judge():
        return judge_variants(b["variants"], b["pairs"], items, judges, "r", cache_path=cache)

    with pytest.raises(BatchPending) as waiting:
        judge()
    (created,) = server.batches_created()
    assert [(w["judge"], w["batch_id"]) for w in waiting.value.batches] == [
        ("all", created["id"]),
        ("sample", created["id"]),
    ]
    time.sleep(2.5)
    verdicts = judge()
    assert server.batches_created() == [created] and verdicts["error"].isna().all()
    assert verdicts.groupby("judge_id").size().to_dict() == {"all": created["n"], "sample": 6 * 3}
    with CallCache(cache) as calls:
        assert calls._rows("SELECT COUNT(*) FROM batches")[0][0] == 0  # read and closed
        assert calls._rows("SELECT COUNT(*) FROM batch_calls")[0][0] == 0


def test_an_evaluation_with_a_batch_judge(tmp_path, batch_server, prefect_server):
    """The whole flow: the batch judge's calls go as one batch, its verdicts and coverage are complete, and its
    cost is at the batch prices."""
    server = batch_server("--batch-s", "0.5")
    judge = batch_judge(server.url, name="gpt-batch", max_pairs=6)
    config = small_config(str(tmp_path / "store"), n_items=24)
    config = config.model_copy(
        update={
            "judges": [*config.judges, judge],
            "cost": CostConfig(prices={"test-model": Price(input_per_1m=2.0, output_per_1m=8.0)}),
        }
    )
    result = evaluate(config=config, as_of=dt.date(2026, 11, 16))
    store = ArtifactStore(str(tmp_path / "store"), result.run_id)
    verdicts = store.read_pandas("verdicts")
    mine = verdicts[verdicts["judge_id"] == "gpt-batch"]
    assert len(mine) == 6 * 6 and mine["error"].isna().all() and mine["verdict"].isin(["A", "B"]).all()
    judged, probed = server.batches_created()  # the judge stage's calls, then the injection probe's
    assert judged["n"] == 36 and probed["n"] > 0
    cov = store.read_pandas("coverage").set_index("judge_id").loc["gpt-batch"]
    tokens_in, tokens_out = mine["tokens_in"].sum(), mine["tokens_out"].sum()
    assert cov["coverage"] == 1.0
    assert cov["cost_usd"] == pytest.approx((tokens_in * 1.0 + tokens_out * 4.0) / 1e6)
