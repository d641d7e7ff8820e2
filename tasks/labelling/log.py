"""The label log: every answer a person gives on the annotation page, one JSON line each, appended and fsynced
before the page is told it is saved — so closing the tab, killing the server or a power cut loses at most the
answer being typed. Nothing is rewritten in place: a changed answer is a new line, and the latest line of an
(annotator, task, adjudicated) wins when the log is read. A last line cut short by a crash mid-write has no
newline; reading leaves it out and says so.

Why by hand: a JSON-lines file with O_APPEND and fsync is the whole of the durability this needs; a database
would add a server or a lock file for one writer.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pandas as pd

from judgeops.data_contracts.labels import label_problems

COLUMNS = ["task", "label", "annotator", "adjudicated", "labelled_at", "seconds", "note", "weight", "source"]
KEY = ["task", "annotator", "adjudicated"]


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def append(path: str | Path, record: dict) -> None:
    """Append one record as a JSON line and fsync it (and, for a new file, its folder) before returning."""
    path = Path(path)
    new = not path.exists()
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)  # one write of one line: O_APPEND puts it whole at the end
        os.fsync(fd)
    finally:
        os.close(fd)
    if new:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def read(path: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """(every record in the order written, with `source` = file:line; the problems met: a torn last line, a line
    that is not a JSON object). A missing file is an empty log."""
    path = Path(path)
    rows, problems = [], []
    if path.exists():
        data = path.read_bytes()
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            torn = number == len(lines) and not data.endswith(b"\n")
            try:
                record = json.loads(raw)
            except ValueError:
                record = None
            if not isinstance(record, dict) or torn:
                why = "cut short (no newline: a crash mid-write)" if torn else "not a JSON object"
                problems.append(f"{path}:{number}: {why}; left out")
                continue
            rows.append({**record, "source": f"{path}:{number}"})
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    table["adjudicated"] = table["adjudicated"].fillna(False).astype(bool)
    return table, problems


def latest(records: pd.DataFrame) -> pd.DataFrame:
    """The latest record of each (task, annotator, adjudicated): a changed answer replaces the earlier one."""
    return records.drop_duplicates(KEY, keep="last").reset_index(drop=True)


def checked(records: pd.DataFrame, tasks, classes) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the records that keep data_contracts/labels.py's rules, the others with `quarantine_reason`: where the row
    came from and why)."""
    problems = label_problems(records, tasks, classes)
    bad = records.loc[problems.index].assign(
        quarantine_reason=[
            f"{src}: {why}" for src, why in zip(records.loc[problems.index, "source"], problems, strict=True)
        ]
    )
    return records.drop(index=problems.index), bad


def import_table(
    table: pd.DataFrame, file: str, tasks, classes, weights: dict
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A filled audit csv (task, label, annotator; note, seconds optional) as log records, checked by the same
    rules as the page's answers: (good records, quarantined rows with file, line and reason). Unfilled rows are not
    answers and are left out."""
    missing = {"task", "label"} - set(table.columns)
    if missing:
        raise ValueError(f"{file}: expected columns task, label (and annotator); missing {sorted(missing)}")
    table = table.assign(source=[f"{file}:{i + 2}" for i in range(len(table))])  # line 1 is the header
    filled = table[table["label"].notna() & (table["label"].astype(str).str.strip() != "")]
    records = pd.DataFrame(
        {
            "task": filled["task"].astype(str),
            "label": filled["label"].astype(str).str.strip(),
            "annotator": filled["annotator"].fillna("").astype(str) if "annotator" in filled else "",
            "adjudicated": filled["adjudicated"].fillna(False).astype(bool)
            if "adjudicated" in filled
            else False,
            "labelled_at": now(),
            "seconds": pd.to_numeric(filled["seconds"], errors="coerce")
            if "seconds" in filled
            else float("nan"),
            "note": filled["note"].astype("string") if "note" in filled else None,
            "weight": filled["task"].astype(str).map(weights).astype(float),
            "source": filled["source"],
        }
    ).reset_index(drop=True)
    return checked(records, tasks, classes)
