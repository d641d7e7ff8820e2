import json

import pandas as pd
import pytest

from judgeops.data_contracts import ContractViolation, check_contract
from judgeops.schemas.store import ArtifactStore
from tests.test_store import items_frame


def verdicts_frame(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "call_id": [f"c{k}" for k in range(n)],
            "run_id": "r",
            "judge_id": "j",
            "protocol": "pairwise",
            "variant_id": [f"v{k}" for k in range(n)],
            "response_id": None,
            "verdict": "A",
            "p_first": 0.9,
            "rationale": "because",
            "latency_ms": 1.0,
            "tokens": None,
            "cached": False,
            "error": None,
            "n_samples": 1,
            "flip_rate": None,
            "p_first_sd": None,
            "n_calls": 1,
            "cache_hits": 0,
            "tokens_in": None,
            "tokens_out": None,
            "request_notes": None,
        }
    )


def test_a_probability_of_1_7_stops_with_a_readable_message(store_url):
    store = ArtifactStore(store_url, "run-a")
    bad = verdicts_frame()
    bad.loc[2, "p_first"] = 1.7
    with pytest.raises(ContractViolation) as info:
        store.write("verdicts", bad)
    message = str(info.value)
    assert "data contract of artifact 'verdicts' failed" in message
    assert "expect_column_values_to_be_between(column=p_first, min_value=0.0, max_value=1.0)" in message
    assert "1 of 4 rows unexpected" in message and "1.7" in message
    assert "c2" in message  # the example row is shown
    assert not store.exists("verdicts")
    result = json.loads(store.fs.cat_file(f"{store.root}/runs/run-a/verdicts.validation.json"))
    assert result["success"] is False


def test_referential_integrity_uses_the_parent_artifact():
    variants = pd.DataFrame({"variant_id": ["v0", "v1"]})
    outcome = check_contract("verdicts", verdicts_frame(3), related={"variants": variants})
    assert not outcome.passed
    (failure,) = outcome.stop_failures
    assert failure["expectation"] == "variant_id references variants.variant_id"
    assert failure["row_indices"] == [2]  # only the row whose variant is unknown, by position
    assert "1 of 3 rows unexpected" in failure["summary"]
    assert "variant_id not in variants.variant_id" in failure["summary"]
    assert check_contract("verdicts", verdicts_frame(2), related={"variants": variants}).passed


def test_duplicate_keys_stop():
    df = verdicts_frame(3)
    df.loc[2, "call_id"] = "c0"
    outcome = check_contract("verdicts", df)
    assert [f["expectation"] for f in outcome.stop_failures] == [
        "expect_column_values_to_be_unique(column=call_id)"
    ]


def test_row_level_defects_go_to_quarantine_with_the_reason(store_url):
    store = ArtifactStore(store_url, "run-a")
    df = items_frame(4)
    df.loc[1, "question"] = ""
    df.loc[3, "domain"] = "astrology"
    ref = store.write("items", df)
    assert ref.rows == 2
    q = store.read_pandas("items__quarantine")
    assert q["item_id"].tolist() == ["i1", "i3"]
    assert "column=question" in q.loc[0, "quarantine_reason"]
    assert "column=domain" in q.loc[1, "quarantine_reason"]
    assert q["quarantine_row"].tolist() == [1, 3]
    assert set(store.read_pandas("items")["item_id"]) == {"i0", "i2"}


def test_a_clean_artifact_passes_and_its_result_is_stored(store_url):
    store = ArtifactStore(store_url, "run-a")
    store.write("items", items_frame())
    result = json.loads(store.fs.cat_file(f"{store.root}/runs/run-a/items.validation.json"))
    assert result["success"] and result["quarantined_rows"] == 0
    assert result["statistics"]["evaluated_expectations"] >= 8
    assert not store.exists("items__quarantine")


def test_an_empty_table_stops():
    outcome = check_contract("verdicts", verdicts_frame(0))
    assert any("row_count" in f["expectation"] for f in outcome.stop_failures)


def test_chunked_validation_finds_the_same_rows_as_one_pass(monkeypatch):
    import judgeops.data_contracts.contract as contracts
    from tests.test_store import items_frame

    df = items_frame(23)
    df.loc[[2, 11, 20], "question"] = ""
    df.loc[17, "domain"] = "astrology"
    df.loc[22, "item_id"] = "i0"  # a duplicate key across chunks: a whole-table rule
    clean = df.drop(index=22)
    one_pass, one_pass_clean = check_contract("items", df), check_contract("items", clean)
    monkeypatch.setattr(contracts, "CHUNK_ROWS", 5)
    chunked, chunked_clean = check_contract("items", df), check_contract("items", clean)
    assert one_pass.validation == chunked.validation
    assert [f["row_indices"] for f in chunked.stop_failures] == [[0, 22]]
    assert chunked_clean.quarantined["item_id"].tolist() == ["i2", "i11", "i17", "i20"]
    pd.testing.assert_frame_equal(chunked_clean.quarantined, one_pass_clean.quarantined)


def test_two_flow_runs_in_one_process_build_the_contract_objects_once():
    """Threads validating one artifact at once share one GX asset (GX refuses a second of the same name)."""
    import threading
    import uuid

    import judgeops.data_contracts.contract as contract

    name = f"race-{uuid.uuid4().hex}"
    start, results, errors = threading.Barrier(8), [], []

    def build() -> None:
        start.wait()
        try:
            results.append(contract._batch_definition(name))
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=build) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 8 and all(r is results[0] for r in results)
