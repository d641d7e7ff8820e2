import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgeops.config import BankSource, ConstructionConfig, EvaluateConfig, JudgeConfig
from judgeops.schemas.vocabulary import to_canonical
from judgeops.tasks.construct import construct
from judgeops.tasks.ingest import ingest_items
from judgeops.tasks.judges import coverage, judge_variants
from judgeops.tasks.judges.programmatic import (
    PROGRAMMATIC_JUDGES,
    consistency_errors,
    hedge_preference,
    judge_unit,
    length_preference,
    numeric_consistency,
    reference_match,
)
from judgeops.tasks.judges.protocols import Unit

RIGHT = "Each day it sells 12 × 4 = 48 rolls. Since 10 is more than 1, fine. The answer is 480."
WRONG = "Each day it sells 12 × 4 = 46 rolls. Since 10 is less than 1, fine. The answer is 470."


def test_reference_match_reads_the_final_claim():
    assert reference_match("q", RIGHT, WRONG, "480").verdict == "A"
    assert reference_match("q", WRONG, RIGHT, "480").verdict == "B"
    assert reference_match("q", "**The answer is $480.**", "The answer is $470.", "$480").verdict == "A"
    tie = reference_match("q", RIGHT, RIGHT, "480")
    assert tie.verdict == "A" and "defaulting to the first" in tie.rationale


def test_numeric_consistency_checks_arithmetic_and_comparisons():
    assert consistency_errors(RIGHT) == []
    assert len(consistency_errors(WRONG)) == 2
    assert consistency_errors("Since 38.6 °C is below the 38.5 °C threshold") == [
        "'38.6 below 38.5' is false"
    ]
    assert consistency_errors("Ana has lived there 2 years, which meets the minimum of 3 years.") != []
    assert numeric_consistency("q", WRONG, RIGHT, "").verdict == "B"
    assert numeric_consistency("q", RIGHT, RIGHT, "").verdict == "tie"


def test_length_and_hedge_judges_have_their_documented_biases():
    assert length_preference("q", "short.", "a much longer answer.", "").verdict == "B"
    assert hedge_preference("q", "It always works.", "It usually works.", "").verdict == "B"
    assert hedge_preference("q", "Same.", "Same.", "").verdict == "A"


_text = st.text(
    alphabet=st.sampled_from(list("abc 0123456789×=.usuallyalwaysmore than")), min_size=1, max_size=80
)


@settings(max_examples=200)
@given(_text, _text, st.sampled_from(sorted(PROGRAMMATIC_JUDGES)))
def test_candidate_symmetry_whenever_a_judge_decides_on_content(a, b, name):
    judge = PROGRAMMATIC_JUDGES[name]
    forward, backward = judge("q", a, b, "480"), judge("q", b, a, "480")
    if "defaulting to the first" in forward.rationale or "defaulting to the first" in backward.rationale:
        return  # the documented position fallback, measured by C7, not hidden
    assert {forward.verdict, backward.verdict} in ({"A", "B"}, {"tie"})
    assert abs(forward.p_first - (1 - backward.p_first)) < 1e-9


def test_the_panel_runs_on_every_variant_and_coverage_is_honest():
    items = ingest_items([BankSource(n_items=24, seed=5)]).items
    built = construct(items, ConstructionConfig())
    judges = [j for j in EvaluateConfig().judges if j.backend == "programmatic"]
    seen = []
    verdicts = judge_variants(
        built["variants"],
        built["pairs"],
        items,
        judges,
        "r",
        batch_size=50,
        progress=lambda done, total, errors, hits: seen.append(done),
    )
    assert len(verdicts) == len(built["variants"]) * len(judges) and seen[-1] == len(verdicts)
    assert verdicts["call_id"].is_unique
    # a judge that crashes on a call, plus a lost row: both counted against coverage
    broken = verdicts.copy()
    broken.loc[0, ["verdict", "p_first", "error"]] = [None, None, "RuntimeError: boom"]
    broken = broken.drop(index=1)
    cov = coverage(broken, built["variants"], judges).set_index("judge_id")
    first = verdicts.loc[0, "judge_id"]
    n = len(built["variants"])
    assert cov.loc[first, "n_expected"] == n
    assert cov.loc[first, "n_error"] == 2
    assert cov.loc[first, "n_answered"] + cov.loc[first, "n_tie"] + cov.loc[first, "n_error"] == n


def test_to_canonical_is_the_one_mapping_to_the_correct_answer_frame():
    variants = pd.DataFrame(
        {
            "variant_id": ["v1", "v2"],
            "pair_id": "p",
            "presentation": "plain",
            "order": ["AB", "BA"],
            "gold_position": ["A", "B"],
        }
    )
    pairs = pd.DataFrame({"pair_id": ["p"], "error_type": ["overclaim"], "domain": ["math"]})
    verdicts = pd.DataFrame(
        {"judge_id": "j", "variant_id": ["v1", "v2"], "verdict": ["A", "A"], "p_first": [0.8, 0.8]}
    )
    c = to_canonical(verdicts, variants, pairs)
    assert c["correct"].tolist() == [True, False]
    assert c["p_correct"].round(6).tolist() == [0.8, 0.2]


def test_a_judge_error_is_recorded_not_dropped(monkeypatch):
    items = ingest_items([BankSource(n_items=8, seed=5)]).items
    built = construct(items, ConstructionConfig())

    def boom(*args):
        raise ValueError("cannot read")

    monkeypatch.setitem(PROGRAMMATIC_JUDGES, "hedge_preference", boom)
    verdicts = judge_variants(
        built["variants"], built["pairs"], items, [JudgeConfig(name="h", model="hedge_preference")], "r"
    )
    assert len(verdicts) == len(built["variants"])
    assert (
        verdicts["verdict"].isna().all() and verdicts["error"].str.contains("ValueError: cannot read").all()
    )


@settings(max_examples=200)
@given(_text, _text, st.sampled_from(sorted(PROGRAMMATIC_JUDGES)))
def test_pointwise_programmatic_judges_are_symmetric_without_exception(a, b, name):
    """Each answer scored alone: no position default, so a swap always swaps the verdict."""
    forward = judge_unit(name, "pointwise", Unit("f", "q", a, b, "480"))
    backward = judge_unit(name, "pointwise", Unit("b", "q", b, a, "480"))
    assert backward.verdict == {"A": "B", "B": "A", "tie": "tie"}[forward.verdict]
    assert abs(forward.p_first - (1 - backward.p_first)) < 1e-9


def test_a_max_pairs_sample_is_fixed_and_balanced_over_error_types():
    from judgeops.tasks.judges import select_subset

    items = ingest_items([BankSource(n_items=60, seed=5)]).items
    built = construct(items, ConstructionConfig())
    sample = select_subset(built["variants"], 8, "smollm2-135m", built["pairs"])
    chosen = built["pairs"][built["pairs"]["pair_id"].isin(sample["pair_id"])]
    assert len(chosen) == 8 and len(sample) == 8 * 6
    assert chosen["error_type"].value_counts().to_dict() == {t: 2 for t in chosen["error_type"].unique()}
    assert chosen["error_type"].nunique() == 4
    again = select_subset(built["variants"], 8, "smollm2-135m", built["pairs"])
    assert again["variant_id"].tolist() == sample["variant_id"].tolist()


def test_a_unit_list_reads_as_the_list_of_units_it_stands_for():
    """units_for keeps the texts in their columns and makes Units as they are read: the same units, slices and
    errors as a list of them."""
    from judgeops.tasks.judges.protocols import Unit
    from judgeops.tasks.judges.runner import UnitList, units_for

    n = 5_003  # more than two chunks, and not a multiple of one
    variants = pd.DataFrame(
        {
            "variant_id": [f"v{i}" for i in range(n)],
            "text_a": [f"a{i}" for i in range(n)],
            "text_b": [f"b{i}" for i in range(n)],
        },
        index=range(10, 10 + n),  # an index that is not 0..n-1, as a subset's is
    ).astype({"text_a": "string[pyarrow]"})
    question = pd.Series([f"q{i % 7}" for i in range(n)], index=variants.index)
    reference = pd.Series([""] * n, index=variants.index)
    units = units_for(variants, question, reference)
    listed = [Unit(f"v{i}", f"q{i % 7}", f"a{i}", f"b{i}", "") for i in range(n)]
    assert isinstance(units, UnitList) and len(units) == n and list(units) == listed
    assert units[0] == listed[0] and units[-1] == listed[-1] and units[2_500] == listed[2_500]
    for cut in (slice(0, 2_000), slice(4_000, 9_999), slice(3, 3), slice(-10, None), slice(1, 50, 7)):
        assert list(units[cut]) == listed[cut] and len(units[cut]) == len(listed[cut])
    assert list(units[100:3_000][5:10]) == listed[100:3_000][5:10]  # a slice of a slice
    with pytest.raises(IndexError):
        units[n]
