"""Hostile inputs: every row read is either an item or a quarantine row naming file, line, field and reason."""

from __future__ import annotations

import csv

import pytest

from judgeops.config import FileSource
from judgeops.tasks.ingest import ingest_items


def _csv_rows(path, n: int, bad: dict[int, bytes]) -> None:
    """A headed CSV of n data rows (question, answer); the rows in `bad` (1-based) are written raw."""
    lines = [b"question,answer\n"]
    for i in range(1, n + 1):
        lines.append(bad.get(i, f'"What is {i} + {i}?",{2 * i}\n'.encode()))
    path.write_bytes(b"".join(lines))


def test_a_non_utf8_byte_in_a_csv_quarantines_that_row_only(tmp_path, figure):
    path = tmp_path / "qa.csv"
    _csv_rows(path, 5000, {2500: b'"What is caf\xe9 + 1?",3\n'})
    result = ingest_items([FileSource(path=str(path), format="csv")])
    lost = 5000 - len(result.items) - len(result.quarantine)
    figure("CSV with one non-UTF-8 byte on row 2,500 of 5,000", "rows lost = 0; the bad row quarantined "
           "with its line and field", f"{len(result.items)} items + {len(result.quarantine)} quarantined, "
           f"{lost} lost")  # fmt: skip
    assert len(result.items) == 4999 and len(result.quarantine) == 1 and lost == 0
    row = result.quarantine.iloc[0]
    assert row["quarantine_row"] == 2501 and row["quarantine_rule"] == "ingest:question"  # header: line 1
    assert row["quarantine_reason"] == f"{path}, line 2501, field 'question': not UTF-8 text (byte 0xe9)"


def test_a_small_csv_with_a_bad_byte_keeps_its_good_rows(tmp_path):
    path = tmp_path / "qa.csv"
    _csv_rows(path, 10, {3: b'"ok?",\xff\xfe\n'})
    result = ingest_items([FileSource(path=str(path), format="csv")])
    assert len(result.items) == 9 and len(result.quarantine) == 1
    row = result.quarantine.iloc[0]
    assert row["quarantine_rule"] == "ingest:answer" and row["quarantine_row"] == 4


def test_a_csv_field_over_the_size_limit_quarantines_its_row_and_reading_goes_on(tmp_path):
    path = tmp_path / "qa.csv"
    huge = b'"' + b"x" * (csv.field_size_limit() + 10) + b'",1\n'
    _csv_rows(path, 20, {5: huge})
    result = ingest_items([FileSource(path=str(path), format="csv")])
    assert len(result.items) + len(result.quarantine) == 20 and len(result.quarantine) == 1
    row = result.quarantine.iloc[0]
    assert row["quarantine_row"] == 6 and "field larger than field limit" in row["quarantine_reason"]


def test_a_source_with_no_usable_row_says_why_and_keeps_the_quarantine(tmp_path):
    from judgeops.data_contracts import ContractViolation
    from judgeops.schemas.store import ArtifactStore

    path = tmp_path / "qa.csv"
    _csv_rows(path, 3, {i: b'"caf\xe9?",1\n' for i in (1, 2, 3)})
    result = ingest_items([FileSource(path=str(path), format="csv")])
    store = ArtifactStore(str(tmp_path / "store"), "run-1")
    with pytest.raises(ContractViolation) as err:
        store.write("items", result.items, quarantine=result.quarantine)
    assert "observed 0" in str(err.value)
    assert (
        f"3 input rows were set aside to items__quarantine, e.g. {path}, line 2, field 'question': not UTF-8"
        in str(err.value)
    )
    assert store.read_pandas(store.ref("items__quarantine"))["quarantine_row"].tolist() == [2, 3, 4]
    assert not store.exists("items")
