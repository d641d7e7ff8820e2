"""`judgeops run` killed with SIGKILL in the judge stage: the run shows as crashed (not running forever), the
temporary Prefect server it started is stopped, its temp files are gone, and the rerun pays again only for
the calls that were in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psutil
import pytest

from judgeops.config import dump_config
from judgeops.schemas.store import ArtifactStore
from tests.conftest import small_config
from tests.openai_server import ServerProcess
from tests.reliability.faults import EVENT_BOUND_S, judgeops_process, wait_while_running, with_http_judge

pytestmark = pytest.mark.slow
CONCURRENCY = 2
IN_FLIGHT_BOUND = max(8, 4 * CONCURRENCY)  # one chunk per judge: committed to the cache only when done
PROBE = """import sys, json
from prefect.client.orchestration import get_client
with get_client(sync_client=True) as c:
    print(json.dumps(c.read_flow_run(sys.argv[1]).state.type.value))
"""  # the killed run's flow run, read from the Prefect database the CLI runs share (PREFECT_HOME)


def _prefect_servers(pid: int) -> list[psutil.Process]:
    children = psutil.Process(pid).children(recursive=True)
    return [c for c in children if "prefect.server.api.server:create_app" in " ".join(c.cmdline())]


def test_a_run_killed_in_the_judge_stage_is_marked_crashed_and_the_rerun_repays_only_in_flight(
    tmp_path, figure
):
    server = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.25")
    try:
        config = small_config(str(tmp_path / "store"), n_items=24)
        with_http_judge(config, server.url, model="test-model", max_concurrency=CONCURRENCY)
        (tmp_path / "judgeops.yaml").write_text(dump_config(config))
        run = judgeops_process("run", cwd=tmp_path, quiet=True)
        wait_while_running(run, lambda: len(server.entries()) >= 12, "the judge stage")  # well inside it
        orphans = _prefect_servers(run.pid)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        paid_before = len(server.entries())
        store = ArtifactStore(str(tmp_path / "store"))
        (killed,) = store.list_runs()
        assert killed["status"] == "running" and orphans  # what a crash leaves: a record and a server

        ls = judgeops_process("store", "ls", cwd=tmp_path, quiet=True)
        out = ls.communicate(timeout=120)[0]
        assert ls.returncode == 0, out
        record = store.run_record(killed["run_id"])
        assert record["status"] == "crashed" and "ended without finishing" in record["error"]
        assert f"run {killed['run_id']}: crashed" in out and "crashed" in out
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in orphans)
        assert not list((tmp_path / "store").rglob("*.tmp-*"))

        rerun = judgeops_process("run", cwd=tmp_path, quiet=True)
        out = rerun.communicate(timeout=EVENT_BOUND_S)[0]
        assert rerun.returncode == 0, out
        prompts = Counter(e["sha256"] for e in server.entries() if e["status"] == 200)
        repeated = sum(n - 1 for n in prompts.values())
        done = [r for r in store.list_runs() if r["status"] == "completed"]
        assert len(done) == 1
        assert store.run_record(killed["run_id"])["swept"]["prefect_state"] == "crashed"  # set by the rerun
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, killed["prefect"]["flow_run_id"]],
            capture_output=True,
            text=True,
            timeout=180,
            env={**os.environ, "PREFECT_LOGGING_LEVEL": "ERROR"},
        )
        assert json.loads(probe.stdout.strip().splitlines()[-1]) == "CRASHED", (
            probe.stderr
        )  # in Prefect's view too
    finally:
        server.stop()
    figure(
        "`judgeops run` SIGKILLed in the judge stage (HTTP judge, 2 in flight)",
        f"marked crashed; temp server stopped; rerun repeats ≤ {IN_FLIGHT_BOUND} calls (one chunk)",
        f"{paid_before} calls paid before the kill; {repeated} repeated by the rerun; status crashed",
    )
    assert repeated <= IN_FLIGHT_BOUND


def test_a_run_killed_while_the_local_model_judges_repeats_only_its_chunk_in_flight(tmp_path, figure):
    """The in-process SmolLM2 judge: no server log to read, so the call ledger beside the cache (one line per
    call sent to a backend, written before it goes) says which calls each run started."""
    config = small_config(str(tmp_path / "store"), n_items=24, llm=True)
    config.judges = [
        j.model_copy(update={"max_pairs": 4}) if j.backend == "local" else j for j in config.judges
    ]
    (tmp_path / "judgeops.yaml").write_text(dump_config(config))
    ledger = Path(config.cache.path + ".ledger.jsonl")
    chunk = max(8, 4 * next(j for j in config.judges if j.backend == "local").max_concurrency)
    run = judgeops_process("run", cwd=tmp_path, quiet=True)
    wait_while_running(  # the second chunk has started
        run, lambda: ledger.exists() and len(ledger.read_text().splitlines()) > chunk, "the local judge"
    )
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    first = [json.loads(line)["key"] for line in ledger.read_text().splitlines()]
    rerun = judgeops_process("run", cwd=tmp_path, quiet=True)
    out = rerun.communicate(timeout=EVENT_BOUND_S)[0]
    assert rerun.returncode == 0, out
    second = [json.loads(line)["key"] for line in ledger.read_text().splitlines()][len(first) :]
    repeated = len(set(first) & set(second))
    total = len(set(first) | set(second))
    figure(
        "`judgeops run` SIGKILLed while the local SmolLM2 judge runs (in-process)",
        f"the rerun completes and repeats ≤ one chunk ({chunk} calls)",
        f"{len(first)} calls started before the kill, {repeated} started again by the rerun, {total} in all",
    )
    assert 0 < len(second) and repeated <= chunk and len(set(second)) == len(second)
