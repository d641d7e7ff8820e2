"""Runs of the pipeline and what they stored: evaluate, ingest, recalibrate, report, and reading artifacts back."""

from __future__ import annotations

import contextlib
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgeops.api.interrupts import start_server_here
from judgeops.api.sources import check_sources
from judgeops.config import EvaluateConfig, JudgeConfig, load_config, parse_config, sources_from_specs
from judgeops.flows import clock
from judgeops.flows.evaluate import evaluate as evaluate_flow
from judgeops.flows.ingest import ingest as ingest_flow
from judgeops.flows.observer import PrefectObserver
from judgeops.flows.recalibrate import recalibrate as recalibrate_flow
from judgeops.schemas.names import check_artifact_name, check_run_id
from judgeops.schemas.store import ArtifactNotFoundError, ArtifactStore, StoreError
from judgeops.tasks.stages import write_report


@dataclass(frozen=True)
class Run:
    """One run in a store: `load(name)` reads one of its artifacts (hash and schema checked)."""

    run_id: str
    store_url: str
    as_of: dt.date | None = None
    report: str | None = None

    @property
    def store(self) -> ArtifactStore:
        return ArtifactStore(self.store_url, self.run_id)

    def artifacts(self) -> list[str]:
        return [m["name"] for m in self.store.list_artifacts()]

    def load(self, artifact: str) -> pd.DataFrame:
        return self.store.read_pandas(artifact)


def _config(config: EvaluateConfig | str | Path | None, store_url: str | None = None) -> EvaluateConfig:
    """A copy of the config (a path is loaded; None: ./judgeops.yaml or the default), its store overridden."""
    config = config.model_copy(deep=True) if isinstance(config, EvaluateConfig) else load_config(config)
    if store_url:
        config.store.url = store_url
    return config


def evaluate(
    config: EvaluateConfig | str | Path | None = None,
    as_of: dt.date | None = None,
    reuse: bool = True,
    store_url: str | None = None,
    max_cost: float | None = None,
    limit: int | None = None,
) -> Run:
    """Run the evaluate flow (a config object, a judgeops.yaml path, or None for ./judgeops.yaml or the default).
    `max_cost` overrides the config's `cost.max_cost` (checked again: the hosted judges need prices); `limit`
    keeps at most that many items (a smoke run)."""
    config = check_sources(_config(config, store_url), config if isinstance(config, str | Path) else None)
    config.sampling.limit = limit or config.sampling.limit
    if max_cost is not None:
        data = config.model_dump(mode="json", context={"secrets": True})  # a copy to run with
        data["cost"]["max_cost"] = max_cost
        config = parse_config(data, "--max-cost")
    start_server_here()
    result = evaluate_flow(config=config, as_of=as_of, reuse=reuse)
    return Run(result.run_id, config.store.url, result.as_of, result.report)


def ingest(
    config: EvaluateConfig | str | Path | None = None,
    as_of: dt.date | None = None,
    store_url: str | None = None,
    sources: list[list[str]] | None = None,
    per_domain: int | None = None,
) -> dict:
    """Read the sources into `items` (and `external_pairs`, `responses`): run id, paths, rows, summary.
    `sources` (`FORMAT:PATH [PATH ...]` each) replace the config's, `per_domain` its sampling."""
    config_path, config = config, _config(config, store_url)
    items, pairwise = sources_from_specs(sources or [])
    config.sources, config.pairwise = items or config.sources, pairwise or config.pairwise
    config.sampling.per_domain = per_domain or config.sampling.per_domain
    check_sources(
        config, "--source" if sources else config_path if isinstance(config_path, str | Path) else None
    )
    start_server_here()
    return ingest_flow(config=config, as_of=as_of)


def recalibrate(
    week: dt.date | None = None,
    config: EvaluateConfig | str | Path | None = None,
    from_scratch: bool = False,
    force: bool = False,
    store_url: str | None = None,
):
    """One week of the calibration chain (flows/recalibrate.py)."""
    config = _config(config, store_url)
    start_server_here()
    return recalibrate_flow(week=week, config=config, from_scratch=from_scratch, force=force)


def open_store(
    store_url: str | None = None, config: EvaluateConfig | str | Path | None = None
) -> ArtifactStore:
    """The artifact store (of the URL, else of the config); it marks the runs whose process died as crashed. A
    store that cannot be reached (no credentials, no such bucket) or a file where its folder should be is a
    StoreError naming the URL."""
    url = store_url or _config(config).store.url
    try:
        store = ArtifactStore(url, observer=PrefectObserver())
        is_file = store.fs.isfile(store.root)
        # a listing reaches the object store (isfile swallows its errors); a new store has nothing there yet
        with contextlib.suppress(FileNotFoundError):
            store.fs.ls(store.root, detail=False)
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - a filesystem client's own errors (botocore's, fsspec's)
        raise StoreError(f"store {url}: cannot be reached ({type(exc).__name__}: {exc})") from None
    if is_file:
        raise StoreError(f"store {url}: is a file, not a store's folder")
    return store


def runs(store_url: str | None = None) -> list[dict]:
    """Every run record of the store, oldest first."""
    return open_store(store_url).list_runs()


def get_run(
    run_id: str | None = None,
    store_url: str | None = None,
    flow: str | None = "evaluate",
    having: str | None = None,
) -> Run:
    """A run of the store; with no id, the latest completed run of `flow` (any flow if None) that has the
    artifact `having` (an ingest run has no profiles). A run id or artifact name that is not one is refused
    (`NameRefused`) before the store is opened."""
    if run_id is not None:
        check_run_id(run_id)
    if having is not None:
        check_artifact_name(having)
    store = open_store(store_url)
    if run_id is None:
        done = [
            r
            for r in store.list_runs()
            if r.get("status") in ("completed", "ingested")
            and flow in (None, r.get("flow"))
            and (having is None or store.exists(having, r["run_id"]))
        ]
        if not done:
            what = f"{flow or ''} run".strip() + (f" with artifact {having!r}" if having else "")
            raise ArtifactNotFoundError(f"no completed {what} in store {store.url}; run `judgeops run` first")
        run_id = done[-1]["run_id"]
    record = store.run_record(run_id)
    as_of = dt.date.fromisoformat(record["as_of"]) if record.get("as_of") else None
    return Run(run_id, store.url, as_of, record.get("report"))


def load(run_id: str | None, artifact: str, store_url: str | None = None) -> pd.DataFrame:
    """One artifact of a run (the latest completed evaluation when `run_id` is None)."""
    return get_run(run_id, store_url).load(artifact)


def report(run_id: str | None = None, store_url: str | None = None, now: dt.datetime | None = None) -> str:
    """Re-render a run's report from its artifacts — the same function as the evaluate flow's report stage —
    and return where it is."""
    run = get_run(run_id, store_url)
    store = run.store
    record = store.run_record()
    judges = [JudgeConfig(**j) for j in record.get("config", {}).get("judges", [])]
    artifacts = {m["name"]: store.ref(m["name"]) for m in store.list_artifacts() if m.get("kind") == "table"}
    as_of = run.as_of or dt.date.fromisoformat(record["as_of"])
    ref = write_report(store, artifacts, judges, as_of, now or clock.now())
    return store.display_path(ref.path)


def sweep(store_url: str | None = None, run_id: str | None = None) -> list[str]:
    """Mark the runs whose process died as crashed (their temp files removed, the temporary Prefect server
    they left stopped); one line per run marked now. `run_id`, the run a listing is about to show, is checked
    first (`NameRefused`): nothing is opened for a name that is not a run id."""
    if run_id is not None:
        check_run_id(run_id)
    lines = []
    for r in open_store(store_url).sweep_crashed():
        swept = r["swept"]
        stopped = (
            "; stopped the temporary Prefect server it left running"
            if swept["prefect_server_stopped"]
            else ""
        )
        lines.append(
            f"run {r['run_id']}: crashed ({r['error']}); removed {swept['temp_files_removed']} temp files{stopped}"
        )
    return lines


def listing(store_url: str | None = None, run_id: str | None = None, every: bool = False) -> list[tuple]:
    """What `judgeops store ls` shows, as (title, columns, rows) tables: the runs, one table per kind (evaluate,
    recalibrate, ...), or a run's artifacts (each run's with `every`)."""
    if run_id is not None:
        check_run_id(run_id)
    store = open_store(store_url)
    runs = store.list_runs()
    if run_id is None and not every:
        columns = ["run_id", "as_of", "status", "started", "error"]
        fields = ("as_of", "status", "started_at", "error")
        by_kind: dict[str, list] = {}  # evaluate, recalibrate, ...: a table each
        for r in runs:
            by_kind.setdefault(r.get("flow", "other"), []).append(
                [r["run_id"], *(r.get(f, "") for f in fields)]
            )
        tables = [(f"{kind} runs in {store.url}", columns, rows) for kind, rows in by_kind.items()]
        return tables or [(f"runs in {store.url}", columns, [])]
    tables = []
    for r in runs if every else [store.run_record(run_id)]:
        rows = [
            [m["name"], m["rows"], m["sha256"][:16], m["created_at"], m.get("reused_from", "this run")]
            for m in store.list_artifacts(r["run_id"])
        ]
        tables.append(
            (
                f"run {r['run_id']} ({r.get('status', '')})",
                ["artifact", "rows", "sha256", "created", "from"],
                rows,
            )
        )
    return tables
