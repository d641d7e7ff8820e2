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
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import fsspec
import orjson
import pyarrow.parquet as pq

from judgeops import plugins
from judgeops.config import GENERIC_FORMATS, FileSource
from judgeops.schemas.artifacts import FINAL_CLAIM, OPTION_LETTERS

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


def source_path(location: str) -> Path:
    """A source file or folder: a local path, or any fsspec URL (s3://bucket/key, gcs://..., memory://...) as a
    universal-pathlib UPath, which reads, lists and names remote files as pathlib does local ones."""
    if "://" not in location:
        return Path(location)
    from upath import UPath  # lazy: only sources on object storage need it

    return UPath(location)


# What a folder given as a source path means: the files matching its format's glob (README, "Sources"); a file
# that does not match is never read. A format without one here (a plugin's, unless its reader has a
# `folder_glob` attribute) takes files or globs only.
FOLDER_GLOBS = {
    "jsonl": ("*.jsonl", "*.jsonl.gz"),
    "csv": ("*.csv", "*.csv.gz"),
    "parquet": ("*.parquet",),
    "gsm8k": ("*.jsonl", "*.jsonl.gz"),
    "mmlu": ("*.csv",),
    "truthfulqa": ("*.csv",),
    "medqa": ("*.jsonl", "*.jsonl.gz"),
    "llmbar": ("*.json",),
    "judgebench": ("*.jsonl", "*.jsonl.gz"),
    "hh_rlhf": ("*.jsonl", "*.jsonl.gz"),
}


def folder_globs(fmt: str) -> tuple[str, ...]:
    """The globs a folder of format `fmt` is read by (empty: a folder is refused)."""
    if fmt in FOLDER_GLOBS:
        return FOLDER_GLOBS[fmt]
    glob_of = (
        getattr(plugins.load("sources", fmt), "folder_glob", None)
        if fmt in plugins.names("sources")
        else None
    )
    return (glob_of,) if isinstance(glob_of, str) else tuple(glob_of or ())


def expand_paths(pattern: str, fmt: str) -> list[Path]:
    """A file, a folder (its files matching the format's glob, FOLDER_GLOBS) or a glob → sorted regular files,
    local or at an fsspec URL. None found, a folder of a format without a glob, or something that is not a
    regular file (a FIFO, a device: reading it could hang) is an IngestError naming the path."""
    p = source_path(pattern)
    if p.is_dir():
        globs = folder_globs(fmt)
        if not globs:
            raise IngestError(f"{pattern}: is a folder; format {fmt!r} reads files: give a file or a glob")
        found = {f for g in globs for f in p.glob(g) if not f.name.startswith(".")}
        files = sorted(found, key=str)
        if not files:
            raise IngestError(f"{pattern}: a folder with no {' or '.join(globs)} file (format {fmt!r})")
    elif any(ch in pattern for ch in "*?["):
        if "://" in pattern:
            files = [source_path(p.fs.unstrip_protocol(f)) for f in sorted(p.fs.glob(pattern))]
        else:
            files = sorted(Path(f) for f in glob.glob(pattern))
    else:
        files = [p]
    missing = [f for f in files if not f.exists()]
    if missing or not files:
        raise IngestError(f"{missing[0] if missing else pattern}: source file not found")
    for f in files:
        if not f.is_file():  # is_file follows links and is False for a FIFO, a socket, a device
            what = "a folder" if f.is_dir() else "not a regular file"
            raise IngestError(f"{f}: {what}; a source reads regular files")
    return files


def file_size(path: Path) -> int:
    return path.stat().st_size


GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = b"\xef\xbb\xbf"


def open_binary(path: Path):
    """A source file for reading as bytes, local or remote, decompressed when it is gzip (its name ends in .gz,
    or its first two bytes are gzip's magic number, whatever its name)."""
    with fsspec.open(str(path), "rb") as fh:
        gzipped = path.suffix == ".gz" or fh.read(2) == GZIP_MAGIC
    return fsspec.open(str(path), "rb", compression="gzip" if gzipped else None).open()


def iter_json_records(path: Path) -> Iterator[tuple[int, dict | Reject]]:
    """(line number, object) per non-blank line, streaming. orjson (~3× the stdlib's speed) also
    rejects invalid UTF-8, so one parse both decodes and validates; failures become Rejects."""
    where = str(path)
    try:
        with open_binary(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                if lineno == 1:
                    raw = raw.removeprefix(UTF8_BOM)  # an editor's byte-order mark is not part of the record
                try:
                    record = orjson.loads(raw)
                except orjson.JSONDecodeError as exc:
                    if not raw.strip():
                        continue
                    yield lineno, _json_reject(where, lineno, raw, exc)
                    continue
                if not isinstance(record, dict):
                    yield (
                        lineno,
                        Reject(where, lineno, None, f"expected a JSON object, got {type(record).__name__}"),
                    )
                    continue
                yield lineno, record
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise IngestError(f"{path}: cannot be read to the end ({type(exc).__name__}: {exc})") from None


def _json_reject(where: str, lineno: int, raw: bytes, exc: Exception) -> Reject:
    """Say why a line is not a JSON object, in the stdlib's words (they name the column)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        return Reject(where, lineno, None, f"not UTF-8 text (byte {err.start}: {err.reason})")
    try:
        json.loads(text)
        reason = str(exc)
    except json.JSONDecodeError as err:
        reason = f"{err.msg} at column {err.colno}"
    truncated = " (truncated last line?)" if not raw.endswith(b"\n") else ""
    return Reject(where, lineno, None, f"not valid JSON: {reason}{truncated}")


EMPTY_FILE = "the file is empty: skipped"
MAX_RESYNCS = 100  # a file with more runaway quotes than this is read on past each one (no re-reading)


def iter_csv_records(path: Path, header: bool) -> Iterator[tuple[int, dict | list | Reject]]:
    """Rows of a CSV (quoted fields may span lines: the line number is where the record starts).

    A bad row never ends the file: bytes that are not UTF-8 are decoded with surrogateescape, so the row
    they sit in is quarantined naming its line, field and byte while reading goes on; a row the csv module
    refuses (a field over the size limit, a stray quote) is quarantined and the reader resumes at the next line.
    A quote left open runs on over the next lines until the csv module gives up: only its first line is
    quarantined, and reading starts again on the line after it (the file read again from there), so the good
    rows it swallowed are kept."""
    skip, names, resyncs = 0, None, 0
    while True:
        resume = yield from _csv_pass(path, header, skip, names, resyncs < MAX_RESYNCS)
        if resume is None:
            return
        skip, names = resume
        resyncs += 1


def _csv_pass(path: Path, header: bool, skip: int, names, resync: bool):
    """Read from line `skip` + 1 on; returns None at the end, or (lines to skip, header) to read again from."""
    with open_binary(path) as fh:
        # utf-8-sig: a byte-order mark before the header is dropped (it would rename the first column)
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="surrogateescape", newline="")
        for _ in range(skip):
            text.readline()
        # strict: a stray or unterminated quote is an error (quarantined), not a field that swallows the next record
        reader = csv.reader(text, strict=True)
        start = skip + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return None
            except csv.Error as exc:
                end = skip + reader.line_num
                if end > start and resync:  # a runaway quoted record: its first line only is bad
                    reason = f"malformed CSV: {exc} (the record runs to line {end}; read again from line {start + 1})"
                    yield start, Reject(str(path), start, None, reason)
                    return start, names
                span = f" (the record runs to line {end})" if end > start else ""
                yield start, Reject(str(path), start, None, f"malformed CSV: {exc}{span}")
                start = end + 1
                continue
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise IngestError(
                    f"{path}: cannot be read to the end ({type(exc).__name__}: {exc})"
                ) from None
            bad = _undecodable(row, names if header else None)
            if bad is not None:
                field, byte = bad
                yield start, Reject(str(path), start, field, f"not UTF-8 text (byte 0x{byte:02x})")
            elif names is None and header:
                names = row
            else:
                yield start, (dict(zip(names, row, strict=False)) if header else row)
            start = skip + reader.line_num + 1


def _undecodable(row: list[str], names: list[str] | None) -> tuple[str | None, int] | None:
    """(the field's name — or its position — and the first undecodable byte), or None if the row is UTF-8.
    surrogateescape maps byte b to the lone surrogate U+DC00 + b, which valid UTF-8 never decodes to, so
    re-encoding (in C, once per field) fails exactly at an escaped byte."""
    for i, value in enumerate(row):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            field = names[i] if names is not None and i < len(names) else f"column {i + 1}"
            return field, ord(value[exc.start]) - 0xDC00
    return None


ItemRow = (
    tuple  # the `items` columns in schema order, then the identity key (a tuple: ~3× cheaper than a dict)
)


def identity_digest(question: str, choices: list[str]) -> bytes:
    """8 bytes of sha256 over the normalised question (case-folded) and its choices: an item's identity.

    The hex form is the derived item_id (stable across runs); the integer form is the deduplication key.
    """
    return hashlib.sha256("\x1f".join([question.lower(), *choices]).encode()).digest()[:8]


NO_CONDITIONS: list[str] = []  # shared: file sources record no conditions


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
) -> ItemRow:
    """One `items` row; the id is stable across runs: a hash of the question and its choices."""
    question = normalize_text(question)
    gold = normalize_text(gold)
    steps = [s for s in map(normalize_text, steps) if s] if steps else []
    if gold and not (steps and steps[-1].startswith(FINAL_CLAIM)):
        steps.append(f"{FINAL_CLAIM} {gold}.")
    choices = [normalize_text(c) or "" for c in choices] if choices else []
    digest = identity_digest(question or f"{path}:{line}", choices)
    if item_id is None:
        item_id = f"{source}-{digest.hex()}"
    # order of ITEM_COLUMNS: item_id, source, domain, question, choices, gold, worked_solution, steps,
    # conditions, license, provenance
    return (
        item_id,
        source,
        domain,
        question,
        choices,
        gold,
        " ".join(steps),
        steps,
        NO_CONDITIONS,
        license,
        f"{path}:line {line}",
        int.from_bytes(digest, "little", signed=True),
    )


def _text_problem(value, field: str, max_chars: int, numbers: bool = True) -> tuple[str, str] | None:
    """(field, reason) when a text field holds something other than text (a number is fine for answers),
    or more characters than `max_chars`; None when it is usable."""
    if value.__class__ is str:
        if len(value) > max_chars:
            return field, f"{len(value):,} characters, over the {max_chars:,} limit (max_text_chars)"
        if "\x00" in value:  # an escaped \u0000 in JSON: no text holds one, and C-string tools truncate at it
            return field, "contains a NUL character (U+0000)"
        return None
    if numbers and isinstance(value, int | float) and not isinstance(value, bool):
        return None
    return field, f"expected text, got {type(value).__name__}"


def _blank(value) -> bool:
    return value is None or (value.__class__ is str and not value.strip())


def _required(record: dict, field: str, path: Path, line: int) -> str | Reject:
    value = record.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        state = "missing" if field not in record else "empty"
        return Reject(str(path), line, field, f"{state} field")
    return value


def _required_fields(record: dict, fields: tuple[str, ...], path: Path, line: int) -> list | Reject:
    """The values of `fields`, or the Reject of the first one missing or empty."""
    values = [_required(record, f, path, line) for f in fields]
    return next((v for v in values if isinstance(v, Reject)), values)


def records_with(
    records: Iterable[tuple[int, dict | Reject]],
    fields: tuple[str, ...],
    path: Path,
    check: Callable[[int, dict], Reject | None] = lambda line, rec: None,
) -> Iterator[tuple[int, dict, list] | Reject]:
    """(line, record, the values of `fields`) for each record that passes `check` (run first) and has every
    field, non-empty; the Reject naming the line and field for any other (and each unreadable record's own)."""
    for line, rec in records:
        values = (
            rec if isinstance(rec, Reject) else check(line, rec) or _required_fields(rec, fields, path, line)
        )
        yield values if isinstance(values, Reject) else (line, rec, values)


def read_gsm8k(path: Path, src: FileSource) -> Iterator[ItemRow | Reject]:
    for got in records_with(iter_json_records(path), ("question", "answer"), path):
        if isinstance(got, Reject):
            yield got
            continue
        line, rec, (question, answer) = got
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


def read_mmlu(path: Path, src: FileSource) -> Iterator[ItemRow | Reject]:
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
        if letter not in OPTION_LETTERS[: len(choices)]:
            yield Reject(str(path), line, "answer", f"letter {letter!r} is not among the choices A-D")
            continue
        if not question.strip():
            yield Reject(str(path), line, "question", "empty field")
            continue
        gold_text = normalize_text(choices[OPTION_LETTERS.index(letter)])
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


def read_truthfulqa(path: Path, src: FileSource) -> Iterator[ItemRow | Reject]:
    for got in records_with(iter_csv_records(path, header=True), ("Question", "Best Answer"), path):
        if isinstance(got, Reject):
            yield got
            continue
        line, rec, (question, best) = got
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


def read_medqa(path: Path, src: FileSource) -> Iterator[ItemRow | Reject]:
    for got in records_with(iter_json_records(path), ("question", "options", "answer_idx"), path):
        if isinstance(got, Reject):
            yield got
            continue
        line, rec, (question, options, idx) = got
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
        try:
            parquet = pq.ParquetFile(open_binary(path))
        except Exception as exc:
            raise IngestError(f"{path}: not a readable Parquet file ({exc})") from None
        row = 0
        for batch in parquet.iter_batches(batch_size=50_000):
            for record in batch.to_pylist():
                row += 1
                yield row, record


def read_generic(
    path: Path, src: FileSource, source_name: str | None = None, records: Iterator | None = None
) -> Iterator[ItemRow | Reject]:
    """jsonl / csv / parquet (or a plugin reader's `records`) through the source's column mapping; `line` is the
    row number for parquet."""
    seen_ids: dict[str, int] = {}
    name, where = source_name or path.stem, str(path)
    # the mapping, hoisted out of the loop, which runs once per record (a million times on large files)
    q_field, g_field, id_field = src.question_field, src.gold_field, src.id_field
    c_field, s_field = src.choices_field, src.solution_field
    domain, license = src.domain or "general", src.license or "unknown"
    max_chars = src.max_text_chars
    for line, rec in records if records is not None else _generic_records(path, src.format):
        if rec.__class__ is Reject:
            yield rec
            continue
        question, gold = rec.get(q_field), rec.get(g_field)
        if _blank(question) or _blank(gold):
            yield _required(rec, q_field if _blank(question) else g_field, where, line)
            continue
        bad = _text_problem(question, q_field, max_chars, numbers=False) or _text_problem(
            gold, g_field, max_chars
        )
        if bad:
            yield Reject(where, line, *bad)
            continue
        item_id = None
        if id_field:
            raw_id = rec.get(id_field)
            if _blank(raw_id):
                yield _required(rec, id_field, where, line)
                continue
            item_id = str(raw_id)
            if item_id in seen_ids:
                yield Reject(
                    where, line, id_field, f"duplicate id {item_id!r} (first at line {seen_ids[item_id]})"
                )
                continue
            seen_ids[item_id] = line
        choices = rec.get(c_field) if c_field else None
        if choices is not None and not isinstance(choices, list):
            yield Reject(where, line, c_field, f"expected a list of options, got {type(choices).__name__}")
            continue
        if choices and str(gold).strip().upper() not in OPTION_LETTERS[: len(choices)]:
            last = OPTION_LETTERS[len(choices) - 1]
            yield Reject(where, line, g_field, f"letter {gold!r} is not among the choices A-{last}")
            continue
        solution = rec.get(s_field) if s_field else None
        bad = _text_problem(solution, s_field, max_chars) if solution else None
        if bad:
            yield Reject(where, line, *bad)
            continue
        steps = sentences(str(solution)) if solution else None
        yield item_row(
            name,
            where,
            line,
            question,
            gold,
            steps=steps,
            choices=choices,
            item_id=item_id,
            domain=domain,
            license=license,
        )


# The built-in readers above yield items; they are registered as `judgeops.sources` entry points (pyproject.toml)
# like a plugin's reader, which yields plain records (dicts) that go through the source's column mapping.
BUILTIN_READERS = (read_gsm8k, read_mmlu, read_truthfulqa, read_medqa)


def read_file_source(src: FileSource) -> Iterator[ItemRow | Reject]:
    reader = None if src.format in GENERIC_FORMATS else plugins.load("sources", src.format)
    for path in expand_paths(src.path, src.format):
        if file_size(path) == 0:  # set aside with its reason; the other files go on (items.py stops a run
            yield Reject(str(path), 0, None, EMPTY_FILE)  # whose every source is empty)
            continue
        if reader is None:
            records = read_generic(path, src)
        elif reader in BUILTIN_READERS:
            records = reader(path, src)
        else:
            records = read_generic(path, src, records=_plugin_records(reader, path, src))
        yield from itertools.islice(records, src.limit) if src.limit else records


def _plugin_records(reader, path: Path, src: FileSource) -> Iterator[tuple[int, dict | Reject]]:
    """A plugin reader's records, numbered from 1; anything but a mapping is quarantined with the reason."""
    for line, record in enumerate(reader(path, src), 1):
        if isinstance(record, dict):
            yield line, record
        else:
            yield (
                line,
                Reject(
                    str(path),
                    line,
                    "record",
                    f"the {src.format} reader gave a {type(record).__name__}, not a mapping",
                ),
            )
