"""Concurrent runs on one store and one call cache: all complete, nothing is clobbered, and each judge call is
paid once — one run calls, the others wait on the cache."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from judgeops.config import CacheConfig, JudgeConfig, dump_config
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.judges import complete_cached
from judgeops.tasks.judges.cache import CallCache
from judgeops.tasks.judges.calls import Call, Reply
from tests.conftest import small_config
from tests.openai_server import ServerProcess
from tests.reliability.faults import judgeops_process, with_http_judge


class SlowBackend:
    """Answers after a pause and counts what it was asked (a backend that costs money)."""

    def __init__(self, asked: Counter, lock: threading.Lock, pause: float = 0.05):
        self.asked, self.lock, self.pause = asked, lock, pause

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        time.sleep(self.pause * len(calls))
        with self.lock:
            self.asked.update(c.key for c in calls)
        return {c.key: Reply(text="A") for c in calls}


def _calls(n: int) -> list[Call]:
    return [Call(key=f"k{i}", request=None, unit_id=f"u{i}", sample=0) for i in range(n)]


@pytest.mark.parametrize("callers", [2, 4])
def test_threads_sharing_one_cache_file_pay_each_call_once(tmp_path, callers, figure):
    judge = JudgeConfig(name="j", backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    asked, lock, results = Counter(), threading.Lock(), []

    def run() -> None:
        with CallCache(tmp_path / "calls.sqlite") as cache:  # each run its own handle, as separate runs have
            results.append(complete_cached(judge, _calls(40), cache, 8, SlowBackend(asked, lock)))

    threads = [threading.Thread(target=run) for _ in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == callers and all(len(r) == 40 for r in results)
    assert sum(asked.values()) == 40 and max(asked.values()) == 1
    figure(
        f"{callers} threads, one call cache, the same 40 calls",
        "each call paid once",
        f"{sum(asked.values())} backend calls for 40 unique keys",
    )


@pytest.mark.slow
# 2 processes were a row of their own: 4 contend more, in about the same minute
@pytest.mark.parametrize("runs", [4])
def test_concurrent_cli_runs_on_one_store_and_cache(tmp_path, runs, figure):
    server = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.05")
    try:
        config = small_config(str(tmp_path / "store"), n_items=24)
        config.cache = CacheConfig(path=str(tmp_path / "calls.sqlite"))
        with_http_judge(config, server.url)
        (tmp_path / "judgeops.yaml").write_text(dump_config(config))
        started = time.monotonic()
        procs = [judgeops_process("run", "--no-reuse", cwd=tmp_path) for _ in range(runs)]
        outs = [p.communicate(timeout=900)[0] for p in procs]
        wall = time.monotonic() - started
        assert [p.returncode for p in procs] == [0] * runs, outs[-1][-3000:]
        paid = Counter(e["sha256"] for e in server.entries() if e["status"] == 200)
        store = ArtifactStore(str(tmp_path / "store"))
        records = store.list_runs()
        assert len(records) == runs and {r["status"] for r in records} == {"completed"}
        checked = 0
        for r in records:  # every artifact of every run reads back with the hash its manifest recorded
            run_store = ArtifactStore(store.url, r["run_id"])
            for m in run_store.list_artifacts():
                run_store.read_bytes(run_store.ref(m["name"]))
                checked += 1
        verdicts = [ArtifactStore(store.url, r["run_id"]).read_pandas("verdicts") for r in records]
        http = [
            v[v["judge_id"] == "http-judge"].sort_values("variant_id")["verdict"].tolist() for v in verdicts
        ]
        assert all(h == http[0] for h in http)  # the same answers, read from the one paid call
    finally:
        server.stop()
    duplicates = sum(n - 1 for n in paid.values())
    figure(
        f"{runs} concurrent `judgeops run --no-reuse`, one store, one call cache (processes)",
        "all complete; artifacts verified; duplicate paid calls = 0",
        f"{runs} of {runs} completed in {wall:.0f} s; {checked} artifacts hash-verified; {sum(paid.values())} "
        f"calls paid for {len(paid)} unique prompts ({duplicates} duplicates)",
    )
    assert duplicates == 0


@pytest.mark.slow
def test_concurrent_flow_runs_in_threads_on_one_store_and_cache(prefect_server, tmp_path, figure):
    """The same as the CLI runs, as threads of one process (a notebook, or a worker running two flow runs)."""
    import datetime as dt

    from judgeops.flows.evaluate import evaluate

    server = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.05")
    results, errors = [], []
    try:
        config = small_config(str(tmp_path / "store"), n_items=24)
        with_http_judge(config, server.url)

        def one() -> None:
            try:
                results.append(evaluate(config=config, as_of=dt.date(2026, 10, 19), reuse=False))
            except Exception as exc:  # reported below with the others
                errors.append(exc)

        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        paid = Counter(e["sha256"] for e in server.entries() if e["status"] == 200)
    finally:
        server.stop()
    assert not errors and len(results) == 2 and results[0].run_id != results[1].run_id
    duplicates = sum(n - 1 for n in paid.values())
    figure(
        "2 concurrent evaluate flow runs in threads of one process, one store, one call cache",
        "both complete; duplicate paid calls = 0",
        f"2 of 2 completed; {sum(paid.values())} calls paid for {len(paid)} unique prompts ({duplicates} duplicates)",
    )
    assert duplicates == 0
