"""Waiting for provider batches without holding a worker: the evaluate flow suspends, a watcher resumes it.

A judge with `batch: true` sends its misses as one provider batch, answered within hours. Polling it from the
run's own process holds a worker for all that time. Where the run comes from a deployment and the
`judgeops-batches` deployment exists (deploy/prefect.yaml), the judge waits by suspending instead
(`batch_wait: auto` or `suspend`):

1. the judge stage creates the batch (its id in the call cache at once) and raises BatchPending instead of waiting;
   the other judges are judged first, so every batch of the run is created before it suspends;
2. the evaluate flow writes the batches into the store's run record, schedules one run of the watcher
   (`watch_batches`, a separate short flow run) `batch_poll_s` later, and suspends: Prefect ends the run's process
   and frees its worker slot; the UI shows the run as Suspended;
3. each watcher run looks once at every batch through the provider's SDK; while one is running it schedules the
   next look and ends; once all have ended it emits `judgeops.batch.completed` for each and resumes the run;
4. the resumed run starts again on a worker, reuses every stage already in the store, and its judge stage finds
   the batches in the call cache and reads their results: nothing is sent or paid twice.

Why a follow-up run and not an automation: Prefect can resume a run on an event, but no one would emit the event —
a provider does not call back, so something has to look. The watcher is that something, seconds of work per look
instead of a worker held for hours. Without the deployment, or outside a deployment's run (no one could resume
it), the run polls as before.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import NoReturn

from prefect import flow, runtime, suspend_flow_run
from prefect.events import emit_event

from judgeops.config import JudgeConfig, parse_config
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.judges.backends import BatchPending
from judgeops.tasks.log import logger

WATCHER = "watch-batches/judgeops-batches"  # flow name / deployment name, as deploy/prefect.yaml names it
# the providers' 24 h completion window, and some: a run suspended longer than this fails
WINDOW_S = 26 * 3600


def resolve_batch_wait(judges: list[JudgeConfig]) -> list[JudgeConfig]:
    """The judges with `batch_wait: auto` made `suspend` or `poll` for this run (module docstring); a judge that
    asks to suspend where no one can resume the run polls, with a warning."""
    batch = [j for j in judges if j.batch and j.batch_wait != "poll"]
    if not batch:
        return judges
    can = bool(runtime.deployment.id) and _watcher_deployed()
    if not can and any(j.batch_wait == "suspend" for j in batch):
        logger().warning(
            "batch: not suspending while the batch runs (no deployment to resume this run, or no %s "
            "deployment: `judgeops deploy`); this run's process polls instead",
            WATCHER,
        )
    mode = "suspend" if can else "poll"
    return [j.model_copy(update={"batch_wait": mode}) if j in batch else j for j in judges]


def suspend_for_batches(store: ArtifactStore, pending: BatchPending, record: dict, poll_s: float) -> NoReturn:
    """Note the batches in the run record, schedule the watcher's first look, and suspend the run (raises
    Prefect's Pause: the store records the run as suspended)."""
    record["batches"] = pending.batches
    logger().info(
        "batch: %s; suspending this run until they end (the watcher looks every %.0f s)", pending, poll_s
    )
    schedule_look(store.run_id, store.absolute_url(), poll_s)
    # a new key every time: Prefect returns at once from a suspension whose key was resumed before (a run resumed
    # by hand while its batch still runs would go on without verdicts)
    suspend_flow_run(timeout=WINDOW_S, key=f"batches-{uuid.uuid4().hex[:12]}")
    raise RuntimeError("the run was not suspended while its provider batches run")  # suspend_flow_run raises


def schedule_look(run_id: str, store_url: str, poll_s: float) -> None:
    from prefect.deployments import run_deployment

    run_deployment(
        WATCHER,
        parameters={"run_id": run_id, "store_url": store_url, "poll_s": poll_s},
        scheduled_time=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=poll_s),
        timeout=0,
        as_subflow=False,  # its own run: the evaluate run is suspended, not its parent
    )


@flow(name="watch-batches", log_prints=True)
def watch_batches(run_id: str, store_url: str, poll_s: float = 30.0) -> str:
    """One look at the provider batches a suspended evaluate run waits for: while one runs (or the run has not
    finished suspending), the next look is scheduled `poll_s` later; once all have ended,
    `judgeops.batch.completed` is emitted for each and the run resumed. Returns what it did."""
    store = ArtifactStore(store_url, run_id)
    record = store.run_record()
    flow_run_id = (record.get("prefect") or {}).get("flow_run_id")
    state = _state(flow_run_id)
    if state is None or state.is_final():
        return f"run {run_id} is {state.name if state else 'unknown to Prefect'}: nothing to resume"
    suspending = not state.is_paused() or record.get("status") != "suspended"  # its record not yet written
    if suspending:
        schedule_look(run_id, store_url, poll_s)
        return f"run {run_id} is {state.name}: looking again in {poll_s:.0f} s"
    if not record.get("batches"):  # suspended for something else (the audit's labels): not ours to resume
        return f"run {run_id} waits for no provider batch: nothing to resume"
    config = parse_config(record["config"], f"the run record of {run_id}")
    judges = {j.name: j for j in config.judges}
    running = [b for b in record["batches"] if not _ended(judges[b["judge"]], b["batch_id"])]
    if running:
        schedule_look(run_id, store_url, poll_s)
        return (
            f"{len(running)} of {len(record['batches'])} batches still running; next look in {poll_s:.0f} s"
        )
    for b in record["batches"]:
        emit_event(
            event="judgeops.batch.completed",
            resource={
                "prefect.resource.id": f"judgeops.batch.{b['batch_id']}",
                "prefect.resource.name": b["judge"],
            },
            related=[{"prefect.resource.id": f"judgeops.run.{run_id}", "prefect.resource.role": "run"}],
            payload={
                "run_id": run_id,
                "judge": b["judge"],
                "batch_id": b["batch_id"],
                "store_url": store_url,
            },
        )
    from prefect.flow_runs import resume_flow_run

    resume_flow_run(flow_run_id)
    return f"every batch ended; run {run_id} resumed"


def _state(flow_run_id: str | None):
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    if not flow_run_id:
        return None
    with get_client(sync_client=True) as client:
        try:
            return client.read_flow_run(flow_run_id).state
        except ObjectNotFound:
            return None


def _ended(judge: JudgeConfig, batch_id: str) -> bool:
    from judgeops.tasks.judges.backends.batches import batch_backend  # the provider SDKs, only here

    backend = batch_backend(judge)
    try:
        return backend.ended(batch_id)
    finally:
        backend.close()


def _watcher_deployed() -> bool:
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    with get_client(sync_client=True) as client:
        try:
            client.read_deployment_by_name(WATCHER)
        except ObjectNotFound:
            return False
    return True
