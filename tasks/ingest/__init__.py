"""Ingest: sources → the `items` artifact.

`ingest_items(sources)` is the pure function; the stage wrapper lives in `judgeops.tasks.stages`.
Whole-file problems (missing file, unreadable format, a bad JSON line) raise IngestError naming the
file, line and field; row-level problems (an empty question) pass through to the `items` contract,
which moves the row to `items__quarantine` with the reason.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import unicodedata
from pathlib import Path

import pandas as pd

from judgeops.config import BankSource, FileSource
from judgeops.tasks.ingest.bank import LICENSE as BANK_LICENSE
from judgeops.tasks.ingest.bank import generate_bank

log = logging.getLogger(__name__)

ITEM_COLUMNS = [
    "item_id",
    "source",
    "domain",
    "question",
    "choices",
    "gold",
    "worked_solution",
    "steps",
    "conditions",
    "license",
    "provenance",
]


class IngestError(ValueError):
    pass


def normalize_text(text: object) -> object:
    """Unicode NFC and collapsed whitespace; non-strings (None, NaN) pass through for the contract to judge."""
    if not isinstance(text, str):
        return None if text is None or (isinstance(text, float) and pd.isna(text)) else str(text)
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def bank_items(source: BankSource) -> pd.DataFrame:
    rows = []
    for item in generate_bank(source.n_items, source.seed):
        rows.append(
            {
                "item_id": item["item_id"],
                "source": "builtin_bank",
                "domain": item["domain"],
                "question": item["question"],
                "choices": [],
                "gold": item["gold"],
                "worked_solution": " ".join(item["steps"]),
                "steps": item["steps"],
                "conditions": item["conditions"],
                "license": BANK_LICENSE,
                "provenance": item["provenance"],
            }
        )
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def _read_records(source: FileSource) -> list[dict]:
    path = Path(source.path)
    if not path.exists():
        raise IngestError(f"{path}: source file not found (sources[kind=file].path)")
    if source.format == "parquet":
        try:
            return pd.read_parquet(path).to_dict("records")
        except Exception as exc:
            raise IngestError(f"{path}: not a readable Parquet file ({exc})") from None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    if source.format == "csv":
        import io

        try:
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False).to_dict("records")
        except Exception as exc:
            raise IngestError(f"{path}: not a readable CSV file ({exc})") from None
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise IngestError(
                f"{path}, line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(record, dict):
            raise IngestError(f"{path}, line {lineno}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    return records


def file_items(source: FileSource) -> pd.DataFrame:
    records = _read_records(source)
    if source.limit:
        records = records[: source.limit]
    rows = []
    for row_number, record in enumerate(records, start=1):
        question = normalize_text(record.get(source.question_field))
        answer = record.get(source.gold_field)
        solution = record.get(source.solution_field) if source.solution_field else None
        if source.format == "gsm8k" and isinstance(answer, str) and "####" in answer:
            worked, _, final = answer.rpartition("####")
            solution, answer = worked, final.strip().replace(",", "")
        gold = normalize_text(answer)
        steps: list[str] = []
        if isinstance(solution, str) and solution.strip():
            cleaned = re.sub(r"<<[^>]*>>", "", solution)  # GSM8K calculator annotations
            steps = [normalize_text(s) for s in cleaned.splitlines() if s.strip()]
            steps = [s for line in steps for s in _sentences(line)]
        if gold:
            steps.append(f"The answer is {gold}.")
        rows.append(
            {
                "item_id": f"{Path(source.path).stem}-"
                + hashlib.sha256(str(question).encode()).hexdigest()[:16],
                "source": f"file:{Path(source.path).name}",
                "domain": source.domain,
                "question": question,
                "choices": [],
                "gold": gold,
                "worked_solution": " ".join(steps),
                "steps": steps,
                "conditions": [],
                "license": source.license,
                "provenance": f"{source.path}:row {row_number}",
            }
        )
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def ingest_items(sources: list[BankSource | FileSource]) -> pd.DataFrame:
    """All sources as one `items` table, normalised and deduplicated by normalised question."""
    frames = [bank_items(s) if isinstance(s, BankSource) else file_items(s) for s in sources]
    items = pd.concat(frames, ignore_index=True)
    key = items["question"].fillna("").str.lower()
    duplicated = key.duplicated() & (key != "")
    if duplicated.any():
        log.warning(
            "ingest: %d duplicate questions across sources dropped (first occurrence kept): %s",
            int(duplicated.sum()),
            items.loc[duplicated, "provenance"].head(5).tolist(),
        )
    return items.loc[~duplicated].reset_index(drop=True)
