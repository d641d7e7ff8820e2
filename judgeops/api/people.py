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


def read_labels(path: str) -> tuple[pd.Series, pd.Series | None, pd.DataFrame | None]:
    """`scoring.read_audit_labels`, also for the page's label log (.jsonl): its latest answer per person and task."""
    if not str(path).endswith(".jsonl"):
        return scoring.read_audit_labels(path)
    if not Path(path).is_file():
        raise InputError(f"label log not found: {path}")
    records, _ = label_log.read(path)
    if records.empty:
        raise InputError(f"{path}: no label in the log yet")
    return scoring.parse_audit_labels(latest(records), path)


def label(
    votes_path: str,
    audit_path: str,
    items_path: str | None = None,
    labels_path: str | None = None,
    port: int = 8765,
    adjudicate: bool = False,
    import_csv: str | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Serve the annotation page until Ctrl-C (0); or, with `import_csv`, append a hand-filled csv's labels to the
    log (bad rows to `<log>.quarantine.csv` with file, line and reason) and return."""
    audit = load_audit(votes_path, audit_path, items_path)
    path = Path(labels_path) if labels_path else default_log(audit_path)
    if import_csv:
        table = scoring.read_table(import_csv, "labels")
        try:
            good, bad = import_table(table, import_csv, audit.tasks, audit.classes, audit.weights)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        for record in good.drop(columns="source").to_dict("records"):
            label_log.append(
                path, {k: (None if isinstance(v, float) and v != v else v) for k, v in record.items()}
            )
        say(f"imported {len(good)} labels from {import_csv} into {path}")
        if len(bad):
            out = path.with_suffix(".quarantine.csv")
            bad.to_csv(out, index=False)
            say(f"{len(bad)} rows set aside to {out}, e.g. {bad['quarantine_reason'].iloc[0]}")
        return 0
    import uvicorn

    from judgeops.tasks.labelling.server import app

    host = "127.0.0.1"
    port = port or _free_port(host)
    mode = "adjudicating the conflicts of" if adjudicate else "labelling"
    say(f"{mode} {len(audit.tasks)} audited tasks at http://{host}:{port}/  (labels: {path}; Ctrl-C stops)")
    uvicorn.run(app(audit, path, adjudicate), host=host, port=port, log_level="warning")
    return 0


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
