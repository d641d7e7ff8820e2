"""The OpenAI-compatible backend against a real HTTP server (tests/openai_server.py), with its faults;
the call cache; every protocol; candidate symmetry through the protocol layer."""

from __future__ import annotations

import time

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import JudgeBackendError, coverage, judge_variants, run_judge
from judgeops.tasks.judges.cache import CallCache
from judgeops.tasks.judges.calls import Call, Reply
from judgeops.tasks.judges.protocols import Unit
from tests.conftest import http_judge, judge_all
from tests.openai_server import ServerProcess, answer


@pytest.mark.parametrize("protocol", ["pairwise", "pointwise", "score_then_choose", "blind_reference"])
def test_every_protocol_over_http_and_a_warm_rerun_makes_no_request(
    server_factory, built, tmp_path, protocol
):
    server = server_factory()
    judge = http_judge(server.url, protocol=protocol, max_concurrency=8)
    cold = judge_all(built, judge, tmp_path / "cache.sqlite")
    n = len(built[1]["variants"])
    assert len(cold) == n and cold["error"].isna().all() and cold["verdict"].isin(["A", "B", "tie"]).all()
    assert not cold["cached"].any()
    calls_per_unit = {"pairwise": 1, "pointwise": 2, "score_then_choose": 1, "blind_reference": 3}[protocol]
    assert (cold["n_calls"] == calls_per_unit).all()
    sent = len(server.entries())
    assert 0 < sent <= n * calls_per_unit  # identical requests (a repeated answer) are sent once
    warm = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert len(server.entries()) == sent  # zero backend calls
    assert warm["cached"].all() and (warm["cache_hits"] == warm["n_calls"]).all()
    pd.testing.assert_series_equal(warm["verdict"], cold["verdict"])
    if protocol == "pairwise":  # p_first from top_logprobs: 0.7/(0.7+0.3) or 0.25/(0.25+0.75)
        assert set(cold["p_first"].round(6)) <= {0.7, 0.25}
    if protocol == "blind_reference":
        assert cold["rationale"].str.startswith("own solution: Working it out").all()


def test_a_cache_in_postgresql_answers_a_later_run_with_no_request(server_factory, built, postgres):
    """`cache.path: postgresql://…`: what one run paid for, the next (on any machine) reads back."""
    url = postgres.create_database("judge_calls")
    server = server_factory()
    judge = http_judge(server.url, max_concurrency=8)
    cold = judge_all(built, judge, url)
    sent = len(server.entries())
    assert sent > 0 and cold["error"].isna().all() and not cold["cached"].any()
    warm = judge_all(built, judge, url)
    assert len(server.entries()) == sent and warm["cached"].all()
    pd.testing.assert_series_equal(warm["verdict"], cold["verdict"])


def test_server_killed_mid_run_stops_clearly_and_the_rerun_repeats_no_prompt(server_factory, built, tmp_path):
    first = server_factory("--die-after", "25")
    judge = http_judge(first.url, max_concurrency=4, breaker_failures=3, max_retries=1, timeout_s=5)
    with pytest.raises(JudgeBackendError, match=r"calls in a row failed .*rerun to resume"):
        judge_all(built, judge, tmp_path / "cache.sqlite", batch_size=10)
    assert first.proc.wait(timeout=10) == 3  # the server really died
    answered = [e["sha256"] for e in first.entries() if e["status"] == 200]
    assert len(answered) == 25
    with CallCache(tmp_path / "cache.sqlite") as cache:
        assert sum(s["calls"] for s in cache.stats()) == 25  # every answer it gave was kept
    second = server_factory()
    verdicts = judge_all(built, http_judge(second.url), tmp_path / "cache.sqlite")
    assert verdicts["error"].isna().all() and len(verdicts) == len(built[1]["variants"])
    all_answered = [e["sha256"] for e in second.entries() if e["status"] == 200]
    assert len(all_answered) == len(set(all_answered))  # zero repeated prompts across both servers
    assert verdicts["cache_hits"].sum() == 25


def test_a_rationale_is_captured_when_asked(server_factory, built, tmp_path):
    server = server_factory()
    verdicts = judge_all(built, http_judge(server.url, rationale=True), tmp_path / "cache.sqlite")
    assert verdicts["verdict"].isin(["A", "B"]).all()
    assert verdicts["rationale"].str.match(r"Answer [AB] has \d+ arithmetic or comparison error").all()
    plain = judge_all(built, http_judge(server.url), tmp_path / "cache.sqlite")
    assert plain["rationale"].isna().all()


def test_self_consistency_records_flip_rate_and_spread(server_factory, built, tmp_path):
    server = server_factory()
    judge = http_judge(server.url, samples=5, decoding={"temperature": 1.0, "seed": 11}, max_concurrency=8)
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    n = len(built[1]["variants"])
    assert (verdicts["n_samples"] == 5).all() and (verdicts["n_calls"] == 5).all()
    assert len(server.entries()) == 5 * n  # one call per sample: the sample index is in the key
    assert verdicts["flip_rate"].between(0, 0.4).all() and verdicts["flip_rate"].gt(0).any()
    assert (verdicts.loc[verdicts["flip_rate"] > 0, "p_first_sd"] > 0).all()
    one = judge_all(built, http_judge(server.url), tmp_path / "cache.sqlite")
    assert one["flip_rate"].isna().all() and one["p_first_sd"].isna().all()


def test_a_server_that_keeps_connections_open_answers_through_a_few(built, tmp_path):
    """The providers keep connections alive: the judge reuses them (the stub's --keep-alive, HTTP/1.1) and reads
    the same verdicts as from a server that closes each one."""
    kept = ServerProcess(tmp_path / "kept.jsonl", "--keep-alive")
    closed = ServerProcess(tmp_path / "closed.jsonl")
    try:
        verdicts = judge_all(built, http_judge(kept.url, max_concurrency=4), tmp_path / "kept.sqlite")
        before = judge_all(built, http_judge(closed.url, max_concurrency=4), tmp_path / "closed.sqlite")
    finally:
        kept.stop(), closed.stop()
    assert verdicts["error"].isna().all() and verdicts["verdict"].equals(before["verdict"])
    ports = [e["client_port"] for e in kept.entries()]
    assert len(ports) > 20 and len(set(ports)) <= 4  # as many connections as calls at once, reused
    assert len({e["client_port"] for e in closed.entries()}) == len(closed.entries())


def test_429_with_retry_after_waits_and_completes(server_factory, built, tmp_path):
    server = server_factory("--rate-limit", "2", "--retry-after", "1.5")
    judge = http_judge(server.url, max_concurrency=1, max_retries=3)
    items, b = built
    few = b["variants"].head(3)
    t0 = time.perf_counter()
    verdicts = judge_variants(few, b["pairs"], items, [judge], "r", cache_path=str(tmp_path / "c.sqlite"))
    elapsed = time.perf_counter() - t0
    assert verdicts["error"].isna().all()
    statuses = [e["status"] for e in server.entries()]
    assert statuses[:2] == [429, 429] and statuses.count(200) == 3
    assert elapsed >= 3.0  # two waits of Retry-After: 1.5 s


def test_malformed_json_and_empty_choices_are_protocol_errors_never_cached(server_factory, built, tmp_path):
    items, b = built
    variants = b["variants"]
    server = server_factory("--malformed-marker", "It ", "--empty-marker", "The ")
    judge = http_judge(server.url, max_retries=1, breaker_failures=10_000)  # counted, not stopped at
    verdicts = judge_all(built, judge, tmp_path / "cache.sqlite")
    bad = verdicts["error"].notna()
    assert bad.any() and verdicts.loc[bad, "error"].str.startswith("transport: protocol: a 2xx reply").all()
    assert verdicts.loc[bad, "verdict"].isna().all()
    cov = coverage(verdicts, variants, [judge]).iloc[0]
    # a broken endpoint is an error by cause, not a judge that could not decide
    assert cov["n_protocol_error"] == cov["n_error"] == bad.sum() and cov["n_unparsable"] == 0
    assert cov["n_answered"] == len(variants) - bad.sum() and cov["coverage"] < 1
    bodies = [e for e in server.entries() if e["status"] == 200]
    assert len(bodies) == len(variants) + bad.sum()  # each failed call was retried once
    # never cached: the rerun asks exactly the failed calls again (and the answered ones not at all)
    sent = len(server.entries())
    again = judge_all(built, judge, tmp_path / "cache.sqlite")
    assert len(server.entries()) - sent == 2 * bad.sum()
    assert again["error"].notna().sum() == bad.sum()


def test_a_refused_connection_is_not_cached_and_is_retried(built, tmp_path):
    judge = http_judge("http://127.0.0.1:9/v1", max_retries=0, breaker_failures=1000)
    items, b = built
    few = b["variants"].head(4)
    verdicts = judge_variants(few, b["pairs"], items, [judge], "r", cache_path=str(tmp_path / "c.sqlite"))
    assert verdicts["error"].str.startswith("transport: ConnectError").all()
    with CallCache(tmp_path / "c.sqlite") as cache:
        assert cache.stats() == []


def test_the_api_key_goes_in_the_header_only(server_factory, built, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEOPS_TEST_KEY", "sk-canary-1234")
    server = server_factory()
    judge = http_judge(server.url, api_key_env="JUDGEOPS_TEST_KEY")
    items, b = built
    judge_variants(
        b["variants"].head(2), b["pairs"], items, [judge], "r", cache_path=str(tmp_path / "c.sqlite")
    )
    assert all(e["authorized"] for e in server.entries())
    assert b"sk-canary-1234" not in (tmp_path / "c.sqlite").read_bytes()
    monkeypatch.delenv("JUDGEOPS_TEST_KEY")
    with pytest.raises(JudgeBackendError, match="JUDGEOPS_TEST_KEY is not set"):
        judge_variants(
            b["variants"].tail(2), b["pairs"], items, [judge], "r", cache_path=str(tmp_path / "d.sqlite")
        )


class InProcessServerJudge:
    """The test server's judge without HTTP: for the property test of the protocol layer."""

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        out = {}
        for call in calls:
            text, probs = answer(call.request.prompt)
            wanted = {c: probs.get(c, 0.0) for c in call.request.choices} if call.request.choices else None
            out[call.key] = Reply(text=text, probs=wanted)
        return out

    def close(self) -> None:
        pass


_sentence = st.sampled_from(
    [
        "It sells 12 × 4 = 48 rolls.",
        "It sells 12 × 4 = 46 rolls.",
        "Since 10 is more than 1, fine.",
        "Since 1 is more than 10, fine.",
        "The answer is 480.",
        "It usually works.",
    ]
)
_answer = st.lists(_sentence, min_size=1, max_size=3).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_answer, _answer, st.sampled_from(["pairwise", "pointwise", "score_then_choose", "blind_reference"]))
def test_candidate_symmetry_for_every_protocol(tmp_path, a, b, protocol):
    """Swapping the candidates swaps the verdict's position and mirrors p_first, whenever the judge
    decides on content (the server's judge defaults to A only when both answers are equally wrong)."""
    judge = JudgeConfig(name="s", backend="openai", model="m", base_url="http://unused/v1", protocol=protocol)
    units = [Unit("fwd", "q", a, b), Unit("bwd", "q", b, a)]
    with CallCache(tmp_path / f"{protocol}.sqlite") as cache:
        out = run_judge(judge, units, cache, backend=InProcessServerJudge())
    fwd, bwd = out["fwd"].decision, out["bwd"].decision
    if protocol == "pairwise" and fwd.verdict == bwd.verdict == "A":
        return  # the position default on equal evidence: what C7 measures, not hidden here
    swap = {"A": "B", "B": "A", "tie": "tie"}
    assert bwd.verdict == swap[fwd.verdict]
    if protocol != "pairwise":  # the pairwise server judge's probabilities are fixed per verdict
        assert abs(fwd.p_first - (1 - bwd.p_first)) < 1e-9


def test_the_llm_generator_plants_through_the_backend_and_passes_the_same_checks(server_factory, tmp_path):
    from judgeops.data_contracts.pair_verifier import pair_problems
    from judgeops.tasks.construct import construction_summary

    server = server_factory()
    items = ingest_items([BankSource(n_items=40, seed=7)]).items
    config = ConstructionConfig(generator="llm", llm=http_judge(server.url, name="gen", max_concurrency=8))
    cache = str(tmp_path / "calls.sqlite")
    built = construct(items, config, cache_path=cache)
    pairs, log = built["pairs"], built["construction_log"]
    by_llm = pairs["generator"] == "llm:test-model"
    assert by_llm.sum() >= 10 and (~by_llm).sum() >= 1  # the LLM's edits, and the rules where it failed
    assert (pair_problems(pairs) == "").all()  # every pair verifies, whoever planted it
    tried = log[log["branch"] == "llm"]
    assert len(tried) == len(items)  # one LLM attempt per item, each logged
    assert tried.loc[tried["status"] != "accepted", "reason"].str.startswith("llm: ").all()
    counts = pairs["error_type"].value_counts()
    assert counts.max() - counts.min() <= 4  # still balanced
    summary = construction_summary(pairs, log)
    assert {"llm_accepted", "llm_rejected", "llm_acceptance"} <= set(summary.columns)
    sent = len(server.entries())
    assert sent == len(items)
    again = construct(items, config, cache_path=cache)
    assert len(server.entries()) == sent  # a rerun pays for nothing
    pd.testing.assert_frame_equal(again["pairs"], pairs)


def test_the_llm_can_write_answer_a_too_and_what_fails_its_checks_keeps_the_template(
    server_factory, tmp_path
):
    from judgeops.data_contracts.pair_verifier import pair_problems
    from judgeops.tasks.construct import construction_summary

    server = server_factory()
    items = ingest_items([BankSource(n_items=40, seed=7)]).items
    model = http_judge(server.url, name="gen", max_concurrency=8)
    config = ConstructionConfig(generator="llm", llm=model, llm_expand=True)
    built = construct(items, config, cache_path=str(tmp_path / "calls.sqlite"))
    pairs, log = built["pairs"], built["construction_log"]
    written = log[log["branch"] == "llm_expand"]
    assert len(written) == len(items)
    numeric = items.set_index("item_id")["gold"].str.contains(r"\d", regex=True)
    rejected = written[written["status"] == "rejected"]
    assert rejected["reason"].str.contains("its own arithmetic does not hold: 2 × 3 = 7").all()
    assert set(rejected["item_id"]) == set(numeric[numeric].index)  # exactly the answers with the slip
    by_llm = pairs["qc_flags"].map(lambda f: "llm_answer" in list(f))
    accepted = set(written.loc[written["status"] == "accepted", "item_id"])
    assert set(pairs.loc[by_llm, "item_id"]) <= accepted and by_llm.sum() > 0
    # an LLM-written A that no error type fits leaves no pair, and the log says why for every type
    for item_id in accepted - set(pairs["item_id"]):
        tries = log[(log["item_id"] == item_id) & (log["branch"] == "standard")]
        assert len(tries) == 4 and (tries["status"] != "accepted").all()
    assert pairs.loc[by_llm, "answer_correct"].str.startswith("Reading the question carefully").all()
    assert (pair_problems(pairs) == "").all()
    summary = construction_summary(pairs, log).set_index("error_type")
    assert summary["llm_answer_a_used"].sum() == len(accepted)
