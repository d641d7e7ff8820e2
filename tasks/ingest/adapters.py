"""Source adapters: one real file format each → item rows, read as a stream.

Every adapter yields, per record, either an item row (a dict with the `items` columns) or a
`Reject` naming the file, the line and the field that made the record unusable. Whole-file problems
(missing file, unreadable container) raise IngestError. Nothing is dropped without a Reject.
"""

from __future__ import annotations

import csv
import glob
import gzip
import hashlib
import io
import json
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from judgeops.config import FileSource

LETTERS = "ABCDEFGHIJ"

# licence of each format's public release; a user's own files say theirs in the config
KNOWN_LICENSES = {"gsm8k": "MIT", "mmlu": "MIT", "truthfulqa": "Apache-2.0", "medqa": "MIT"}
DEFAULT_DOMAINS = {"gsm8k": "math", "medqa": "medical", "truthfulqa": "general"}

# MMLU subject → our six domains (subjects not listed are "general")
MMLU_DOMAINS = {
    "legal": ("law", "jurisprudence", "international_law"),
    "medical": (
        "medicine",
        "clinical",
        "anatomy",
        "nutrition",
        "virology",
        "medical_genetics",
        "human_aging",
    ),
    "science": (
        "biology",
        "chemistry",
        "physics",
        "astronomy",
        "computer_science",
        "electrical_engineering",
        "conceptual_physics",
    ),
    "logic": ("logic", "logical_fallacies"),
    "math": ("mathematics", "algebra", "statistics", "elementary_mathematics"),
}


class IngestError(ValueError):
    """A whole source cannot be read; the message names the file (and line where there is one)."""


@dataclass(frozen=True)
class Reject:
    file: str
    line: int
    field: str | None
    reason: str

    def message(self) -> str:
        where = f"{self.file}, line {self.line}" + (f", field '{self.field}'" if self.field else "")
        return f"{where}: {self.reason}"


def normalize_text(text: object) -> str | None:
    """Unicode NFC, whitespace collapsed, stripped; None and NaN stay None."""
    if text is None or (isinstance(text, float) and text != text):
        return None
    text = str(text)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def mmlu_domain(subject: str) -> str:
    for domain, keys in MMLU_DOMAINS.items():
        if any(k in subject for k in keys):
            return domain
    return "general"


def expand_paths(pattern: str) -> list[Path]:
    """A file, a folder (its files) or a glob → sorted files; none found is an IngestError."""
    p = Path(pattern)
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
    elif any(ch in pattern for ch in "*?["):
        files = sorted(Path(f) for f in glob.glob(pattern))
    else:
        files = [p]
    missing = [f for f in files if not f.exists()]
    if missing or not files:
        raise IngestError(f"{missing[0] if missing else pattern}: source file not found")
    return files


def _open_binary(path: Path):
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def iter_lines(path: Path) -> Iterator[tuple[int, str | Reject]]:
    """(line number, text) per line, streaming; a line that is not UTF-8 becomes a Reject."""
    try:
        with _open_binary(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                try:
                    yield lineno, raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield (
                        lineno,
                        Reject(str(path), lineno, None, f"not UTF-8 text (byte {exc.start}: {exc.reason})"),
                    )
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise IngestError(f"{path}: cannot be read to the end ({type(exc).__name__}: {exc})") from None


def iter_json_records(path: Path) -> Iterator[tuple[int, dict | Reject]]:
    for lineno, line in iter_lines(path):
        if isinstance(line, Reject):
            yield lineno, line
            continue
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            truncated = " (truncated last line?)" if not line.endswith("\n") else ""
            yield (
                lineno,
                Reject(
                    str(path), lineno, None, f"not valid JSON: {exc.msg} at column {exc.colno}{truncated}"
                ),
            )
            continue
        if not isinstance(record, dict):
            yield (
                lineno,
                Reject(str(path), lineno, None, f"expected a JSON object, got {type(record).__name__}"),
            )
            continue
        yield lineno, record


def iter_csv_records(path: Path, header: bool) -> Iterator[tuple[int, dict | list | Reject]]:
    """Rows of a CSV (quoted fields may span lines: the line number is where the record starts)."""
    with _open_binary(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        reader = csv.reader(text)
        names = None
        start = 1
        try:
            for row in reader:
                if names is None and header:
                    names = row
                    start = reader.line_num + 1
                    continue
                yield start, (dict(zip(names, row, strict=False)) if header else row)
                start = reader.line_num + 1
        except UnicodeDecodeError as exc:
            yield (
                start,
                Reject(
                    str(path),
                    start,
                    None,
                    f"not UTF-8 text (byte {exc.start}: {exc.reason}); rest of file unread",
                ),
            )
        except csv.Error as exc:
            yield start, Reject(str(path), start, None, f"malformed CSV: {exc}; rest of file unread")


def item_row(
    source: str,
    path: Path,
    line: int,
    question,
    gold,
    *,
    domain: str,
    license: str,
    steps: list[str] | None = None,
    choices: list[str] | None = None,
    item_id: str | None = None,
) -> dict:
    question = normalize_text(question)
    gold = normalize_text(gold)
    steps = [s for s in (normalize_text(x) for x in (steps or [])) if s]
    if gold and not (steps and steps[-1].startswith("The answer is")):
        steps.append(f"The answer is {gold}.")
    choices = [normalize_text(c) or "" for c in (choices or [])]
    digest = hashlib.sha256(json.dumps([question or f"{path}:{line}", choices]).encode()).hexdigest()[:16]
    return {
        "item_id": item_id or f"{source}-{digest}",
        "source": source,
        "domain": domain,
        "question": question,
        "choices": choices,
        "gold": gold,
        "worked_solution": " ".join(steps),
        "steps": steps,
        "conditions": [],
        "license": license,
        "provenance": f"{path}:line {line}",
    }


def _required(record: dict, field: str, path: Path, line: int) -> str | Reject:
    value = record.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        state = "missing" if field not in record else "empty"
        return Reject(str(path), line, field, f"{state} field")
    return value


def read_gsm8k(path: Path, src: FileSource) -> Iterator[dict | Reject]:
    for line, rec in iter_json_records(path):
        if isinstance(rec, Reject):
            yield rec
            continue
        question, answer = _required(rec, "question", path, line), _required(rec, "answer", path, line)
        if isinstance(question, Reject) or isinstance(answer, Reject):
            yield question if isinstance(question, Reject) else answer
            continue
        worked, sep, final = str(answer).rpartition("####")
        if not sep or not final.strip():
            yield Reject(str(path), line, "answer", "no final answer after '####'")
            continue
        steps = [s for ln in re.sub(r"<<[^>]*>>", "", worked).splitlines() for s in sentences(ln)]
        yield item_row(
            "gsm8k",
            path,
            line,
            question,
            final.strip().replace(",", ""),
            steps=steps,
            domain=src.domain or "math",
            license=src.license or KNOWN_LICENSES["gsm8k"],
        )


def read_mmlu(path: Path, src: FileSource) -> Iterator[dict | Reject]:
    subject = re.sub(r"_(test|dev|val)$", "", path.stem.removesuffix(".csv"))
    domain = src.domain or mmlu_domain(subject)
    for line, row in iter_csv_records(path, header=False):
        if isinstance(row, Reject):
            yield row
            continue
        if len(row) != 6:
            yield Reject(
                str(path), line, None, f"expected 6 fields (question, A, B, C, D, answer), got {len(row)}"
            )
            continue
        question, *choices, letter = row
        letter = letter.strip().upper()
        if letter not in LETTERS[: len(choices)]:
            yield Reject(str(path), line, "answer", f"letter {letter!r} is not among the choices A-D")
            continue
        if not question.strip():
            yield Reject(str(path), line, "question", "empty field")
            continue
        gold_text = normalize_text(choices[LETTERS.index(letter)])
        yield item_row(
            f"mmlu:{subject}",
            path,
            line,
            question,
            letter,
            choices=choices,
            domain=domain,
            license=src.license or KNOWN_LICENSES["mmlu"],
            steps=[f"The correct option is {letter}: {gold_text}."],
        )


def read_truthfulqa(path: Path, src: FileSource) -> Iterator[dict | Reject]:
    for line, rec in iter_csv_records(path, header=True):
        if isinstance(rec, Reject):
            yield rec
            continue
        question, best = _required(rec, "Question", path, line), _required(rec, "Best Answer", path, line)
        if isinstance(question, Reject) or isinstance(best, Reject):
            yield question if isinstance(question, Reject) else best
            continue
        best = normalize_text(best)
        yield item_row(
            "truthfulqa",
            path,
            line,
            question,
            best,
            domain=src.domain or "general",
            license=src.license or KNOWN_LICENSES["truthfulqa"],
            steps=[best.rstrip(".") + "."],
        )


def read_medqa(path: Path, src: FileSource) -> Iterator[dict | Reject]:
    for line, rec in iter_json_records(path):
        if isinstance(rec, Reject):
            yield rec
            continue
        question, options, idx = (
            _required(rec, f, path, line) for f in ("question", "options", "answer_idx")
        )
        bad = next((x for x in (question, options, idx) if isinstance(x, Reject)), None)
        if bad:
            yield bad
            continue
        if not isinstance(options, dict) or not options:
            yield Reject(str(path), line, "options", "expected an object of lettered options")
            continue
        letters = sorted(options)
        if idx not in options:
            yield Reject(str(path), line, "answer_idx", f"letter {idx!r} is not among the choices {letters}")
            continue
        answer = rec.get("answer")
        if answer is not None and normalize_text(answer) != normalize_text(options[idx]):
            yield Reject(
                str(path), line, "answer", f"{answer!r} differs from option {idx} ({options[idx]!r})"
            )
            continue
        yield item_row(
            "medqa",
            path,
            line,
            question,
            idx,
            choices=[options[k] for k in letters],
            domain=src.domain or "medical",
            license=src.license or KNOWN_LICENSES["medqa"],
            steps=[f"The correct option is {idx}: {normalize_text(options[idx])}."],
        )


def _generic_records(path: Path, fmt: str) -> Iterator[tuple[int, dict | Reject]]:
    if fmt == "jsonl":
        yield from iter_json_records(path)
    elif fmt == "csv":
        yield from iter_csv_records(path, header=True)
    else:
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(path)
        except Exception as exc:
            raise IngestError(f"{path}: not a readable Parquet file ({exc})") from None
        row = 0
        for batch in parquet.iter_batches(batch_size=50_000):
            for record in batch.to_pylist():
                row += 1
                yield row, record


def read_generic(path: Path, src: FileSource, source_name: str | None = None) -> Iterator[dict | Reject]:
    """jsonl / csv / parquet through the source's column mapping; `line` is the row number for parquet."""
    seen_ids: dict[str, int] = {}
    name = source_name or path.stem
    for line, rec in _generic_records(path, src.format):
        if isinstance(rec, Reject):
            yield rec
            continue
        question, gold = (
            _required(rec, src.question_field, path, line),
            _required(rec, src.gold_field, path, line),
        )
        if isinstance(question, Reject) or isinstance(gold, Reject):
            yield question if isinstance(question, Reject) else gold
            continue
        item_id = None
        if src.id_field:
            raw_id = _required(rec, src.id_field, path, line)
            if isinstance(raw_id, Reject):
                yield raw_id
                continue
            item_id = str(raw_id)
            if item_id in seen_ids:
                yield Reject(
                    str(path),
                    line,
                    src.id_field,
                    f"duplicate id {item_id!r} (first at line {seen_ids[item_id]})",
                )
                continue
            seen_ids[item_id] = line
        choices = rec.get(src.choices_field) if src.choices_field else None
        if choices is not None and not isinstance(choices, list):
            yield Reject(
                str(path),
                line,
                src.choices_field,
                f"expected a list of options, got {type(choices).__name__}",
            )
            continue
        if choices and str(gold).strip().upper() not in LETTERS[: len(choices)]:
            yield Reject(
                str(path),
                line,
                src.gold_field,
                f"letter {gold!r} is not among the choices A-{LETTERS[len(choices) - 1]}",
            )
            continue
        solution = rec.get(src.solution_field) if src.solution_field else None
        steps = sentences(str(solution)) if solution else []
        yield item_row(
            name,
            path,
            line,
            question,
            gold,
            steps=steps,
            choices=choices,
            item_id=item_id,
            domain=src.domain or "general",
            license=src.license or "unknown",
        )


READERS = {"gsm8k": read_gsm8k, "mmlu": read_mmlu, "truthfulqa": read_truthfulqa, "medqa": read_medqa}


def read_file_source(src: FileSource) -> Iterator[dict | Reject]:
    for path in expand_paths(src.path):
        if os.path.getsize(path) == 0:
            raise IngestError(f"{path}: the file is empty")
        reader = READERS.get(src.format)
        records = reader(path, src) if reader else read_generic(path, src)
        for n, record in enumerate(records, start=1):
            yield record
            if src.limit and n >= src.limit:
                break
