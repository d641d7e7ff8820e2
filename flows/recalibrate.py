"""The recalibrate flow: one week's error-rate estimates per judge, chained on the previous week's.

week w reads the verdicts of the week's latest completed evaluate run and the previous week's `calibration`
(its counts are the state the estimators continue from), writes this week's `calibration`, and emits a
Prefect event `judgeops.judge.drift` for every judge whose rates or agreement moved beyond their uncertainty
(a Prefect automation can notify on it). A week whose predecessor has no calibration is refused unless
`from_scratch` starts a new chain there; a week already calibrated is skipped unless `force`.
"""

from __future__ import annotations

import datetime as dt

from prefect import flow, runtime
from prefect.events import emit_event
from pydantic import BaseModel

from judgeops.config import EvaluateConfig, config_for_run
from judgeops.flows.clock import run_date
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.drift.calibrate import drift_events, recalibrate_week, week_units
from judgeops.tasks.log import logger


class RecalibrationError(RuntimeError):
    """The week cannot be calibrated as asked (a missing evaluation, or a broken chain)."""


class RecalibrateResult(BaseModel):
    week: dt.date
    run_id: str | None
    status: str  # "calibrated" or "skipped"
    drifted: list[dict] = []


def week_start(day: dt.date) -> dt.date:
    """The Monday of `day`'s ISO week: a calibration week runs Monday to Sunday."""
    return day - dt.timedelta(days=day.weekday())


def calibration_of(store: ArtifactStore, week: dt.date) -> tuple[str, object] | None:
    """(run_id, calibration table) of the latest completed recalibrate run for `week`, or None."""
    for record in reversed(store.completed_runs("recalibrate", week.isoformat(), week.isoformat())):
        if store.exists("calibration", record["run_id"]):
            return record["run_id"], store.read_pandas("calibration", record["run_id"])
    return None


def emit_drift_events(events: list[dict]) -> None:
    """A warning in the log and a Prefect event `judgeops.judge.drift` per drifting judge and metric."""
    for e in events:
        logger().warning(
            "drift: judge %s, %s %.3f → %.3f (week %s)",
            e["judge"],
            e["metric"],
            e["before"],
            e["after"],
            e["week"],
        )
        emit_event(
            event="judgeops.judge.drift",
            resource={
                "prefect.resource.id": f"judgeops.judge.{e['judge']}",
                "prefect.resource.name": e["judge"],
            },
            payload=e,
        )


def _week_param() -> str:
    week = runtime.flow_run.parameters.get("week")
    return f"recalibrate-{week or run_date().isoformat()}"


@flow(name="recalibrate", flow_run_name=_week_param, log_prints=True)
def recalibrate(
    week: dt.date | None = None,
    config: EvaluateConfig | None = None,
    config_file: str | None = None,
    from_scratch: bool = False,
    force: bool = False,
) -> RecalibrateResult:
    """Re-estimate every judge's FPR/FNR for the week containing `week` (default: the scheduled date).

    from_scratch: start a new chain at this week instead of continuing the previous week's state.
    force: recompute a week that is already calibrated.
    """
    config = config_for_run(config, config_file)
    monday = week_start(run_date(week))
    base = ArtifactStore(config.store.url, observer=PrefectObserver())
    log = logger()
    done = calibration_of(base, monday)
    if done is not None and not force:
        log.info("recalibrate: week %s is already calibrated (run %s); skipped", monday, done[0])
        return RecalibrateResult(week=monday, run_id=done[0], status="skipped")
    evaluations = base.completed_runs(
        "evaluate", monday.isoformat(), (monday + dt.timedelta(days=6)).isoformat()
    )
    if not evaluations:
        raise RecalibrationError(
            f"no completed evaluate run for the week of {monday} in store {config.store.url}: "
            f"run `judgeops run --as-of {monday}` (or backfill the evaluations) first"
        )
    source = evaluations[-1]["run_id"]
    previous_week = monday - dt.timedelta(weeks=1)
    previous = None if from_scratch else calibration_of(base, previous_week)
    if previous is None and not from_scratch:
        raise RecalibrationError(
            f"the calibration of the previous week ({previous_week}) is missing from store {config.store.url}: "
            f"week {monday} continues that week's state. Recalibrate {previous_week} first, or pass "
            "--from-scratch to start a new chain at this week"
        )
    src = ArtifactStore(config.store.url, source)
    names = [n for n in ("verdicts", "variants", "pairs", "responses", "items") if src.exists(n)]
    t = {n: src.read_pandas(n) for n in names}
    units = week_units(t["verdicts"], t["variants"], t["pairs"], t.get("responses"), t.get("items"))
    c = config.calibration
    table = recalibrate_week(
        monday,
        units,
        previous[1] if previous else None,
        c.n_audit,
        tuple(c.prior),
        c.decay,
        c.z,
        c.agreement_drop,
        c.seed,
    )
    store = ArtifactStore(config.store.url, new_run_id(monday), observer=PrefectObserver())
    with store.recording("recalibrate", monday, config) as record:
        parents = {"verdicts": src.ref("verdicts")}
        if previous is not None:
            parents["calibration"] = ArtifactStore(config.store.url, previous[0]).ref("calibration")
        store.write(
            "calibration",
            table,
            parents=parents,
            params={
                "calibration": c.model_dump(mode="json"),
                "evaluate_run": source,
                "from_scratch": from_scratch,
                "units": units.kind,
            },
            stage="recalibrate",
        )
        events = drift_events(table)
        emit_drift_events(events)
        record.update(
            {
                "evaluate_run": source,
                "previous_run": previous[0] if previous else None,
                "from_scratch": from_scratch,
                "drifted": events,
            }
        )
    log.info(
        "recalibrate: week %s from evaluate run %s%s: %d judges, %d drift flags",
        monday,
        source,
        "" if previous else " (new chain)",
        units.votes.shape[1],
        len(events),
    )
    return RecalibrateResult(week=monday, run_id=store.run_id, status="calibrated", drifted=events)
