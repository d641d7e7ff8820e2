"""The evaluate flow, top to bottom as the pipeline diagram in the README:

    ingest → construct → judge → validate → robustness → aggregate → profile → report

Each stage is one task over whole tables (batched inside) that declares what it reads (tasks/stages.py);
`artifacts` collects every output so far and each stage takes its own inputs from it. A stage whose code,
parameters and inputs are unchanged reuses an earlier run's outputs. Deployed from `deploy/prefect.yaml`
(entrypoint `judgeops.flows.evaluate.evaluate`); a completed run emits `judgeops.evaluate.completed`.
"""

from __future__ import annotations

import datetime as dt

from prefect import flow, runtime
from prefect.events import emit_event
from pydantic import BaseModel

from judgeops.config import EvaluateConfig, config_for_run, panel_hint
from judgeops.flows.clock import now, run_date
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.log import logger
from judgeops.tasks.runner import Refs
from judgeops.tasks.stages import (
    aggregate_stage,
    construct_stage,
    ingest_stage,
    ingest_summary_stage,
    judge_stage,
    latest_calibration,
    profile_stage,
    report_stage,
    robustness_stage,
    stage_options,
    validate_stage,
)


class EvaluateResult(BaseModel):
    run_id: str
    as_of: dt.date
    store_url: str
    report: str


def emit_completed(result: EvaluateResult, store: ArtifactStore, config: EvaluateConfig) -> None:
    """The Prefect event `judgeops.evaluate.completed`: the recalibrate deployment's trigger runs on it
    (deploy/prefect.yaml), and an automation can act on it. The store URL is absolute: any worker finds it."""
    emit_event(
        event="judgeops.evaluate.completed",
        resource={
            "prefect.resource.id": f"judgeops.run.{result.run_id}",
            "prefect.resource.name": result.run_id,
        },
        payload={
            "run_id": result.run_id,
            "as_of": result.as_of.isoformat(),
            "store_url": store.absolute_url(),
            "judges": [j.name for j in config.judges],
            "report": result.report,
        },
    )


def _run_name() -> str:
    as_of = runtime.flow_run.parameters.get("as_of")
    return f"evaluate-{as_of or run_date()}"


@flow(name="evaluate", flow_run_name=_run_name, log_prints=True)
def evaluate(
    config: EvaluateConfig | None = None,
    as_of: dt.date | None = None,
    config_file: str | None = None,
    reuse: bool = True,
) -> EvaluateResult:
    """Evaluate the configured judge panel on judgerEva pairs built from the configured sources.

    config: the full configuration (the embedded default when omitted).
    as_of: the date evaluated (default: the scheduled start of the run, else today).
    config_file: a judgeops.yaml to load on the worker when `config` is not given.
    reuse: reuse stage outputs whose code, parameters and inputs are unchanged.
    """
    config = config_for_run(config, config_file)
    as_of, started = run_date(as_of), now()  # the run's one clock: stages are given these
    store = ArtifactStore(config.store.url, new_run_id(as_of), observer=PrefectObserver())
    logger().info("run %s: store %s", store.run_id, store.display_path(f"runs/{store.run_id}"))
    if all(j.backend == "programmatic" for j in config.judges):
        logger().warning("panel: programmatic judges only, no LLM judge: %s", panel_hint())
    cache = config.cache.path
    ops = stage_options(config.stages)  # Prefect's retries (transient errors only) and timeouts, every stage
    with store.recording("evaluate", as_of, config) as record:
        artifacts: Refs = ingest_stage.with_options(**ops)(store, config, as_of, reuse)
        ingest_summary_stage(store, artifacts)
        artifacts |= construct_stage.with_options(**ops)(store, artifacts, config.construction, reuse, cache)
        artifacts |= judge_stage.with_options(**ops)(
            store,
            artifacts,
            config.judges,
            config.batch_size,
            reuse,
            cache,
            config.cost,
            config.sharding,
            config.stages,
        )  # sharding: where the judging runs (here, a thread pool, Dask), not what it computes
        artifacts |= validate_stage.with_options(**ops)(
            store, artifacts, config.judges, reuse, config.cost.prices
        )
        if config.robustness.injection:
            artifacts |= robustness_stage.with_options(**ops)(
                store, artifacts, config.judges, config.robustness, reuse, cache
            )
        artifacts |= aggregate_stage.with_options(**ops)(
            store, artifacts | latest_calibration(store, as_of), config.aggregation, reuse
        )
        artifacts |= profile_stage.with_options(**ops)(
            store, artifacts, config.profile, config.judges, reuse, config.sharding, config.stages
        )
        report = report_stage.with_options(**ops)(store, artifacts, config.judges, as_of, started)
        record["report"] = report_path = store.display_path(report.path)
    print(f"report: {report_path}")
    result = EvaluateResult(run_id=store.run_id, as_of=as_of, store_url=config.store.url, report=report_path)
    emit_completed(result, store, config)
    return result
