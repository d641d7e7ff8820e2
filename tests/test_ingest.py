import json

import pytest

from judgeops.config import BankSource, FileSource
from judgeops.tasks.ingest import IngestError, file_items, ingest_items
from judgeops.tasks.ingest.bank import GENERATORS, generate_bank
from tests.conftest import SHARED_DATA


def test_the_bank_is_deterministic_distinct_and_covers_six_domains():
    a, b = generate_bank(600, seed=3), generate_bank(600, seed=3)
    assert a == b
    assert len({i["question"] for i in a}) == 600 and len({i["item_id"] for i in a}) == 600
    assert {i["domain"] for i in a} == set(GENERATORS) and len(GENERATORS) >= 6
    assert generate_bank(50, seed=4) != generate_bank(50, seed=3)


def test_bank_items_carry_what_construction_needs():
    for item in generate_bank(120, seed=0):
        assert item["steps"][-1] == f"The answer is {item['gold']}."
        assert item["conditions"] and all(c in item["steps"] for c in item["conditions"])


def test_a_bad_json_line_names_file_and_line(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "q1", "answer": "1"}\n{"question": "q2", "answer": \n')
    with pytest.raises(IngestError, match=r"qa.jsonl, line 2: not valid JSON"):
        file_items(FileSource(path=str(path)))


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(IngestError, match=r"nope.jsonl: source file not found"):
        file_items(FileSource(path=str(tmp_path / "nope.jsonl")))


def test_non_utf8_is_named(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes('{"question": "caf\u00e9"}\n'.encode("latin-1"))
    with pytest.raises(IngestError, match=r"latin.jsonl: not UTF-8 text"):
        file_items(FileSource(path=str(path)))


def test_questions_are_normalised_and_deduplicated_across_sources(tmp_path):
    path = tmp_path / "qa.jsonl"
    rows = [{"question": "What  is\u00a02+2?", "answer": "4"}, {"question": "What is 2+2?", "answer": "4"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    items = ingest_items([FileSource(path=str(path)), BankSource(n_items=5)])
    assert len(items) == 6
    assert items.loc[0, "question"] == "What is 2+2?"


@pytest.mark.skipif(
    not (SHARED_DATA / "gsm8k" / "test.jsonl").exists(), reason="../shared/data/gsm8k is absent"
)
def test_gsm8k_keeps_the_worked_steps_and_the_final_answer():
    items = file_items(
        FileSource(path=str(SHARED_DATA / "gsm8k" / "test.jsonl"), format="gsm8k", domain="math", limit=20)
    )
    assert len(items) == 20
    first = items.iloc[0]
    assert first["gold"].replace(".", "").isdigit()
    assert first["steps"][-1] == f"The answer is {first['gold']}."
    assert "<<" not in first["worked_solution"]
    assert first["provenance"].endswith(":row 1")
