"""The label log: every answer a person gives on the annotation page, one JSON line each, appended and fsynced
before the page is told it is saved — so closing the tab, killing the server or a power cut loses at most the
answer being typed. Nothing is rewritten in place: a changed answer is a new line, and the latest line of an
(annotator, task, adjudicated) wins when the log is read. A write that fails (a full disk) is undone — the file
cut back to where the record began — and raises LogWriteError: the page says the answer is not saved, and no
half line is left for the next answer to be glued to. A last line cut short by a crash mid-write has no
newline: the page's server sets it aside at open (`recover`: moved to `<log>.torn`, said in one line) so the
log goes on on a fresh line; reading leaves such a line out and says so.

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


class LogWriteError(OSError):
    """A record that could not be written whole and made durable (nothing of it is left in the log)."""


def append(path: str | Path, record: dict) -> None:
    """Append one record as a JSON line and fsync it (and, for a new file, its folder) before returning; on
    failure cut the file back to where it was and raise LogWriteError. One writer at a time (the caller's lock)."""
    path = Path(path)
    new = not path.exists()
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise LogWriteError(f"the label log {path} could not be opened ({exc.strerror})") from None
    try:
        start = os.fstat(fd).st_size
        try:
            written = 0
            while written < len(line):  # a short write (a disk filling up) goes on where it stopped
                written += os.write(fd, line[written:])
            os.fsync(fd)
        except OSError as exc:
            _cut_back(fd, start)
            raise LogWriteError(f"the label log {path} could not be written ({exc.strerror})") from None
    finally:
        os.close(fd)
    if new:
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _cut_back(fd: int, size: int) -> None:
    """Undo a failed append; where even that fails, the torn line it leaves is set aside at the next open."""
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        pass


def recover(path: str | Path) -> str | None:
    """Set aside a torn last line (no newline: a crash mid-write): append it to `<log>.torn`, cut the log back to
    its last whole line. Returns the one line that says so, or None when the log ends whole."""
    path = Path(path)
    if not path.exists():
        return None
    with open(path, "rb+") as fh:
        data = fh.read()
        if not data or data.endswith(b"\n"):
            return None
        whole = data.rfind(b"\n") + 1
        torn = path.with_name(path.name + ".torn")
        with open(torn, "ab") as out:
            out.write(data[whole:] + b"\n")
            out.flush()
            os.fsync(out.fileno())
        fh.truncate(whole)
        fh.flush()
        os.fsync(fh.fileno())
    line = data[:whole].count(b"\n") + 1
    return f"{path}:{line}: a torn last line ({len(data) - whole} bytes, a crash mid-write) moved to {torn}"


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
