"""Examinee outputs → the `responses` artifact, with a gold checker where the file says nothing.

The checker extracts the final claim of a response (the last "answer is X", else the last number
for numeric gold, else the last standalone option letter for multiple choice) and compares it to
the item's gold. `correct_by` records where `is_correct` came from: "file", "gold_check" or
"unknown" (no gold to check against, or no claim found).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator

import pandas as pd

from judgeops.config import FileSource, ResponsesSource
from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.ingest.adapters import Reject, _generic_records, _required_fields, expand_paths

COLUMNS = schema_for("responses").schema.names
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_ANSWER_IS = re.compile(r"answer is\s*:?\s*\**\s*\(?([^\n*]+?)\)?\s*\**\s*(?:\.(?!\d)|$|\n)", re.I)
_LETTER = re.compile(r"(?<![A-Za-z])\(?([A-J])\)?(?![A-Za-z])")


def _number(text: str) -> float | None:
    found = _NUMBER.findall(text)
    return float(found[-1].replace(",", "")) if found else None


def check_against_gold(text: str, gold: str, choices: list[str] | None = None) -> bool | None:
    """True/False when a final claim is found and compared; None when there is nothing to compare."""
    if not text or not gold:
        return None
    claims = _ANSWER_IS.findall(text)
    claim = claims[-1].strip() if claims else text
    if choices:  # multiple choice: the letter
        letters = _LETTER.findall(claim)
        return letters[-1] == gold.strip().upper() if letters else None
    gold_number = _number(gold)
    if gold_number is not None and re.fullmatch(r"[$\s\d,.\-]+[A-Za-z%/ ]*", gold.strip()):
        value = _number(claim)
        return None if value is None else math.isclose(value, gold_number, rel_tol=1e-9, abs_tol=1e-9)
    if not claims:
        return None
    norm = lambda s: re.sub(r"[^a-z0-9 ]", "", s.lower()).strip()  # noqa: E731
    return norm(gold) == norm(claim) or norm(gold) in norm(claim).split(" ")


def read_responses(source: ResponsesSource) -> Iterator[dict | Reject]:
    mapping = FileSource(path=source.path, format=source.format)
    seen: dict[str, int] = {}
    for path in expand_paths(source.path, source.format):
        for line, rec in _generic_records(path, mapping.format):
            if isinstance(rec, Reject):
                yield rec
                continue
            wanted = (source.item_field, source.text_field) + (
                () if source.examinee else (source.examinee_field,)
            )
            fields = _required_fields(rec, wanted, path, line)
            if isinstance(fields, Reject):
                yield fields
                continue
            item, text, *named = fields
            examinee = source.examinee or named[0]
            rid = (
                str(rec[source.id_field])
                if source.id_field and rec.get(source.id_field) is not None
                else ("resp-" + hashlib.sha256(f"{examinee}|{item}|{text}".encode()).hexdigest()[:16])
            )
            if rid in seen:
                yield Reject(
                    str(path),
                    line,
                    source.id_field or "text",
                    f"duplicate response {rid!r} (first at line {seen[rid]})",
                )
                continue
            seen[rid] = line
            correct = rec.get(source.correct_field) if source.correct_field else None
            if correct is not None and not isinstance(correct, bool):
                lowered = str(correct).strip().lower()
                if lowered not in ("true", "false", "1", "0", "yes", "no"):
                    yield Reject(
                        str(path), line, source.correct_field, f"expected a boolean, got {correct!r}"
                    )
                    continue
                correct = lowered in ("true", "1", "yes")
            yield {
                "response_id": rid,
                "item_id": str(item),
                "examinee": str(examinee),
                "text": str(text),
                "is_correct": correct,
                "correct_by": "file" if correct is not None else None,
                "provenance": f"{path}:line {line}",
            }


def ingest_responses(
    sources: list[ResponsesSource], items: pd.DataFrame
) -> tuple[pd.DataFrame, list[Reject]]:
    rows, rejects = [], []
    for source in sources:
        for record in read_responses(source):
            (rejects if isinstance(record, Reject) else rows).append(record)
    responses = pd.DataFrame(rows, columns=COLUMNS)
    gold = items.set_index("item_id")
    for i, r in responses.iterrows():
        if r["correct_by"] == "file":
            continue
        if r["item_id"] in gold.index:
            item = gold.loc[r["item_id"]]
            verdict = check_against_gold(
                r["text"], item["gold"], list(item["choices"]) if len(item["choices"]) else None
            )
        else:
            verdict = None
        responses.at[i, "is_correct"] = verdict
        responses.at[i, "correct_by"] = "gold_check" if verdict is not None else "unknown"
    return responses, rejects
