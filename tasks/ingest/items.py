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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from judgeops.config import SamplingConfig
from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.ingest.adapters import EMPTY_FILE, IngestError, Reject
from judgeops.tasks.ingest.pairwise import ingest_pairwise
from judgeops.tasks.ingest.responses import ingest_responses
from judgeops.tasks.ingest.sources import source_rows

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
    """At most `per_domain` items per domain, then at most `limit` in all; the kept rows stay in source order."""
    if sampling.per_domain is not None:
        kept = items.groupby("domain", group_keys=False, sort=True).apply(
            lambda g: g.sample(n=min(len(g), sampling.per_domain), random_state=sampling.seed)
        )
        items = items.loc[items.index.isin(kept.index)]
    if sampling.limit is not None and len(items) > sampling.limit:
        kept = items.sample(n=sampling.limit, random_state=sampling.seed)
        items = items.loc[items.index.isin(kept.index)]
    return items


def _set_aside(rows: pd.DataFrame, rule: str, reasons: list[str]) -> pd.DataFrame:
    """Item rows as quarantine rows: the line they were read from (their provenance), the rule and the reason."""
    line = rows["provenance"].str.extract(r":line (\d+)$")[0].astype("Int64")
    return rows.assign(quarantine_row=line, quarantine_rule=rule, quarantine_reason=reasons)


def ingest_items(
    sources: list, as_of: dt.date | None = None, sampling: SamplingConfig | None = None
) -> IngestResult:
    """All sources as one `items` table: normalised, deduplicated by normalised question, sampled."""
    rejects: list[Reject] = []
    frames, read = [], {}
    for source in sources:
        before = len(rejects)
        parts = list(_batches(source_rows(source, as_of), rejects))
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
    dupes = _set_aside(
        items.loc[duplicated],
        "ingest:duplicate",
        [
            f"{p}: duplicate of item {f} (same normalised question and choices); the first occurrence is kept"
            for p, f in zip(items.loc[duplicated, "provenance"], first_ids, strict=True)
        ],
    )
    if len(dupes):
        log.warning(
            "ingest: %d duplicates set aside, e.g. %s", len(dupes), dupes["quarantine_reason"].iloc[0]
        )
        items = items.loc[~duplicated]
    # another question under an id already taken (two sources' `id_field`s overlap): the first keeps the id
    taken = items["item_id"].duplicated(keep="first").to_numpy()
    if taken.any():
        first_at = items.drop_duplicates("item_id").set_index("item_id")["provenance"]
        clashes = items.loc[taken]
        clashes = _set_aside(
            clashes,
            "ingest:item_id",
            [
                f"{p}, field 'item_id': id {i!r} is already used by another question ({first_at[i]}); the first keeps it"
                for p, i in zip(clashes["provenance"], clashes["item_id"], strict=True)
            ],
        )
        log.warning(
            "ingest: %d items set aside for a taken id, e.g. %s",
            taken.sum(),
            clashes["quarantine_reason"].iloc[0],
        )
        dupes = pd.concat([dupes, clashes], ignore_index=True)
        items = items.loc[~taken]
    empty = [r for r in rejects if r.reason == EMPTY_FILE]
    if empty:
        if items.empty and len(empty) == len(rejects):  # nothing but empty files: nothing to evaluate
            raise IngestError(f"{empty[0].file}: the file is empty (and no other source has a record)")
        log.warning("ingest: %d empty source file(s) skipped, e.g. %s", len(empty), empty[0].file)
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


def ingest_all(
    sources: list,
    pairwise: list,
    responses: list,
    sampling: SamplingConfig,
    as_of: dt.date,
    log: Callable[[IngestResult], None] | None = None,
) -> dict[str, pd.DataFrame]:
    """The ingest stage's outputs: `items` and its quarantine, and the published pairwise sets and examinee
    outputs with theirs when configured. `log` hears the items' read counts."""
    result = ingest_items(sources, as_of, sampling)
    if log:
        log(result)
    out = {"items": result.items, "items__quarantine": result.quarantine}
    if pairwise:
        pairs, rejects = ingest_pairwise(pairwise)
        out |= {
            "external_pairs": pairs,
            "external_pairs__quarantine": reject_frame(rejects, "external_pairs"),
        }
    if responses:
        answers, rejects = ingest_responses(responses, result.items)
        out |= {"responses": answers, "responses__quarantine": reject_frame(rejects, "responses")}
    return out
