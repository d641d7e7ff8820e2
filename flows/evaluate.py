"""The evaluate flow: ingest → construct → judge → validate → aggregate → profile → report.

Each stage is one task over whole tables (batched inside), reading and writing through the
artifact store; a stage whose code, parameters and inputs are unchanged reuses an earlier run's
output. Deployed from `deploy/prefect.yaml` (entrypoint `flows/evaluate.py:evaluate`).
"""

from __future__ import annotations

import datetime as dt

from prefect import flow, runtime
from pydantic import BaseModel

from judgeops.config import EvaluateConfig, load_config
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.stages import (
    aggregate_stage,
    construct_stage,
    ingest_stage,
    ingest_summary_stage,
    judge_stage,
    logger,
    profile_stage,
    report_stage,
    robustness_stage,
    validate_stage,
)


class EvaluateResult(BaseModel):
    run_id: str
    as_of: dt.date
    store_url: str
    report: str


def _as_of(as_of: dt.date | None) -> dt.date:
    """The evaluated date: as given, else the scheduled start of this flow run, else today."""
    if as_of is not None:
        return as_of
    scheduled = runtime.flow_run.scheduled_start_time
    return scheduled.date() if scheduled else dt.date.today()


def _run_name() -> str:
    as_of = runtime.flow_run.parameters.get("as_of")
    return f"evaluate-{as_of or _as_of(None)}"


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
    if config is None:
        config = load_config(config_file) if config_file else EvaluateConfig()
    as_of = _as_of(as_of)
    store = ArtifactStore(config.store.url, new_run_id(as_of), observer=PrefectObserver())
    logger().info("run %s: store %s", store.run_id, store.display_path(f"runs/{store.run_id}"))
    with store.recording("evaluate", as_of, config) as record:
        ingested = ingest_stage(store, config, as_of, reuse)
        ingest_summary_stage(store, ingested)
        items = {"items": ingested["items"]}
        published = {"external_pairs": ingested["external_pairs"]} if "external_pairs" in ingested else {}
        answers = {"responses": ingested["responses"]} if "responses" in ingested else {}
        built = construct_stage(store, {**items, **published}, config.construction, reuse, config.cache.path)
        verdicts = judge_stage(
            store,
            {**items, **published, **answers, **built},
            config.judges,
            config.batch_size,
            reuse,
            config.cache.path,
        )
        coverage = validate_stage(
            store, {**verdicts, "variants": built["variants"], "pairs": built["pairs"]}, config.judges, reuse
        )
        robustness = (
            robustness_stage(
                store,
                {**items, **verdicts, "variants": built["variants"], "pairs": built["pairs"]},
                config.judges,
                config.robustness,
                reuse,
                config.cache.path,
            )  # fmt: skip
            if config.robustness.injection
            else {}
        )
        consensus = aggregate_stage(
            store,
            {**verdicts, "variants": built["variants"], "pairs": built["pairs"]},
            config.aggregation,
            reuse,
        )
        profiles = profile_stage(
            store,
            {
                **verdicts,
                **consensus,
                **published,
                **answers,
                "variants": built["variants"],
                "pairs": built["pairs"],
            },
            config.profile,
            reuse,
        )
        report = report_stage(
            store,
            {
                **profiles,
                **coverage,
                **robustness,
                "pairs": built["pairs"],
                "construction_log": built["construction_log"],
                **{k: v for k, v in consensus.items() if k in ("consistency", "aggregation_notes")},
            },  # fmt: skip
            title=f"judgeops evaluation, {as_of.isoformat()}",
        )
        record["report"] = report_path = store.display_path(report.path)
    print(f"report: {report_path}")
    return EvaluateResult(run_id=store.run_id, as_of=as_of, store_url=config.store.url, report=report_path)
