"""Backfill: one run per week, in order, through a deployment (open-source Prefect has no backfill): the weekly
evaluation, or the weekly recalibration (`--deployment recalibrate/recalibrate-weekly`).

A backfill of evaluations waits, after each week's evaluation, for the recalibration that evaluation triggers
(the recalibrate deployment's event trigger) before the next week starts: the next week's aggregation reads the
latest calibration, so which calibration it reads must not depend on timing (before, of three backfilled weeks,
week 2 aggregated with none and week 3 with week 1's). Each week's outcome is published on the backfill's
flow run as a table.

Weeks that already have a completed run of the deployment (same `as_of`) are skipped, so a
backfill can be rerun after a failure and only does what is missing (except with `start_chain`: a new
calibration chain recomputes every week). It stops at the first week
that does not complete: later weeks build on earlier ones (the calibration chain). A run it stops waiting for
(the timeout) is cancelled, so it never runs later, out of order and unwatched; a failed run's reason is part
of the error.
"""

from __future__ import annotations

import datetime as dt
import time

from prefect import flow
from prefect.artifacts import create_table_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.client.schemas.sorting import FlowRunSort
from prefect.context import FlowRunContext
from prefect.deployments import run_deployment
from prefect.exceptions import ObjectNotFound
from prefect.states import Cancelled, Cancelling

from judgeops.tasks.log import logger

DEFAULT_DEPLOYMENT = "evaluate/evaluate-weekly"
# the deployment every completed evaluation triggers (deploy/prefect.yaml)
RECALIBRATE = "recalibrate/recalibrate-weekly"
TRIGGER_APPEARS_S = 120.0  # how long a backfill waits for an evaluation's trigger to create its recalibration
NO_WORKER_HINT = "no worker picked it up: start one with `judgeops server` (or `prefect worker start --pool judgeops-process`)"


class BackfillError(RuntimeError):
    """A week's run did not complete: the backfill stopped there (its message says why)."""


def stop_unfinished(run: FlowRun, timeout_s: float) -> str:
    """Cancel a run the backfill no longer waits for and say why it was not done: a run still scheduled (Late:
    no worker took it) is cancelled at once; a running one is asked to stop (its worker kills it)."""
    state = run.state
    with get_client(sync_client=True) as client:
        if state is None or state.is_scheduled() or state.is_pending():
            client.set_flow_run_state(
                run.id, Cancelled(message=f"backfill: not started within {timeout_s:g} s"), force=True
            )
            return f"was still {state.name if state else 'unscheduled'} after {timeout_s:g} s ({NO_WORKER_HINT}); cancelled"
        client.set_flow_run_state(
            run.id, Cancelling(message=f"backfill: not done within {timeout_s:g} s"), force=True
        )
        return f"was still {state.name} after {timeout_s:g} s; cancelled"


def weekly_dates(start: dt.date, end: dt.date) -> list[dt.date]:
    """start, start + 7 days, ... up to and including end."""
    if end < start:
        raise ValueError(f"backfill: --end {end} is before --start {start}")
    return [start + dt.timedelta(weeks=k) for k in range((end - start).days // 7 + 1)]


def triggered_recalibration(
    evaluation: FlowRun, week: str, timeout_s: float, appear_s: float
) -> FlowRun | None:
    """The recalibration that `evaluation` (the evaluate run of `week`) triggered, once final or at `timeout_s`:
    the latest run of the recalibrate deployment whose `evaluate_run` is a store run of that week, created after
    the evaluation was. None where there is no such deployment, or its trigger made no run within `appear_s`
    (a trigger turned off)."""
    deadline, appear_by = time.monotonic() + timeout_s, time.monotonic() + appear_s
    with get_client(sync_client=True) as client:
        try:
            dep = client.read_deployment_by_name(RECALIBRATE)
        except ObjectNotFound:
            return None
        while True:
            runs = client.read_flow_runs(  # the newest first: a long history would not fit one page
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])),
                sort=FlowRunSort.EXPECTED_START_TIME_DESC,
                limit=50,
            )
            mine = sorted(
                (
                    r
                    for r in runs
                    if str(r.parameters.get("evaluate_run", "")).startswith(f"{week}_")
                    and r.created >= evaluation.created
                ),
                key=lambda r: r.created,
            )
            if mine and ((mine[-1].state and mine[-1].state.is_final()) or time.monotonic() > deadline):
                return mine[-1]
            if not mine and time.monotonic() > appear_by:
                return None
            time.sleep(2)


def date_parameter(deployment: str) -> str:
    """The parameter that names the week: `week` for the recalibrate flow, `as_of` for evaluate."""
    return "week" if deployment.split("/")[0] == "recalibrate" else "as_of"


def completed_weeks(deployment: str) -> set[str]:
    """The dates (ISO) of this deployment's completed flow runs."""
    with get_client(sync_client=True) as client:
        dep = client.read_deployment_by_name(deployment)
        runs = client.read_flow_runs(
            deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[dep.id])),
            flow_run_filter=FlowRunFilter(
                state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.COMPLETED]))
            ),
        )
    key = date_parameter(deployment)
    return {str(r.parameters.get(key)) for r in runs if r.parameters.get(key)}


@flow(name="backfill", flow_run_name="backfill-{start}-to-{end}")
def backfill(
    start: dt.date,
    end: dt.date,
    deployment: str = DEFAULT_DEPLOYMENT,
    timeout_s: float = 3600,
    parameters: dict | None = None,
    start_chain: bool = False,
) -> dict[str, str]:
    """Run `deployment` once per week from `start` to `end`, in order, waiting for each run.

    parameters: passed to every week's run besides its date (e.g. `config_file`).
    start_chain: for the recalibrate deployment, the first week run starts a new calibration chain
        (`from_scratch`) and later weeks continue it, each recomputed (`force`) even where the trigger had
        calibrated it already: they follow the new chain.

    Returns each week's outcome: "completed" (for an evaluation, with the recalibration it triggered, waited
    for before the next week), "skipped" (a run of this backfill found the week done: an evaluation already
    completed, or a calibration already made, its run Completed as "Skipped"), or, where the deployment's run
    did nothing, what it said.
    """
    done = set() if start_chain else completed_weeks(deployment)  # a new chain recomputes every week
    outcome: dict[str, str] = {}
    try:
        for week in weekly_dates(start, end):
            key = week.isoformat()
            outcome[key] = "not completed: the backfill stopped here"  # until the week's run says otherwise
            outcome[key] = _one_week(
                deployment, key, key in done, outcome, timeout_s, parameters, start_chain
            )
    finally:
        publish_outcome(outcome, deployment)
    return outcome


def _one_week(
    deployment: str,
    key: str,
    done: bool,
    outcome: dict[str, str],
    timeout_s: float,
    parameters: dict | None,
    start_chain: bool,
) -> str:
    """Run (or skip) one week; its outcome. A run that does not complete raises BackfillError."""
    log = logger()
    if done:
        log.info("backfill: week %s already completed, skipped", key)
        return "skipped"
    log.info("backfill: week %s → %s", key, deployment)
    # with start_chain, the first week run starts the chain and every later one continues it
    first = not any(v.startswith("completed") for v in outcome.values())
    chain = {"force": True, "from_scratch": first} if start_chain else {}
    run = run_deployment(
        deployment,
        parameters={**(parameters or {}), date_parameter(deployment): key, **chain},
        timeout=timeout_s,
        flow_run_name=f"{deployment.split('/')[0]}-{key}",
    )
    state = run.state
    if state is None or not state.is_completed():
        if state is not None and state.is_final():
            why = f"ended {state.name}" + (f": {state.message}" if state.message else "")
        else:
            why = stop_unfinished(run, timeout_s)
        raise BackfillError(f"week {key}: flow run {run.name} {why}. Later weeks were not run")
    if state.name == "Skipped":  # the run found its week done (recalibrate): say so, not "completed"
        log.info("backfill: week %s skipped by its run: %s", key, state.message)
        return f"skipped ({state.message})" if state.message else "skipped"
    if date_parameter(deployment) != "as_of":
        return "completed"
    # an evaluation: the next week aggregates with the latest calibration, so this week's comes first
    recalibration = triggered_recalibration(run, key, timeout_s, appear_s=TRIGGER_APPEARS_S)
    if recalibration is None:
        log.warning(
            "backfill: week %s: no recalibration was triggered within %g s (is the %s deployment or its "
            "trigger off?): the next week does not wait for one",
            key,
            TRIGGER_APPEARS_S,
            RECALIBRATE,
        )
        return "completed (no recalibration triggered)"
    state = recalibration.state
    if state is None or not state.is_completed():
        why = (
            f"ended {state.name}"
            if state is not None and state.is_final()
            else f"was not done in {timeout_s:g} s"
        )
        raise BackfillError(
            f"week {key}: its recalibration, flow run {recalibration.name}, {why}"
            + (f": {state.message}" if state is not None and state.message else "")
            + ". Later weeks were not run: each aggregates with the calibration of the weeks before it"
        )
    log.info("backfill: week %s recalibrated by %s", key, recalibration.name)
    return "completed, then recalibrated"


def publish_outcome(outcome: dict[str, str], deployment: str) -> None:
    """Each week's outcome as a table on the backfill's flow run (they were only in its log)."""
    if FlowRunContext.get() is None:
        return
    create_table_artifact(
        table=[{"week": week, "outcome": what} for week, what in outcome.items()],
        key="backfill",
        description=f"each week's run of {deployment}",
    )
