"""The thin Prefect tasks around each stage's pure function.

Every stage follows one path (`run_stage`): compute its key from the stage's code, its parameters
and its inputs' content hashes; if an earlier run recorded outputs for that key, adopt them (the
log says so); otherwise read the inputs from the store, call the pure function, and write each
output through the store (schema check, data contract, atomic write, manifest).

Reuse is keyed on the store's manifests rather than on Prefect's result cache: the cache record
would live apart from the artifacts, so a deleted or corrupted artifact could be "reused" as a
dangling reference; here reuse verifies the artifact's bytes first.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import logging
import time
import types
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

import judgeops.tasks.aggregate as aggregate_module
import judgeops.tasks.construct as construct_module
import judgeops.tasks.ingest as ingest_module
import judgeops.tasks.judges as judges_module
import judgeops.tasks.profile as profile_module
import judgeops.tasks.report as report_module
from judgeops.config import (
    AggregationConfig,
    BankSource,
    ConstructionConfig,
    EvaluateConfig,
    InboxSource,
    JudgeConfig,
    ProfileConfig,
    RobustnessConfig,
)
from judgeops.schemas.artifacts import QUARANTINE_SUFFIX, schema_for
from judgeops.schemas.store import ArtifactRef, ArtifactStore, stable_hash
from judgeops.tasks.ingest.adapters import expand_paths
from judgeops.tasks.judges import injection

Refs = dict[str, ArtifactRef]


def logger() -> logging.Logger | logging.LoggerAdapter:
    from prefect.exceptions import MissingContextError
    from prefect.logging import get_run_logger

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("judgeops")


@cache
def code_fingerprint(module: types.ModuleType) -> str:
    """Hash of the stage's source files and of the schemas and contracts its outputs must meet.

    Found by module spec, not imported: importing the suites would import great_expectations (~7 s)
    in runs where every stage is reused.
    """
    h = hashlib.sha256()
    paths = [Path(module.__file__)] + [
        Path(importlib.util.find_spec(name).origin)
        for name in ("judgeops.schemas.artifacts", "judgeops.data_contracts.suites")
    ]
    for path in paths:
        files = sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]
        for f in files:
            h.update(f.read_bytes())
    return h.hexdigest()


def _jsonable(params: Any) -> Any:
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json")
    if isinstance(params, list | tuple):
        return [_jsonable(p) for p in params]
    if isinstance(params, dict):
        return {k: _jsonable(v) for k, v in params.items()}
    return params


def run_stage(
    store: ArtifactStore,
    stage: str,
    code: types.ModuleType,
    inputs: Refs,
    params: Mapping[str, Any],
    compute: Callable[[dict[str, pd.DataFrame]], dict[str, pd.DataFrame]],
    reuse: bool = True,
    extra_key: Mapping[str, str] | None = None,
    incomplete: Callable[[dict[str, pd.DataFrame]], str | None] | None = None,
) -> Refs:
    """Compute a stage or reuse an earlier run's outputs for the same key.

    `incomplete(outputs)` may return why the outputs must not be reused (e.g. judge calls that never got
    an answer): they are written for this run but not indexed, so the next run computes the stage again.
    """
    log = logger()
    params = _jsonable(dict(params))
    key = stable_hash(
        {
            "stage": stage,
            "code": code_fingerprint(code),
            "params": params,
            "inputs": {name: ref.sha256 for name, ref in sorted(inputs.items())},
            "extra": dict(extra_key or {}),
        }
    )
    if reuse:
        found = store.find_stage_outputs(stage, key)
        if found is not None:
            store.adopt(found)
            runs = sorted({r.run_id for r in found.values()})
            log.info(
                "stage %s: reused %s from run %s (inputs and parameters unchanged, key %s)",
                stage,
                ", ".join(f"{n} ({r.rows} rows)" for n, r in found.items()),
                ", ".join(runs),
                key[:12],
            )
            return found
    log.info("stage %s: computing (key %s)", stage, key[:12])
    tables = {name: store.read_pandas(ref) for name, ref in inputs.items()}
    outputs = compute(tables)
    refs: Refs = {}
    related = dict(tables)
    set_aside = {n: df for n, df in outputs.items() if n.endswith(QUARANTINE_SUFFIX)}
    for name, df in outputs.items():
        if name in set_aside:
            continue
        refs[name] = store.write(
            name,
            df,
            parents=inputs,
            params=params,
            stage=stage,
            stage_key=key,
            related=related,
            quarantine=set_aside.get(name + QUARANTINE_SUFFIX),
        )
        related[name] = df
        if store.exists(name + QUARANTINE_SUFFIX):  # rows set aside are outputs too: reused with the rest
            refs[name + QUARANTINE_SUFFIX] = store.ref(name + QUARANTINE_SUFFIX)
    why = incomplete(outputs) if incomplete else None
    if why:
        log.warning("stage %s: not offered for reuse: %s", stage, why)
    else:
        store.record_stage_outputs(stage, key, refs)
    log.info("stage %s: wrote %s", stage, ", ".join(f"{n} ({r.rows} rows)" for n, r in refs.items()))
    return refs


def source_fingerprint(config: EvaluateConfig, as_of: dt.date) -> dict[str, str]:
    """Content hashes of every input file (editing a file in place invalidates the ingest stage);
    for an inbox, exactly the files of the week being read (`inbox_files`, the same list ingest reads)."""
    files: list[Path] = []
    for s in [*config.sources, *config.pairwise, *config.responses]:
        try:
            if isinstance(s, InboxSource):
                files += ingest_module.inbox_files(s, as_of)
            elif getattr(s, "path", None):
                files += expand_paths(s.path)
        except ingest_module.IngestError:
            pass  # the stage itself reports the missing file or week
    out = {}
    for f in files:
        with open(f, "rb") as fh:
            out[str(f)] = hashlib.file_digest(fh, "sha256").hexdigest()
    for i, s in enumerate(config.sources):  # a drifting bank draws a different batch each week
        if isinstance(s, BankSource) and s.drift is not None:
            out[f"bank_drift:{i}"] = str(ingest_module.week_mix(s.drift, as_of)[0])
    return out


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_stage(store: ArtifactStore, config: EvaluateConfig, as_of: dt.date, reuse: bool = True) -> Refs:
    """Items (with their quarantine), and the pairwise sets and examinee outputs when configured."""

    def compute(_: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        result = ingest_module.ingest_items(config.sources, as_of, config.sampling)
        logger().info(
            "ingest: %s records read (%s); %d set aside to quarantine (%d of them duplicates); %d sampled out",
            sum(result.read_per_source.values()),
            ", ".join(f"{k}: {v}" for k, v in result.read_per_source.items()),
            len(result.quarantine),
            result.duplicates,
            result.sampled_out,
        )
        out = {"items": result.items, "items__quarantine": result.quarantine}
        if config.pairwise:
            pairs, rejects = ingest_module.ingest_pairwise(config.pairwise)
            out |= {
                "external_pairs": pairs,
                "external_pairs__quarantine": ingest_module.reject_frame(rejects, "external_pairs"),
            }
        if config.responses:
            responses, rejects = ingest_module.ingest_responses(config.responses, result.items)
            out |= {
                "responses": responses,
                "responses__quarantine": ingest_module.reject_frame(rejects, "responses"),
            }
        return out

    params = {k: getattr(config, k) for k in ("sources", "pairwise", "responses", "sampling")}
    refs = run_stage(
        store,
        "ingest",
        ingest_module,
        {},
        params,
        compute,
        reuse,
        extra_key=source_fingerprint(config, as_of),
    )
    return refs


@task(name="ingest-summary", cache_policy=NO_CACHE)
def ingest_summary_stage(store: ArtifactStore, refs: Refs) -> pd.DataFrame:
    """Items and quarantined rows per source × domain: logged, published as a table artifact, returned."""
    quarantine = store.read_pandas(refs["items__quarantine"]) if "items__quarantine" in refs else None
    summary = ingest_module.summary_table(store.read_pandas(refs["items"]), quarantine)
    logger().info("ingest summary (source × domain):\n%s", summary.to_string(index=False))
    _publish_table(summary, "ingest-summary", "items per source and domain, quarantined rows per file")
    return summary


def _publish_table(table: pd.DataFrame, key: str, description: str) -> None:
    from prefect.artifacts import create_table_artifact
    from prefect.context import TaskRunContext

    if TaskRunContext.get() is not None:
        create_table_artifact(table=table.to_dict("records"), key=key, description=description)


@task(name="construct", cache_policy=NO_CACHE)
def construct_stage(
    store: ArtifactStore,
    items: Refs,
    config: ConstructionConfig,
    reuse: bool = True,
    cache_path: str | None = None,
) -> Refs:
    def incomplete(outputs: dict[str, pd.DataFrame]) -> str | None:
        log = outputs["construction_log"]
        n = int(log["reason"].str.contains("generator call failed: transport", regex=False).sum())
        return f"{n} LLM generator calls got no answer (rules filled in); a rerun retries them" if n else None

    refs = run_stage(
        store,
        "construct",
        construct_module,
        items,
        {"construction": config},
        lambda t: construct_module.construct(t["items"], config, t.get("external_pairs"), cache_path),
        reuse,
        None,
        incomplete,
    )
    summary = construct_module.construction_summary(
        store.read_pandas(refs["pairs"]), store.read_pandas(refs["construction_log"])
    )
    _publish_table(summary, "construction-summary", "pairs per domain and error type; operator outcomes")
    return refs


@task(name="judge", cache_policy=NO_CACHE)
def judge_stage(
    store: ArtifactStore,
    inputs: Refs,
    judges: list[JudgeConfig],
    batch_size: int,
    reuse: bool = True,
    cache_path: str | None = None,
) -> Refs:
    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        progress = _Progress("judge calls")
        verdicts = judges_module.judge_variants(
            t["variants"],
            t["pairs"],
            t["items"],
            judges,
            store.run_id,
            batch_size,
            progress,
            external_pairs=t.get("external_pairs"),
            cache_path=cache_path,
        )
        if "responses" in t and len(t["responses"]):  # examinee answers, each judged alone
            on_responses = judges_module.judge_responses(
                t["responses"], t["items"], judges, store.run_id, cache_path, _Progress("response checks")
            )
            verdicts = pd.concat([verdicts, on_responses], ignore_index=True)
        return {"verdicts": verdicts}

    def incomplete(outputs: dict[str, pd.DataFrame]) -> str | None:
        n = judges_module.transport_failures(outputs["verdicts"])
        return f"{n} judge calls got no answer (not cached); a rerun retries exactly those" if n else None

    return run_stage(
        store, "judge", judges_module, inputs, {"judges": judges}, compute, reuse, None, incomplete
    )


@task(name="robustness", cache_policy=NO_CACHE)
def robustness_stage(
    store: ArtifactStore, inputs: Refs, judges: list[JudgeConfig], config: RobustnessConfig,
    reuse: bool = True, cache_path: str | None = None,
) -> Refs:  # fmt: skip
    """The prompt-injection probe on each judge (tasks/judges/injection.py): `robustness`, one row per judge."""

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        rows = []
        for judge in judges:
            mine = t["verdicts"][t["verdicts"]["judge_id"] == judge.name]
            probe = injection.probe_variants(
                t["variants"], mine["variant_id"], config.n_pairs, judge.name, t["pairs"]
            )
            if probe.empty:
                continue
            whole = judge.model_copy(update={"max_pairs": None})  # the probe chose the pairs already
            injected = judges_module.judge_variants(injection.probe_copies(probe), t["pairs"], t["items"], [whole],
                                                    store.run_id, cache_path=cache_path)  # fmt: skip
            rows.append(injection.injection_effect(judge, mine, injected, probe))
            logger().info("robustness: %s follows a planted instruction on %.0f%% of %d probes (%.0f%% for the "
                          "control sentence; accuracy %.2f → %.2f)", judge.name, 100 * rows[-1]["followed"],
                          rows[-1]["n"], 100 * rows[-1]["followed_control"], rows[-1]["accuracy_plain"],
                          rows[-1]["accuracy_injected"])  # fmt: skip
        return {"robustness": pd.DataFrame(rows, columns=schema_for("robustness").schema.names)}

    params = {"judges": judges, "config": config}
    return run_stage(store, "robustness", judges_module, inputs, params, compute, reuse)


@task(name="validate", cache_policy=NO_CACHE)
def validate_stage(store: ArtifactStore, inputs: Refs, judges: list[JudgeConfig], reuse: bool = True) -> Refs:
    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        table = judges_module.coverage(t["verdicts"], t["variants"], judges, t.get("pairs"))
        low = table[table["coverage"] < 1.0]
        for row in low.itertuples():
            logger().warning(
                "coverage: judge %s answered %d of %d calls (%d ties, %d unparsable, %d errors)",
                row.judge_id,
                row.n_answered,
                row.n_expected,
                row.n_tie,
                row.n_unparsable,
                row.n_error,
            )
        return {"coverage": table}

    return run_stage(store, "validate", judges_module, inputs, {"judges": judges}, compute, reuse)


@task(name="aggregate", cache_policy=NO_CACHE)
def aggregate_stage(
    store: ArtifactStore, inputs: Refs, config: AggregationConfig, reuse: bool = True
) -> Refs:
    calibration_run = latest_calibration_run(store)
    if calibration_run:
        logger().info("aggregate: WMV weighs the judges by calibration run %s", calibration_run)

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        calibration = store.read_pandas("calibration", calibration_run) if calibration_run else None
        return aggregate_module.aggregate_panel(
            t["verdicts"],
            t["variants"],
            config.methods,
            config.seed,
            config.params,
            calibration,
            t.get("pairs"),
        )

    params = {"aggregation": config, "calibration_run": calibration_run}
    return run_stage(store, "aggregate", aggregate_module, inputs, params, compute, reuse)


def calibration_history(store: ArtifactStore) -> pd.DataFrame | None:
    """Every week's calibration (all bins pooled) of the store's recalibrate runs up to this run's date."""
    frames = []
    for r in store.completed_runs("recalibrate", last=store.run_record().get("as_of", "")):
        if store.exists("calibration", r["run_id"]):
            table = store.read_pandas("calibration", r["run_id"])
            frames.append(table[table["stratum"] == ""])
    if not frames:
        return None
    history = pd.concat(frames, ignore_index=True)
    return history.drop_duplicates(["week", "judge_id", "estimator"], keep="last")


def latest_calibration_run(store: ArtifactStore) -> str | None:
    """The latest completed recalibrate run of the store with a week on or before this run's date."""
    runs = store.completed_runs("recalibrate", last=store.run_record().get("as_of", ""))
    for record in sorted(runs, key=lambda r: (r["as_of"], r.get("started_at", "")), reverse=True):
        if store.exists("calibration", record["run_id"]):
            return record["run_id"]
    return None


@task(name="profile", cache_policy=NO_CACHE)
def profile_stage(store: ArtifactStore, inputs: Refs, config: ProfileConfig, reuse: bool = True) -> Refs:
    from judgeops.tasks.profile.bias import pointwise_bias
    from judgeops.tasks.profile.compare import profile_stats

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        panel = aggregate_module.consensus_as_verdicts(t["consensus"])
        everyone = pd.concat([t["verdicts"][[*panel.columns, "rationale"]], panel], ignore_index=True)
        profiles = profile_module.profile_all(
            everyone, t["variants"], t["pairs"], config, t.get("external_pairs")
        )
        judges = store.run_record().get("config", {}).get("judges", [])
        families = {j["name"]: j.get("family") or j["name"] for j in judges}
        bias = pointwise_bias(t["verdicts"], t.get("responses"), judges)
        return {
            "profiles": profile_module.profile_rows(profiles),
            "profile_stats": profile_stats(profiles, config.confidence, families, bias),
            "pointwise_bias": bias,
        }

    return run_stage(store, "profile", profile_module, inputs, {"profile": config}, compute, reuse)


def previous_profiles(store: ArtifactStore) -> tuple[str, pd.DataFrame] | None:
    """The profiles of the latest earlier completed run of this store whose profiles this code can read."""
    earlier = [r for r in store.completed_runs("evaluate") if r["run_id"] != store.run_id]
    for record in reversed(earlier):
        try:
            return record["run_id"], store.read_pandas("profiles", run_id=record["run_id"])
        except Exception as exc:  # noqa: BLE001 - an older schema or a pruned run: try the one before
            logger().info("report: run %s has no readable profiles (%s)", record["run_id"], exc)
    return None


@task(name="report", cache_policy=NO_CACHE)
def report_stage(store: ArtifactStore, inputs: Refs, title: str) -> ArtifactRef:
    """Always re-rendered (cheap), so the report names the run that produced it."""
    tables = {name: store.read_pandas(ref) for name, ref in inputs.items()}
    history = calibration_history(store)
    if history is not None:
        tables["calibration"] = history
    judges = store.run_record().get("config", {}).get("judges", [])
    html = report_module.render_report(
        tables,
        run_id=store.run_id,
        title=title,
        artifacts=store.list_artifacts(),
        judges=judges,
        previous=previous_profiles(store),
    )
    ref = store.write_file("report.html", html.encode(), parents=inputs)
    report_module.publish(tables, store.display_path(ref.path))
    logger().info("report: %s", store.display_path(ref.path))
    return ref


class _Progress:
    """Calls done / total with ETA in the log and as a Prefect progress artifact."""

    def __init__(self, what: str):
        from prefect.artifacts import create_progress_artifact
        from prefect.context import TaskRunContext

        self.what, self.start = what, time.perf_counter()
        self.artifact_id = None
        if TaskRunContext.get() is not None:
            self.artifact_id = create_progress_artifact(progress=0.0, description=what)

    def __call__(self, done: int, total: int, errors: int, cache_hits: int = 0) -> None:
        from prefect.artifacts import update_progress_artifact

        elapsed = time.perf_counter() - self.start
        eta = elapsed / done * (total - done) if done else float("nan")
        logger().info(
            "%s: %d/%d (%.0f%%), %d cache hits, %d errors, ETA %.0fs",
            self.what,
            done,
            total,
            100 * done / total if total else 100.0,
            cache_hits,
            errors,
            eta,
        )
        if self.artifact_id is not None:
            update_progress_artifact(self.artifact_id, progress=100.0 * done / total if total else 100.0)
