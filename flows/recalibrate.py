"""The recalibrate flow: one week's error-rate estimates per judge, chained on the previous week's.

week w reads the verdicts of the week's latest completed evaluate run and the calibration of the last
calibrated week before it (its counts are the state the estimators continue from), writes this week's
`calibration`, and emits a Prefect event `judgeops.judge.drift` for every judge whose rates or agreement moved
beyond their uncertainty (a Prefect automation can notify on it). Weeks between the last calibrated one and w
are filled first, in order (tasks/drift/chain.py): calibrated where an evaluation ran, else the last
calibration carried forward, flagged. A store's first calibration starts a new chain; `from_scratch` starts
one at w. A week already calibrated is skipped unless `force`.

Deployed with a trigger (deploy/prefect.yaml): every `judgeops.evaluate.completed` event runs it for that
evaluation (`evaluate_run`, `store_url`), with the evaluation's own configuration.
"""

from __future__ import annotations

import datetime as dt

from prefect import flow, runtime
from prefect.events import emit_event
from prefect.states import Completed
from pydantic import BaseModel

from judgeops.config import EvaluateConfig, StoreConfig, config_for_run
from judgeops.flows.clock import run_date
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.drift.calibrate import carry_forward, drift_events, recalibrate_week, week_units
from judgeops.tasks.drift.chain import Calibrated, ChainIndex, week_start
from judgeops.tasks.log import logger
from judgeops.tasks.report.publish import publish_calibration


class RecalibrationError(RuntimeError):
    """The week cannot be calibrated as asked (a missing evaluation, or a broken chain)."""


class RecalibrateResult(BaseModel):
    week: dt.date
    run_id: str | None
    status: str  # "calibrated", "carried" (no evaluation that week) or "skipped" (already calibrated)
    drifted: list[dict] = []
    carried_from: str | None = None  # the week whose calibration a carried week repeats
    filled: list[dict] = []  # earlier weeks filled first: {week, status, run_id, carried_from}


# one event per drifting judge and metric; `judgeops deploy --notify` routes them to a notification block
DRIFT_EVENT = "judgeops.judge.drift"
JUDGE_RESOURCE = "judgeops.judge."  # + the judge's name: the event's resource


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
            event=DRIFT_EVENT,
            resource={
                "prefect.resource.id": JUDGE_RESOURCE + e["judge"],
                "prefect.resource.name": e["judge"],
            },
            payload=e,
        )


def _week_param() -> str:
    parameters = runtime.flow_run.parameters
    if parameters.get("evaluate_run"):  # run by the trigger: the evaluation it follows
        return f"recalibrate-after-{parameters['evaluate_run']}"
    return f"recalibrate-{parameters.get('week') or run_date().isoformat()}"


def _evaluation_config(store_url: str, run_id: str) -> tuple[EvaluateConfig, dt.date]:
    """The configuration and date an evaluate run recorded (the trigger calibrates with them)."""
    record = ArtifactStore(store_url).run_record(run_id)
    config = EvaluateConfig.model_validate(record["config"])
    store = StoreConfig(url=store_url)  # where the run was found, as the event said
    return config.model_copy(update={"store": store}), dt.date.fromisoformat(record["as_of"])


def calibrate_one(
    config: EvaluateConfig,
    week: dt.date,
    previous: Calibrated | None,
    evaluation: str | None,
    from_scratch: bool = False,
) -> RecalibrateResult:
    """Write one week's calibration: from its evaluation, or (none) the previous one carried forward."""
    url, c = config.store.url, config.calibration
    base = ArtifactStore(url)
    before = previous.table(base) if previous else None
    parents, params = {}, {"calibration": c.model_dump(mode="json"), "from_scratch": from_scratch}
    if previous is not None:
        parents["calibration"] = ArtifactStore(url, previous.run_id).ref("calibration")
    if evaluation is None:
        carried_from = previous.carried_from or previous.week.isoformat()
        table, units, events = carry_forward(before, week), None, []
        params["carried_from"] = carried_from
    else:
        carried_from = None
        src = ArtifactStore(url, evaluation)
        names = [n for n in ("verdicts", "variants", "pairs", "responses", "items") if src.exists(n)]
        t = {n: src.read_pandas(n) for n in names}
        units = week_units(t["verdicts"], t["variants"], t["pairs"], t.get("responses"), t.get("items"))
        table = recalibrate_week(
            week, units, before, c.n_audit, tuple(c.prior), c.decay, c.z, c.agreement_drop, c.seed
        )
        parents["verdicts"] = src.ref("verdicts")
        params |= {"evaluate_run": evaluation, "units": units.kind}
        events = drift_events(table)
    store = ArtifactStore(url, new_run_id(week), observer=PrefectObserver())
    with store.recording("recalibrate", week, config) as record:
        store.write("calibration", table, parents=parents, params=params, stage="recalibrate")
        emit_drift_events(events)
        record.update(
            {
                "evaluate_run": evaluation,
                "previous_run": previous.run_id if previous else None,
                "from_scratch": from_scratch,
                "carried_from": carried_from,
                "drifted": events,
            }
        )
    if carried_from:
        summary = f"week {week} has no completed evaluation: carried {carried_from} forward"
        logger().warning("recalibrate: %s", summary)
    else:
        summary = (
            f"week {week} from evaluate run {evaluation}{'' if previous else ' (new chain)'}: "
            f"{units.votes.shape[1]} judges, {len(events)} drift flags"
        )
        logger().info("recalibrate: %s", summary)
    drifted = sorted({e["judge"] for e in events})
    publish_calibration(
        table,
        f"**{summary}**"
        + (f"\n\nDrifted: {', '.join(f'`{j}`' for j in drifted)}." if drifted else "")
        + f"\n\nStore run `{store.run_id}`.",
    )
    status = "carried" if carried_from else "calibrated"
    return RecalibrateResult(
        week=week, run_id=store.run_id, status=status, drifted=events, carried_from=carried_from
    )


@flow(name="recalibrate", flow_run_name=_week_param, log_prints=True)
def recalibrate(
    week: dt.date | None = None,
    config: EvaluateConfig | None = None,
    config_file: str | None = None,
    from_scratch: bool = False,
    force: bool = False,
    evaluate_run: str | None = None,
    store_url: str | None = None,
) -> RecalibrateResult:
    """Re-estimate every judge's FPR/FNR for the week containing `week` (default: the scheduled date).

    from_scratch: start a new chain at this week instead of continuing the previous week's state (the week is
        recomputed even if it was calibrated).
    force: recompute a week that is already calibrated.
    evaluate_run, store_url: the week of this evaluate run of that store, with the run's own configuration
        (how the `judgeops.evaluate.completed` trigger calls it); `store_url` alone overrides the config's.
    """
    if evaluate_run is not None:
        if store_url is None:
            raise RecalibrationError("evaluate_run needs the store_url of the store the run is in")
        config, week = _evaluation_config(store_url, evaluate_run)
    config = config_for_run(config, config_file)
    if store_url is not None and store_url != config.store.url:
        config = config.model_copy(update={"store": StoreConfig(url=store_url)})
    monday = week_start(run_date(week))
    base = ArtifactStore(config.store.url, observer=PrefectObserver())
    base.sweep_crashed()
    chain = ChainIndex(base)
    done, evaluation = chain.calibration(monday), chain.evaluation(monday)
    if done is not None and not (force or from_scratch) and not (done.carried_from and evaluation):
        logger().info("recalibrate: week %s is already calibrated (run %s); skipped", monday, done.run_id)
        skipped = RecalibrateResult(
            week=monday, run_id=done.run_id, status="skipped", carried_from=done.carried_from
        )
        # a Completed state named Skipped: the UI and a backfill waiting on this run can tell it did nothing
        message = f"week {monday} is already calibrated (run {done.run_id}); `force` recomputes it"
        return Completed(name="Skipped", message=message, data=skipped)
    plan = chain.plan(monday, from_scratch)
    if evaluation is None and (from_scratch or (plan.previous is None and not plan.gaps)):
        raise RecalibrationError(
            f"no completed evaluate run for the week of {monday} in store {config.store.url}"
            + ("" if from_scratch else ", and no calibration before it to carry forward")
            + f": run `judgeops run --as-of {monday}` (or backfill the evaluations) first"
        )
    previous, filled = plan.previous, []
    for gap in plan.gaps:
        one = calibrate_one(config, gap, previous, chain.evaluation(gap))
        filled.append(one.model_dump(mode="json", include={"week", "status", "run_id", "carried_from"}))
        previous = Calibrated(gap, one.run_id, one.carried_from)
    result = calibrate_one(config, monday, previous, evaluation, from_scratch)
    return result.model_copy(update={"filled": filled})
