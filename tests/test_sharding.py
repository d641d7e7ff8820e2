"""The judge stage in shards and the profile bootstrap in blocks on a real task runner (`sharding:`): Prefect's
thread pool, and prefect-dask's DaskTaskRunner on a LocalCluster of two worker processes. The verdicts and the
profiles are those of the unsharded run; a run killed mid-stage loses at most its shards in flight."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgeops.config import dump_config
from judgeops.schemas.store import ArtifactStore
from tests.conftest import http_judge, small_config

pytestmark = pytest.mark.slow
AS_OF = dt.date(2026, 11, 16)


def config_for(tmp_path: Path, name: str, url: str, runner: str = "inline", per_shard: int = 40):
    """Four programmatic judges and one OpenAI-protocol judge on 24 items (144 displayed variants each),
    its own store and call cache."""
    config = small_config(str(tmp_path / name / "store"), n_items=24)
    config.judges.append(http_judge(url, max_concurrency=4))
    config.cache.path = str(tmp_path / name / "calls.sqlite")
    config.sharding.runner, config.sharding.units_per_shard = runner, per_shard
    config.sharding.bootstrap_min_cells = 0  # every bootstrap's blocks on the task runner, however small
    return config


def bootstrap_runs() -> int:
    """Completed runs of the `profile-bootstrap` flow on the session's server."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["profile-bootstrap"])))
    return sum(r.state is not None and r.state.is_completed() for r in runs)


def verdicts(result):
    table = ArtifactStore(result.store_url, result.run_id).read_pandas("verdicts")
    return table.drop(columns=["latency_ms", "run_id"])


def test_sharded_verdicts_are_the_unsharded_verdicts(prefect_server, server_factory, tmp_path):
    """One unsharded run, then the same evaluation sharded on each task runner (one test, so the unsharded
    run is paid once)."""
    from judgeops.flows.evaluate import evaluate

    server = server_factory()
    whole = evaluate(config=config_for(tmp_path, "whole", server.url), as_of=AS_OF)
    expected = verdicts(whole)
    expected_profiles = ArtifactStore(whole.store_url, whole.run_id).read_pandas("profiles")
    for runner in ("threads", "dask"):
        before = bootstrap_runs()
        sharded = evaluate(config=config_for(tmp_path, runner, server.url, runner), as_of=AS_OF)
        got = verdicts(sharded)
        assert len(got) == 5 * 144 and got.equals(expected), runner
        profiles = ArtifactStore(sharded.store_url, sharded.run_id).read_pandas("profiles")
        assert len(profiles) > 100 and profiles.equals(expected_profiles), (
            runner
        )  # the same resamples, in blocks
        assert bootstrap_runs() > before, runner  # and the blocks did go to the task runner
        store = ArtifactStore(sharded.store_url)
        assert not store.fs.glob(
            f"{store.root}/shards/*/*"
        )  # shards and blocks are gone once their stage wrote


def test_a_run_killed_mid_stage_resumes_at_its_shards(server_factory, tmp_path):
    """`judgeops run` with the judge stage in shards on a thread pool, against a slow OpenAI-protocol server,
    killed (SIGKILL) once some shards are saved: the rerun judges only the shards not saved, and no prompt
    reaches the server twice except the calls in flight at the kill (at most 2 shards × 4 concurrent calls)."""
    server = server_factory("--delay", "0.2")
    config = config_for(tmp_path, "killed", server.url, "threads", per_shard=24)
    config.sharding.max_workers = 2
    path = tmp_path / "judgeops.yaml"
    path.write_text(dump_config(config))
    judgeops = str(Path(sys.executable).parent / "judgeops")
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "home")}
    env.pop("PREFECT_API_URL", None)
    cmd = [judgeops, "--config", str(path), "run", "--as-of", str(AS_OF)]
    shards = Path(config.store.url) / "shards" / "judge"
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    # 4 programmatic judges × 6 shards come first (plan order), then the HTTP judge's 6: kill after 2 of those
    while time.time() < deadline and len(list(shards.glob("*.parquet"))) < 4 * 6 + 2:
        assert first.poll() is None, "the run ended before it could be killed"
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    saved = len(list(shards.glob("*.parquet")))
    assert 4 * 6 + 2 <= saved < 4 * 6 + 6  # killed with HTTP shards still to judge
    before = len(server.entries())
    second = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    read_back = (second.stdout + second.stderr).count("saved by an earlier attempt, not judged again")
    assert read_back == saved  # every shard saved before the kill is read back, none judged again
    prompts = [e["sha256"] for e in server.entries() if e["status"] == 200]
    repeated = len(prompts) - len(set(prompts))
    assert repeated <= 2 * 4, (repeated, before, len(prompts))
    print(f"shards saved at the kill: {saved}; prompts answered: {len(prompts)}, repeated: {repeated}")
    records = [r for r in ArtifactStore(config.store.url).list_runs() if r["flow"] == "evaluate"]
    assert [r["status"] for r in records] == ["crashed", "completed"]


def test_the_task_runner_gets_the_judges_shards_in_turn():
    """Each judge's first shard, then each one's second...: the shards in flight at once are of different
    judges (the rows still come back in plan order: test_sharded_verdicts_are_the_unsharded_verdicts)."""
    from judgeops.tasks.sharding import interleaved

    assert interleaved(["a", "a", "a", "b", "c", "c"]) == [0, 3, 4, 1, 5, 2]
    assert interleaved(["a", "b"]) == [0, 1] and interleaved([]) == []
