"""The hosted backends on the official SDKs, against a real local server speaking each protocol
(tests/openai_server.py): a reasoning model that refuses parameters as OpenAI's does, Azure's deployment
paths, the SDK's environment defaults and proxies, extra headers and body fields, token usage, and a Claude
judge through Anthropic's Messages API in a whole pipeline run."""

from __future__ import annotations

import datetime as dt
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from judgeops.config import CostConfig, JudgeConfig, Price
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.judges import coverage
from judgeops.tasks.judges.cost import BudgetExceeded, cost_columns
from judgeops.tasks.judges.runner import judge_all as stage_judge_all
from tests.conftest import http_judge, judge_all, small_config

REASONING = r"^(o\d|gpt-5)"


def test_a_reasoning_model_that_refuses_parameters_is_answered_and_the_finding_shows_in_coverage(
    server_factory,
    built,
    tmp_path,
):
    server = server_factory("--reasoning-models", REASONING)
    judge = http_judge(server.url, model="o4-mini", max_concurrency=1)
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert verdicts["error"].isna().all() and verdicts["verdict"].isin(["A", "B", "tie"]).all()

    log = server.entries()
    refused = [e for e in log if e["status"] == 400]
    # one refusal per parameter, then remembered for the model: no call pays for it twice
    assert len(refused) == 3
    answered = [e for e in log if e["status"] == 200]
    assert len(answered) == len(verdicts)
    assert all("max_completion_tokens" in e["params"] for e in answered)
    assert not any(
        {"max_tokens", "temperature", "logprobs", "top_logprobs"} & set(e["params"]) for e in answered
    )

    adjustments = "logprobs dropped; max_tokens sent as max_completion_tokens; temperature dropped"
    assert verdicts["request_notes"].dropna().str.split("; ").explode().nunique() == 3
    cov = coverage(verdicts, built[1]["variants"], [judge]).iloc[0]
    assert cov["coverage"] == 1.0 and cov["request_adjustments"] == adjustments
    assert cov["tokens_in"] > 0 and cov["tokens_out"] > 0

    # another model on the same server is not touched by what o4-mini refused
    plain = judge_all(built, http_judge(server.url, name="plain"), tmp_path / "other.sqlite")
    assert plain["request_notes"].isna().all() and plain["p_first"].notna().all()


def test_azure_deployment_paths_api_key_header_extra_headers_and_body(
    server_factory, built, tmp_path, monkeypatch
):
    server = server_factory()
    monkeypatch.setenv("JUDGEOPS_AZURE_KEY", "azure-secret-key")
    judge = http_judge(
        server.url.removesuffix("/v1"),
        model="my-gpt-deployment",
        api_version="2024-10-21",
        api_key_env="JUDGEOPS_AZURE_KEY",
        extra_headers={"X-Judgeops-Team": "eval"},
        extra_body={"reasoning_effort": "low"},
    )
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert verdicts["error"].isna().all()
    log = server.entries()
    assert all(
        e["path"] == "/openai/deployments/my-gpt-deployment/chat/completions?api-version=2024-10-21"
        for e in log
    )
    assert all(e["key_sha256"] == hashlib.sha256(b"azure-secret-key").hexdigest() for e in log)
    assert all(e["headers"] == {"x-judgeops-team": "eval"} and "reasoning_effort" in e["params"] for e in log)


def test_the_sdk_environment_defaults_and_proxy_settings_are_honoured(
    server_factory, built, tmp_path, monkeypatch
):
    server = server_factory()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    judge = JudgeConfig(name="env", backend="openai", model="gpt-4o-mini", max_retries=0)
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert verdicts["error"].isna().all()
    assert {e["key_sha256"] for e in server.entries()} == {hashlib.sha256(b"Bearer env-key").hexdigest()}

    # a corporate proxy from the environment is used (here one that refuses: every call fails to connect)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "")
    proxied = judge_all(
        built, judge.model_copy(update={"name": "proxied", "breaker_failures": 100}), tmp_path / "c2.sqlite"
    )
    assert proxied["error"].str.startswith("transport: ConnectError").all()


def test_a_claude_judge_runs_a_whole_pipeline_through_the_messages_api(
    server_factory, tmp_path, monkeypatch, prefect_server
):
    server = server_factory()
    monkeypatch.setenv("JUDGEOPS_ANTHROPIC_KEY", "anthropic-secret-key")
    claude = JudgeConfig(
        name="claude",
        backend="anthropic",
        model="claude-sonnet-4-5",
        base_url=server.url.removesuffix("/v1"),
        api_key_env="JUDGEOPS_ANTHROPIC_KEY",
        max_pairs=6,
    )
    config = small_config(str(tmp_path / "store"), n_items=24)
    config = config.model_copy(update={"judges": [*config.judges, claude]})
    result = evaluate(config=config, as_of=dt.date(2026, 11, 16))
    store = ArtifactStore(str(tmp_path / "store"), result.run_id)
    verdicts = store.read_pandas("verdicts")
    mine = verdicts[verdicts["judge_id"] == "claude"]
    assert len(mine) == 6 * 6 and mine["error"].isna().all() and mine["verdict"].isin(["A", "B", "tie"]).all()
    # the Messages API gives no token probabilities: the verdict is read from the text, a hard 0 or 1
    assert mine["p_first"].isin([0.0, 0.5, 1.0]).all()
    assert (mine["tokens_in"] > 0).all() and (mine["tokens_out"] > 0).all()
    cov = store.read_pandas("coverage").set_index("judge_id").loc["claude"]
    assert cov["coverage"] == 1.0 and cov["n_expected"] == 36
    log = server.entries()
    assert {e["path"] for e in log} == {"/v1/messages"}
    assert {e["key_sha256"] for e in log} == {hashlib.sha256(b"anthropic-secret-key").hexdigest()}
    profiles = store.read_pandas("profiles")
    assert "claude" in set(profiles["judge_id"])


@pytest.mark.parametrize("flag", ["--fail-5xx", "--rate-limit"])
def test_anthropic_overload_and_rate_limits_are_retried(server_factory, built, tmp_path, flag, monkeypatch):
    server = server_factory(flag, "3", "--retry-after", "0.2")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-the-environment")  # the SDK's own default
    judge = JudgeConfig(
        name="claude",
        backend="anthropic",
        model="claude-haiku-4-5",
        base_url=server.url.removesuffix("/v1"),
        max_retries=4,
        max_concurrency=2,
    )
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert verdicts["error"].isna().all()
    statuses = [e["status"] for e in server.entries()]
    assert statuses.count(529 if flag == "--fail-5xx" else 429) == 3
    assert {e["key_sha256"] for e in server.entries()} == {
        hashlib.sha256(b"from-the-environment").hexdigest()
    }


def tables_of(built) -> dict:
    items, b = built
    return {"variants": b["variants"], "pairs": b["pairs"], "items": items}


def test_cost_per_judge_from_reported_tokens_and_a_budget_that_stops_and_resumes(
    server_factory, built, tmp_path
):
    server = server_factory()
    judge = http_judge(server.url, max_concurrency=2)
    prices = {"test-model": Price(input_per_1m=2.5, output_per_1m=10.0)}
    cache = tmp_path / "cache.sqlite"
    n = len(built[1]["variants"])

    # a budget for about a third of the calls: the stage stops before the chunk that would pass it
    full = judge_all(built, judge, tmp_path / "probe.sqlite")
    one_call = float(cost_columns(full, judge, prices)["cost_usd"]) / n
    with pytest.raises(
        BudgetExceeded, match=r"budget reached: judge http's next \d+ calls .* rerun with a larger"
    ):
        judge_all_runs(built, judge, cache, CostConfig(prices=prices, max_cost=one_call * n / 3))
    answered_before = len(server.entries()) - n
    assert 0 < answered_before < n / 3 + 1

    # resumed with a larger budget: only the calls not yet answered are paid, none twice
    verdicts = judge_all_runs(built, judge, cache, CostConfig(prices=prices, max_cost=1.0))
    assert verdicts["error"].isna().all() and len(verdicts) == n
    assert len(server.entries()) == 2 * n  # the probe's n, then n across the stopped run and its resumption

    cov = coverage(verdicts, built[1]["variants"], [judge], prices=prices).iloc[0]
    expected = (verdicts["tokens_in"].sum() * 2.5 + verdicts["tokens_out"].sum() * 10.0) / 1e6
    assert cov["cost_usd"] == pytest.approx(expected) and cov["cost_per_1k_verdicts"] == pytest.approx(
        1000 * expected / n
    )
    assert 0 < cov["spent_usd"] < cov["cost_usd"]  # the calls answered before the stop were not paid again
    warm = coverage(judge_all(built, judge, cache), built[1]["variants"], [judge], prices=prices).iloc[0]
    assert warm["spent_usd"] == 0 and warm["cost_usd"] == pytest.approx(expected)


def judge_all_runs(built, judge, cache, cost):
    return stage_judge_all(tables_of(built), [judge], "r", cache_path=str(cache), cost=cost)


def test_a_budget_without_prices_for_the_hosted_judges_is_refused_before_the_run(tmp_path):
    path = tmp_path / "judgeops.yaml"
    path.write_text("judges:\n  - {name: o4, backend: openai, model: o4-mini}\ncost: {prices: {}}\n")
    out = subprocess.run(
        [str(Path(sys.executable).parent / "judgeops"), "run", "--config", str(path), "--max-cost", "5"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert out.returncode == 2
    assert "cost.max_cost needs a price for every hosted judge's model; missing: ['o4-mini']" in out.stderr
