"""One Great Expectations suite per artifact.

Every expectation carries `meta={"on_fail": ...}`:
- "stop": the artifact is wrong as a whole (a bug upstream, a broken key, a probability outside
  [0, 1]); the flow stops and nothing downstream is written.
- "quarantine": a row-level defect of the input (an empty question, an unknown domain); the row is
  moved to `<artifact>__quarantine` with the reason and the rest goes on.

Referential rules (every variant's pair_id exists, ...) read the parent artifact from `related`;
they are skipped, and say so, when the parent is not at hand.

This module imports great_expectations (6-7 s): import it only from `check_contract`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
from great_expectations import expectations as gxe

from judgeops.data_contracts.contract import RowCheck
from judgeops.data_contracts.labels import label_problems
from judgeops.schemas.artifacts import COVERAGE_CAUSES, DOMAINS, ERROR_TYPES, ORDERS, PRESENTATIONS, VERDICTS

STOP = {"on_fail": "stop"}
QUARANTINE = {"on_fail": "quarantine"}

Suite = list[gxe.Expectation]


def _keys(*columns: str) -> Suite:
    if len(columns) == 1:
        return [
            gxe.ExpectColumnValuesToNotBeNull(column=columns[0], meta=STOP),
            gxe.ExpectColumnValuesToBeUnique(column=columns[0], meta=STOP),
        ]
    return [gxe.ExpectCompoundColumnsToBeUnique(column_list=list(columns), meta=STOP)] + [
        gxe.ExpectColumnValuesToNotBeNull(column=c, meta=STOP) for c in columns
    ]


def _non_empty() -> Suite:
    return [gxe.ExpectTableRowCountToBeBetween(min_value=1, meta=STOP)]


def _in(column: str, values, meta=STOP) -> gxe.Expectation:
    return gxe.ExpectColumnValuesToBeInSet(column=column, value_set=sorted(values), meta=meta)


def _probability(column: str) -> gxe.Expectation:
    return gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0.0, max_value=1.0, meta=STOP)


def _references(
    column: str, parent: str, parent_column: str, related: Mapping[str, pd.DataFrame], meta=STOP
) -> Suite:
    """Every (non-null) value of `column` is a `parent_column` of the parent artifact. A row check, not GX's
    ExpectColumnValuesToBeInSet: GX copies its value set each time it reads the expectation's configuration,
    which at 600,000 variant ids took minutes per 200,000-row chunk."""
    if parent not in related:
        return []
    values = pd.Index(related[parent][parent_column].dropna().unique())
    rule = f"{column} references {parent}.{parent_column}"

    def problems(df: pd.DataFrame) -> pd.Series:
        # the failing rows only: a message (or "") for each of 4.8M verdicts took 1.5 GB (bench/contract_memory.py)
        known = df[column].isna() | df[column].isin(values)
        return pd.Series(f"{column} not in {parent}.{parent_column}", index=df.index[~known.to_numpy()])

    return [RowCheck(rule, problems, meta={**meta, "rule": rule}, kwargs={"column": column})]


def items_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("item_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="source", meta=STOP),
        gxe.ExpectColumnValuesToNotBeNull(column="question", meta=QUARANTINE),
        gxe.ExpectColumnValueLengthsToBeBetween(column="question", min_value=1, meta=QUARANTINE),
        gxe.ExpectColumnValuesToNotBeNull(column="gold", meta=QUARANTINE),
        gxe.ExpectColumnValueLengthsToBeBetween(column="gold", min_value=1, meta=QUARANTINE),
        _in("domain", DOMAINS, QUARANTINE),
    ]


def pairs_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("pair_id"),
        *_references("item_id", "items", "item_id", related),
        _in("error_type", ERROR_TYPES),
        _in("domain", DOMAINS),
        gxe.ExpectColumnValuesToNotBeNull(column="answer_correct", meta=STOP),
        gxe.ExpectColumnValuesToNotBeNull(column="answer_flawed", meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="edit_start", min_value=0, meta=STOP),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="edit_end", column_B="edit_start", or_equal=True, meta=STOP
        ),
        _probability("subtlety"),
    ]


def construction_log_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("item_id", "error_type", "branch"),
        *_references("item_id", "items", "item_id", related),
        _in("error_type", ERROR_TYPES),
        _in("branch", {"standard", "hard", "llm", "llm_expand"}),
        _in("status", {"accepted", "skipped", "rejected"}),
    ]


def _with_external_pairs(related: Mapping[str, pd.DataFrame]) -> Mapping[str, pd.DataFrame]:
    """Variants show judgerEva pairs and published pairs: both are valid parents."""
    if "external_pairs" not in related or "pairs" not in related:
        return related
    ids = pd.concat([related["pairs"]["pair_id"], related["external_pairs"]["pair_id"]], ignore_index=True)
    return {**related, "pairs": ids.to_frame()}


def variants_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("variant_id"),
        *_references("pair_id", "pairs", "pair_id", _with_external_pairs(related)),
        _in("presentation", PRESENTATIONS),
        _in("order", ORDERS),
        _in("gold_position", {"A", "B"}),
        gxe.ExpectColumnValuesToNotBeNull(column="text_a", meta=STOP),
        gxe.ExpectColumnValuesToNotBeNull(column="text_b", meta=STOP),
    ]


def responses_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("response_id"),
        *_references("item_id", "items", "item_id", related, meta=QUARANTINE),
        gxe.ExpectColumnValuesToNotBeNull(column="text", meta=QUARANTINE),
        gxe.ExpectColumnValuesToNotBeNull(column="examinee", meta=QUARANTINE),
        _in("correct_by", {"file", "gold_check", "unknown"}),
    ]


def external_pairs_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("pair_id"),
        _in("gold", {"1", "2"}),
        gxe.ExpectColumnValuesToNotBeNull(column="source", meta=STOP),
        *[
            gxe.ExpectColumnValueLengthsToBeBetween(column=c, min_value=1, meta=QUARANTINE)
            for c in ("question", "answer_1", "answer_2")
        ],
    ]


def verdicts_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("call_id"),
        gxe.ExpectColumnValuesToNotBeNull(column="judge_id", meta=STOP),
        *_references("variant_id", "variants", "variant_id", related),
        _in("verdict", VERDICTS),
        _probability("p_first"),
        _probability("flip_rate"),
        gxe.ExpectColumnValuesToBeBetween(column="latency_ms", min_value=0, meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="n_samples", min_value=1, meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="cache_hits", min_value=0, meta=STOP),
    ]


def coverage_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("judge_id"),
        _probability("coverage"),
        *[
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, meta=STOP)
            for c in (
                "n_expected",
                "n_answered",
                "n_tie",
                "n_unparsable",
                "n_error",
                "n_calls",
                "cache_hits",
                "tokens_in",
                "tokens_out",
                "cost_usd",
                "spent_usd",
                "cost_per_1k_verdicts",
                *COVERAGE_CAUSES,
            )
        ],
    ]  # and every expected call accounted for, by cause: coverage_problems, a row check (data_contracts)


def robustness_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("judge_id", "probe"),
        *[_probability(c) for c in ("accuracy_plain", "accuracy_injected", "followed", "followed_control")],
        *[
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=-1, max_value=1, meta=STOP)
            for c in ("change", "instruction_effect")
        ],
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0, meta=STOP),
    ]


def consensus_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("unit_id", "method"),
        gxe.ExpectColumnValuesToNotBeNull(column="label", meta=STOP),
        _probability("posterior"),
        gxe.ExpectColumnValuesToBeBetween(column="score", min_value=-1.0, max_value=1.0, meta=STOP),
    ]


def consistency_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("judge_id", "condition"),
        *[
            _probability(c)
            for c in ("order_consistency", "presentation_consistency", "position_bias", "agreement")
        ],
        gxe.ExpectColumnValuesToBeBetween(column="implied_accuracy", min_value=0.5, max_value=1.0, meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0.0, meta=STOP),
        *[
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, meta=STOP)
            for c in ("n_tasks", "order_pairs", "presentation_pairs", "n_decisive")
        ],
    ]


def aggregation_notes_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("method"),
        _probability("agreement_with_mv"),
        _probability("agreement_with_auto"),
        _probability("estimated_accuracy"),
        _probability("estimated_ci_low"),
        _probability("estimated_ci_high"),
    ]


def profiles_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("judge_id", "benchmark", "condition"),
        _probability("estimate"),
        _probability("ci_low"),
        _probability("ci_high"),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="estimate", column_B="ci_low", or_equal=True, meta=STOP
        ),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="ci_high", column_B="estimate", or_equal=True, meta=STOP
        ),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0, meta=STOP),
        _in("evidence", {"direct", "approx", "augmented"}),
        _probability("corrected"),
        _probability("corrected_low"),
        _probability("corrected_high"),
    ]


def pointwise_bias_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("judge_id", "examinee"),
        _probability("fpr"),
        _probability("fnr"),
        gxe.ExpectColumnValuesToBeBetween(
            column="directional_bias", min_value=-1.0, max_value=1.0, meta=STOP
        ),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=0, meta=STOP),
    ]


def profile_stats_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("kind", "benchmark", "other", "judge_id", "other_judge", "condition"),
        _in(
            "kind",
            {
                "stress_degradation",
                "rank_stability_benchmarks",
                "rank_stability_conditions",
                "profile_distance",
                "family_distance",
            },
        ),
        gxe.ExpectColumnValuesToBeBetween(column="estimate", min_value=-1.0, max_value=1.0, meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=1, meta=STOP),
    ]


def calibration_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_non_empty(),
        *_keys("week", "judge_id", "estimator", "stratum"),
        _in("estimator", {"bayesian", "stratified", "disagreement"}),
        _probability("fpr"),
        _probability("fnr"),
        _probability("agreement"),
        *[
            gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0, meta=STOP)
            for c in ("fp", "tn", "fn", "tp", "n")
        ],
    ]


def audit_labels_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    """`related`: `audit` (its `task` column: the tasks that may be labelled) and `classes` (its `label` column:
    the panel's class space); a row breaking a rule of data_contracts/labels.py is quarantined with its reason."""
    tasks = related["audit"]["task"].astype(str) if "audit" in related else None
    classes = related["classes"]["label"].astype(str) if "classes" in related else None
    rule = "a label of an audited task, in the class space, with an annotator"
    return [
        *_keys("task", "annotator", "adjudicated"),
        RowCheck(
            rule,
            lambda df: label_problems(df, tasks, classes),
            meta={**QUARANTINE, "rule": rule},
            kwargs={"column_list": ["task", "label", "annotator", "source"]},
        ),
        gxe.ExpectColumnValuesToBeBetween(column="seconds", min_value=0, meta=QUARANTINE),
        gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0, strict_min=True, meta=QUARANTINE),
    ]


def audit_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("task"),
        gxe.ExpectColumnValuesToNotBeNull(column="run_task", meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="weight", min_value=0, strict_min=True, meta=STOP),
        _probability("posterior"),
    ]


def human_agreement_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("who", "kind"),
        _in("kind", {"judge", "consensus"}),
        *[_probability(c) for c in ("accuracy", "accuracy_low", "accuracy_high")],
        gxe.ExpectColumnValuesToBeBetween(column="kappa", min_value=-1.0, max_value=1.0, meta=STOP),
    ]


def audit_summary_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        gxe.ExpectTableRowCountToEqual(value=1, meta=STOP),
        *[_probability(c) for c in ("coverage", "accuracy", "selective_accuracy", "target_error")],
        gxe.ExpectColumnValuesToBeBetween(column="n_labels", min_value=0, meta=STOP),
    ]


def estimates_suite(related: Mapping[str, pd.DataFrame]) -> Suite:
    return [
        *_keys("quantity", "who"),
        _in("quantity", {"consensus_accuracy", "judge_accuracy", "judge_fpr", "judge_fnr", "first_share"}),
        *[
            _probability(c)
            for c in ("estimate", "ci_low", "ci_high", "labels_only_low", "labels_only_high", "half_width")
        ],
        # an interval holds its estimate, and is never a point
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="estimate", column_B="ci_low", or_equal=True, meta=STOP
        ),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A="ci_high", column_B="estimate", or_equal=True, meta=STOP
        ),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="ci_high", column_B="ci_low", meta=STOP),
        gxe.ExpectColumnValuesToBeBetween(column="n_labels", min_value=2, meta=STOP),
    ]


SUITES: dict[str, Callable[[Mapping[str, pd.DataFrame]], Suite]] = {
    "items": items_suite,
    "pairs": pairs_suite,
    "construction_log": construction_log_suite,
    "variants": variants_suite,
    "responses": responses_suite,
    "external_pairs": external_pairs_suite,
    "verdicts": verdicts_suite,
    "coverage": coverage_suite,
    "robustness": robustness_suite,
    "consensus": consensus_suite,
    "consistency": consistency_suite,
    "aggregation_notes": aggregation_notes_suite,
    "profiles": profiles_suite,
    "profile_stats": profile_stats_suite,
    "pointwise_bias": pointwise_bias_suite,
    "calibration": calibration_suite,
    "audit": audit_suite,
    "human_agreement": human_agreement_suite,
    "audit_summary": audit_summary_suite,
    "estimates": estimates_suite,
    "audit_labels": audit_labels_suite,
}
