"""The fleet limit obeys bounds. One 429 with `Retry-After: 86400` took a shared rate limit's slots for a day
(17,245,979 of 200) and a judge told `rate_limit_wait_s: 5, max_retries: 1` waited instead of giving up; a
Prefect server killed mid-run failed the run after 303 s with a traceback. Now a Retry-After past the judge's
allowance fails those calls at once (asked again by the next run) and pauses nobody; a Prefect server that does
not answer is waited for a bounded time, then the judge stage stops with one line, every answered call cached,
and the rerun pays none of them twice. Real OpenAI-protocol servers and real Prefect servers on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter

import pytest
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL, temporary_settings

from judgeops.api.operations import wait_for_api
from judgeops.config import LimitConfig
from judgeops.tasks.judges.backends import limits
from judgeops.tasks.judges.backends.limits import FleetUnavailable
from tests.conftest import http_judge, judge_all
from tests.openai_server import ServerProcess
from tests.postgres_server import free_port

pytestmark = pytest.mark.slow


def test_a_retry_after_past_the_judges_allowance_fails_those_calls_at_once(built, tmp_path, figure):
    server = ServerProcess(tmp_path / "requests.jsonl", "--rate-limit", "6", "--retry-after", "86400")
    judge = http_judge(
        server.url, max_concurrency=2, max_retries=1, rate_limit_wait_s=5, breaker_failures=100
    )
    try:
        t0 = time.monotonic()
        first = judge_all(built, judge, tmp_path / "c.sqlite")
        took = time.monotonic() - t0
        again = judge_all(built, judge, tmp_path / "c.sqlite")
        log = server.entries()
    finally:
        server.stop()
    failed = first["error"].notna()
    assert int(failed.sum()) == 6 and first["error"][failed].str.contains("past this judge's").all()
    assert took < 60 and again["error"].isna().all()
    answered = Counter(e["sha256"] for e in log if e["status"] == 200)
    assert set(answered.values()) == {1}  # the rerun asked only for those 6
    figure(
        "a provider's 429 with Retry-After: 86400 (6 requests), judge rate_limit_wait_s 5, max_retries 1",
        "those calls fail at once, nobody waits a day; the rerun asks only for them",
        f"{len(first)} calls in {took:.1f} s: {int(failed.sum())} failed naming the Retry-After, the rest answered; "
        f"rerun: {len(again)} answered, 0 paid twice",
    )


def test_a_long_retry_after_pauses_no_fleet(prefect_server, built, tmp_path, figure):
    """The same 429 under a fleet budget: the rate limit's slots stay within its size (the pause is not taken)."""
    server = ServerProcess(tmp_path / "requests.jsonl", "--rate-limit", "2", "--retry-after", "86400")
    judge = http_judge(server.url, limit=LimitConfig(name="bounded-acct", rpm=600), rate_limit_wait_s=5)
    try:
        t0 = time.monotonic()
        judge_all(built, judge, tmp_path / "c.sqlite")
        healthy = judge_all(
            built, http_judge(server.url, model="other", limit=judge.limit), tmp_path / "d.sqlite"
        )
        took = time.monotonic() - t0
    finally:
        server.stop()
    with get_client(sync_client=True) as client:
        gcl = client.read_global_concurrency_limit_by_name("bounded-acct-rpm")
    assert gcl.active_slots <= gcl.limit and healthy["error"].isna().all() and took < 120
    figure(
        "429 Retry-After: 86400 under a fleet rate limit (600 rpm), judge rate_limit_wait_s 5",
        "the fleet is not paused past the judge's allowance; a healthy provider is served at once",
        f"active slots after: {gcl.active_slots} of {gcl.limit} (was 17,245,979 of 200); both judges done in "
        f"{took:.1f} s",
    )


def _prefect_server(port: int, home, log) -> subprocess.Popen:
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    return subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_prefect_server_killed_mid_stage_ends_in_one_line_and_the_rerun_pays_nothing_twice(
    built, tmp_path, monkeypatch, figure
):
    monkeypatch.setattr(limits, "PATIENCE_S", 5.0)
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    judges = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.2")
    prefect = _prefect_server(port, tmp_path / "home", tmp_path / "prefect.log")
    judge = http_judge(judges.url, max_concurrency=2, limit=LimitConfig(name="killed-acct", rpm=6000))
    try:
        assert wait_for_api(api, prefect), (tmp_path / "prefect.log").read_text()[-2000:]
        with temporary_settings({PREFECT_API_URL: api}):
            import threading

            def kill_when_busy():
                while len(judges.entries()) < 12:
                    time.sleep(0.05)
                os.killpg(prefect.pid, 9)

            killer = threading.Thread(target=kill_when_busy)
            killer.start()
            t0 = time.monotonic()
            with pytest.raises(FleetUnavailable) as stopped:
                judge_all(built, judge, tmp_path / "c.sqlite")
            took = time.monotonic() - t0
            killer.join()
            prefect.wait()
            paid_before = len(judges.entries())
            prefect = _prefect_server(port, tmp_path / "home", tmp_path / "prefect2.log")
            assert wait_for_api(api, prefect)
            again = judge_all(built, judge, tmp_path / "c.sqlite")
        log = judges.entries()
    finally:
        judges.stop()
        if prefect.poll() is None:
            os.killpg(prefect.pid, 9)
            prefect.wait()
    message = str(stopped.value)
    assert "\n" not in message and "did not answer" in message
    answered = Counter(e["sha256"] for e in log if e["status"] == 200)
    assert again["error"].isna().all() and set(answered.values()) == {1} and len(answered) == len(again)
    figure(
        "the Prefect server holding a fleet rate limit killed mid judge stage, then restarted",
        "the stage stops in one line after a bounded wait, answered calls cached; the rerun pays 0 twice",
        f"stopped {took:.1f} s after the start ({paid_before} calls answered before) with: {message[:90]}…; rerun: "
        f"{len(again)} of {len(again)} answered, 0 paid twice",
    )


HOLDER = """
import asyncio, sys
from judgeops.config import JudgeConfig, LimitConfig
from judgeops.tasks.judges.backends import limits
judge = JudgeConfig(name="h", backend="openai", model="m", base_url="http://127.0.0.1:9/v1",
                    limit=LimitConfig(name="leased-acct", concurrency=2))
limiter = limits.Limiter(judge)
async def main():
    await limiter.ready()
    async with limiter.slots(2):
        print("HELD", flush=True)
        await asyncio.sleep(3600)
asyncio.run(main())
"""


def test_slots_held_by_a_killed_run_are_let_go_even_across_a_server_restart(tmp_path, figure):
    """`judgeops server`'s Prefect keeps leases on disk: a run SIGKILLed holding the budget's concurrency slots,
    then the server restarted, and the slots come free when the lease lapses (in memory they stayed taken)."""
    from judgeops.api.operations import SERVER_SETTINGS

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    os.environ.update(SERVER_SETTINGS)  # as `judgeops server` starts it
    try:
        prefect = _prefect_server(port, tmp_path / "home", tmp_path / "prefect.log")
    finally:
        for name in SERVER_SETTINGS:
            os.environ.pop(name)
    holder = None
    try:
        assert wait_for_api(api, prefect)
        env = {**os.environ, "PREFECT_API_URL": api}
        holder = subprocess.Popen([sys.executable, "-c", HOLDER], env=env, stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "HELD"
        holder.kill()
        holder.wait()
        os.killpg(prefect.pid, 9)
        prefect.wait()
        os.environ.update(SERVER_SETTINGS)
        try:
            prefect = _prefect_server(port, tmp_path / "home", tmp_path / "prefect2.log")
        finally:
            for name in SERVER_SETTINGS:
                os.environ.pop(name)
        assert wait_for_api(api, prefect)
        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            held = client.read_global_concurrency_limit_by_name("leased-acct-concurrency").active_slots
            t0, free = time.monotonic(), None
            while (
                time.monotonic() - t0 < 300
            ):  # the lease (60 s, the least Prefect takes) and the repossessor's round (15 s)
                free = client.read_global_concurrency_limit_by_name("leased-acct-concurrency").active_slots
                if free == 0:
                    break
                time.sleep(1)
            took = time.monotonic() - t0
    finally:
        if holder is not None and holder.poll() is None:
            holder.kill()
        if prefect.poll() is None:
            os.killpg(prefect.pid, 9)
            prefect.wait()
    assert held == 2 and free == 0
    figure(
        "a run SIGKILLed holding 2 of a fleet budget's concurrency slots, then the Prefect server restarted",
        "the slots come free when their lease lapses",
        f"2 of 2 held after the restart, 0 of 2 {took:.0f} s later (was: 2 of 2 for good)",
    )
