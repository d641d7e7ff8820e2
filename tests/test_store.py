import json

import fsspec
import pandas as pd
import pyarrow as pa
import pytest

from judgeops.schemas.artifacts import ARTIFACTS, schema_for
from judgeops.schemas.store import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactStore,
    SchemaMismatchError,
    StoreWriteError,
)


def items_frame(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item_id": [f"i{k}" for k in range(n)],
            "source": "test",
            "domain": "math",
            "question": [f"What is {k} + 1?" for k in range(n)],
            "choices": [[] for _ in range(n)],
            "gold": [str(k + 1) for k in range(n)],
            "worked_solution": "s",
            "steps": [["s"] for _ in range(n)],
            "conditions": [[] for _ in range(n)],
            "license": "MIT",
            "provenance": [f"test:{k}" for k in range(n)],
        }
    )


def test_every_artifact_has_a_versioned_schema_with_its_keys():
    for name in [
        "items",
        "pairs",
        "variants",
        "verdicts",
        "consensus",
        "profiles",
        "calibration",
        "responses",
    ]:
        spec = ARTIFACTS[name]
        assert spec.version >= 1
        assert all(k in spec.schema.names for k in spec.key)
    assert "quarantine_reason" in schema_for("items__quarantine").schema.names


def test_write_then_read_round_trips_with_a_full_manifest(store_url):
    store = ArtifactStore(store_url, "run-a")
    ref = store.write("items", items_frame(), params={"seed": 1})
    table = store.read("items")
    assert table.num_rows == 3 and table.schema.equals(ARTIFACTS["items"].schema, check_metadata=False)
    m = store.manifest("items")
    assert m["rows"] == 3 and m["sha256"] == ref.sha256 and len(ref.sha256) == 64
    assert m["schema_version"] == 1 and m["params"] == {"seed": 1}
    for key in ("parents", "code_version", "created_at", "path"):
        assert key in m
    assert store.fs.exists(f"{store.root}/runs/run-a/items.validation.json")


def test_parents_are_recorded_by_hash(store_url):
    store = ArtifactStore(store_url, "run-a")
    parent = store.write("items", items_frame())
    df = store.read_pandas("items")
    child = store.write("items", df, parents={"source_items": parent})
    assert store.manifest("items")["parents"] == {"source_items": parent.sha256}
    assert child.sha256 == parent.sha256  # same content, same bytes


def test_a_missing_column_is_named(store_url):
    store = ArtifactStore(store_url, "run-a")
    with pytest.raises(SchemaMismatchError, match=r"artifact 'items'.*missing columns \['gold'\]"):
        store.write("items", items_frame().drop(columns=["gold"]))


def test_a_wrong_type_is_named(store_url):
    store = ArtifactStore(store_url, "run-a")
    df = items_frame()
    df["choices"] = 5
    with pytest.raises(SchemaMismatchError, match=r"artifact 'items', column 'choices'"):
        store.write("items", df)


def test_a_corrupted_byte_fails_the_next_read_naming_the_artifact(store_url):
    store = ArtifactStore(store_url, "run-a")
    ref = store.write("items", items_frame())
    path = f"{store.root}/{ref.path}"
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    open(path, "wb").write(bytes(data))
    with pytest.raises(ArtifactIntegrityError, match=r"artifact 'items' at .*items.parquet is corrupted"):
        store.read("items")


def test_a_crash_mid_write_leaves_no_visible_artifact(store_url, monkeypatch):
    store = ArtifactStore(store_url, "run-a")

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store.fs, "mv", crash)
    with pytest.raises(StoreWriteError, match=r"cannot write 'items' to .*items.validation.json: disk full"):
        store.write("items", items_frame())
    monkeypatch.undo()
    assert not store.fs.glob(f"{store.root}/runs/run-a/*.tmp-*")  # the failed write removed its temp file
    assert not store.exists("items")
    assert not store.fs.exists(f"{store.root}/runs/run-a/items.parquet")
    with pytest.raises(ArtifactNotFoundError, match="artifact 'items' not found"):
        store.read("items")


def test_two_runs_never_write_the_same_path(store_url):
    a, b = ArtifactStore(store_url, "run-a"), ArtifactStore(store_url, "run-b")
    ra, rb = a.write("items", items_frame(2)), b.write("items", items_frame(3))
    assert ra.path != rb.path
    assert a.read("items").num_rows == 2 and b.read("items").num_rows == 3


def test_an_older_schema_version_is_refused(store_url):
    store = ArtifactStore(store_url, "run-a")
    store.write("items", items_frame())
    rel = "runs/run-a/items.manifest.json"
    m = json.loads(store.fs.cat_file(f"{store.root}/{rel}"))
    m["schema_version"] = 0
    store.fs.pipe_file(f"{store.root}/{rel}", json.dumps(m).encode())
    with pytest.raises(SchemaMismatchError, match="written with schema v0"):
        store.read("items")


def test_any_fsspec_url_works():
    url = "memory://judgeops-test-store"
    store = ArtifactStore(url, "run-m")
    store.write("items", items_frame())
    assert ArtifactStore(url, "run-m").read("items").num_rows == 3
    assert store.display_path("runs/run-m/items.parquet").startswith("memory://")
    fsspec.filesystem("memory").rm("/judgeops-test-store", recursive=True)


def test_stage_outputs_are_found_by_key_and_adopted_by_another_run(store_url):
    first = ArtifactStore(store_url, "run-a")
    refs = {"items": first.write("items", items_frame())}
    first.record_stage_outputs("ingest", "k1", refs)
    second = ArtifactStore(store_url, "run-b")
    assert second.find_stage_outputs("ingest", "other") is None
    found = second.find_stage_outputs("ingest", "k1")
    assert found["items"].run_id == "run-a"
    second.adopt(found)
    assert second.manifest("items")["reused_from"] == "run-a"
    assert second.read("items").num_rows == 3


def test_a_corrupted_artifact_is_never_reused_and_the_log_says_why(store_url, caplog):
    first = ArtifactStore(store_url, "run-a")
    ref = first.write("items", items_frame())
    first.record_stage_outputs("ingest", "k1", {"items": ref})
    with open(f"{first.root}/{ref.path}", "ab") as fh:
        fh.write(b"x")
    assert (
        ArtifactStore(store_url, "run-b").find_stage_outputs("ingest", "k1") is None
    )  # the stage recomputes
    assert (
        "not reusing the outputs of run run-a: artifact 'items' at" in caplog.text
        and "corrupted" in caplog.text
    )


def test_a_table_with_the_exact_schema_is_accepted(store_url):
    store = ArtifactStore(store_url, "run-a")
    table = pa.Table.from_pandas(items_frame(), schema=ARTIFACTS["items"].schema, preserve_index=False)
    assert store.write("items", table).rows == 3


def test_a_suspended_run_whose_flow_run_ended_without_resuming_is_marked_failed(store_url):
    """An evaluation suspended waiting for its audit's labels (flows/evaluate.py) stays `suspended` while its flow
    run waits; once the orchestrator says the flow run ended (the suspension timed out, or it was cancelled), the
    next sweep marks the store run failed and says why, so no run waits in the store forever."""
    from judgeops.schemas.store import RunObserver

    class Orchestrator(RunObserver):
        ended: dict = {}

        def suspensions_ended(self, records):
            return {r["run_id"]: self.ended[r["run_id"]] for r in records if r["run_id"] in self.ended}

    observer = Orchestrator()
    store = ArtifactStore(store_url, "2026-11-23_run", observer=observer)
    record = {
        "flow": "evaluate",
        "as_of": "2026-11-23",
        "status": "suspended",
        "prefect": {"flow_run_id": "f1"},
    }
    store.write_run_record(record)
    store.sweep_crashed()
    assert store.run_record()["status"] == "suspended"  # still waiting: left alone
    observer.ended["2026-11-23_run"] = "Failed"
    store.sweep_crashed()
    after = store.run_record()
    assert after["status"] == "failed" and "ended Failed without resuming" in after["error"]
