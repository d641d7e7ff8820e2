import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgeops.config import BankSource, ConstructionConfig, GateConfig
from judgeops.schemas.artifacts import ERROR_TYPES
from judgeops.tasks.construct import build_variants, construct, subtlety_gate
from judgeops.tasks.construct.operators import OPERATORS, NotApplicable, Site
from judgeops.tasks.construct.presentation import padded, padding_for, polished, sentences
from judgeops.tasks.ingest import ingest_items
from tests.conftest import SHARED_DATA

ANSWER = (
    "Each day the bakery sells 12 × 4 = 48 rolls. Over 10 days it sells 48 × 10 = 480 rolls. "
    "This assumes the bakery sells the same 12 boxes on every one of the 10 days. "
    "Since 10 days is more than one day, the total of 480 is larger than one day's 48. "
    "Real daily sales usually vary a little around this planned figure. The answer is 480."
)
CONDITION = "This assumes the bakery sells the same 12 boxes on every one of the 10 days."
QUESTION = (
    "A bakery sells 12 boxes of rolls each day, and every box holds 4 rolls. How many rolls in 10 days?"
)


@pytest.fixture(scope="module")
def built():
    items = ingest_items([BankSource(n_items=200, seed=2)]).items
    return items, construct(items, ConstructionConfig(seed=2))


def plant(kind, seed=0):
    return OPERATORS[kind](Site(ANSWER, "480", QUESTION, [CONDITION], np.random.default_rng(seed)))


def test_fabrication_changes_the_final_answer_consistently():
    edit = plant("factual_fabrication")
    flawed = edit.apply(ANSWER)
    new_value = edit.note.rsplit(" ", 1)[-1]
    assert edit.note.startswith("the final answer 480 was replaced")
    assert "480" not in flawed and flawed.count(new_value) == ANSWER.count("480") == 3
    assert abs(int(new_value) - 480) <= 0.25 * 480


def test_reversal_swaps_one_relation():
    edit = plant("logical_reversal", seed=1)
    assert (edit.before, edit.after) in {("more than", "less than"), ("larger", "smaller")}
    assert len(edit.apply(ANSWER)) - len(ANSWER) == len(edit.after) - len(edit.before)


def test_overclaim_widens_a_hedge():
    edit = plant("overclaim")
    assert (edit.before, edit.after) == ("usually", "always")


def test_omission_removes_the_condition_sentence():
    edit = plant("critical_omission")
    assert edit.after == "" and CONDITION in edit.before
    assert edit.apply(ANSWER) == ANSWER.replace(CONDITION + " ", "")


def test_an_operator_that_cannot_apply_says_why():
    with pytest.raises(NotApplicable, match="no number"):
        OPERATORS["factual_fabrication"](
            Site("The argument is valid. The answer is yes.", "yes", "q", [], np.random.default_rng(0))
        )


def test_every_pair_is_a_recorded_single_edit(built):
    _, out = built
    for p in out["pairs"].itertuples():
        a, b = p.answer_correct, p.answer_flawed
        assert a != b
        assert a[p.edit_start : p.edit_end] == p.edit_before
        assert a[: p.edit_start] + p.edit_after + a[p.edit_end :] == b


def test_types_are_balanced_and_every_attempt_is_logged(built):
    items, out = built
    counts = out["pairs"]["error_type"].value_counts()
    assert set(counts.index) == set(ERROR_TYPES)
    assert counts.max() - counts.min() <= 0.2 * len(out["pairs"]) / 4 + 2
    log = out["construction_log"]
    assert set(log["status"]) <= {"accepted", "skipped", "rejected"}
    assert (log["status"] == "accepted").sum() == len(out["pairs"])
    assert set(out["pairs"]["item_id"]) <= set(items["item_id"])


def test_six_variants_per_pair_with_gold_positions(built):
    _, out = built
    v = out["variants"]
    assert len(v) == 6 * len(out["pairs"])
    assert (v.groupby("pair_id").size() == 6).all()
    assert ((v["order"] == "AB") == (v["gold_position"] == "A")).all()


def test_construction_is_deterministic(built):
    items, out = built
    again = construct(items, ConstructionConfig(seed=2))
    for name in out:
        pd.testing.assert_frame_equal(out[name], again[name])


def test_the_gate_rejects_trivial_edits():
    gate = GateConfig()
    assert subtlety_gate(ANSWER, ANSWER, gate)[0] is False
    assert "length ratio" in subtlety_gate(ANSWER, ANSWER[:100], gate)[1]
    assert "tell-tale" in subtlety_gate(ANSWER, ANSWER.replace("usually", "(wrong) usually"), gate)[1]
    assert subtlety_gate(ANSWER, ANSWER.replace("usually", "always"), gate)[0] is True


_sentence = st.from_regex(r"[A-Z][a-z]{1,8}( [a-z0-9]{1,8}){1,8}\.", fullmatch=True)


@given(st.lists(_sentence, min_size=2, max_size=8), st.integers(0, 2**32))
def test_presentation_never_changes_the_answer_s_sentences(parts, seed):
    text = " ".join(parts)
    shown = polished(text)
    assert all(s in shown for s in sentences(text))
    prefix, suffix = padding_for(len(text), seed)
    assert text in padded(text, prefix, suffix)
    assert len(padded(text, prefix, suffix)) >= 1.8 * len(text) or len(text) > 500


@given(st.lists(_sentence, min_size=2, max_size=5), st.lists(_sentence, min_size=2, max_size=5))
def test_swapping_order_flips_the_gold_position_and_nothing_else(a_parts, b_parts):
    pair = pd.DataFrame(
        [{"pair_id": "p", "answer_correct": " ".join(a_parts), "answer_flawed": " ".join(b_parts)}]
    )
    v = build_variants(pair, ConstructionConfig()).set_index(["presentation", "order"])
    for presentation in ("plain", "polished", "padded"):
        ab, ba = v.loc[(presentation, "AB")], v.loc[(presentation, "BA")]
        assert (ab.text_a, ab.text_b) == (ba.text_b, ba.text_a)
        assert (ab.gold_position, ba.gold_position) == ("A", "B")


def test_the_verifier_accepts_every_constructed_pair(built):
    from judgeops.data_contracts.pair_verifier import pair_problems

    _, out = built
    problems = pair_problems(out["pairs"])
    assert (problems == "").all(), problems[problems != ""].head().tolist()


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"answer_flawed": "something else entirely"}, "applying the recorded edit to A does not give B"),
        ({"edit_start": 3}, "does not hold the recorded text"),
        ({"error_type": "logical_reversal"}, "is not a known reversal pair"),
        ({"error_type": "critical_omission"}, "B must be A minus the recorded span"),
        ({"error_type": "factual_fabrication"}, "no number or fact token changed"),
    ],
)
def test_the_verifier_contract_stops_a_wrong_pair(built, change, expected):
    from judgeops.data_contracts import ContractViolation, check_contract

    items, out = built
    pairs = out["pairs"][out["pairs"]["error_type"] == "overclaim"].head(3).copy()
    for column, value in change.items():
        pairs.iloc[1, pairs.columns.get_loc(column)] = value
    outcome = check_contract("pairs", pairs, related={"items": items})
    with pytest.raises(
        ContractViolation, match=r"(?s)verify_pair\(recorded edit, error type\): 1 of 3 rows.*" + expected
    ):
        outcome.raise_if_stopped()


def test_the_same_items_config_and_seed_give_byte_identical_artifacts(built, tmp_path):
    from judgeops.schemas.store import ArtifactStore

    items, out = built
    again = construct(items, ConstructionConfig(seed=2))
    first, second = ArtifactStore(str(tmp_path), "a"), ArtifactStore(str(tmp_path), "b")
    first.write("items", items)
    second.write("items", items)
    for name in ("pairs", "variants", "construction_log"):
        related = {"items": items, "pairs": out["pairs"]}
        assert (
            first.write(name, out[name], related=related).sha256
            == second.write(name, again[name], related=related).sha256
        )


def test_qc_flags_mark_fallbacks_and_final_answer_only_edits(built):
    from judgeops.tasks.construct import qc_flags
    from judgeops.tasks.construct.operators import Edit

    closing = ANSWER.rindex("The answer is")
    assert qc_flags(ANSWER, Edit(closing + 14, closing + 17, "480", "470", ""), fallback=False) == [
        "final_answer_only"
    ]
    assert qc_flags(ANSWER, Edit(0, 4, "Each", "Each", ""), fallback=True) == ["type_fallback"]
    _, out = built
    flags = out["pairs"]["qc_flags"].map(list)
    assert flags.map(lambda f: "final_answer_only" in f).any()


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent (public data sets)")
def test_bank_plus_public_data_give_2000_balanced_verified_pairs():
    from judgeops.config import FileSource
    from judgeops.data_contracts.pair_verifier import pair_problems

    d = SHARED_DATA
    items = ingest_items(
        [
            BankSource(n_items=1000),
            FileSource(path=str(d / "gsm8k" / "test.jsonl"), format="gsm8k", limit=400),
            FileSource(path=str(d / "mmlu" / "*_test.csv"), format="mmlu", limit=80),
            FileSource(path=str(d / "truthfulqa" / "TruthfulQA.csv"), format="truthfulqa", limit=300),
        ]
    ).items
    pairs = construct(items, ConstructionConfig())["pairs"]
    assert len(pairs) >= 2000
    shares = pairs["error_type"].value_counts(normalize=True)
    assert (
        set(shares.index) == set(ERROR_TYPES) and (shares - 0.25).abs().max() <= 0.025
    )  # within ±10% of a quarter
    assert set(pairs["domain"]) == {"math", "science", "logic", "legal", "medical", "general"}
    sources = pairs["item_id"].astype(str).str.extract(r"^(bank|gsm8k|mmlu|truthfulqa)")[0]
    assert set(sources) == {"bank", "gsm8k", "mmlu", "truthfulqa"}
    assert (pair_problems(pairs) == "").all()


def test_a_multiple_choice_fabrication_claims_a_distractor_consistently():
    item = pd.Series(
        {
            "item_id": "m1",
            "question": "Which is a prime?",
            "gold": "B",
            "choices": ["4", "7", "9", "12"],
            "steps": ["The correct option is B: 7.", "The answer is B."],
            "conditions": [],
        }
    )
    from judgeops.tasks.construct import expand_answer, plant

    answer, conditions = expand_answer(item)
    assert answer.startswith("Option B says: 7.") and answer.endswith("The answer is B.")
    edit = plant(item, answer, conditions, "factual_fabrication", seed=3)
    flawed = edit.apply(answer)
    letter = edit.note.split("option ")[1][0]
    assert (
        letter != "B" and f"Option {letter} says:" in flawed and flawed.endswith(f"The answer is {letter}.")
    )
    assert "Option B" not in flawed


def test_hard_constructed_edits_are_subtler():
    fabricated = OPERATORS["factual_fabrication"](
        Site(ANSWER, "480", QUESTION, [CONDITION], np.random.default_rng(0), subtle=True)
    )
    change = abs(int(fabricated.after) - int(fabricated.before))
    assert 0 < change <= max(1, round(0.05 * int(fabricated.before)))  # 2-5% (one unit at least)
    assert ANSWER.index(". ") < fabricated.start < ANSWER.rindex("The answer is")  # a middle step
    widened = OPERATORS["overclaim"](
        Site(ANSWER, "480", QUESTION, [CONDITION], np.random.default_rng(0), subtle=True)
    )
    assert (widened.before, widened.after) == ("usually", "almost always")
    caveat = "This assumes normal kidney function; weak kidneys need a lower dose."
    answer = f"The dose is 50 mg. {caveat} The answer is 50 mg."
    dropped = OPERATORS["critical_omission"](
        Site(answer, "50 mg", "q", [caveat], np.random.default_rng(0), subtle=True)
    )
    assert (
        dropped.before == "; weak kidneys need a lower dose"
        and "This assumes normal kidney function." in dropped.apply(answer)
    )


def test_the_hard_branch_is_independent_balanced_and_verified():
    from judgeops.data_contracts.pair_verifier import pair_problems

    items = ingest_items([BankSource(n_items=120, seed=4)]).items
    out = construct(items, ConstructionConfig(hard_constructed=True))
    pairs = out["pairs"]
    hard = pairs[pairs["pair_id"].str.endswith(":hard")]
    assert len(hard) == len(pairs) - len(hard) == 120
    assert hard["qc_flags"].map(lambda f: "hard_constructed" in f).all() and set(hard["generator"]) == {
        "rules-v1-hard"
    }
    assert hard["error_type"].value_counts().max() - hard["error_type"].value_counts().min() <= 1
    assert (pair_problems(pairs) == "").all()
    assert set(out["construction_log"]["branch"]) == {"standard", "hard"}


def test_a_math_fabrication_must_reach_the_final_answer_except_in_the_hard_branch():
    from judgeops.data_contracts.pair_verifier import verify_pair

    a = "Each day it sells 12 × 4 = 48 rolls. The answer is 480."
    start = a.index("48 rolls")
    b = a[:start] + "46" + a[start + 2 :]
    assert verify_pair(a, b, start, start + 2, "48", "46", "factual_fabrication", "math") == [
        "factual_fabrication (math): the final answer did not change"
    ]
    assert verify_pair(a, b, start, start + 2, "48", "46", "factual_fabrication", "math", hard=True) == []
    assert verify_pair(a, b, start, start + 2, "48", "46", "factual_fabrication", "science") == []
