"""The call cache under concurrent writers and a writer killed mid-run."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3

from judgeops.tasks.judges.cache import CallCache
from judgeops.tasks.judges.calls import Reply


def _writer(path: str, worker: int, die_after: int | None) -> None:
    with CallCache(path) as cache:
        for chunk in range(10):
            replies = {
                f"w{worker}-{chunk}-{i}": Reply(text="A", probs={"A": 0.9}, tokens=3) for i in range(20)
            }
            replies.update(
                {f"shared-{chunk}-{i}": Reply(text="B") for i in range(5)}
            )  # every worker writes these
            cache.put_many("openai", "m", replies)
            if die_after is not None and chunk + 1 == die_after:
                os._exit(9)  # killed: no close, no clean shutdown


def test_concurrent_writers_lose_nothing_and_a_killed_writer_keeps_its_committed_chunks(tmp_path):
    path = str(tmp_path / "calls.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 4 if w == 3 else None)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 9]
    with CallCache(path) as cache:
        stats = cache.stats()
        assert (
            stats[0]["calls"] == 3 * 200 + 4 * 20 + 50
        )  # three full writers, four chunks of the killed one, shared once
        hit = cache.get_many(["w0-0-0", "shared-9-4", "w3-3-19", "w3-4-0"])
        assert set(hit) == {"w0-0-0", "shared-9-4", "w3-3-19"} and hit["w0-0-0"].probs == {"A": 0.9}
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_transport_failures_are_never_stored(tmp_path):
    with CallCache(tmp_path / "c.sqlite") as cache:
        stored = cache.put_many(
            "openai",
            "m",
            {
                "ok": Reply(text="A"),
                "bad": Reply(error="transport: ConnectError"),
                "junk": Reply(error="unparsable: x"),
            },
        )
        assert stored == 2 and set(cache.get_many(["ok", "bad", "junk"])) == {"ok", "junk"}
        assert cache.prune(unparsable=True) == 1 and set(cache.get_many(["ok", "junk"])) == {"ok"}


def _open_at_once(path: str, barrier) -> None:
    barrier.wait()
    with CallCache(path) as cache:
        cache.put_many("openai", "m", {f"k{os.getpid()}": Reply(text="A")})


def test_many_processes_opening_a_new_cache_at_once_all_succeed(tmp_path):
    # Before the set-up retry, about 2.5% of simultaneous first opens failed with "database is locked"
    # (SQLite refuses the WAL switch without calling the busy handler); 25 rounds of 8 would see ~5.
    ctx = mp.get_context("fork")
    for round_ in range(25):
        path = str(tmp_path / f"c{round_}.sqlite")
        barrier = ctx.Barrier(8)
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier)) for _ in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * 8, f"round {round_}"
        with CallCache(path) as cache:
            assert cache.stats()[0]["calls"] == 8


def _claim_and_die(path: str) -> None:
    cache = CallCache(path)
    mine, _ = cache.claim(["a", "b"])
    assert mine == {"a", "b"}
    os._exit(9)  # killed while its calls were in flight


def test_a_dead_caller_s_claims_are_taken_over_and_a_live_one_s_are_waited_for(tmp_path):
    path = str(tmp_path / "calls.sqlite")
    proc = mp.get_context("spawn").Process(target=_claim_and_die, args=(path,))
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == 9
    with CallCache(path) as live, CallCache(path) as other:
        assert live.claim(["a", "b", "c"]) == ({"a", "b", "c"}, set())  # the dead owner's keys are free again
        assert other.claim(["a", "c", "d"]) == ({"d"}, {"a", "c"})  # a live owner's are not
        live.put_many("openai", "m", {"a": Reply(text="A")})
        live.release(["a", "c"])  # "a" answered, "c" failed: others may call "c" themselves
        got = other.wait_for({"a", "c"}, poll_s=0.01)
        assert set(got) == {"a"} and other.claim(["c"]) == ({"c"}, set())


def test_a_closed_handle_leaves_no_claim_behind(tmp_path):
    """A handle that failed mid-call and was closed (a retried task in a long-lived worker) blocks no one."""
    with CallCache(tmp_path / "calls.sqlite") as first:
        assert first.claim(["k"]) == ({"k"}, set())
    with CallCache(tmp_path / "calls.sqlite") as second:  # same process, so the pid check sees it alive
        assert second.claim(["k"]) == ({"k"}, set())
