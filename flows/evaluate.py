"""The evaluate flow, top to bottom as the pipeline diagram in the README:

    ingest → construct → judge → validate → robustness → aggregate → profile → report

Each stage is one task over whole tables (batched inside) that declares what it reads (tasks/stages.py);
`artifacts` collects every output so far and each stage takes its own inputs from it. A stage whose code,
parameters and inputs are unchanged reuses an earlier run's outputs. Deployed from `deploy/prefect.yaml`
(entrypoint `judgeops.flows.evaluate.evaluate`); a completed run emits `judgeops.evaluate.completed`.
"""

from __future__ import annotations

import datetime as dt
import time

from prefect import flow, runtime, suspend_flow_run
from prefect.events import emit_event
from prefect.exceptions import Pause
from prefect.input import RunInput
from pydantic import BaseModel

from judgeops.config import EvaluateConfig, config_for_run, panel_hint, scaled_to_limit
from judgeops.flows.batches import resolve_batch_wait, suspend_for_batches
from judgeops.flows.clock import now, run_date
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.judges.backends import BatchPending
from judgeops.tasks.log import logger
from judgeops.tasks.people_stages import audit_stage, labels_in, people_stage
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
    validate_stage,
)
from judgeops.tasks.task_options import stage_options


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


class LabelsDone(RunInput):
    """Resume the evaluation with the audit's labels (the Prefect UI's form on the suspended run)."""

    done: bool = True


def wait_for_labels(
    store: ArtifactStore, artifacts: Refs, config: EvaluateConfig, poll_s: float = 5.0
) -> int:
    """Until the run's audit has its labels (`judgeops label --run`): a deployment's run suspends — the worker is
    freed, the Prefect UI shows what to do and a "labels done" form, and `judgeops label --run` resumes it when
    the k-th task gets its label; the resumed run starts again, reuses every stage and continues the same store
    run. A run started here (no deployment to resume) polls the label log. Returns the labelled tasks."""
    audit, proposed = config.audit, store.read_pandas(artifacts["audit"])  # read once: the loop reads the log
    want = min(audit.k, len(proposed))
    _, n = labels_in(proposed, audit)
    if n >= want:
        return n
    if runtime.deployment.id:
        suspend_flow_run(
            wait_for_input=LabelsDone.with_initial_data(
                description=(
                    f"**{want - n} of {want} audited tasks still need a label.** Label them on the annotation page: "
                    f"run `judgeops label --run {store.run_id}` and open [http://127.0.0.1:8765/]"
                    "(http://127.0.0.1:8765/) (it resumes this run when the last one is in), or submit this form "
                    "once they are."
                ),
            ),
            timeout=audit.timeout_s,
            key="audit-labels",
        )
        return labels_in(proposed, audit)[1]
    deadline = time.monotonic() + audit.timeout_s
    logger().info(
        "audit: waiting for %d labels in %s (`judgeops label --run %s`)", want - n, audit.labels, store.run_id
    )
    while n < want and time.monotonic() < deadline:
        time.sleep(poll_s)
        n = labels_in(proposed, audit)[1]
    if n < want:
        logger().warning(
            "audit: %d of %d tasks labelled after %d s; going on with those", n, want, audit.timeout_s
        )
    return n


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
    # a smoke run's fixed samples (a slow judge's max_pairs, the injection probe) shrink with its items
    config = scaled_to_limit(config_for_run(config, config_file))
    as_of, started = run_date(as_of), now()  # the run's one clock: stages are given these
    store = ArtifactStore(config.store.url, observer=PrefectObserver())
    # a suspended run (waiting for the audit's labels, a provider batch) continues its store run when resumed
    store.run_id = store.suspended_run(runtime.flow_run.id) or new_run_id(as_of)
    logger().info("run %s: store %s", store.run_id, store.display_path(f"runs/{store.run_id}"))
    if all(j.backend == "programmatic" for j in config.judges):
        logger().warning("panel: programmatic judges only, no LLM judge: %s", panel_hint())
    cache = config.cache.path
    ops = stage_options(config.stages)  # Prefect's retries (transient errors only) and timeouts, every stage
    with store.recording("evaluate", as_of, config, suspended=(Pause,)) as record:
        artifacts: Refs = ingest_stage.with_options(**ops)(store, config, as_of, reuse)
        ingest_summary_stage(store, artifacts)
        artifacts |= construct_stage.with_options(**ops)(store, artifacts, config.construction, reuse, cache)
        # a provider batch: suspend while it runs where the run can be resumed (flows/batches.py)
        judges = resolve_batch_wait(config.judges)
        try:  # sharding: where the judging runs (here, a thread pool, Dask), not what it computes
            artifacts |= judge_stage.with_options(**ops)(
                store,
                artifacts,
                judges,
                config.batch_size,
                reuse,
                cache,
                config.cost,
                config.sharding,
                config.stages,
            )
        except BatchPending as pending:  # the batch watcher resumes the run when they have ended
            suspend_for_batches(store, pending, record, min(j.batch_poll_s for j in judges if j.batch))
        artifacts |= validate_stage.with_options(**ops)(
            store, artifacts, config.judges, reuse, config.cost.prices
        )
        if config.robustness.injection:
            try:  # the probe's own provider batches: waited for the same way
                artifacts |= robustness_stage.with_options(**ops)(
                    store, artifacts, judges, config.robustness, reuse, cache
                )
            except BatchPending as pending:
                suspend_for_batches(store, pending, record, min(j.batch_poll_s for j in judges if j.batch))
        artifacts |= aggregate_stage.with_options(**ops)(
            store, artifacts | latest_calibration(store, as_of), config.aggregation, reuse
        )
        if config.audit.k:  # people in the loop: propose the run's audit, wait for its labels if asked, check
            coin = config.aggregation.seed
            artifacts |= audit_stage.with_options(**ops)(store, artifacts, config.audit, coin, reuse)
            if config.audit.wait:
                wait_for_labels(store, artifacts, config)
            artifacts |= people_stage.with_options(**ops)(store, artifacts, config.audit, coin, reuse)
        artifacts |= profile_stage.with_options(**ops)(
            store, artifacts, config.profile, config.judges, reuse, config.sharding, config.stages
        )
        report = report_stage.with_options(**ops)(store, artifacts, config.judges, as_of, started)
        record["report"] = report_path = store.display_path(report.path)
    print(f"report: {report_path}")
    result = EvaluateResult(run_id=store.run_id, as_of=as_of, store_url=config.store.url, report=report_path)
    emit_completed(result, store, config)
    return result
