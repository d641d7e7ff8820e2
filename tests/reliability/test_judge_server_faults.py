"""A judge server that misbehaves: killed and restarted, 429 storms, 5xx bursts, stalls past the timeout,
connections dropped mid-body, malformed or empty completions. The stage completes, no call is lost (every
expected call is a verdict or an error with its cause in `coverage`), Retry-After is honoured, and what could
not be answered is told apart by cause."""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict

import pytest

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig
from judgeops.data_contracts.coverage_check import coverage_problems
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import coverage, judge_variants
from tests.openai_server import ServerProcess


@pytest.fixture(scope="module")
def built():
    items = ingest_items([BankSource(n_items=12, seed=3)]).items
    return items, construct(items, ConstructionConfig())


def _judge(url: str, **kw) -> JudgeConfig:
    base = {
        "name": "http",
        "backend": "openai",
        "model": "m",
        "base_url": url,
        "max_concurrency": 4,
        "max_retries": 4,
        "breaker_failures": 10_000,
        "timeout_s": 5,
    }
    return JudgeConfig(**{**base, **kw})


def _run(built, judge, tmp_path, n=40):
    items, b = built
    variants = b["variants"].head(n)
    t0 = time.monotonic()
    verdicts = judge_variants(
        variants, b["pairs"], items, [judge], "r", cache_path=str(tmp_path / "c.sqlite")
    )
    table = coverage(verdicts, variants, [judge])
    assert (coverage_problems(table) == "").all()  # every expected call accounted for, by cause
    return verdicts, table.iloc[0], time.monotonic() - t0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


RECOVERABLE = {
    "429 storm (first 30 requests, Retry-After 0.5 s)": ("--rate-limit", "30", "--retry-after", "0.5"),
    "5xx burst (first 20 requests 503)": ("--fail-5xx", "20"),
    "stalls past the 1 s timeout (first 6 requests held 3 s)": ("--stall", "6", "--stall-s", "3"),
    "connections dropped mid-body (first 8 requests)": ("--drop", "8"),
}


@pytest.mark.parametrize("fault", list(RECOVERABLE))
def test_transient_faults_are_retried_to_completion(built, tmp_path, fault, figure):
    server = ServerProcess(tmp_path / "requests.jsonl", *RECOVERABLE[fault])
    try:
        verdicts, cov, elapsed = _run(built, _judge(server.url, timeout_s=1, max_retries=6), tmp_path)
        log = server.entries()
    finally:
        server.stop()
    waits = []
    tries = defaultdict(list)
    for e in log:
        tries[e["sha256"]].append(e)
    retried = sum(len(attempts) - 1 for attempts in tries.values())  # requests the server saw again
    for attempts in tries.values():  # the gap after each 429 (the client's next attempt of that prompt)
        waits += [b["t"] - a["t"] for a, b in zip(attempts, attempts[1:], strict=False) if a["status"] == 429]
    assert cov["coverage"] == 1.0 and cov["n_error"] == 0 and len(verdicts) == cov["n_expected"]
    if "429" in fault:
        assert waits and min(waits) >= 0.5 - 0.05  # Retry-After honoured (server clock, 50 ms slack)
    figure(
        f"judge server: {fault}",
        "completes; calls lost = 0; Retry-After honoured",
        f"{int(cov['n_answered'])} of {int(cov['n_expected'])} answered, {retried} requests retried; "
        f"0 lost; {elapsed:.1f} s" + (f"; shortest wait after a 429: {min(waits):.2f} s" if waits else ""),
    )


def test_a_server_killed_and_restarted_mid_stage_is_waited_out(built, tmp_path, figure):
    port = _free_port()
    first = ServerProcess(
        tmp_path / "requests.jsonl", "--port", str(port), "--die-after", "12", "--delay", "0.05"
    )
    second: list[ServerProcess] = []

    def restart() -> None:
        first.proc.wait(timeout=60)
        time.sleep(1.0)  # down for a second
        second.append(ServerProcess(tmp_path / "requests.jsonl", "--port", str(port)))

    keeper = threading.Thread(target=restart)
    keeper.start()
    try:
        verdicts, cov, elapsed = _run(built, _judge(first.url, max_retries=6), tmp_path)
        keeper.join()
        answered = [e["sha256"] for e in first.entries() if e["status"] == 200]
    finally:
        for s in [first, *second]:
            s.stop()
    assert cov["coverage"] == 1.0 and cov["n_error"] == 0
    repeated = len(answered) - len(set(answered))
    assert repeated == 0  # nothing the server answered was asked again
    figure(
        "judge server killed after 12 answers, back 1 s later (same port)",
        "completes; calls lost = 0",
        f"{int(cov['n_answered'])} of {int(cov['n_expected'])} answered; 0 lost; {repeated} answered twice; "
        f"{elapsed:.1f} s",
    )


EXHAUSTED = {
    "429 every time": (
        ("--rate-limit", "100000", "--retry-after", "0.01"),
        {"max_retries": 1, "rate_limit_wait_s": 0.05},
        "n_rate_limited",
    ),
    "503 every time": (("--fail-5xx", "100000"), {"max_retries": 1}, "n_server_error"),
    "every request stalls past the timeout": (
        ("--stall", "100000", "--stall-s", "2"),
        {"max_retries": 0, "timeout_s": 0.5},
        "n_timeout",
    ),
    "every connection dropped mid-body": (("--drop", "100000"), {"max_retries": 0}, "n_connection"),
    "malformed JSON or an empty choice list": (
        ("--malformed-marker", "It ", "--empty-marker", "The "),
        {"max_retries": 1},
        "n_protocol_error",
    ),
}


@pytest.mark.parametrize("fault", list(EXHAUSTED))
def test_what_cannot_be_answered_is_counted_by_cause(built, tmp_path, fault, figure):
    flags, judge_kw, column = EXHAUSTED[fault]
    server = ServerProcess(tmp_path / "requests.jsonl", *flags)
    try:
        verdicts, cov, _ = _run(built, _judge(server.url, **judge_kw), tmp_path, n=12)
    finally:
        server.stop()
    assert cov[column] > 0 and len(verdicts) == cov["n_expected"]
    if column != "n_protocol_error":  # the markers are in some prompts only
        assert cov[column] == cov["n_expected"] == cov["n_error"]  # every call, all under its own cause
    else:
        assert cov[column] == cov["n_error"] > 0 and cov["n_unparsable"] == 0
    figure(
        f"judge server: {fault}, retries exhausted",
        "the coverage artifact counts each failure by cause",
        f"{column} = {int(cov[column])} of {int(cov['n_expected'])}; answered {int(cov['n_answered'])}; "
        "0 unaccounted",
    )


def test_a_reply_that_trickles_meets_the_calls_deadline(built, tmp_path, figure):
    """One byte every 0.5 s: the SDK's per-read timeout never fires; the call's total deadline does, and the
    call counts as a timeout (retried, then given up) instead of holding the stage forever."""
    server = ServerProcess(tmp_path / "requests.jsonl", "--trickle", "100000", "--trickle-s", "0.5")
    try:
        t0 = time.monotonic()
        verdicts, cov, _ = _run(built, _judge(server.url, timeout_s=1.5, max_retries=1), tmp_path, n=4)
        took = time.monotonic() - t0
    finally:
        server.stop()
    assert cov["n_timeout"] == cov["n_expected"] == cov["n_error"] == len(verdicts)
    assert verdicts["error"].str.contains("the call's deadline").all()
    figure(
        "judge server trickling its reply at one byte every 0.5 s (4 calls, timeout_s 1.5, 1 retry)",
        "each call ends at its deadline and counts as a timeout",
        f"{int(cov['n_timeout'])} of {int(cov['n_expected'])} timed out in {took:.1f} s",
    )
    assert took < 30


def test_a_huge_reply_is_refused_unread_and_never_cached(built, tmp_path, figure):
    import psutil

    from judgeops.tasks.judges.cache import open_cache

    server = ServerProcess(tmp_path / "requests.jsonl", "--huge-mb", "50")
    rss = psutil.Process().memory_info().rss
    try:
        verdicts, cov, _ = _run(built, _judge(server.url, max_reply_bytes=1_000_000), tmp_path, n=12)
    finally:
        server.stop()
    grew = (psutil.Process().memory_info().rss - rss) / 2**20
    # every call fails (most refused by size; under load a 50 MB body can also miss its deadline first)
    assert cov["n_error"] == cov["n_expected"] and cov["n_protocol_error"] > 0 and cov["n_answered"] == 0
    assert verdicts["error"].str.contains("a reply over 1,000,000 bytes").any()
    with open_cache(tmp_path / "c.sqlite") as cache:
        assert sum(r["calls"] for r in cache.stats()) == 0
    figure(
        "judge server answering 50 MB bodies (12 calls, max_reply_bytes 1 MB)",
        "refused unread, counted as protocol errors, nothing cached",
        f"{int(cov['n_protocol_error'])} of {int(cov['n_expected'])} refused; cache rows 0; RSS grew {grew:.0f} MB",
    )
