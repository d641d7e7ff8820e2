"""Ingest: sources → the `items` artifact (plus `items__quarantine`), streamed in batches.

`ingest_items(sources, as_of, sampling)` is the pure function; the Prefect task is in
`judgeops.tasks.stages`. Whole-file problems (a missing file, an unreadable container) raise
IngestError naming the file; a record that cannot become an item (bad JSON line, missing or empty
field, answer letter outside the choices, duplicate id) becomes a quarantine row naming file, line
and field; rows that parse but break the `items` contract are quarantined by the store.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from judgeops.config import BankSource, FileSource, InboxSource, SamplingConfig
from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.ingest.adapters import (
    IngestError,
    Reject,
    identity_digest,
    normalize_text,
    read_file_source,
    read_generic,
)
from judgeops.tasks.ingest.bank import GENERATORS, generate_bank, iter_bank
from judgeops.tasks.ingest.bank import LICENSE as BANK_LICENSE
from judgeops.tasks.ingest.pairwise import ingest_pairwise
from judgeops.tasks.ingest.responses import ingest_responses

__all__ = [
    "IngestError",
    "IngestResult",
    "ingest_items",
    "ingest_pairwise",
    "ingest_responses",
    "inbox_files",
    "normalize_text",
    "reject_frame",
    "summary_table",
]

log = logging.getLogger(__name__)

ITEMS_SCHEMA = schema_for("items").schema
ITEM_COLUMNS = ITEMS_SCHEMA.names
BATCH_ROWS = 20_000


@dataclass
class IngestResult:
    items: pd.DataFrame
    quarantine: pd.DataFrame
    duplicates: int = 0
    sampled_out: int = 0
    read_per_source: dict[str, int] = field(default_factory=dict)


def week_mix(drift, as_of: dt.date) -> tuple[int, dict[str, float]]:
    """(week index, domain → share) of a drifting bank source on `as_of`."""
    k = min(max((as_of - drift.start).days // 7, 0), drift.weeks - 1)
    t = k / (drift.weeks - 1)
    domains = sorted(set(drift.from_mix) | set(drift.to_mix))
    weights = {d: (1 - t) * drift.from_mix.get(d, 0.0) + t * drift.to_mix.get(d, 0.0) for d in domains}
    total = sum(weights.values())
    return k, {d: w / total for d, w in weights.items() if w > 0}


def drifting_bank(source: BankSource, as_of: dt.date) -> list[dict]:
    """This week's batch: `n_items` items split over domains by the week's mix (largest remainder)."""
    unknown = sorted((set(source.drift.from_mix) | set(source.drift.to_mix)) - set(GENERATORS))
    if unknown:
        raise IngestError(f"bank drift: unknown domains {unknown}; the bank has {sorted(GENERATORS)}")
    k, mix = week_mix(source.drift, as_of)
    exact = {d: source.n_items * share for d, share in mix.items()}
    counts = {d: int(v) for d, v in exact.items()}
    for d in sorted(exact, key=lambda d: exact[d] - counts[d], reverse=True)[
        : source.n_items - sum(counts.values())
    ]:
        counts[d] += 1
    out, need = [], dict(counts)
    for item in iter_bank(source.seed + k):
        if need.get(item["domain"], 0) > 0:
            need[item["domain"]] -= 1
            item["provenance"] += f":drift_week={k + 1}"
            out.append(item)
            if not any(need.values()):
                break
    return out


def bank_rows(source: BankSource, as_of: dt.date | None = None) -> Iterator[tuple]:
    batch = (
        drifting_bank(source, as_of or dt.date.today())
        if source.drift
        else generate_bank(source.n_items, source.seed)
    )
    for item in batch:
        steps = item["steps"]
        key = int.from_bytes(identity_digest(item["question"], []), "little", signed=True)
        yield (
            item["item_id"],
            "builtin_bank",
            item["domain"],
            item["question"],
            [],
            item["gold"],
            " ".join(steps),
            steps,
            item["conditions"],
            BANK_LICENSE,
            item["provenance"],
            key,
        )


def inbox_files(source: InboxSource, as_of: dt.date) -> list[Path]:
    """The jsonl files of the week ending at as_of: <root>/<YYYY-MM-DD>/*.jsonl with the date in (as_of - days, as_of]."""
    root = Path(source.root)
    if not root.is_dir():
        raise IngestError(f"{root}: inbox folder not found")
    first = as_of - dt.timedelta(days=source.days - 1)
    folders = []
    for child in sorted(root.iterdir()):
        try:
            day = dt.date.fromisoformat(child.name)
        except ValueError:
            continue
        if child.is_dir() and first <= day <= as_of:
            folders.append(child)
    if not folders:
        raise IngestError(
            f"{root}: no inbox folder dated {first} to {as_of} (expected {root}/<YYYY-MM-DD>/*.jsonl)"
        )
    return [path for folder in folders for path in sorted(folder.glob("*.jsonl"))]


def inbox_rows(source: InboxSource, as_of: dt.date) -> Iterator[tuple | Reject]:
    mapping = FileSource(
        path=source.root,
        format="jsonl",
        domain=source.domain,
        question_field=source.question_field,
        gold_field=source.gold_field,
        solution_field=source.solution_field,
        license=source.license,
    )
    for path in inbox_files(source, as_of):
        yield from read_generic(path, mapping, source_name=f"inbox:{path.parent.name}")


def _rows(source, as_of: dt.date) -> Iterator[tuple | Reject]:
    if isinstance(source, BankSource):
        return bank_rows(source, as_of)
    if isinstance(source, InboxSource):
        return inbox_rows(source, as_of)
    return read_file_source(source)


def reject_frame(rejects: list[Reject], artifact: str = "items") -> pd.DataFrame:
    """Rejected records as `<artifact>__quarantine` rows: provenance, the line, the rule and the reason."""
    columns = schema_for(artifact).schema.names
    return pd.DataFrame(
        {
            **{c: None for c in columns},
            "provenance": [f"{r.file}:line {r.line}" for r in rejects],
            "quarantine_row": [r.line for r in rejects],
            "quarantine_rule": [f"ingest:{r.field or 'record'}" for r in rejects],
            "quarantine_reason": [r.message() for r in rejects],
        },
        index=range(len(rejects)),
    )


def _batches(
    records: Iterable[tuple | Reject], rejects: list[Reject]
) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """Item rows as Arrow tables of BATCH_ROWS (with their identity keys): a large file never sits in
    memory as Python objects."""
    batch: list[tuple] = []
    for record in records:
        if isinstance(record, Reject):
            rejects.append(record)
            continue
        batch.append(record)
        if len(batch) == BATCH_ROWS:
            yield _to_table(batch)
            batch = []
    if batch:
        yield _to_table(batch)


def _to_table(rows: list[tuple]) -> tuple[pa.Table, np.ndarray]:
    *columns, keys = zip(*rows, strict=True)
    arrays = [pa.array(col, type=f.type) for col, f in zip(columns, ITEMS_SCHEMA, strict=True)]
    return pa.Table.from_arrays(arrays, schema=ITEMS_SCHEMA), np.fromiter(
        keys, dtype=np.int64, count=len(keys)
    )


def sample_per_domain(items: pd.DataFrame, sampling: SamplingConfig) -> pd.DataFrame:
    if sampling.per_domain is None:
        return items
    kept = items.groupby("domain", group_keys=False, sort=True).apply(
        lambda g: g.sample(n=min(len(g), sampling.per_domain), random_state=sampling.seed)
    )
    return items.loc[items.index.isin(kept.index)]


def ingest_items(
    sources: list, as_of: dt.date | None = None, sampling: SamplingConfig | None = None
) -> IngestResult:
    """All sources as one `items` table: normalised, deduplicated by normalised question, sampled."""
    as_of = as_of or dt.date.today()
    rejects: list[Reject] = []
    frames, read = [], {}
    for source in sources:
        before = len(rejects)
        parts = list(_batches(_rows(source, as_of), rejects))
        n = sum(t.num_rows for t, _ in parts)
        label = getattr(source, "path", None) or getattr(source, "root", None) or source.kind
        read[label] = n + len(rejects) - before
        frames.extend(parts)
    table = pa.concat_tables([t for t, _ in frames]) if frames else ITEMS_SCHEMA.empty_table()
    keys = np.concatenate([k for _, k in frames]) if frames else np.zeros(0, dtype=np.int64)
    del frames
    items = table.to_pandas(types_mapper=pd.ArrowDtype)  # zero-copy: the columns stay Arrow arrays
    del table
    # the same question with other options is another item (MMLU repeats stems such as "Which is true?"):
    # the key covers both; found on 8-byte keys, not on a million Python strings
    _, first_position, inverse = np.unique(keys, return_index=True, return_inverse=True)
    duplicated = np.ones(len(keys), dtype=bool)
    duplicated[first_position] = False
    first_ids = items["item_id"].iloc[first_position[inverse[duplicated]]].tolist()
    dupes = items.loc[duplicated].assign(
        quarantine_row=items.loc[duplicated, "provenance"].str.extract(r":line (\d+)$")[0].astype("Int64"),
        quarantine_rule="ingest:duplicate",
        quarantine_reason=[
            f"{p}: duplicate of item {f} (same normalised question and choices); the first occurrence is kept"
            for p, f in zip(items.loc[duplicated, "provenance"], first_ids, strict=True)
        ],
    )
    if len(dupes):
        log.warning(
            "ingest: %d duplicates set aside, e.g. %s", len(dupes), dupes["quarantine_reason"].iloc[0]
        )
        items = items.loc[~duplicated]
    sampled = sample_per_domain(items, sampling or SamplingConfig())
    if rejects:
        log.warning("ingest: %d records quarantined, e.g. %s", len(rejects), rejects[0].message())
    set_aside = [q for q in (reject_frame(rejects), dupes) if len(q)]
    quarantine = pd.concat(set_aside, ignore_index=True) if set_aside else reject_frame([])
    return IngestResult(
        items=sampled.reset_index(drop=True),
        quarantine=quarantine,
        duplicates=len(dupes),
        sampled_out=len(items) - len(sampled),
        read_per_source=read,
    )


def summary_table(items: pd.DataFrame, quarantine: pd.DataFrame | None) -> pd.DataFrame:
    """Items and quarantined rows per source × domain: together they account for every record read."""
    table = items.groupby(["source", "domain"]).size().rename("items").reset_index()
    table["quarantined"] = 0
    if quarantine is not None and len(quarantine):
        # a rejected record has no source yet: it is counted under its file
        files = quarantine["provenance"].fillna("").astype(str).str.replace(r":line \d+$", "", regex=True)
        counts = quarantine.assign(
            source=quarantine["source"].fillna(files), domain=quarantine["domain"].fillna("-")
        )
        counts = counts.groupby(["source", "domain"]).size().rename("quarantined").reset_index()
        table = table.drop(columns="quarantined").merge(counts, on=["source", "domain"], how="outer")
        table = table.fillna({"items": 0, "quarantined": 0}).astype({"items": int, "quarantined": int})
    return table.sort_values(["source", "domain"], ignore_index=True)
