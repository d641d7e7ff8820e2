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
    figure(
        "CSV with one non-UTF-8 byte on row 2,500 of 5,000",
        "rows lost = 0; the bad row quarantined with its line and field",
        f"{len(result.items)} items + {len(result.quarantine)} quarantined, {lost} lost",
    )
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


KINDS = ("bad JSON", "missing field", "wrong type", "non-UTF-8", "duplicate id", "oversize text")


def _million_rows(path, n: int, bad_every: int) -> dict[str, int]:
    """n JSONL rows; every `bad_every`-th is malformed, cycling through KINDS. Returns how many of each."""
    made = dict.fromkeys(KINDS, 0)
    big = "x" * 60_000
    with open(path, "wb") as fh:
        for i in range(n):
            kind = KINDS[(i // bad_every) % len(KINDS)] if i % bad_every == bad_every - 1 else None
            if kind is None:
                line = b'{"id": "r%d", "question": "What is %d + 1?", "answer": "%d"}\n' % (i, i, i + 1)
            else:
                made[kind] += 1
                line = {
                    "bad JSON": b'{"id": "r%d", "question": "What is %d + 1?", "answer": \n' % (i, i),
                    "missing field": b'{"id": "r%d", "question": "What is %d + 1?"}\n' % (i, i),
                    "wrong type": b'{"id": "r%d", "question": {"text": "What is %d + 1?"}, "answer": "1"}\n'
                    % (i, i),
                    "non-UTF-8": b'{"id": "r%d", "question": "Caf\xe9 %d?", "answer": "1"}\n' % (i, i),
                    "duplicate id": b'{"id": "r0", "question": "Again %d?", "answer": "1"}\n' % i,
                    "oversize text": b'{"id": "r%d", "question": "%s %d?", "answer": "1"}\n'
                    % (i, big.encode(), i),
                }[kind]
            fh.write(line)
    return made


@pytest.mark.slow
def test_a_million_rows_with_one_percent_malformed_lose_nothing(tmp_path, figure):
    import time

    path = tmp_path / "big.jsonl"
    made = _million_rows(path, 1_000_000, 100)
    t0 = time.perf_counter()
    result = ingest_items([FileSource(path=str(path), id_field="id")])
    seconds = time.perf_counter() - t0
    q = result.quarantine
    accepted, quarantined = len(result.items), len(q)
    assert accepted + quarantined == 1_000_000  # rows in = rows accepted + rows quarantined
    assert quarantined == sum(made.values()) == 10_000
    assert q["quarantine_row"].notna().all() and q["quarantine_reason"].str.startswith(str(path)).all()
    rule = q["quarantine_rule"]
    by_kind = {
        "bad JSON": (rule == "ingest:record") & q["quarantine_reason"].str.contains("not valid JSON"),
        "missing field": (rule == "ingest:answer") & q["quarantine_reason"].str.contains("missing field"),
        "wrong type": (rule == "ingest:question")
        & q["quarantine_reason"].str.contains("expected text, got dict"),
        "non-UTF-8": q["quarantine_reason"].str.contains("not UTF-8"),
        "duplicate id": (rule == "ingest:id") & q["quarantine_reason"].str.contains("duplicate id 'r0'"),
        "oversize text": (rule == "ingest:question")
        & q["quarantine_reason"].str.contains("characters, over the"),
    }
    counts = {k: int(v.sum()) for k, v in by_kind.items()}
    assert counts == made, counts
    figure(
        "1,000,000-row JSONL source, 1 % malformed (bad JSON, missing field, wrong type, non-UTF-8, "
        "duplicate id, oversize text)",
        "rows in = accepted + quarantined; each with file, line, field, reason",
        f"{accepted:,} accepted + {quarantined:,} quarantined = 1,000,000 in {seconds:.0f} s; by kind "
        + ", ".join(f"{k} {v:,}" for k, v in counts.items()),
    )
