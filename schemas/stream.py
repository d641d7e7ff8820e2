"""Tables a stage reads by row group instead of whole (`Stage.streamed`): a `TableStream` gives a new pass
over the table's rows, one pandas frame per row group, each time it is iterated. Code that takes rows
accepts a DataFrame or a stream alike (`frames`), so tests and small runs pass frames and a 100k-pair
run keeps only the row groups in flight plus what the stage builds from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import chain

import numpy as np
import pandas as pd


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
