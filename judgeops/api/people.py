"""People in the loop: the annotation page over an audit (`judgeops label`), a hand-filled csv imported through the
same rules, and the label log read back as audit labels (`judgeops audit apply --labels LOG.jsonl`)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from judgeops.tasks.aggregate import scoring
from judgeops.tasks.aggregate.scoring import InputError
from judgeops.tasks.labelling import from_tables, import_table, latest
from judgeops.tasks.labelling import log as label_log
from judgeops.tasks.labelling.run_audit import run_audit


def default_log(audit_path: str) -> Path:
    """Where the page writes an audit's labels unless told: beside the audit, `<audit>.labels.jsonl`."""
    return Path(audit_path).with_suffix(".labels.jsonl")


def load_audit(votes_path: str, audit_path: str, items_path: str | None = None):
    """The Audit (tasks/labelling/items.py) of an audit proposal over a votes file, content from the audit's own
    columns or an items file; every audited task must be in the votes."""
    votes = scoring.read_label_votes(votes_path)
    audit = scoring.read_table(audit_path, "audit")
    if "task" not in audit.columns:
        raise InputError(f"{audit_path}: expected a `task` column (the file `judgeops audit propose` writes)")
    stray = sorted(set(audit["task"].astype(str)) - set(votes["task"].astype(str)), key=str)
    if stray:
        raise InputError(
            f"{audit_path}, field 'task': {len(stray)} task(s) that {votes_path} does not have, e.g. {stray[:3]}"
        )
    items = scoring.read_table(items_path, "items") if items_path else None
    if items is not None and "task" not in items.columns:
        raise InputError(f"{items_path}: expected a `task` column beside question and answer_<class>")
    return from_tables(audit, votes, items)


def read_labels(
    path: str, say: Callable[[str], None] | None = None
) -> tuple[pd.Series, pd.Series | None, pd.DataFrame | None]:
    """`scoring.read_audit_labels`, also for the page's label log (.jsonl): its latest answer per person and task.
    The log's lines left out (cut short by a crash, not a JSON object) are counted and named through `say`."""
    if not str(path).endswith(".jsonl"):
        return scoring.read_audit_labels(path)
    if not Path(path).is_file():
        raise InputError(f"label log not found: {path}")
    records, problems = label_log.read(path)
    if problems and say is not None:
        shown = "; ".join(problems[:3]) + ("; …" if len(problems) > 3 else "")
        say(f"{path}: {len(problems)} line(s) left out of {len(records) + len(problems)}: {shown}")
    if records.empty:
        raise InputError(f"{path}: no label in the log yet")
    return scoring.parse_audit_labels(latest(records), path)


LABEL_OPTIONS = (
    "votes",
    "audit",
    "items",
    "labels",
    "port",
    "adjudicate",
    "import_csv",
    "run",
    "config",
    "store",
)


def label(
    votes: str | None = None,
    audit: str | None = None,
    items: str | None = None,
    labels: str | None = None,
    port: int = 8765,
    adjudicate: bool = False,
    import_csv: str | None = None,
    run: str | None = None,
    config: str | None = None,
    store: str | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Serve the annotation page until Ctrl-C (0) — over an audit file of a votes file, or over the audit an
    evaluation run proposed (`run`: its labels go to the config's audit.labels; when its k-th task is labelled
    the page emits `judgeops.audit.completed` and resumes the run if it is suspended waiting for them). With
    `import_csv`, append a hand-filled csv's labels to the log (bad rows to `<log>.quarantine.csv` with file,
    line and reason) and return."""
    on_complete = None
    if run:
        from judgeops.api.pipeline import get_run, load_config

        settings = load_config(config)
        record = get_run(run, store or settings.store.url, flow=None, having="audit")
        table = record.load("audit")
        the_audit = run_audit(table)
        # where that run reads its labels (its own config, paths as its worker resolved them)
        ran_with = (record.store.run_record().get("config") or {}).get("audit") or {}
        path = Path(labels or ran_with.get("labels") or settings.audit.labels)
        on_complete = lambda: _completed(record, table, path)  # noqa: E731
    elif votes and audit:
        the_audit = load_audit(votes, audit, items)
        path = Path(labels) if labels else default_log(audit)
    else:
        raise InputError("judgeops label: give VOTES and --audit AUDIT, or --run RUN_ID")
    path.parent.mkdir(parents=True, exist_ok=True)
    if import_csv:
        code = _import(import_csv, the_audit, path, say)
        if on_complete is not None:  # a run's audit completed by hand: said as the page would say it
            on_complete()
        return code
    import uvicorn

    from judgeops.tasks.labelling.server import Guard, app, new_token

    host = "127.0.0.1"
    port = port or _free_port(host)
    token = new_token()  # in the address printed below: the page answers only requests that carry it
    mode = "adjudicating the conflicts of" if adjudicate else "labelling"
    say(
        f"{mode} {len(the_audit.tasks)} audited tasks at http://{host}:{port}/?token={token}  "
        f"(labels: {path}; Ctrl-C stops)"
    )
    served = Guard(app(the_audit, path, adjudicate, on_complete), token, host, port)
    uvicorn.run(served, host=host, port=port, log_level="warning")
    return 0


def _import(file: str, audit, path: Path, say: Callable[[str], None]) -> int:
    table = scoring.read_table(file, "labels")
    try:
        good, bad = import_table(table, file, audit.tasks, audit.classes, audit.weights)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    for record in good.drop(columns="source").to_dict("records"):
        label_log.append(
            path, {k: (None if isinstance(v, float) and v != v else v) for k, v in record.items()}
        )
    say(f"imported {len(good)} labels from {file} into {path}")
    if len(bad):
        out = path.with_suffix(".quarantine.csv")
        bad.to_csv(out, index=False)
        say(f"{len(bad)} rows set aside to {out}, e.g. {bad['quarantine_reason'].iloc[0]}")
    return 0


def _completed(record, audit: pd.DataFrame, path: Path) -> bool:
    """Called after every answer on a run's audit: once each of its tasks has a usable label, emit
    `judgeops.audit.completed` and resume the run if it is suspended waiting for them. True when complete."""
    from judgeops.tasks.labelling.run_audit import labelled_tasks, labels_for

    n = labelled_tasks(labels_for(audit, str(path)))
    if n < len(audit):
        return False
    run_record = record.store.run_record()
    flow_run_id = (run_record.get("prefect") or {}).get("flow_run_id")
    from prefect.settings import PREFECT_API_URL

    if not PREFECT_API_URL.value():  # no server to tell (a temporary one would only hear itself)
        print(
            f"the audit of run {record.run_id} is labelled ({n} tasks); no Prefect API set: no event emitted"
        )
        return True
    from prefect.events import emit_event

    emit_event(
        event="judgeops.audit.completed",
        resource={
            "prefect.resource.id": f"judgeops.run.{record.run_id}",
            "prefect.resource.name": record.run_id,
        },
        payload={"run_id": record.run_id, "labels": str(path), "n_labels": n, "flow_run_id": flow_run_id},
    )
    # Prefect's state, not the run record: the run's process records "suspended" only after Prefect suspends it
    if flow_run_id and _paused(flow_run_id):
        from prefect.flow_runs import resume_flow_run

        resume_flow_run(flow_run_id, run_input={"done": True})
    return True


def _paused(flow_run_id: str) -> bool:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        state = client.read_flow_run(flow_run_id).state
    return state is not None and state.is_paused()


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
