"""The pipeline's stages as thin Prefect tasks: each declares what it reads and the code it runs (a `Stage`),
passes its config slice as parameters, and leaves the rest to the stage runner (runner.py).

A stage reads nothing but its declared inputs and parameters: no run record, no global config, no clock
(the flow passes `as_of` and `now`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import socket
import time
from pathlib import Path

import pandas as pd
from prefect import task
from prefect.artifacts import create_progress_artifact, create_table_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext

from judgeops.config import (
    AggregationConfig,
    BankSource,
    ConstructionConfig,
    CostConfig,
    EvaluateConfig,
    InboxSource,
    JudgeConfig,
    Price,
    ProfileConfig,
    RobustnessConfig,
    ShardingConfig,
    StagesConfig,
)
from judgeops.data_contracts import ContractViolation
from judgeops.schemas.store import ArtifactRef, ArtifactStore, StoreError
from judgeops.schemas.stream import Rows, gather
from judgeops.tasks.aggregate.panel import aggregate_panel
from judgeops.tasks.construct import construct, construction_summary
from judgeops.tasks.ingest import IngestError, expand_paths, inbox_files, summary_table, week_mix
from judgeops.tasks.ingest.items import IngestResult, ingest_all
from judgeops.tasks.judges import coverage, transport_failures
from judgeops.tasks.judges.coverage import COVERAGE_COLUMNS
from judgeops.tasks.judges.injection import probe_panel
from judgeops.tasks.judges.runner import (
    judge_all,
)
from judgeops.tasks.log import logger
from judgeops.tasks.profile.panel import profile_panel
from judgeops.tasks.report import publish, render_report, render_samples, sample_records
from judgeops.tasks.runner import Refs, Stage, run_stage
from judgeops.tasks.sharding import ShardsRunner, blocks_runner

# how a judge waits for its provider batch changes no verdict: every judge keys the stage as if it waited the
# default way
WAITING_UNKEYED = {
    "batch_wait": "auto",
    "batch_max_wait_s": JudgeConfig.model_fields["batch_max_wait_s"].default,
}
INGEST = Stage("ingest", code=("judgeops.tasks.ingest.items",))
CONSTRUCT = Stage("construct", ("judgeops.tasks.construct.build",), ("items",), ("external_pairs",))
JUDGE = Stage(
    "judge",
    ("judgeops.tasks.judges.runner",),
    ("variants", "pairs", "items"),
    ("external_pairs", "responses"),
    columns={  # the texts judged and what picks a judge's sample: items' lists as Python objects were 275 MB at 100k
        "variants": ("variant_id", "pair_id", "text_a", "text_b"),
        "pairs": ("pair_id", "item_id", "error_type"),
        "items": ("item_id", "question", "gold"),
    },
)
VALIDATE = Stage(
    "validate",
    ("judgeops.tasks.judges.coverage",),
    ("verdicts", "variants", "pairs"),
    columns={
        "verdicts": COVERAGE_COLUMNS,
        "variants": ("variant_id", "pair_id"),
        "pairs": ("pair_id", "error_type"),
    },
    streamed=("verdicts",),  # one judge's rows at a time (validate_stage)
)
ROBUSTNESS = Stage(
    "robustness", ("judgeops.tasks.judges.injection",), ("verdicts", "variants", "pairs", "items")
)
AGGREGATE = Stage(
    "aggregate",
    ("judgeops.tasks.aggregate.panel",),
    ("verdicts", "variants", "pairs"),
    ("calibration",),
    {  # what aggregate_panel reads: 4 of the verdicts' 21 columns, none of the variants' texts
        "verdicts": ("judge_id", "variant_id", "verdict", "p_first"),
        "variants": ("variant_id", "pair_id", "presentation", "order"),
        "pairs": ("pair_id", "error_type"),
    },
    streamed=("verdicts",),  # by row group: the votes keep ~60 bytes of each verdict's row (canonical_votes)
)
PROFILE = Stage(
    "profile",
    ("judgeops.tasks.profile.panel",),
    ("verdicts", "consensus", "variants", "pairs"),
    ("external_pairs", "responses"),
    {
        "verdicts": ("judge_id", "variant_id", "response_id", "verdict", "p_first", "rationale"),
        "consensus": ("unit_id", "method", "label", "posterior"),
        "variants": ("variant_id", "pair_id", "presentation", "order", "gold_position"),
        "pairs": ("pair_id", "error_type", "domain", "qc_flags", "edit_before", "edit_after"),
    },
    # by row group: at 100k pairs × 12 judges, 4.8M verdicts and 7.2M consensus rows, of which the profile
    # keeps a few bytes a row (profiles.canonical_frame)
    streamed=("verdicts", "consensus"),
)
REPORT_INPUTS = (
    "profiles",
    "profile_stats",
    "pointwise_bias",
    "coverage",
    "robustness",
    "pairs",
    "construction_log",
    "consistency",
    "aggregation_notes",
    "human_agreement",  # the run's audit, where people labelled it (people_stages.py)
    "audit_summary",
    "estimates",
)


def source_fingerprint(config: EvaluateConfig, as_of: dt.date) -> dict[str, str]:
    """Content hashes of every input file (editing a file in place invalidates the ingest stage);
    for an inbox, exactly the files of the week being read (`inbox_files`, the same list ingest reads)."""
    files: list[Path] = []
    for s in [*config.sources, *config.pairwise, *config.responses]:
        try:
            if isinstance(s, InboxSource):
                files += inbox_files(s, as_of)
            elif getattr(s, "path", None):
                files += expand_paths(s.path, s.format)
        except IngestError:
            pass  # the stage itself reports the missing file or week
    out = {}
    for f in files:
        with f.open("rb") as fh:  # a local path or a remote UPath (tasks/ingest/adapters.py: source_path)
            out[str(f)] = hashlib.file_digest(fh, "sha256").hexdigest()
    for i, s in enumerate(config.sources):  # a drifting bank draws a different batch each week
        if isinstance(s, BankSource) and s.drift is not None:
            out[f"bank_drift:{i}"] = str(week_mix(s.drift, as_of)[0])
    return out


@task(name="ingest", cache_policy=NO_CACHE)
def ingest_stage(store: ArtifactStore, config: EvaluateConfig, as_of: dt.date, reuse: bool = True) -> Refs:
    """Items (with their quarantine), and the pairwise sets and examinee outputs when configured."""

    def said(result: IngestResult) -> None:
        logger().info(
            "ingest: %s records read (%s); %d set aside to quarantine (%d of them duplicates); %d sampled out",
            sum(result.read_per_source.values()),
            ", ".join(f"{k}: {v}" for k, v in result.read_per_source.items()),
            len(result.quarantine),
            result.duplicates,
            result.sampled_out,
        )

    params = {k: getattr(config, k) for k in ("sources", "pairwise", "responses", "sampling")}
    return run_stage(
        store,
        INGEST,
        {},
        params,
        lambda _: ingest_all(config.sources, config.pairwise, config.responses, config.sampling, as_of, said),
        reuse,
        extra_key=source_fingerprint(config, as_of),
    )


@task(name="ingest-summary", cache_policy=NO_CACHE)
def ingest_summary_stage(store: ArtifactStore, refs: Refs) -> pd.DataFrame:
    """Items and quarantined rows per source × domain: logged, published as a table artifact, returned."""
    quarantine = store.read_pandas(refs["items__quarantine"]) if "items__quarantine" in refs else None
    summary = summary_table(store.read_pandas(refs["items"]), quarantine)
    logger().info("ingest summary (source × domain):\n%s", summary.to_string(index=False))
    _publish_table(summary, "ingest-summary", "items per source and domain, quarantined rows per file")
    return summary


def _publish_table(table: pd.DataFrame, key: str, description: str) -> None:
    if TaskRunContext.get() is not None:
        create_table_artifact(table=table.to_dict("records"), key=key, description=description)


@task(name="construct", cache_policy=NO_CACHE)
def construct_stage(
    store: ArtifactStore,
    artifacts: Refs,
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
        CONSTRUCT,
        CONSTRUCT.select(artifacts),
        {"construction": config},
        lambda t: construct(t["items"], config, t.get("external_pairs"), cache_path),
        reuse,
        incomplete=incomplete,
    )
    summary = construction_summary(
        store.read_pandas(refs["pairs"]), store.read_pandas(refs["construction_log"])
    )
    _publish_table(summary, "construction-summary", "pairs per domain and error type; operator outcomes")
    return refs


@task(name="judge", cache_policy=NO_CACHE)
def judge_stage(
    store: ArtifactStore,
    artifacts: Refs,
    judges: list[JudgeConfig],
    batch_size: int,
    reuse: bool = True,
    cache_path: str | None = None,
    cost: CostConfig | None = None,
    sharding: ShardingConfig | None = None,
    stages: StagesConfig | None = None,
) -> Refs:
    """Every judge on every unit: here, in order, or (sharding.runner threads | dask) in shards on that task
    runner (`judge-shards`). The sharding settings and how a judge waits for its provider batch (`batch_wait`,
    resolved by the flow) are not part of the stage's key: they change where and how the verdicts are computed,
    not what they are. A batch still running where the judge waits by suspending raises BatchPending."""
    sharded = sharding is not None and sharding.runner != "inline"
    run_plan = (
        ShardsRunner(store, sharding, batch_size, cache_path, stages, JUDGE.fingerprint())
        if sharded
        else None
    )

    def incomplete(outputs: dict[str, pd.DataFrame]) -> str | None:
        n = transport_failures(outputs["verdicts"])
        return f"{n} judge calls got no answer (not cached); a rerun retries exactly those" if n else None

    try:
        refs = run_stage(
            store,
            JUDGE,
            JUDGE.select(artifacts),
            {"judges": [j.model_copy(update=WAITING_UNKEYED) for j in judges], "cost": cost},
            lambda t: {
                "verdicts": judge_all(
                    t, judges, store.run_id, batch_size, _Progress, cache_path, cost, run_plan
                )
            },
            reuse,
            incomplete=incomplete,
        )
    except ContractViolation:  # verdicts that broke their contract are not kept for a rerun to read back
        if run_plan is not None:
            run_plan.cleanup()
        raise
    # sharded: `verdicts` is written from the saved shards, which go now; a run stopped before (a signal, a
    # shard that failed) keeps them, so its rerun judges only the shards not saved
    if run_plan is not None:
        run_plan.cleanup()
    return refs


@task(name="robustness", cache_policy=NO_CACHE)
def robustness_stage(
    store: ArtifactStore,
    artifacts: Refs,
    judges: list[JudgeConfig],
    config: RobustnessConfig,
    reuse: bool = True,
    cache_path: str | None = None,
) -> Refs:
    """The prompt-injection probe on each judge (tasks/judges/injection.py): `robustness`, one row per judge. A
    batch judge's probe batch still running where the judge waits by suspending raises BatchPending."""

    def said(row: dict) -> None:
        logger().info(
            "robustness: %s follows a planted instruction on %.0f%% of %d probes (%.0f%% for the control "
            "sentence; accuracy %.2f → %.2f)",
            row["judge_id"],
            100 * row["followed"],
            row["n"],
            100 * row["followed_control"],
            row["accuracy_plain"],
            row["accuracy_injected"],
        )

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        table = probe_panel(
            t["verdicts"],
            t["variants"],
            t["pairs"],
            t["items"],
            judges,
            config,
            store.run_id,
            cache_path,
            said,
        )
        return {"robustness": table}

    # how a judge waits for its probe's provider batch does not change the probe: not part of the key
    params = {"judges": [j.model_copy(update=WAITING_UNKEYED) for j in judges], "config": config}
    return run_stage(store, ROBUSTNESS, ROBUSTNESS.select(artifacts), params, compute, reuse)


@task(name="validate", cache_policy=NO_CACHE)
def validate_stage(
    store: ArtifactStore,
    artifacts: Refs,
    judges: list[JudgeConfig],
    reuse: bool = True,
    prices: dict[str, Price] | None = None,
) -> Refs:
    def compute(t: dict[str, Rows]) -> dict[str, pd.DataFrame]:
        # coverage is per judge: each judge's verdicts gathered from the row groups in turn, never all at once
        table = pd.concat(
            [
                coverage(
                    gather(t["verdicts"], lambda f, j=judge.name: f["judge_id"] == j, list(COVERAGE_COLUMNS)),
                    t["variants"],
                    [judge],
                    t.get("pairs"),
                    prices,
                )
                for judge in judges
            ],
            ignore_index=True,
        )
        for row in table[table["coverage"] < 1.0].itertuples():
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

    return run_stage(
        store,
        VALIDATE,
        VALIDATE.select(artifacts),
        {"judges": judges, "prices": prices or {}},
        compute,
        reuse,
    )


@task(name="aggregate", cache_policy=NO_CACHE)
def aggregate_stage(
    store: ArtifactStore, artifacts: Refs, config: AggregationConfig, reuse: bool = True
) -> Refs:
    """The panel's consensus per method; with a `calibration` input (the latest weekly calibration as of the
    run's date, `latest_calibration`), WMV weighs the judges by its rates."""
    inputs = AGGREGATE.select(artifacts)
    if "calibration" in inputs:
        logger().info("aggregate: WMV weighs the judges by calibration run %s", inputs["calibration"].run_id)

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        return aggregate_panel(
            t["verdicts"],
            t["variants"],
            config.methods,
            config.seed,
            config.params,
            t.get("calibration"),
            t["pairs"],
        )

    return run_stage(store, AGGREGATE, inputs, {"aggregation": config}, compute, reuse)


@task(name="profile", cache_policy=NO_CACHE)
def profile_stage(
    store: ArtifactStore,
    artifacts: Refs,
    config: ProfileConfig,
    judges: list[JudgeConfig],
    reuse: bool = True,
    sharding: ShardingConfig | None = None,
    stages: StagesConfig | None = None,
) -> Refs:
    """Every judge and consensus method profiled; with sharding (threads | dask), the bootstrap's blocks of
    resamples on that task runner (`profile-bootstrap`), the same resamples as here. Like the judge stage's,
    the sharding settings are not part of the stage's key."""
    sharded = sharding is not None and sharding.runner != "inline"
    map_blocks = blocks_runner(store, sharding, stages) if sharded else None

    def compute(t: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        return profile_panel(
            t["verdicts"],
            t["consensus"],
            t["variants"],
            t["pairs"],
            config,
            judges,
            t.get("external_pairs"),
            t.get("responses"),
            map_blocks,
        )

    params = {"profile": config, "judges": judges}
    return run_stage(store, PROFILE, PROFILE.select(artifacts), params, compute, reuse)


def latest_calibration(store: ArtifactStore, as_of: dt.date) -> Refs:
    """`calibration` of the latest completed recalibrate run of the store with a week on or before `as_of`
    (empty when there is none)."""
    runs = store.completed_runs("recalibrate", last=as_of.isoformat())
    for record in sorted(runs, key=lambda r: (r["as_of"], r.get("started_at", "")), reverse=True):
        if store.exists("calibration", record["run_id"]):
            return {"calibration": store.ref("calibration", record["run_id"])}
    return {}


def calibration_history(store: ArtifactStore, as_of: dt.date) -> pd.DataFrame | None:
    """Every week's calibration (all bins pooled) of the store's recalibrate runs up to `as_of`."""
    frames = []
    for r in store.completed_runs("recalibrate", last=as_of.isoformat()):
        if not store.exists("calibration", r["run_id"]):
            continue
        try:
            table = store.read_pandas("calibration", r["run_id"])
        except StoreError as exc:  # an older schema or a damaged file: the history goes on without it
            logger().info("report: the calibration of run %s is not readable (%s)", r["run_id"], exc)
            continue
        frames.append(table[table["stratum"] == ""])
    if not frames:
        return None
    history = pd.concat(frames, ignore_index=True)
    return history.drop_duplicates(["week", "judge_id", "estimator"], keep="last")


def previous_profiles(store: ArtifactStore) -> tuple[str, pd.DataFrame] | None:
    """The profiles of the latest earlier completed run of this store whose profiles this code can read."""
    earlier = [r for r in store.completed_runs("evaluate") if r["run_id"] != store.run_id]
    for record in reversed(earlier):
        try:
            return record["run_id"], store.read_pandas("profiles", run_id=record["run_id"])
        except Exception as exc:  # noqa: BLE001 - an older schema or a pruned run: try the one before
            logger().info("report: run %s has no readable profiles (%s)", record["run_id"], exc)
    return None


SAMPLE_INPUTS = ("items", "pairs", "variants", "verdicts", "consensus")


def write_samples(
    store: ArtifactStore, artifacts: Refs, frames: dict[str, pd.DataFrame], title: str
) -> ArtifactRef | None:
    """The per-sample viewer (samples.html) from the run's pairs, variants, verdicts and consensus (`frames`:
    those artifacts, already read)."""
    inputs = {n: artifacts[n] for n in SAMPLE_INPUTS if n in artifacts}
    if set(SAMPLE_INPUTS[:4]) - set(inputs):
        return None
    records = sample_records(*(frames[n] for n in SAMPLE_INPUTS[:4]), frames.get("consensus"))
    page = render_samples(records, store.run_id, title)
    ref = store.write_file("samples.html", page.encode(), parents=inputs)
    logger().info(
        "samples: %s (%d pair × presentation rows)", store.display_path(ref.path), len(records["rows"])
    )
    return ref


def write_report(
    store: ArtifactStore, artifacts: Refs, judges: list[JudgeConfig], as_of: dt.date, now: dt.datetime
) -> ArtifactRef:
    """Render the run's report from its artifacts (and the store's calibration history and previous run) and
    write it; `judgeops report` and the evaluate flow both call this."""
    title = f"judgeops evaluation, {as_of.isoformat()}"
    needed = dict.fromkeys([*REPORT_INPUTS, *SAMPLE_INPUTS])  # each artifact read once (pairs serves both)
    frames = {n: store.read_pandas(artifacts[n]) for n in needed if n in artifacts}
    write_samples(store, artifacts, frames, title)  # first, so the report lists it among the run's files
    inputs = {n: artifacts[n] for n in REPORT_INPUTS if n in artifacts}
    tables = {name: frames[name] for name in inputs}
    history = calibration_history(store, as_of)
    if history is not None:
        tables["calibration"] = history
    html = render_report(
        tables,
        run_id=store.run_id,
        title=title,
        artifacts=[m for m in store.list_artifacts() if m["name"] != "report.html"],
        judges=[j.model_dump(mode="json") for j in judges],
        previous=previous_profiles(store),
        now=now,
    )
    return store.write_file("report.html", html.encode(), parents=inputs)


@task(name="report", cache_policy=NO_CACHE)
def report_stage(
    store: ArtifactStore, artifacts: Refs, judges: list[JudgeConfig], as_of: dt.date, now: dt.datetime
) -> ArtifactRef:
    """Always re-rendered (cheap), so the report names the run that produced it."""
    ref = write_report(store, artifacts, judges, as_of, now)
    publish(
        {n: store.read_pandas(artifacts[n]) for n in REPORT_INPUTS if n in artifacts},
        store.browser_url(ref.path),
        on_disk_of=socket.gethostname() if store.is_local() else None,
    )
    logger().info("report: %s", store.display_path(ref.path))
    return ref


class _Progress:
    """Calls done / total with ETA in the log and as a Prefect progress artifact."""

    def __init__(self, what: str):
        self.what, self.start = what, time.perf_counter()
        self.artifact_id = None
        if TaskRunContext.get() is not None:
            self.artifact_id = create_progress_artifact(progress=0.0, description=what)

    def __call__(self, done: int, total: int, errors: int, cache_hits: int = 0) -> None:
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
