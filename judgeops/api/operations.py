"""Running judgeops as a team does: a local Prefect server and worker, the deployments, backfills, the cache."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import psutil
from prefect.settings import PREFECT_API_URL

import judgeops.deploy
from judgeops.config import WORKDIR_ENV
from judgeops.flows.backfill import backfill as backfill_flow
from judgeops.schemas.names import file_kind
from judgeops.tasks.judges.cache import CallCache, is_database_url
from judgeops.tasks.judges.cache import open_cache as _open_cache

POOL = "judgeops-process"
# the prefect executable of this environment, so a venv works without being activated
_beside = Path(sys.executable).parent / "prefect"
PREFECT = str(_beside) if _beside.exists() else "prefect"


class OperationError(RuntimeError):
    """An operation cannot start as asked (no Prefect server, no checkout, no cache): the message says why."""


def deployments_file() -> Path:
    """deploy/prefect.yaml as installed with the package (entrypoints are module paths: no checkout needed)."""
    return Path(judgeops.deploy.__file__).parent / "prefect.yaml"


def require_api() -> str:
    """The Prefect API URL this process talks to, or an OperationError saying how to start one."""
    url = PREFECT_API_URL.value()
    if not url:
        raise OperationError(
            "this command talks to a Prefect server: start one with `judgeops server` and "
            "`export PREFECT_API_URL=http://127.0.0.1:4200/api`"
        )
    return url


def ensure_pool() -> None:
    """Create the process work pool unless it exists (tolerating a concurrent creator)."""

    def exists() -> bool:
        return subprocess.run([PREFECT, "work-pool", "inspect", POOL], capture_output=True).returncode == 0

    if exists():
        return
    created = subprocess.run(
        [PREFECT, "work-pool", "create", POOL, "--type", "process"], capture_output=True, text=True
    )
    if created.returncode != 0 and not exists():
        raise OperationError(f"could not create work pool {POOL}: {created.stdout}{created.stderr}")


DEPLOYMENTS = ("evaluate/evaluate-weekly", "recalibrate/recalibrate-weekly")


def deploy(
    workdir: str | Path | None = None,
    notify: str | None = None,
    config: str | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Register the deployments of deploy/prefect.yaml on the server of PREFECT_API_URL. Their runs work in,
    and resolve relative paths of the configuration against, `workdir` (default: the current folder). With
    `config` (a judgeops.yaml, checked first), every run of both deployments — scheduled, triggered or started
    by hand — loads it: its absolute path becomes their `config_file` parameter (without, a run uses the embedded
    default unless a judgeops.yaml lies in its working folder), and its judges' budgets (`limits:`) become
    Prefect global concurrency limits, created or set to the file's numbers. With `notify` (a notification
    block, "block-type/name"), drift events are routed to it (notify_on_drift)."""
    require_api()
    path = None
    if config:
        from judgeops.config import load_config

        path = str(Path(config).resolve())
        loaded = load_config(path)  # a config the runs could not load is refused here, not on Monday
    ensure_pool()
    workdir = Path(workdir or Path.cwd()).resolve()
    cmd = [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", str(deployments_file())]
    code = subprocess.call(cmd, cwd=workdir, env={**os.environ, WORKDIR_ENV: str(workdir)})
    if code == 0 and path:
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import DeploymentUpdate

        with get_client(sync_client=True) as client:
            for name in DEPLOYMENTS:
                found = client.read_deployment_by_name(name)
                parameters = {**(found.parameters or {}), "config_file": path}
                client.update_deployment(found.id, DeploymentUpdate(parameters=parameters))
        from judgeops.tasks.judges.backends.limits import publish_budgets

        for line in publish_budgets(loaded):  # the fleet's rate limits, before any run takes from them
            say(f"global concurrency limit {line}")
    if code == 0 and notify:
        notify_on_drift(notify)
    return code


DRIFT_AUTOMATION = "judgeops: judge drift"


def notify_on_drift(block: str) -> str:
    """Create the automation that sends every `judgeops.judge.drift` event to the notification block `block`
    ("block-type/name", e.g. slack-webhook/judge-drift, made in the UI's Blocks page or with the block class's
    `.save()`), replacing the one an earlier call made for that block; returns its name."""
    from prefect.client.orchestration import get_client
    from prefect.events.actions import SendNotification
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
    from prefect.exceptions import ObjectNotFound

    from judgeops.flows.recalibrate import DRIFT_EVENT, JUDGE_RESOURCE  # lazy: the flow's imports

    block_type, _, name = block.partition("/")
    if not block_type or not name:
        raise OperationError(f"--notify {block!r}: expected block-type/name, e.g. slack-webhook/judge-drift")
    automation = f"{DRIFT_AUTOMATION} → {block}"
    with get_client(sync_client=True) as client:
        try:
            document = client.read_block_document_by_name(name=name, block_type_slug=block_type)
        except ObjectNotFound:
            raise OperationError(
                f"no notification block {block!r} on the server at {require_api()}: create it first (UI: Blocks)"
            ) from None
        for old in client.read_automations_by_name(automation):
            client.delete_automation(old.id)
        client.create_automation(
            AutomationCore(
                name=automation,
                description="judgeops: a judge's error rates or agreement moved between weekly calibrations",
                trigger=EventTrigger(
                    expect={DRIFT_EVENT},
                    match={"prefect.resource.id": JUDGE_RESOURCE + "*"},
                    posture=Posture.Reactive,
                    threshold=1,
                ),
                actions=[
                    SendNotification(
                        block_document_id=document.id,
                        subject="judgeops: judge {{ event.payload.judge }} drifted",
                        body=(
                            "{{ event.payload.judge }}: {{ event.payload.metric }} went from "
                            "{{ event.payload.before }} to {{ event.payload.after }} "
                            "(week {{ event.payload.week }})"
                        ),
                    )
                ],
            )
        )
    return automation


def wait_for_api(api: str, process: subprocess.Popen, timeout_s: float = 180) -> bool:
    """Poll the API's health endpoint until it answers, the process dies or the time is up."""
    deadline = time.time() + timeout_s
    while process.poll() is None and time.time() < deadline:
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(1)
    return False


class _Signalled(KeyboardInterrupt):
    """SIGTERM (a service manager, `kill`) stops like Ctrl-C, and says which signal it was."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupted(signum, frame) -> None:
    raise _Signalled(signum)


def _port_taken(port: int) -> bool:
    """Whether something listens on the port (with SO_REUSEADDR, as the Prefect server binds: connections of a
    server just stopped, in TIME_WAIT, do not count)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


# Prefect keeps the leases of concurrency slots in memory by default: a server restarted while a run held slots
# forgot their leases and the slots stayed taken for good. On disk (under PREFECT_HOME) they survive the restart
# and lapse when their holder is gone.
SERVER_SETTINGS = {
    "PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE": "prefect.server.concurrency.lease_storage.filesystem"
}


def serve(port: int = 4200, ready: Callable[[str], None] = print) -> int:
    """A local Prefect server (UI + API) and a process worker, until Ctrl-C or SIGTERM (0) or either dies (1);
    on the way out the flow runs in progress are stopped and marked, then the worker and the server: nothing is
    left running, and no run is left "Running" in the UI (`_stop_worker`)."""
    if _port_taken(port):  # a second server would find the first one's API answering, and attach to it
        raise OperationError(
            f"port {port} is taken (another judgeops server? its UI is http://127.0.0.1:{port}); "
            "stop it or use --port"
        )
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_API_URL": api, **SERVER_SETTINGS}
    env.update({k: v for k, v in os.environ.items() if k in SERVER_SETTINGS})  # an operator's own choice wins
    previous = signal.signal(signal.SIGTERM, _interrupted)
    # `prefect server start`, with the worker heartbeat's SQLite transaction fixed (judgeops.api.prefect_server)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judgeops.api.prefect_server",
            "start",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        env=env,
    )
    worker = None
    try:
        if not wait_for_api(api, server):
            raise OperationError("the Prefect server did not start; see its log above")
        os.environ["PREFECT_API_URL"] = api
        ensure_pool()
        worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", POOL], env=env)
        ready(f"Prefect UI: http://127.0.0.1:{port}   worker: pool {POOL}")
        ready(
            f"In another shell: export PREFECT_API_URL={api}; judgeops deploy; judgeops backfill --start ... --end ..."
        )
        if "postgresql" not in env.get("PREFECT_API_DATABASE_CONNECTION_URL", ""):
            ready(
                "The server's database is SQLite (WAL): a second worker on this machine is fine (tested); for a "
                "fleet, start it on PostgreSQL (PREFECT_API_DATABASE_CONNECTION_URL=postgresql+asyncpg://…, "
                "README: running at scale)"
            )
        while server.poll() is None and worker.poll() is None:
            time.sleep(1)
        return 1
    except KeyboardInterrupt as exc:
        name = signal.Signals(getattr(exc, "signum", signal.SIGINT)).name
        ready(f"judgeops server: {name} received: stopping the runs in progress, the worker, then the server")
        return 0
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stopping short
        try:
            _stop_worker(worker)
            _stop(server)
        finally:
            signal.signal(signal.SIGTERM, previous)


def _stop_worker(worker: subprocess.Popen | None, grace_s: float = 30) -> None:
    """The worker's flow runs first, then the worker. `prefect worker start` keeps its flow runs going on the
    first interrupt and SIGKILLs its worker process on the second, which orphaned them: each kept running for
    minutes and stayed "Running" in the UI. So every flow-run process under the worker gets SIGTERM, as a
    cancellation sends it (the flow records its run stopped, and Prefect marks the flow run Crashed), `grace_s` to
    finish that, SIGKILL after; then the worker, with nothing left to wait for, stops on one SIGINT."""
    if worker is None or worker.poll() is not None:
        return
    try:  # the worker runs in the `prefect worker start` process itself: its children are flow runs
        runs = psutil.Process(worker.pid).children()
        tree = psutil.Process(worker.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        runs, tree = [], []
    for run in runs:
        with contextlib.suppress(psutil.NoSuchProcess):
            run.terminate()
    _, alive = psutil.wait_procs(runs, timeout=grace_s)
    # with no run left, the first Ctrl-C only asks it to wait for them: the second after 2 s, not 8
    _stop(worker, first_wait_s=2)
    for rest in [*alive, *tree]:  # what did not stop in time, and what a flow run left behind
        with contextlib.suppress(psutil.NoSuchProcess):
            rest.kill()


def _stop(proc: subprocess.Popen | None, first_wait_s: float = 8) -> None:
    for wait_s in (first_wait_s, 8):  # the worker stops on the second Ctrl-C (STACK_NOTES)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(wait_s)
            except subprocess.TimeoutExpired:
                continue
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def backfill(
    start: dt.date,
    end: dt.date,
    deployment: str = "evaluate/evaluate-weekly",
    timeout_s: float = 3600,
    config_file: str | None = None,
    start_chain: bool = False,
) -> dict[str, str]:
    """One run of `deployment` per week in [start, end], in order, through the server: week → status."""
    require_api()
    # the worker loads the same judgeops.yaml (by absolute path) for every week
    parameters = {"config_file": str(Path(config_file).resolve())} if config_file else {}
    return backfill_flow(
        start=start,
        end=end,
        deployment=deployment,
        timeout_s=timeout_s,
        parameters=parameters,
        start_chain=start_chain,
    )


def open_cache(path: str | Path) -> CallCache:
    """The judge-call cache at `path`, a file or a postgresql:// URL (an OperationError if there is none, or if
    the file is not one)."""
    if is_database_url(path):
        return _open_cache(path)
    if file_kind(path) != "file":
        raise OperationError(f"no judge-call cache at {str(path)[:200]!r}")
    try:
        return _open_cache(path)
    except (sqlite3.DatabaseError, OSError) as exc:
        raise OperationError(f"{path}: not a judge-call cache ({exc})") from None


def prune_cache(
    path: str | Path,
    older_than: float | None = None,
    model: str | None = None,
    unparsable: bool = False,
    every: bool = False,
) -> int:
    """Delete cached calls (the filters combine; `every` deletes all): how many were deleted."""
    if older_than is None and model is None and not unparsable and not every:
        raise ValueError("say what to delete: --older-than DAYS, --model NAME, --unparsable or --all")
    with open_cache(path) as cache:
        return cache.prune(older_than, model, unparsable)
