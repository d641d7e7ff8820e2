"""An artifact written from a stream of frames (the judge stage's shards) row group by row group: the same bytes,
hash, quarantine and contract decisions as the whole table written at once, with one row group held at a time."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from judgeops.data_contracts import ContractViolation
from judgeops.schemas import store as store_module
from judgeops.schemas.store import ArtifactStore
from judgeops.schemas.stream import TableStream
from tests.test_contracts import verdicts_frame
from tests.test_store import items_frame

SIZES = (7, 333, 1, 90, 250, 19)  # uneven frames, none a row group's size


@pytest.fixture(autouse=True)
def small_row_groups(monkeypatch):
    monkeypatch.setattr(store_module, "ROW_GROUP", 100)


def in_frames(df: pd.DataFrame) -> TableStream:
    cuts, start = [], 0
    while start < len(df):
        size = SIZES[len(cuts) % len(SIZES)]
        cuts.append((start, start + size))
        start += size
    return TableStream(lambda: (df.iloc[a:b] for a, b in cuts))


def test_a_stream_is_written_to_the_same_bytes_as_the_whole_table(store_url):
    verdicts = verdicts_frame(1_050)
    verdicts.loc[::3, "p_first"] = None  # nulls in some frames only
    verdicts.loc[5, "rationale"] = "é" * 500
    whole, streamed = ArtifactStore(store_url, "whole"), ArtifactStore(store_url, "streamed")
    a = whole.write("verdicts", verdicts)
    b = streamed.write("verdicts", in_frames(verdicts))
    assert (a.sha256, a.rows) == (b.sha256, b.rows) and b.rows == 1_050
    assert whole.fs.cat_file(whole._abs(a.path)) == streamed.fs.cat_file(streamed._abs(b.path))
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(streamed.fs.open(streamed._abs(b.path))).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [100] * 10 + [50]
    checked = json.loads(streamed.fs.cat_file(f"{streamed.root}/runs/streamed/verdicts.validation.json"))
    assert checked["success"] and checked["rows"] == 1_050 and checked["parts"] == 11


def test_quarantined_rows_are_numbered_in_the_whole_artifact(store_url):
    items = items_frame(420)
    items.loc[[3, 150, 333], "question"] = ""  # a quarantine rule, in three different row groups
    whole, streamed = ArtifactStore(store_url, "whole"), ArtifactStore(store_url, "streamed")
    a, b = whole.write("items", items), streamed.write("items", in_frames(items))
    assert a.sha256 == b.sha256 and b.rows == 417
    kept = [s.read_pandas("items__quarantine") for s in (whole, streamed)]
    pd.testing.assert_frame_equal(kept[0], kept[1])
    assert list(kept[1]["quarantine_row"]) == [3, 150, 333]
    assert kept[1]["quarantine_reason"].str.startswith(("row 3 of items", "row 150 of", "row 333 of")).all()


def test_a_stop_rule_broken_in_a_later_row_group_writes_nothing(store_url):
    bad = verdicts_frame(500)
    bad.loc[321, "p_first"] = 1.7
    store = ArtifactStore(store_url, "r")
    with pytest.raises(ContractViolation) as info:
        store.write("verdicts", in_frames(bad))
    assert "1 of 100 rows (rows 300–399) unexpected" in str(info.value) and "c321" in str(info.value)
    assert not store.exists("verdicts")


def test_a_key_repeated_across_row_groups_stops_the_write(store_url):
    twice = verdicts_frame(300)
    twice.loc[250, "call_id"] = "c12"  # unique within each row group of 100
    store = ArtifactStore(store_url, "r")
    with pytest.raises(ContractViolation, match="1 rows repeat a key of an earlier row"):
        store.write("verdicts", in_frames(twice))
    assert not store.exists("verdicts")
    with pytest.raises(ContractViolation, match="call_id"):  # the whole table says the same
        ArtifactStore(store_url, "w").write("verdicts", twice)


def test_an_empty_stream_breaks_the_contract_as_an_empty_table_does(store_url):
    with pytest.raises(ContractViolation, match="row_count"):
        ArtifactStore(store_url, "r").write("verdicts", TableStream(lambda: iter([])))
