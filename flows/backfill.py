"""Backfill: one run per week, in order, through a deployment (open-source Prefect has no backfill): the weekly
evaluation, or the weekly recalibration (`--deployment recalibrate/recalibrate-weekly`).

Weeks that already have a completed run of the deployment (same `as_of`) are skipped, so a
backfill can be rerun after a failure and only does what is missing (except with `start_chain`: a new
calibration chain recomputes every week). It stops at the first week
that does not complete: later weeks build on earlier ones (the calibration chain). A run it stops waiting for
(the timeout) is cancelled, so it never runs later, out of order and unwatched; a failed run's reason is part
of the error.
"""

from __future__ import annotations

import datetime as dt

from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    DeploymentFilter,
    DeploymentFilterId,
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.deployments import run_deployment
from prefect.states import Cancelled, Cancelling

from judgeops.tasks.log import logger

DEFAULT_DEPLOYMENT = "evaluate/evaluate-weekly"
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

    Returns each week's outcome: "completed", "skipped" (a run of this backfill found the week done: an
    evaluation already completed, or a calibration already made, its run Completed as "Skipped"), or, where
    the deployment's run did nothing, what it said.
    """
    log = logger()
    done = set() if start_chain else completed_weeks(deployment)  # a new chain recomputes every week
    outcome: dict[str, str] = {}
    for week in weekly_dates(start, end):
        key = week.isoformat()
        if key in done:
            log.info("backfill: week %s already completed, skipped", key)
            outcome[key] = "skipped"
            continue
        log.info("backfill: week %s → %s", key, deployment)
        # with start_chain, the first week run starts the chain and every later one continues it
        first = not any(v == "completed" for v in outcome.values())
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
            outcome[key] = f"skipped ({state.message})" if state.message else "skipped"
        else:
            outcome[key] = "completed"
    return outcome
