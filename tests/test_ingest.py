import datetime as dt
import gzip
import json

import pandas as pd
import pytest

from judgeops.config import (
    BankSource,
    FileSource,
    InboxSource,
    PairwiseSource,
    ResponsesSource,
    SamplingConfig,
)
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.ingest import (
    IngestError,
    ingest_items,
    ingest_pairwise,
    ingest_responses,
    reject_frame,
    summary_table,
)
from judgeops.tasks.ingest.bank import GENERATORS, generate_bank, iter_bank
from judgeops.tasks.ingest.pairwise import split_dialogue
from judgeops.tasks.ingest.responses import check_against_gold
from tests.conftest import SHARED_DATA

needs_data = pytest.mark.skipif(
    not SHARED_DATA.exists(), reason="../shared/data is absent (public data sets)"
)


def write_jsonl(path, rows, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")
    return path


def only_reason(result):
    (reason,) = result.quarantine["quarantine_reason"].tolist()
    return reason


# -- the built-in bank ------------------------------------------------------------------------


def test_the_bank_is_deterministic_distinct_and_covers_six_domains():
    a, b = generate_bank(600, seed=3), generate_bank(600, seed=3)
    assert a == b
    assert len({i["question"] for i in a}) == 600 and len({i["item_id"] for i in a}) == 600
    assert {i["domain"] for i in a} == set(GENERATORS) and len(GENERATORS) >= 6
    assert generate_bank(50, seed=4) != generate_bank(50, seed=3)


def test_the_bank_holds_more_than_5000_distinct_items():
    questions = [i["question"] for i in iter_bank(0)]
    assert len(questions) == len(set(questions)) >= 5000


def test_bank_items_carry_what_construction_needs():
    for item in generate_bank(120, seed=0):
        assert item["steps"][-1] == f"The answer is {item['gold']}."
        assert item["conditions"] and all(c in item["steps"] for c in item["conditions"])


# -- malformed input: each case names file, line and field -------------------------------------


def test_a_bad_json_line_is_quarantined_with_file_and_line(tmp_path):
    path = write_jsonl(
        tmp_path / "qa.jsonl", [{"question": "q1", "answer": "1"}], '{"question": "q2", "answer": \n'
    )
    result = ingest_items([FileSource(path=str(path))])
    assert len(result.items) == 1
    assert f"{path}, line 2: not valid JSON" in only_reason(result)


def test_a_truncated_last_line_is_named(tmp_path):
    path = write_jsonl(tmp_path / "qa.jsonl", [{"question": "q1", "answer": "1"}], '{"question": "q2", "ans')
    assert "truncated last line?" in only_reason(ingest_items([FileSource(path=str(path))]))


def test_a_non_utf8_line_is_quarantined(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(
        b'{"question": "ok", "answer": "1"}\n'
        + '{"question": "caf\u00e9", "answer": "2"}\n'.encode("latin-1")
    )
    result = ingest_items([FileSource(path=str(path))])
    assert len(result.items) == 1 and f"{path}, line 2: not UTF-8 text" in only_reason(result)


@pytest.mark.parametrize(
    "record, field, state",
    [
        ({"answer": "1"}, "question", "missing"),
        ({"question": "  ", "answer": "1"}, "question", "empty"),
        ({"question": "q"}, "answer", "missing"),
    ],
)
def test_a_missing_or_empty_field_is_named(tmp_path, record, field, state):
    path = write_jsonl(tmp_path / "qa.jsonl", [record])
    assert (
        only_reason(ingest_items([FileSource(path=str(path))]))
        == f"{path}, line 1, field '{field}': {state} field"
    )


def test_an_answer_letter_outside_the_choices_is_named(tmp_path):
    path = tmp_path / "x_test.csv"
    path.write_text('"What is 1+1?",1,2,3,4,B\n"What is 2+2?",1,2,3,4,F\n', encoding="utf-8")
    result = ingest_items([FileSource(path=str(path), format="mmlu")])
    assert len(result.items) == 1
    assert only_reason(result) == f"{path}, line 2, field 'answer': letter 'F' is not among the choices A-D"


def test_a_medqa_answer_idx_outside_the_options_is_named(tmp_path):
    good = {"question": "q1", "options": {"A": "x", "B": "y"}, "answer_idx": "B", "answer": "y"}
    bad = {"question": "q2", "options": {"A": "x", "B": "y"}, "answer_idx": "E", "answer": "y"}
    path = write_jsonl(tmp_path / "medqa.jsonl", [good, bad])
    result = ingest_items([FileSource(path=str(path), format="medqa")])
    assert result.items.loc[0, "gold"] == "B" and list(result.items.loc[0, "choices"]) == ["x", "y"]
    assert "line 2, field 'answer_idx': letter 'E' is not among the choices" in only_reason(result)


def test_a_duplicate_id_is_named(tmp_path):
    rows = [{"id": "a", "question": "q1", "answer": "1"}, {"id": "a", "question": "q2", "answer": "2"}]
    path = write_jsonl(tmp_path / "qa.jsonl", rows)
    result = ingest_items([FileSource(path=str(path), id_field="id")])
    assert only_reason(result) == f"{path}, line 2, field 'id': duplicate id 'a' (first at line 1)"


def test_a_missing_file_stops_with_its_name(tmp_path):
    with pytest.raises(IngestError, match=r"nope.jsonl: source file not found"):
        ingest_items([FileSource(path=str(tmp_path / "nope.jsonl"))])


def test_an_empty_file_stops_with_its_name(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(IngestError, match=r"empty.jsonl: the file is empty"):
        ingest_items([FileSource(path=str(tmp_path / "empty.jsonl"))])


def test_a_truncated_gzip_stops_with_its_name(tmp_path):
    data = gzip.compress(b'{"chosen": "x"}\n' * 1000)
    path = tmp_path / "pairs.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(IngestError, match=r"pairs.jsonl.gz: cannot be read to the end"):
        ingest_pairwise([PairwiseSource(format="hh_rlhf", path=str(path))])


def test_an_unknown_format_is_refused_by_the_config():
    from pydantic import ValidationError

    with pytest.raises(
        ValidationError, match=r"'xlsx' is not installed \(available: jsonl, csv, parquet, gsm8k"
    ):
        FileSource(path="x", format="xlsx")


def test_quarantined_rows_reach_the_store_with_their_reasons(tmp_path):
    path = write_jsonl(tmp_path / "qa.jsonl", [{"question": "q1", "answer": "1"}], "not json\n")
    result = ingest_items([FileSource(path=str(path))])
    store = ArtifactStore(str(tmp_path / "store"), "r")
    store.write("items", result.items, quarantine=result.quarantine)
    q = store.read_pandas("items__quarantine")
    assert q["quarantine_rule"].tolist() == ["ingest:record"] and q["provenance"].tolist() == [
        f"{path}:line 2"
    ]


# -- normalisation, deduplication, sampling, inbox ----------------------------------------------


def test_questions_are_normalised_and_duplicates_set_aside_with_the_reason(tmp_path):
    rows = [{"question": "What  is\u00a02+2?", "answer": "4"}, {"question": "What is 2+2?", "answer": "4"}]
    path = write_jsonl(tmp_path / "qa.jsonl", rows)
    result = ingest_items([FileSource(path=str(path)), BankSource(n_items=5)])
    assert len(result.items) == 6 and result.duplicates == 1
    assert result.items.loc[0, "question"] == "What is 2+2?"
    assert "duplicate of item" in only_reason(result)
    summary = summary_table(result.items, result.quarantine)
    assert summary["items"].sum() + summary["quarantined"].sum() == 7  # every record accounted for


def test_the_same_stem_with_other_choices_is_another_item(tmp_path):
    path = tmp_path / "s_test.csv"
    path.write_text('"Which is true?",a,b,c,d,A\n"Which is true?",e,f,g,h,B\n', encoding="utf-8")
    result = ingest_items([FileSource(path=str(path), format="mmlu")])
    assert len(result.items) == 2 and result.items["item_id"].is_unique


def test_sampling_per_domain_is_seeded():
    sources = [BankSource(n_items=120, seed=0)]
    a = ingest_items(sources, sampling=SamplingConfig(per_domain=5, seed=1)).items
    b = ingest_items(sources, sampling=SamplingConfig(per_domain=5, seed=1)).items
    c = ingest_items(sources, sampling=SamplingConfig(per_domain=5, seed=2)).items
    assert (a.groupby("domain").size() == 5).all() and len(a) == 30
    assert a["item_id"].tolist() == b["item_id"].tolist() != c["item_id"].tolist()


def test_the_inbox_reads_the_week_ending_at_as_of(tmp_path):
    for day, q in [
        ("2026-11-10", "old"),
        ("2026-11-17", "this week a"),
        ("2026-11-23", "this week b"),
        ("2026-11-24", "future"),
    ]:
        (tmp_path / day).mkdir()
        write_jsonl(tmp_path / day / "batch.jsonl", [{"question": q, "answer": "1"}])
    items = ingest_items([InboxSource(root=str(tmp_path))], as_of=dt.date(2026, 11, 23)).items
    assert sorted(items["question"]) == ["this week a", "this week b"]
    assert set(items["source"]) == {"inbox:2026-11-17", "inbox:2026-11-23"}
    with pytest.raises(IngestError, match="no inbox folder dated 2026-12-01 to 2026-12-07"):
        ingest_items([InboxSource(root=str(tmp_path))], as_of=dt.date(2026, 12, 7))


def test_large_files_stream_in_batches(tmp_path, monkeypatch):
    import judgeops.tasks.ingest.items as ingest_module

    monkeypatch.setattr(ingest_module, "BATCH_ROWS", 7)
    path = write_jsonl(tmp_path / "big.jsonl", [{"question": f"q{i}", "answer": str(i)} for i in range(50)])
    items = ingest_items([FileSource(path=str(path))]).items
    assert items["question"].tolist() == [f"q{i}" for i in range(50)]


# -- the real public data sets --------------------------------------------------------------------


@needs_data
def test_gsm8k_mmlu_truthfulqa_give_exact_counts():
    result = ingest_items(
        [
            FileSource(path=str(SHARED_DATA / "gsm8k" / "test.jsonl"), format="gsm8k"),
            FileSource(path=str(SHARED_DATA / "mmlu" / "*_test.csv"), format="mmlu"),
            FileSource(path=str(SHARED_DATA / "truthfulqa" / "TruthfulQA.csv"), format="truthfulqa"),
        ]
    )
    import csv

    mmlu = sum(
        sum(1 for _ in csv.reader(open(f, newline="", encoding="utf-8")))
        for f in (SHARED_DATA / "mmlu").glob("*_test.csv")
    )
    assert result.read_per_source[str(SHARED_DATA / "gsm8k" / "test.jsonl")] == 1319
    assert result.read_per_source[str(SHARED_DATA / "mmlu" / "*_test.csv")] == mmlu
    assert result.read_per_source[str(SHARED_DATA / "truthfulqa" / "TruthfulQA.csv")] == 817
    assert len(result.items) + len(result.quarantine) == 1319 + mmlu + 817
    items = result.items.set_index("source")
    assert set(items.loc["mmlu:professional_law", "domain"]) == {"legal"}
    assert set(items.loc["mmlu:logical_fallacies", "domain"]) == {"logic"}
    assert set(items.loc["mmlu:clinical_knowledge", "domain"]) == {"medical"}
    first = result.items[result.items["source"] == "gsm8k"].iloc[0]
    assert first["steps"][-1] == f"The answer is {first['gold']}." and "<<" not in first["worked_solution"]
    assert first["provenance"].endswith("test.jsonl:line 1") and first["license"] == "MIT"


@needs_data
def test_item_ids_are_stable_across_runs():
    source = FileSource(path=str(SHARED_DATA / "truthfulqa" / "TruthfulQA.csv"), format="truthfulqa")
    assert (
        ingest_items([source]).items["item_id"].tolist() == ingest_items([source]).items["item_id"].tolist()
    )


@needs_data
def test_llmbar_and_hh_rlhf_pairs():
    pairs, rejects = ingest_pairwise(
        [
            PairwiseSource(format="llmbar", path=str(SHARED_DATA / "llmbar" / "natural.json")),
            PairwiseSource(
                format="hh_rlhf", path=str(SHARED_DATA / "hh-rlhf" / "harmless-base_test.jsonl.gz"), limit=300
            ),
        ]
    )
    llmbar = pairs[pairs["source"] == "llmbar"]
    assert len(llmbar) == 100 and set(llmbar["gold"]) == {"1", "2"}
    raw = json.loads((SHARED_DATA / "llmbar" / "natural.json").read_text())
    assert llmbar["gold"].tolist() == [str(r["label"]) for r in raw]
    hh = pairs[pairs["source"] == "hh_rlhf"]
    assert len(hh) + len(rejects) == 300
    assert 0.35 < (hh["gold"] == "1").mean() < 0.65  # the chosen reply is not always first
    assert not hh["question"].str.contains("Assistant:$").any()


def test_judgebench_labels(tmp_path):
    rows = [
        {"question": "q", "response_A": "a", "response_B": "b", "label": "B>A"},
        {"question": "q2", "response_A": "a", "response_B": "b", "label": "A=B"},
    ]
    pairs, rejects = ingest_pairwise(
        [PairwiseSource(format="judgebench", path=str(write_jsonl(tmp_path / "jb.jsonl", rows)))]
    )
    assert pairs["gold"].tolist() == ["2"]
    assert rejects[0].message().endswith("line 2, field 'label': expected 'A>B' or 'B>A', got 'A=B'")
    assert reject_frame(rejects, "external_pairs")["quarantine_rule"].tolist() == ["ingest:label"]


def test_split_dialogue_keeps_the_shared_prompt():
    prompt, last = split_dialogue("\n\nHuman: hi\n\nAssistant: hello\n\nHuman: joke?\n\nAssistant: no.")
    assert prompt.endswith("Human: joke?") and last == "no."


# -- examinee outputs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, gold, choices, expected",
    [
        ("5 + 3 = 8, so the answer is 8.", "8", None, True),
        ("The total is 1,250 apples.", "1250", None, True),
        ("So the answer is 7.", "8", None, False),
        ("I think the answer is (C).", "C", ["a", "b", "c", "d"], True),
        ("B", "C", ["a", "b", "c", "d"], False),
        ("The answer is yes.", "yes", None, True),
        ("I cannot tell.", "yes", None, None),
    ],
)
def test_the_gold_checker(text, gold, choices, expected):
    assert check_against_gold(text, gold, choices) is expected


def test_responses_from_a_file_are_checked_against_gold(tmp_path):
    items = ingest_items([BankSource(n_items=6, seed=0)]).items
    math = items[items["domain"] == "math"].iloc[0]
    rows = [
        {"item_id": math["item_id"], "model": "m1", "output": f"So the answer is {math['gold']}."},
        {"item_id": math["item_id"], "model": "m2", "output": "The answer is 0."},
        {"item_id": "unknown-item", "model": "m1", "output": "The answer is 3."},
        {"item_id": math["item_id"], "model": "m3"},
    ]
    path = write_jsonl(tmp_path / "outputs.jsonl", rows)
    source = ResponsesSource(path=str(path), examinee_field="model", text_field="output")
    responses, rejects = ingest_responses([source], items)
    assert responses["is_correct"].tolist() == [True, False, None]
    assert responses["correct_by"].tolist() == ["gold_check", "gold_check", "unknown"]
    assert rejects[0].message() == f"{path}, line 4, field 'output': missing field"
    assert isinstance(responses, pd.DataFrame)


def test_generic_csv_and_parquet_through_the_column_mapping(tmp_path):
    frame = pd.DataFrame(
        {
            "prompt": ["What is 2 + 2?", "Pick the prime.", ""],
            "reference": ["4", "B", "x"],
            "explanation": ["Two plus two is four.", None, None],
            "options": [None, ["4", "5", "6"], None],
        }
    )
    frame.drop(columns="options").to_csv(tmp_path / "qa.csv", index=False)
    frame.to_parquet(tmp_path / "qa.parquet")
    mapping = {
        "question_field": "prompt",
        "gold_field": "reference",
        "solution_field": "explanation",
        "domain": "math",
    }
    from_csv = ingest_items([FileSource(path=str(tmp_path / "qa.csv"), format="csv", **mapping)])
    assert from_csv.items["question"].tolist() == ["What is 2 + 2?", "Pick the prime."]
    assert list(from_csv.items.loc[0, "steps"]) == ["Two plus two is four.", "The answer is 4."]
    assert only_reason(from_csv) == f"{tmp_path / 'qa.csv'}, line 4, field 'prompt': empty field"
    from_parquet = ingest_items(
        [FileSource(path=str(tmp_path / "qa.parquet"), format="parquet", choices_field="options", **mapping)]
    )
    assert (
        list(from_parquet.items.loc[1, "choices"]) == ["4", "5", "6"]
        and from_parquet.items.loc[1, "gold"] == "B"
    )
    assert only_reason(from_parquet).endswith("line 3, field 'prompt': empty field")


def test_the_ingest_fingerprint_covers_exactly_the_week_read(tmp_path):
    from judgeops.config import EvaluateConfig
    from judgeops.tasks.stages import source_fingerprint

    for day in ("2026-11-10", "2026-11-17", "2026-11-23"):
        (tmp_path / day).mkdir()
        write_jsonl(tmp_path / day / "batch.jsonl", [{"question": day, "answer": "1"}])
    config = EvaluateConfig(sources=[InboxSource(root=str(tmp_path))])
    week = source_fingerprint(config, dt.date(2026, 11, 23))
    assert sorted(week) == [str(tmp_path / d / "batch.jsonl") for d in ("2026-11-17", "2026-11-23")]
    write_jsonl(tmp_path / "2026-11-10" / "batch.jsonl", [{"question": "edited", "answer": "2"}])
    assert source_fingerprint(config, dt.date(2026, 11, 23)) == week  # an older week's edit changes nothing
    write_jsonl(tmp_path / "2026-11-23" / "batch.jsonl", [{"question": "edited", "answer": "2"}])
    assert source_fingerprint(config, dt.date(2026, 11, 23)) != week


def test_a_pairwise_record_with_an_empty_answer_names_the_field(tmp_path):
    jb = write_jsonl(
        tmp_path / "jb.jsonl", [{"question": "q", "response_A": "a", "response_B": " ", "label": "A>B"}]
    )
    llmbar = tmp_path / "llmbar.json"
    llmbar.write_text(json.dumps([{"input": "q", "output_1": "x", "label": 1}]))
    _, rejects = ingest_pairwise(
        [PairwiseSource(format="judgebench", path=str(jb)), PairwiseSource(format="llmbar", path=str(llmbar))]
    )
    assert [r.message() for r in rejects] == [
        f"{jb}, line 1, field 'response_B': empty field",
        f"{llmbar}, line 1, field 'output_2': missing field",
    ]


def test_a_drifting_bank_draws_a_fresh_weekly_batch_with_the_week_s_mix():
    import datetime as dt

    from judgeops.config import BankDrift
    from judgeops.tasks.ingest import IngestError

    drift = BankDrift(
        start=dt.date(2026, 11, 2),
        weeks=12,
        from_mix={"math": 0.85, "legal": 0.15},
        to_mix={"math": 0.15, "legal": 0.85},
    )
    source = BankSource(n_items=60, drift=drift)
    first = ingest_items([source], dt.date(2026, 11, 4)).items  # any day of week 1
    middle = ingest_items([source], dt.date(2026, 12, 14)).items  # week 7
    last = ingest_items([source], dt.date(2027, 3, 1)).items  # after the last week: its mix holds
    assert first["domain"].value_counts().to_dict() == {"math": 51, "legal": 9}
    assert middle["domain"].value_counts().to_dict() == {"legal": 32, "math": 28}  # 0.85 − 0.7 × 6/11
    assert last["domain"].value_counts().to_dict() == {"legal": 51, "math": 9}
    shared = set(first["item_id"]) & set(middle["item_id"])
    assert len(shared) < len(middle) / 2  # a fresh batch each week (another seed), not the same items
    assert first["provenance"].str.endswith(":drift_week=1").all()
    bad = BankSource(n_items=10, drift=drift.model_copy(update={"to_mix": {"astrology": 1.0}}))
    with pytest.raises(IngestError, match=r"unknown domains \['astrology'\]"):
        ingest_items([bad], dt.date(2026, 11, 4))
