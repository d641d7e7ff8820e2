"""The PostgreSQL call cache when its connection drops mid judge stage: the server restarted, stopped for a
few seconds, or every connection terminated. It failed the run with a 230-250-line traceback and the rerun paid
again for calls that had been answered. Now each operation is done again on a fresh connection (bounded
backoff): the stage completes with every call paid once; a database that stays down stops the stage with one
line naming the cache (no password) after the bound, and the rerun pays nothing twice. A real PostgreSQL server
of the test's own (it is stopped and started), a real OpenAI-protocol server."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from judgeops.tasks.judges import cache as cache_module
from judgeops.tasks.judges.cache import CacheUnavailable
from tests.conftest import http_judge, judge_all
from tests.openai_server import ServerProcess
from tests.postgres_server import PostgresServer, bin_dir

pytestmark = pytest.mark.skipif(bin_dir() is None, reason="PostgreSQL is not installed (.ci/run installs it)")


def _terminate(db: PostgresServer) -> None:
    import psycopg

    with psycopg.connect(db.url(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'calls' AND pid <> "
            "pg_backend_pid()"
        )


def _stopped_a_while(db: PostgresServer) -> None:
    db.halt()
    time.sleep(5)
    db.start()


def _restarted(db: PostgresServer) -> None:
    db.halt()
    db.start()


FAULTS = {
    "the server restarted": _restarted,
    "the server stopped for 5 s": _stopped_a_while,
    "every connection terminated": _terminate,
}


@pytest.fixture
def database():
    db = PostgresServer()
    try:
        yield db
    finally:
        db.stop()


def _when_busy(judges: ServerProcess, action) -> threading.Thread:
    def run():
        deadline = time.monotonic() + 600
        while len(judges.entries()) < 12:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_dropped_connection_is_made_again_and_no_call_is_paid_twice(
    built, tmp_path, database, fault, figure
):
    url = database.create_database("calls")
    judges = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.1")
    judge = http_judge(judges.url, max_concurrency=2)
    try:
        fault_thread = _when_busy(judges, lambda: FAULTS[fault](database))
        t0 = time.monotonic()
        verdicts = judge_all(built, judge, url)
        took = time.monotonic() - t0
        fault_thread.join()
        again = judge_all(built, judge, url)
        log = judges.entries()
    finally:
        judges.stop()
    paid = Counter(e["sha256"] for e in log if e["status"] == 200)
    assert verdicts["error"].isna().all() and again["cached"].all()
    assert len(paid) == len(verdicts) and set(paid.values()) == {1}
    figure(
        f"PostgreSQL call cache: {fault} mid judge stage",
        "the stage completes; every call paid once; the rerun pays none",
        f"{len(verdicts)} of {len(verdicts)} answered in {took:.1f} s, {sum(paid.values())} paid for "
        f"{len(paid)} calls (0 twice); rerun: 0 paid",
    )


def test_a_cache_that_stays_down_stops_the_stage_in_one_line(built, tmp_path, database, monkeypatch, figure):
    monkeypatch.setattr(cache_module, "RECONNECT_S", 3.0)
    url = database.create_database("calls").replace("judgeops@", "judgeops:s3cret-pw@")
    judges = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.1")
    judge = http_judge(judges.url, max_concurrency=2)
    try:
        fault_thread = _when_busy(judges, database.halt)
        t0 = time.monotonic()
        with pytest.raises(CacheUnavailable) as stopped:
            judge_all(built, judge, url)
        took = time.monotonic() - t0
        fault_thread.join()
        paid_before = len(judges.entries())
        database.start()
        again = judge_all(built, judge, url)
        log = judges.entries()
    finally:
        judges.stop()
    message = str(stopped.value)
    assert (
        "\n" not in message and "s3cret" not in message and "call cache postgresql://judgeops:***@" in message
    )
    paid = Counter(e["sha256"] for e in log if e["status"] == 200)
    twice = sum(n - 1 for n in paid.values())
    assert again["error"].isna().all() and len(paid) == len(again)
    # at most the chunk in flight when the cache went down is paid again (its replies had nowhere to go)
    assert twice <= 16
    figure(
        "PostgreSQL call cache stopped mid judge stage and not restarted (reconnect bound 3 s)",
        "the stage stops in one line naming the cache, no password; the rerun repays at most the chunk in flight",
        f"stopped after {took:.1f} s ({paid_before} calls answered) with: {message[:80]}…; rerun: {len(again)} "
        f"answered, {twice} paid twice",
    )
