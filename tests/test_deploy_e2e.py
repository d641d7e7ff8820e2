"""Deployments end to end: a real `prefect server start`, `judgeops deploy`, a process worker,
a run triggered through the Prefect API, and `judgeops backfill` (twice: the second skips)."""

import contextlib
import datetime as dt
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgeops.api.operations import POOL, wait_for_api
from judgeops.config import LimitConfig, dump_config
from judgeops.schemas.store import ArtifactStore
from tests.conftest import ROOT, http_judge, small_config

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: subprocess.Popen, grace: float = 40, interrupts: int = 1) -> None:
    """Ctrl-C for `judgeops server` (it stops its server and worker) or a worker (`interrupts=2`: `prefect worker
    start` stops on the second, STACK_NOTES); if that hangs, the whole process group (each is started in its own),
    so no Prefect server or worker outlives the test."""
    for n in range(interrupts):
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(grace if n == interrupts - 1 else 2)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):  # the group may have emptied since the wait gave up
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def start_server(judgeops: Path, port: int, cwd: Path, env: dict, log: Path) -> subprocess.Popen:
    """`judgeops server` (a real `prefect server start` and a process worker), its output in `log`."""
    return subprocess.Popen(
        [str(judgeops), "server", "--port", str(port)],
        cwd=cwd,
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: _stop can take the server and worker down with it
    )


@contextlib.contextmanager
def deployed(home: Path, user: Path, more_workers: int = 0, **env_extra: str):
    """`judgeops server` (a real `prefect server start` and a process worker) with PREFECT_HOME `home`, then
    `judgeops deploy` run in `user`, and `more_workers` process workers beside its own (`prefect worker start`,
    each with its log beside the server's: worker-2.log, ...); yields (env, api, log); stops them all at the end."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": api,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PREFECT_WORKER_QUERY_SECONDS": "2",
        **env_extra,
    }
    log = home / "server-and-worker.log"
    home.mkdir(parents=True, exist_ok=True)
    server, workers = start_server(BIN / "judgeops", port, ROOT, env, log), []
    try:
        assert wait_for_api(api, server), log.read_text()[-3000:]
        deploy = subprocess.run(
            [str(BIN / "judgeops"), "deploy"], cwd=user, env=env, capture_output=True, text=True
        )
        assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
        for n in range(more_workers):
            command = [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--name", f"worker-{n + 2}"]
            output = open(home / f"worker-{n + 2}.log", "w")  # noqa: SIM115 - the worker's, closed with it
            workers.append(
                subprocess.Popen(
                    command,
                    cwd=ROOT,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
        yield env, api, log
    finally:
        for worker in workers:
            _stop(worker, grace=15, interrupts=2)
        _stop(server)


@pytest.fixture(scope="module")
def server_and_worker(tmp_path_factory):
    """The default server (SQLite under PREFECT_HOME), two workers and the deployments for this module's tests:
    a second worker once locked the server's database (`sqlite3.OperationalError: database is locked`)."""
    home = tmp_path_factory.mktemp("prefect-home")
    user = tmp_path_factory.mktemp("user-folder")  # where the user runs `judgeops deploy`, not the checkout
    # the batch stub checks no key; the OpenAI SDK on the worker wants one
    with deployed(home, user, more_workers=1, OPENAI_API_KEY="sk-test-deployed") as (env, api, log):
        yield env, api, log, user


def test_deploy_trigger_through_the_api_and_wait(server_and_worker, tmp_path):
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    store_url = str(tmp_path / "store")
    with temporary_settings({PREFECT_API_URL: api}):
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name("evaluate/evaluate-weekly")
            # the recalibration trigger's automation says in the UI what it does
            (automation,) = client.read_automations_by_name("judgeops: recalibrate after each evaluation")
        assert "judgeops.evaluate.completed" in automation.description
        assert deployment.schedules and deployment.schedules[0].schedule.cron == "0 6 * * 1"
        assert deployment.schedules[0].schedule.timezone == "Europe/London"
        run = run_deployment(
            "evaluate/evaluate-weekly",
            parameters={
                "as_of": "2026-11-16",
                "config": small_config(store_url, n_items=24).model_dump(mode="json"),
            },
            timeout=400,
        )
    assert run.state.is_completed(), log.read_text()[-4000:]
    store = ArtifactStore(store_url)
    (record,) = [r for r in store.list_runs() if r["flow"] == "evaluate"]
    assert record["status"] == "completed" and record["as_of"] == "2026-11-16"
    assert store.exists("report.html", record["run_id"])
    # events, not clocks: the evaluation's `judgeops.evaluate.completed` event triggers the recalibrate
    # deployment for it (no schedule fires: it has none), with the evaluation's configuration and store
    with temporary_settings({PREFECT_API_URL: api}):
        recalibration = triggered_run("recalibrate/recalibrate-weekly", "evaluate_run", record["run_id"])
    assert recalibration.state.is_completed(), log.read_text()[-4000:]
    assert recalibration.parameters["store_url"] == store_url
    (calibrated,) = [r for r in store.list_runs() if r["flow"] == "recalibrate"]
    assert calibrated["status"] == "completed" and calibrated["as_of"] == "2026-11-16"
    assert calibrated["evaluate_run"] == record["run_id"] and store.exists(
        "calibration", calibrated["run_id"]
    )


def triggered_run(deployment: str, parameter: str, value: str, timeout_s: float = 400):
    """The flow run of `deployment` whose `parameter` is `value`, once it is final (created by a trigger)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    deadline = time.time() + timeout_s
    with get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name(deployment)
        assert not dep.schedules  # what runs it is the trigger
        while time.time() < deadline:
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id]))
            )
            mine = [r for r in runs if r.parameters.get(parameter) == value]
            if mine and mine[0].state and mine[0].state.is_final():
                return mine[0]
            time.sleep(2)
    raise AssertionError(f"no final run of {deployment} with {parameter}={value} within {timeout_s} s")


def test_backfill_runs_each_week_in_order_then_skips_them(server_and_worker, tmp_path, figure):
    env, api, log, user = server_and_worker
    store_url = str(tmp_path / "store")
    config = tmp_path / "judgeops.yaml"
    config.write_text(dump_config(small_config(store_url, n_items=24)))
    cmd = [
        str(BIN / "judgeops"),
        "--config",
        str(config),
        "backfill",
        "--start",
        "2026-11-02",
        "--end",
        "2026-11-12",
        "--timeout",
        "400",
    ]
    first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:] + log.read_text()[-3000:]
    assert "2026-11-02: completed" in first.stdout and "2026-11-09: completed" in first.stdout
    runs = evaluations(store_url)
    assert [r["as_of"] for r in runs] == ["2026-11-02", "2026-11-09"]  # in order
    assert all(r["status"] == "completed" for r in runs)
    # ... each evaluation followed by the recalibration it triggered: week 2 aggregated with week 1's calibration
    assert first.stdout.count("completed, then recalibrated") == 2, first.stdout
    calibrations = {
        r["evaluate_run"]: r for r in ArtifactStore(store_url).list_runs() if r["flow"] == "recalibrate"
    }
    assert calibrations[runs[0]["run_id"]]["updated_at"] < runs[1]["started_at"]

    again = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2026-11-02: skipped" in again.stdout and "2026-11-09: skipped" in again.stdout
    assert len(evaluations(store_url)) == 2

    # each evaluation above triggered its recalibration: once those are done, a backfill of the recalibrate
    # deployment finds every week calibrated, and says "skipped", not "completed"
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: api}):
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

        for record in runs:
            done = triggered_run("recalibrate/recalibrate-weekly", "evaluate_run", record["run_id"])
            assert done.state.is_completed()
            # its result on the flow run, not only in its log: the rates with drift flags, and what it did
            assert {"calibration", "recalibration"} <= {a.key for a in artifacts_of(done.id)}
        with get_client(sync_client=True) as client:
            named = FlowRunFilter(name=FlowRunFilterName(any_=["backfill-2026-11-02-to-2026-11-12"]))
            shown = [a for r in client.read_flow_runs(flow_run_filter=named) for a in artifacts_of(r.id)]
        # every backfill's weeks as a table on its flow run: the first one's, with the recalibrations it waited for
        assert any(a.key == "backfill" and "then recalibrated" in str(a.data) for a in shown), shown
    recal = [*cmd, "--deployment", "recalibrate/recalibrate-weekly"]
    plain = subprocess.run(recal, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    assert plain.stdout.count("skipped (week 2026-11-0") == 2 and "already calibrated" in plain.stdout
    triggered = [r["run_id"] for r in ArtifactStore(store_url).list_runs() if r["flow"] == "recalibrate"]
    assert len(triggered) == 2  # the skipped runs wrote nothing

    # --start-chain: a new chain over the same weeks, each recomputed in turn, the second continuing the first
    calibrated = subprocess.run(
        [*recal, "--start-chain"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert calibrated.returncode == 0, (
        calibrated.stdout[-3000:] + calibrated.stderr[-3000:] + log.read_text()[-3000:]
    )
    assert "2026-11-02: completed" in calibrated.stdout and "2026-11-09: completed" in calibrated.stdout
    chain = [r for r in ArtifactStore(store_url).list_runs() if r["flow"] == "recalibrate"]
    chain = sorted((r for r in chain if r["run_id"] not in triggered), key=lambda r: r["as_of"])
    assert [r["as_of"] for r in chain] == ["2026-11-02", "2026-11-09"]
    assert chain[0]["previous_run"] is None and chain[1]["previous_run"] == chain[0]["run_id"]
    rerun = subprocess.run(recal, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "2026-11-02: skipped" in rerun.stdout and "2026-11-09: skipped" in rerun.stdout
    assert len(ArtifactStore(store_url).list_runs()) == 6  # 2 evaluations, 2 + 2 calibrations: nothing new
    # two workers on the default server's SQLite database: the backfills above completed, and nothing locked
    logs = [log.read_text(errors="replace"), log.with_name("worker-2.log").read_text(errors="replace")]
    assert "Worker 'worker-2' started" in logs[1]
    locked = [m.group(0) for text in logs for m in re.finditer(r"(?:.*\n){0,30}.*database is locked.*", text)]
    assert not locked, "\n---\n".join(locked)[-6000:]
    taken = [text.count("submitting flow run") for text in logs]
    figure(
        "a second process worker on the default `judgeops server` (SQLite): backfills of two weeks and their "
        "recalibrations",
        "every run completes; no `database is locked`",
        f"{sum(taken)} flow runs taken so far in this module, {taken[0]} by the server's worker and {taken[1]} by "
        "the second; 0 lock errors",
    )


def artifacts_of(flow_run_id) -> list:
    """The artifacts of one flow run, asked of the server by flow run (PREFECT_API_URL set by the caller)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
        )


def evaluations(store_url: str) -> list[dict]:
    return [r for r in ArtifactStore(store_url).list_runs() if r["flow"] == "evaluate"]


def backfill_once(env: dict, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`judgeops --config <a fresh store> backfill ARGS` (its store is empty: nothing was evaluated there)."""
    config = tmp_path / "judgeops.yaml"
    config.write_text(dump_config(small_config(str(tmp_path / "store"), n_items=24)))
    cmd = [str(BIN / "judgeops"), "--config", str(config), "backfill", *args]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)


def test_backfill_cancels_the_run_no_worker_took_and_says_so(server_and_worker, tmp_path):
    """With the work pool paused (no worker takes its runs), the backfill gives up at --timeout: it cancels the
    run it stopped waiting for (before, it stayed queued and a worker ran it later, out of order and unwatched)
    and says what to do, without a traceback."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    pool = [str(BIN / "prefect"), "work-pool"]
    subprocess.run([*pool, "pause", "judgeops-process"], env=env, check=True, capture_output=True)
    try:
        out = backfill_once(env, tmp_path, "--start", "2026-10-05", "--end", "2026-10-12", "--timeout", "15")
    finally:
        subprocess.run([*pool, "resume", "judgeops-process"], env=env, check=True, capture_output=True)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-3000:]
    assert "week 2026-10-05" in out.stderr and "no worker picked it up" in out.stderr, out.stderr[-3000:]
    assert "judgeops server" in out.stderr and "Later weeks were not run" in out.stderr
    assert "Traceback" not in out.stderr + out.stdout
    time.sleep(8)  # the worker, back, polls every 2 s: a queued run would start now
    with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(
                name=FlowRunFilterName(any_=["evaluate-2026-10-05", "evaluate-2026-10-12"])
            )
        )
    assert [(r.name, r.state.name) for r in runs] == [("evaluate-2026-10-05", "Cancelled")]
    assert not ArtifactStore(str(tmp_path / "store")).list_runs()


def test_backfill_reports_why_a_week_failed(server_and_worker, tmp_path):
    """A week's run that fails stops the backfill with the run's own reason (here: nothing evaluated)."""
    env, api, log, user = server_and_worker
    weeks = ["--start", "2026-10-05", "--end", "2026-10-12", "--timeout", "300"]
    out = backfill_once(env, tmp_path, "--deployment", "recalibrate/recalibrate-weekly", *weeks)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-3000:]
    assert "week 2026-10-05" in out.stderr and "ended Failed" in out.stderr, out.stderr[-3000:]
    assert "no completed evaluate run for the week of 2026-10-05" in out.stderr
    assert "Later weeks were not run" in out.stderr and "Traceback" not in out.stderr + out.stdout


def test_backfill_without_a_server_says_what_to_do(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path)
    out = subprocess.run(
        [str(BIN / "judgeops"), "backfill", "--start", "2026-11-02", "--end", "2026-11-09"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0 and "judgeops server" in out.stderr


def test_weekly_dates():
    from judgeops.flows.backfill import weekly_dates

    assert weekly_dates(dt.date(2026, 11, 2), dt.date(2026, 11, 16)) == [
        dt.date(2026, 11, 2),
        dt.date(2026, 11, 9),
        dt.date(2026, 11, 16),
    ]
    with pytest.raises(ValueError, match="before --start"):
        weekly_dates(dt.date(2026, 11, 9), dt.date(2026, 11, 2))


def test_relative_paths_of_a_deployment_resolve_in_the_users_folder(server_and_worker):
    """The worker runs the flows from the checkout; `./store` still means the folder `judgeops deploy` ran in."""
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    with temporary_settings({PREFECT_API_URL: api}):
        run = run_deployment(
            "evaluate/evaluate-weekly",
            parameters={
                "as_of": "2026-11-16",
                "config": small_config("relative/store", n_items=24).model_dump(),
            },
            timeout=400,
        )
    assert run.state.is_completed(), log.read_text()[-4000:]
    (record,) = evaluations(str(user / "relative" / "store"))
    assert record["status"] == "completed"
    assert record["config"]["cache"]["path"] == str(user / "relative" / "calls.sqlite")
    assert not (ROOT / "relative").exists()


def judging_run(api: str, server_factory, tmp_path: Path, as_of: str, log: Path):
    """A run of the evaluate deployment with a slow OpenAI-protocol judge (one call at a time, 0.5 s each), once
    its judge stage is calling: (the flow run, its configuration)."""
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    stub = server_factory("--delay", "0.5")
    config = small_config(str(tmp_path / "store"), n_items=24)
    config.judges.append(http_judge(stub.url, max_concurrency=1))
    with temporary_settings({PREFECT_API_URL: api}):
        run = run_deployment(
            "evaluate/evaluate-weekly",
            parameters={"as_of": as_of, "config": config.model_dump(mode="json")},
            timeout=0,
        )
    deadline = time.time() + 300
    while time.time() < deadline and not stub.entries():
        time.sleep(0.5)
    assert stub.entries(), log.read_text()[-4000:]
    return run, config


def test_sigterm_stops_the_server_the_worker_and_the_run_in_progress(tmp_path, server_factory):
    """A service manager stops `judgeops server` with SIGTERM while a deployment's run is judging: it says which
    signal it got, the run's process is stopped and records its run cancelled, the worker and the Prefect server
    go, no process is left behind, and on the next start the flow run shows Crashed, not Running (issue 31 found
    the worker SIGKILLed, its flow run orphaned for minutes and "Running" in the UI). A second server on a taken
    port is refused at once (it used to find the first one's API answering and attach a second worker)."""
    import psutil
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {
        **os.environ,
        "PREFECT_HOME": str(tmp_path / "home"),
        "PREFECT_API_URL": api,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "PREFECT_WORKER_QUERY_SECONDS": "2",
    }
    log = tmp_path / "server.log"
    server = start_server(BIN / "judgeops", port, tmp_path, env, log)
    children: list = []
    try:
        assert wait_for_api(api, server), log.read_text()[-3000:]
        second = subprocess.run(
            [str(BIN / "judgeops"), "server", "--port", str(port)], env=env, capture_output=True, text=True
        )
        assert second.returncode == 1 and f"port {port} is taken" in second.stdout + second.stderr, second
        deploy = subprocess.run([str(BIN / "judgeops"), "deploy"], cwd=tmp_path, env=env, capture_output=True)
        assert deploy.returncode == 0, deploy.stderr[-3000:]
        run, config = judging_run(api, server_factory, tmp_path, "2026-11-30", log)
        children = psutil.Process(server.pid).children(recursive=True)
        server.send_signal(signal.SIGTERM)  # to judgeops only, not its process group
        assert server.wait(120) == 0, log.read_text()[-3000:]
        assert "judgeops server: SIGTERM received" in log.read_text()
        _, alive = psutil.wait_procs(children, timeout=30)
        assert not alive, [p.cmdline() for p in alive]  # the flow run's process included
        (record,) = evaluations(config.store.url)
        assert record["status"] == "cancelled", record
    finally:
        _stop(server)
        for child in children:  # what a failing run of this test would otherwise leave behind
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
    again = start_server(BIN / "judgeops", port, tmp_path, env, tmp_path / "again.log")
    try:
        assert wait_for_api(api, again), (tmp_path / "again.log").read_text()[-3000:]
        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            state = client.read_flow_run(run.id).state
        assert state.is_crashed(), state
    finally:
        _stop(again)


def test_a_run_cancelled_through_prefect_is_recorded_cancelled(server_and_worker, server_factory, tmp_path):
    """`prefect flow-run cancel` (what the UI's Cancel does) on a deployment's run while its judge is calling: the
    worker stops the flow-run process, the flow run ends Cancelled and the store records the run as cancelled,
    saying it was cancelled through Prefect and in which state (issue 31 found such runs recorded "failed")."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    run, config = judging_run(api, server_factory, tmp_path, "2026-11-23", log)
    deadline = time.time() + 300
    with temporary_settings({PREFECT_API_URL: api}):
        cancel = subprocess.run(
            [str(BIN / "prefect"), "flow-run", "cancel", str(run.id)], env=env, capture_output=True, text=True
        )
        assert cancel.returncode == 0, cancel.stdout + cancel.stderr
        with get_client(sync_client=True) as client:
            while time.time() < deadline and not client.read_flow_run(run.id).state.is_final():
                time.sleep(0.5)
            state = client.read_flow_run(run.id).state
    assert state.is_cancelled(), (state, log.read_text()[-4000:])
    (record,) = evaluations(config.store.url)
    assert record["status"] == "cancelled", (record.get("error"), log.read_text()[-4000:])
    assert "cancelled through Prefect" in record["error"], record["error"]


def test_a_team_setup_prefect_and_the_call_cache_on_postgresql(postgres, server_factory, tmp_path):
    """The Prefect server on PostgreSQL (PREFECT_API_DATABASE_CONNECTION_URL), the deployments, a process
    worker, and an evaluation through them with an OpenAI-protocol judge (tests/openai_server.py) whose call
    cache is in PostgreSQL too; its completion triggers the recalibration. The flow runs are rows of the
    server's PostgreSQL database, the judge's calls rows of the cache's."""
    import psycopg
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    prefect_db = postgres.create_database("prefect")
    database = prefect_db.replace("postgresql://", "postgresql+asyncpg://")
    with deployed(tmp_path / "home", tmp_path, PREFECT_API_DATABASE_CONNECTION_URL=database) as served:
        env, api, log = served
        config = small_config(str(tmp_path / "store"), n_items=24)
        config.judges.append(http_judge(server_factory().url, max_pairs=8))
        config.cache.path = postgres.create_database("team_calls")
        with temporary_settings({PREFECT_API_URL: api}):
            run = run_deployment(
                "evaluate/evaluate-weekly",
                parameters={"as_of": "2026-11-16", "config": config.model_dump(mode="json")},
                timeout=400,
            )
            assert run.state.is_completed(), log.read_text()[-4000:]
            (record,) = evaluations(config.store.url)
            recalibration = triggered_run("recalibrate/recalibrate-weekly", "evaluate_run", record["run_id"])
        assert recalibration.state.is_completed(), log.read_text()[-4000:]
        with psycopg.connect(prefect_db) as db:
            names = {name for (name,) in db.execute("SELECT name FROM flow_run")}
        assert {"evaluate-2026-11-16", f"recalibrate-after-{record['run_id']}"} <= names
        with psycopg.connect(config.cache.path) as db:  # the judge's calls, in the cache's own database
            ((calls,),) = db.execute("SELECT count(*) FROM calls WHERE model = 'test-model'")
            ((sent,),) = db.execute("SELECT count(*) FROM ledger")
        assert calls > 0 and sent == calls


def test_the_docker_and_kubernetes_work_pool_templates_create_pools(server_and_worker):
    """deploy/work-pools/*.json as a team creates its pools (`prefect work-pool create NAME --type docker
    --base-job-template deploy/work-pools/docker.json`): the real server takes them and gives them back. No
    Docker daemon or cluster runs here, so no flow runs on them (tests/test_deploy_files.py checks the rest)."""
    import json

    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    with temporary_settings({PREFECT_API_URL: api}):
        from prefect.client.orchestration import get_client

        with get_client(sync_client=True) as client:
            for kind in ("docker", "kubernetes"):
                template = json.loads((ROOT / "deploy" / "work-pools" / f"{kind}.json").read_text())
                client.create_work_pool(
                    WorkPoolCreate(name=f"judgeops-{kind}", type=kind, base_job_template=template)
                )
                pool = client.read_work_pool(f"judgeops-{kind}")
                assert pool.type == kind and pool.base_job_template == template


def test_drift_events_reach_a_notification_block_through_the_automation(server_and_worker):
    """`judgeops deploy --notify custom-webhook/judge-drift` makes the automation; a `judgeops.judge.drift`
    event (as the recalibrate flow emits it) then reaches the block's webhook, a real HTTP server here, with
    the judge and the metric in its message. An unknown block is named, not a traceback."""
    import http.server
    import json
    import threading

    env, api, log, user = server_and_worker
    received: list[dict] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the http.server name)
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    hook = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    try:
        save = (
            "from prefect.blocks.notifications import CustomWebhookNotificationBlock as B; "
            f"B(name='judge drift', url='http://127.0.0.1:{hook.server_port}/hook', "
            "json_data={'subject': '{{subject}}', 'text': '{{body}}'}).save('judge-drift', overwrite=True)"
        )
        subprocess.run([sys.executable, "-c", save], env=env, check=True, timeout=120)

        def deploy_notifying(block: str) -> subprocess.CompletedProcess:
            cmd = [str(BIN / "judgeops"), "deploy", "--notify", block]
            return subprocess.run(cmd, cwd=user, env=env, capture_output=True, text=True)

        missing = deploy_notifying("custom-webhook/absent")
        assert missing.returncode != 0 and "no notification block 'custom-webhook/absent'" in missing.stderr
        assert "Traceback" not in missing.stderr
        made = deploy_notifying("custom-webhook/judge-drift")
        assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
        emit = (
            "from judgeops.flows.recalibrate import emit_drift_events; emit_drift_events([{'judge': 'j-drifty', "
            "'metric': 'fpr', 'before': 0.1, 'after': 0.35, 'week': '2026-11-16'}])"
        )
        deadline = time.time() + 120
        subprocess.run([sys.executable, "-c", emit], env=env, check=True, timeout=120)
        while not received and time.time() < deadline:
            time.sleep(1)
    finally:
        hook.shutdown()
    assert received, log.read_text()[-3000:]
    assert "j-drifty" in received[0]["subject"] and "fpr went from 0.1 to 0.35" in received[0]["text"]


def test_an_evaluation_waits_for_its_audit_labels_and_uses_them(server_and_worker, tmp_path):
    """`audit: {k, wait: true}`: the deployment's run proposes its audit and suspends (the worker is free, the UI
    shows a "labels done" form); two people label it on `judgeops label --run`, whose last answer emits
    `judgeops.audit.completed` and resumes the run; the resumed run continues the same store run, and its report
    and summary show the judges against people and the selective consensus."""
    import json
    import urllib.request

    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from judgeops import api as jo
    from judgeops.config import AuditConfig
    from tests.test_label_page import TOKEN, free_port, start_command, stop

    env, api, log, user = server_and_worker
    store_url, labels = str(tmp_path / "store"), tmp_path / "labels.jsonl"
    config = small_config(store_url, n_items=24)
    config.audit = AuditConfig(k=6, wait=True, labels=str(labels), target_error=0.2, timeout_s=600)
    with temporary_settings({PREFECT_API_URL: api}):
        run = run_deployment(
            "evaluate/evaluate-weekly",
            parameters={"as_of": "2026-11-09", "config": config.model_dump(mode="json")},
            timeout=0,
        )
        deadline = time.time() + 300
        with get_client(sync_client=True) as client:
            while time.time() < deadline:
                state = client.read_flow_run(run.id).state
                if state.is_paused() or state.is_final():
                    break
                time.sleep(2)
        assert state.name == "Suspended", (state, log.read_text()[-4000:])
        assert state.state_details.run_input_keyset  # the UI's form for the labels being done
    store = ArtifactStore(store_url)
    deadline = time.time() + 60  # the run's process records "suspended" as it unwinds, after Prefect's state
    while time.time() < deadline:
        (record,) = [r for r in store.list_runs() if r["flow"] == "evaluate"]
        if record["status"] != "running":
            break
        time.sleep(1)
    assert record["status"] == "suspended"
    port = free_port()
    page = start_command(
        [
            "label",
            "--run",
            record["run_id"],
            "--store",
            store_url,
            "--labels",
            str(labels),
            "--port",
            str(port),
        ],
        port,
        env={**env, "PREFECT_API_URL": api},
    )
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/audit?annotator=ann&token={TOKEN}") as r:
            tasks = [item["task"] for item in json.loads(r.read())["items"]]
        assert len(tasks) == 6
        # in an order that completes the audit only with the last answer (a complete audit that a later
        # disagreement un-completes would resume the run or not by timing): ben and ann disagree on the first
        # task, cat's answer settles it by majority
        answers = [("ben", tasks[0], "B"), *[("ann", t, "A") for t in tasks]]
        answers += [("ben", t, "A") for t in tasks[1:]] + [("cat", tasks[0], "A")]
        for who, task, label in answers:
            body = json.dumps({"task": task, "label": label, "annotator": who}).encode()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/label",
                body,
                {"Content-Type": "application/json", "X-Judgeops-Token": TOKEN},
            )
            urllib.request.urlopen(request).read()
        # the page resumes the run once every task has a label; the worker runs it to the end
        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            deadline = time.time() + 400
            while time.time() < deadline:
                state = client.read_flow_run(run.id).state
                if state.is_final():
                    break
                time.sleep(2)
            if not state.is_completed():
                stop(page)
                pytest.fail(
                    f"{state}; the label page said:\n{page.stdout.read()[-3000:]}\n{log.read_text()[-3000:]}"
                )
            events = client.request(
                "POST", "/events/filter", json={"filter": {"event": {"name": ["judgeops.audit.completed"]}}}
            ).json()["events"]
        assert [e["payload"]["run_id"] for e in events] == [record["run_id"]]
    finally:
        stop(page)
    (done,) = [r for r in store.list_runs() if r["flow"] == "evaluate"]  # the same store run, continued
    assert done["run_id"] == record["run_id"] and done["status"] == "completed"
    summary = jo.summary(jo.get_run(done["run_id"], store_url))["audit"]
    assert summary["n_audit"] == 6 and summary["n_labels"] == 6 and summary["n_conflicts"] == 1
    assert summary["target_error"] == 0.2 and summary["coverage"] is not None
    assert {r["kind"] for r in summary["human_agreement"]} == {"judge", "consensus"}
    report = Path(done["report"]).read_text()
    assert "Agreement with people" in report and "Cohen" in report and "selective consensus" in report


def test_deploy_with_a_config_makes_every_run_of_its_deployments_load_it(server_and_worker, tmp_path):
    """`judgeops --config small.yaml deploy`: both deployments get the file as their `config_file` parameter, and
    a run started without parameters evaluates the team's configuration, not the embedded demo panel."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    env, api, log, user = server_and_worker
    store_url = str(tmp_path / "team-store")
    config_file = tmp_path / "small.yaml"
    config = small_config(store_url, n_items=24)
    config.limits = {"team-gpt": LimitConfig(rpm=120, concurrency=4)}  # the fleet's budget, shared by name
    config_file.write_text(dump_config(config))

    def deploy_with(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(BIN / "judgeops"), "--config", str(path), "deploy"],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
        )

    done = deploy_with(config_file)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    with temporary_settings({PREFECT_API_URL: api}):
        with get_client(sync_client=True) as client:
            for name in ("evaluate/evaluate-weekly", "recalibrate/recalibrate-weekly"):
                deployment = client.read_deployment_by_name(name)
                assert deployment.parameters == {"config_file": str(config_file)}, name
            rpm = client.read_global_concurrency_limit_by_name("team-gpt-rpm")
            # hundredths of a request: 2 a second
            assert (rpm.limit, rpm.slot_decay_per_second) == (200, 200.0)
            assert client.read_global_concurrency_limit_by_name("team-gpt-concurrency").limit == 4
        assert "global concurrency limit team-gpt-rpm: created" in done.stdout
        run = run_deployment("evaluate/evaluate-weekly", parameters={"as_of": "2026-10-26"}, timeout=400)
    assert run.state.is_completed(), log.read_text()[-4000:]
    (record,) = [r for r in ArtifactStore(store_url).list_runs() if r["flow"] == "evaluate"]
    assert record["status"] == "completed" and record["config"]["sources"][0]["n_items"] == 24
    bad = tmp_path / "broken.yaml"
    bad.write_text("judges: 7\n")
    refused = deploy_with(bad)
    assert refused.returncode != 0 and "broken.yaml" in refused.stdout + refused.stderr


def test_an_evaluation_waits_for_its_provider_batch_without_holding_a_worker(server_and_worker, tmp_path):
    """A batch judge in a deployment's run: the run creates its batch and suspends (its process ends, the worker is
    free); the judgeops-batches watcher looks at the batch, schedules its next look while it runs, and resumes the
    run once it has ended; the resumed run continues the same store run and reads the batch. The injection probe's
    batch is waited for the same way (a second suspension). One batch created for each, the judge's verdicts and
    its probe complete, `judgeops.batch.completed` emitted for both."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from prefect.deployments import run_deployment
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from tests.openai_batch_server import BatchServerProcess

    env, api, log, user = server_and_worker
    batches = BatchServerProcess(tmp_path / "batches.jsonl", "--batch-s", "6")
    try:
        store_url = str(tmp_path / "store")
        config = small_config(store_url, n_items=24)
        judge = http_judge(batches.url, name="gpt-batch", batch=True, batch_poll_s=2, max_pairs=4)
        config = config.model_copy(update={"judges": [*config.judges, judge]})
        config.robustness.injection = True

        def state_when(client, done, seconds=300):
            deadline = time.time() + seconds
            while time.time() < deadline:
                state = client.read_flow_run(run.id).state
                if done(state):
                    return state
                time.sleep(1)
            return state

        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            run = run_deployment(
                "evaluate/evaluate-weekly",
                parameters={"as_of": "2026-11-02", "config": config.model_dump(mode="json")},
                timeout=0,
            )
            state = state_when(client, lambda s: s.is_paused() or s.is_final())
            assert state.name == "Suspended", (state, log.read_text()[-4000:])
            assert len(batches.batches_created()) == 1  # created before the run suspended
            # resumed, the run reads the judge's batch, then suspends again for its probe's
            state = state_when(client, lambda s: len(batches.batches_created()) == 2 or s.is_final())
            state = state_when(client, lambda s: s.is_paused() or s.is_final())
            assert state.name == "Suspended", (state, log.read_text()[-4000:])
            state = state_when(client, lambda s: s.is_final())
            assert state.is_completed(), (state, log.read_text()[-4000:])
            looks = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["watch-batches"])))
            events = client.request(
                "POST", "/events/filter", json={"filter": {"event": {"name": ["judgeops.batch.completed"]}}}
            ).json()["events"]
        created, probed = batches.batches_created()  # each read by a resumed run, never sent again
        assert looks and all(look.state.is_completed() for look in looks)
        assert sorted(e["payload"]["batch_id"] for e in events) == sorted([created["id"], probed["id"]])
        (record,) = [r for r in ArtifactStore(store_url).list_runs() if r["flow"] == "evaluate"]
        assert record["status"] == "completed"
        run = ArtifactStore(store_url, record["run_id"])
        verdicts = run.read_pandas("verdicts")
        mine = verdicts[verdicts["judge_id"] == "gpt-batch"]
        assert len(mine) == created["n"] == 4 * 6 and mine["error"].isna().all()
        robustness = run.read_pandas("robustness").set_index("judge_id")
        assert robustness.loc["gpt-batch", "n"] > 0 and probed["n"] > 0
    finally:
        batches.stop()
