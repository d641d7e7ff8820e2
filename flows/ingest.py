"""The ingest flow: only the first stage of evaluate, for checking sources before a full run."""

from __future__ import annotations

import datetime as dt

from prefect import flow

from judgeops.config import EvaluateConfig, config_for_run
from judgeops.flows.clock import run_date
from judgeops.flows.observer import PrefectObserver
from judgeops.schemas.store import ArtifactStore, new_run_id
from judgeops.tasks.stages import ingest_stage, ingest_summary_stage


@flow(name="ingest", flow_run_name="ingest-{as_of}")
def ingest(config: EvaluateConfig | None = None, as_of: dt.date | None = None, reuse: bool = True) -> dict:
    """Read the configured sources into `items` (and `external_pairs`, `responses`); return where and how many."""
    config = config_for_run(config, None)
    as_of = run_date(as_of)
    store = ArtifactStore(config.store.url, new_run_id(as_of), observer=PrefectObserver())
    with store.recording("ingest", as_of, config, done="ingested"):
        refs = ingest_stage(store, config, as_of, reuse)
        summary = ingest_summary_stage(store, refs)
    return {
        "run_id": store.run_id,
        "artifacts": {name: store.display_path(ref.path) for name, ref in refs.items()},
        "rows": {name: ref.rows for name, ref in refs.items()},
        "summary": summary.to_dict("records"),
    }
