"""Tables a stage reads by row group instead of whole (`Stage.streamed`): a `TableStream` gives a new pass
over the table's rows, one pandas frame per row group, each time it is iterated. Code that takes rows
accepts a DataFrame or a stream alike (`frames`), so tests and small runs pass frames and a 100k-pair
run keeps only the row groups in flight plus what the stage builds from them. A stage may also return a
TableStream (the judge stage's shards): the store writes it by row group (`regrouped`, `RowGroupWriter`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@dataclass(frozen=True)
class TableStream:
    """Re-iterable row groups: `passes()` starts a new pass (re-reading the artifact)."""

    passes: Callable[[], Iterator[pd.DataFrame]]

    def __iter__(self) -> Iterator[pd.DataFrame]:
        return self.passes()

    def map(self, f: Callable[[pd.DataFrame], pd.DataFrame]) -> TableStream:
        """The same stream with `f` applied to each row group."""
        return TableStream(lambda: (f(frame) for frame in self.passes()))


Rows = pd.DataFrame | TableStream


def frames(rows: Rows) -> Iterator[pd.DataFrame]:
    """The frames of a table: itself, or its row groups."""
    return iter([rows]) if isinstance(rows, pd.DataFrame) else iter(rows)


def joined(*tables: Rows) -> TableStream:
    """The frames of several tables, one after the other, as one re-iterable stream."""
    return TableStream(lambda: chain.from_iterable(frames(t) for t in tables))


def gather(rows: Rows, keep: Callable[[pd.DataFrame], pd.Series], columns: list[str]) -> pd.DataFrame:
    """The rows `keep` selects (a boolean mask per frame), of `columns`, in one frame."""
    parts = [frame.loc[keep(frame).to_numpy(dtype=bool), columns] for frame in frames(rows)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def unite_codes(parts: list[pd.Series], sort: bool = False) -> tuple[np.ndarray, pd.Index]:
    """Codes of the concatenated `parts` over one set of categories (first seen, or sorted), −1 where a
    value is missing: each part is factorized as it is read, so no column of strings is concatenated."""
    factorized = [pd.factorize(part) for part in parts]
    seen = pd.unique(np.concatenate([np.asarray(u, dtype=object) for _, u in factorized] or [[]]))
    categories = pd.Index(sorted(seen) if sort else seen, dtype=object)
    codes = []
    for part_codes, uniques in factorized:
        remap = np.append(categories.get_indexer(np.asarray(uniques, dtype=object)), -1)  # −1 stays −1
        codes.append(remap[part_codes])
    return (np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64)), categories


def regrouped(rows: Rows, size: int) -> Iterator[pd.DataFrame]:
    """The rows of a table in frames of exactly `size` rows (the last one fewer), whatever frames it comes in."""

    def one(parts: list[pd.DataFrame]) -> pd.DataFrame:
        return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)

    pending: list[pd.DataFrame] = []
    count = 0
    for frame in frames(rows):
        if not len(frame):
            continue
        pending.append(frame)
        count += len(frame)
        while count >= size:
            whole = one(pending)
            yield whole.iloc[:size]
            rest = whole.iloc[size:]
            pending, count = ([rest] if len(rest) else []), len(rest)
    if count:
        yield one(pending)


class RowGroupWriter:
    """Arrow tables to a Parquet file in row groups of exactly `size` rows (the last one fewer), as
    `pq.write_table(whole, row_group_size=size)` cuts the whole table: the same bytes, whatever sizes the tables
    come in, with at most one row group's rows held here. `rows`: how many were written."""

    def __init__(self, path: str, schema: pa.Schema, size: int):
        self.path, self.schema, self.size = path, schema, size
        self.pending: list[pa.Table] = []
        self.rows = 0

    def __enter__(self) -> RowGroupWriter:
        self.writer = pq.ParquetWriter(self.path, self.schema)
        return self

    def write(self, table: pa.Table) -> None:
        self.pending.append(table.cast(self.schema))
        held = sum(t.num_rows for t in self.pending)
        while held >= self.size:
            whole = pa.concat_tables(self.pending).combine_chunks()
            self._put(whole.slice(0, self.size))
            self.pending, held = [whole.slice(self.size)], held - self.size

    def _put(self, table: pa.Table) -> None:
        self.writer.write_table(table.combine_chunks(), row_group_size=self.size)
        self.rows += table.num_rows

    def __exit__(self, kind, *rest) -> None:
        if kind is None and sum(t.num_rows for t in self.pending):
            self._put(pa.concat_tables(self.pending))
        self.writer.close()
