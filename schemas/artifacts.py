"""The pyarrow schema of every artifact, with a version number.

One place for each fact: a stage never builds a schema of its own, it asks `schema_for(name)`.
Bump an artifact's version whenever its schema changes; `read` refuses artifacts written under
another version instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

ERROR_TYPES = ("factual_fabrication", "logical_reversal", "overclaim", "critical_omission")
PRESENTATIONS = ("plain", "polished", "padded")
ORDERS = ("AB", "BA")
VERDICTS = ("A", "B", "tie", "correct", "incorrect")  # the last two: an examinee answer judged alone
DOMAINS = ("math", "science", "logic", "legal", "medical", "general")

# The built-in aggregation methods, in the order they run by default, and the input each reads unless told
# (a plugin's: its class attribute `default_input`). The config's default methods and the aggregate registry
# both read this table; pyproject.toml registers the same names as entry points.
BUILTIN_AGGREGATORS = {
    "mv": "label",
    "avg": "score",
    "dawid_skene": "label",
    "ws": "label",
    "uws": "score",
    "care_svd": "score",
    "care_tensor": "score",
    "wmv": "label",
    "baer": "score",
    "cwv": "label",
    "ds_position": "label",
    "auto": "label",
}

# why a judge call gave no verdict (tasks/judges/coverage.py: failure_cause), counted per cause in `coverage`,
# with the expected calls that have no row at all (n_missing)
# protocol_error: an HTTP 2xx whose body is not a completion (not JSON, no choices): a broken endpoint, not a judge
# that could not decide
FAILURE_CAUSES = (
    "rate_limited",
    "server_error",
    "client_error",
    "timeout",
    "connection",
    "protocol_error",
    "other_error",
)
COVERAGE_CAUSES = (*(f"n_{c}" for c in FAILURE_CAUSES), "n_missing")

QUARANTINE_SUFFIX = "__quarantine"
# the artifacts that are files, not tables (the report stage's pages)
FILE_ARTIFACTS = ("report.html", "samples.html")
# items.choices are lettered in order (choices[0] is option A); items.steps end with "The answer is <gold>."
OPTION_LETTERS = "ABCDEFGHIJ"
FINAL_CLAIM = "The answer is"


@dataclass(frozen=True)
class ArtifactSchema:
    name: str
    version: int
    schema: pa.Schema
    key: tuple[str, ...]
    description: str


def _s(*fields: pa.Field) -> pa.Schema:
    return pa.schema(list(fields))


_STR = pa.string()
_F = pa.float64()
DRIFT_CHANGE = pa.struct([("metric", _STR), ("before", _F), ("after", _F)])

ARTIFACTS: dict[str, ArtifactSchema] = {
    a.name: a
    for a in [
        ArtifactSchema(
            "items",
            1,
            _s(
                pa.field("item_id", _STR, nullable=False),
                pa.field("source", _STR),
                pa.field("domain", _STR),
                pa.field("question", _STR),
                pa.field("choices", pa.list_(_STR)),
                pa.field("gold", _STR),
                pa.field("worked_solution", _STR),
                # sentence units of the worked solution and the ones that are necessary conditions:
                # what the construction stage needs to plant an error in a known place.
                pa.field("steps", pa.list_(_STR)),
                pa.field("conditions", pa.list_(_STR)),
                pa.field("license", _STR),
                pa.field("provenance", _STR),
            ),
            ("item_id",),
            "a source question with its gold answer",
        ),
        ArtifactSchema(
            "pairs",
            1,
            _s(
                pa.field("pair_id", _STR, nullable=False),
                pa.field("item_id", _STR),
                pa.field("domain", _STR),
                pa.field("error_type", _STR),
                pa.field("answer_correct", _STR),
                pa.field("answer_flawed", _STR),
                pa.field("edit_start", pa.int32()),
                pa.field("edit_end", pa.int32()),
                pa.field("edit_before", _STR),
                pa.field("edit_after", _STR),
                pa.field("edit_note", _STR),
                pa.field("subtlety", _F),
                pa.field("generator", _STR),
                pa.field("qc_flags", pa.list_(_STR)),
            ),
            ("pair_id",),
            "a plain judgerEva pair: a correct answer and the same answer with one planted error",
        ),
        ArtifactSchema(
            "construction_log",
            2,
            _s(
                pa.field("item_id", _STR, nullable=False),
                pa.field("error_type", _STR),
                pa.field("branch", _STR),
                pa.field("status", _STR),
                pa.field("reason", _STR),
            ),
            ("item_id", "error_type", "branch"),
            "every construction attempt: accepted, skipped (operator not applicable) or rejected by the gate",
        ),
        ArtifactSchema(
            "variants",
            1,
            _s(
                pa.field("variant_id", _STR, nullable=False),
                pa.field("pair_id", _STR),
                pa.field("presentation", _STR),
                pa.field("order", _STR),
                pa.field("text_a", _STR),
                pa.field("text_b", _STR),
                pa.field("gold_position", _STR),
            ),
            ("variant_id",),
            "one displayed prompt: a presentation of a pair in one display order",
        ),
        ArtifactSchema(
            "external_pairs",
            2,
            _s(
                pa.field("pair_id", _STR, nullable=False),
                pa.field("source", _STR),
                pa.field("subset", _STR),
                pa.field("question", _STR),
                pa.field("answer_1", _STR),
                pa.field("answer_2", _STR),
                pa.field("gold", _STR),
                pa.field("license", _STR),
                pa.field("provenance", _STR),
            ),
            ("pair_id",),
            "a published pairwise comparison with its gold preference ('1' or '2')",
        ),
        ArtifactSchema(
            "responses",
            1,
            _s(
                pa.field("response_id", _STR, nullable=False),
                pa.field("item_id", _STR),
                pa.field("examinee", _STR),
                pa.field("text", _STR),
                pa.field("is_correct", pa.bool_()),
                pa.field("correct_by", _STR),
                pa.field("provenance", _STR),
            ),
            ("response_id",),
            "an examinee answer to judge pointwise",
        ),
        ArtifactSchema(
            "verdicts",
            3,
            _s(
                pa.field("call_id", _STR, nullable=False),
                pa.field("run_id", _STR),
                pa.field("judge_id", _STR),
                pa.field("protocol", _STR),
                pa.field("variant_id", _STR),
                pa.field("response_id", _STR),
                pa.field("verdict", _STR),
                pa.field("p_first", _F),
                pa.field("rationale", _STR),
                pa.field("latency_ms", _F),
                pa.field("tokens", pa.int64()),
                pa.field("cached", pa.bool_()),
                pa.field("error", _STR),
                pa.field("n_samples", pa.int64()),
                pa.field("flip_rate", _F),
                pa.field("p_first_sd", _F),
                pa.field("n_calls", pa.int64()),
                pa.field("cache_hits", pa.int64()),
                pa.field("tokens_in", pa.int64()),
                pa.field("tokens_out", pa.int64()),
                pa.field("request_notes", _STR),
            ),
            ("call_id",),
            "one judge's decision on one unit, as the judge saw it (display frame); with samples > 1 the "
            "majority over samples, with the flip rate and p_first spread across them",
        ),
        ArtifactSchema(
            "coverage",
            5,
            _s(
                pa.field("judge_id", _STR, nullable=False),
                pa.field("n_expected", pa.int64()),
                pa.field("n_answered", pa.int64()),
                pa.field("n_tie", pa.int64()),
                pa.field("n_unparsable", pa.int64()),
                pa.field("n_error", pa.int64()),
                # n_error by cause (tasks/judges: failure_cause), and expected calls with no row at all
                *[pa.field(c, pa.int64()) for c in COVERAGE_CAUSES],
                pa.field("coverage", _F),
                pa.field("n_calls", pa.int64()),
                pa.field("cache_hits", pa.int64()),
                pa.field("tokens_in", pa.int64()),
                pa.field("tokens_out", pa.int64()),
                pa.field("request_adjustments", _STR),
                pa.field("cost_usd", _F),  # what the verdicts cost to produce (cache hits included)
                pa.field("spent_usd", _F),  # what this run paid for them (cache hits free)
                pa.field("cost_per_1k_verdicts", _F),
            ),
            ("judge_id",),
            "per judge: how many of the expected calls produced a usable verdict",
        ),
        ArtifactSchema(
            "robustness",
            1,
            _s(
                pa.field("judge_id", _STR, nullable=False),
                pa.field("protocol", _STR),
                pa.field("probe", _STR, nullable=False),
                pa.field("n", pa.int64()),
                pa.field("accuracy_plain", _F),
                pa.field("accuracy_injected", _F),
                pa.field("followed", _F),
                pa.field("followed_control", _F),
                pa.field("instruction_effect", _F),
                pa.field("change", _F),
                pa.field("changed_verdicts", pa.int64()),
            ),
            ("judge_id", "probe"),
            "per judge and probe: accuracy on the probed variants with and without the planted instruction",
        ),
        ArtifactSchema(
            "consensus",
            1,
            _s(
                pa.field("unit_id", _STR, nullable=False),
                pa.field("method", _STR, nullable=False),
                pa.field("score", _F),
                pa.field("label", _STR),
                pa.field("posterior", _F),
                pa.field("n_votes", pa.int64()),
            ),
            ("unit_id", "method"),
            "an aggregated decision of the panel for one unit (a variant or a response)",
        ),
        ArtifactSchema(
            "consistency",
            1,
            _s(
                pa.field("judge_id", _STR, nullable=False),
                pa.field("condition", _STR, nullable=False),
                pa.field("n_tasks", pa.int64()),
                pa.field("order_pairs", _F),
                pa.field("order_consistency", _F),
                pa.field("presentation_pairs", _F),
                pa.field("presentation_consistency", _F),
                pa.field("n_decisive", pa.int64()),
                pa.field("position_bias", _F),
                pa.field("agreement", _F),
                pa.field("implied_accuracy", _F),
                pa.field("weight", _F),
            ),
            ("judge_id", "condition"),
            "label-free perturbation consistency of a judge (overall or per error type): same verdict across "
            "display orders and presentations, share of 'shown first' among its votes, and the per-run "
            "accuracy and weight that consistency implies (tasks/aggregate/consistency.py)",
        ),
        ArtifactSchema(
            "aggregation_notes",
            2,
            _s(
                pa.field("method", _STR, nullable=False),
                pa.field("agreement_with_mv", _F),
                pa.field("agreement_with_auto", _F),
                pa.field("estimated_accuracy", _F),
                pa.field("estimated_ci_low", _F),
                pa.field("estimated_ci_high", _F),
                pa.field("warning", _STR),
                pa.field("choice", _STR),
                pa.field("reason", _STR),
                pa.field("evidence", _STR),
                pa.field("fallbacks", _STR),
            ),
            ("method",),
            "per aggregation method: label-free agreement with majority vote and with auto's consensus, its "
            "accuracy estimated without labels with a 90% interval (tasks/aggregate/estimate.py), a warning when "
            "its check fails; auto's row names the method it chose, why, the evidence (JSON, with the "
            "identifiability diagnostic) and, as its warning, why the panel may not be resolvable without labels; "
            "fallbacks: what a fit did instead when a numerical step failed",
        ),
        ArtifactSchema(
            "profiles",
            2,
            _s(
                pa.field("judge_id", _STR, nullable=False),
                pa.field("benchmark", _STR, nullable=False),
                pa.field("condition", _STR, nullable=False),
                pa.field("operator", _STR),
                pa.field("n", pa.int64()),
                pa.field("estimate", _F),
                pa.field("ci_low", _F),
                pa.field("ci_high", _F),
                pa.field("corrected", _F),
                pa.field("corrected_low", _F),
                pa.field("corrected_high", _F),
                pa.field("saturated", pa.bool_()),
                pa.field("evidence", _STR),
            ),
            ("judge_id", "benchmark", "condition"),
            "a judge x condition cell with a bootstrap CI (and a Rogan-Gladen corrected value where the "
            "construction's label validity was measured)",
        ),
        ArtifactSchema(
            "pointwise_bias",
            1,
            _s(
                pa.field("judge_id", _STR, nullable=False),
                pa.field("examinee", _STR, nullable=False),
                pa.field("n", pa.int64()),
                pa.field("n_missing", pa.int64()),
                pa.field("n_wrong", pa.int64()),
                pa.field("n_correct", pa.int64()),
                pa.field("fpr", _F),
                pa.field("fnr", _F),
                pa.field("directional_bias", _F),
                pa.field("examinee_accuracy", _F),
                pa.field("self_evaluation", pa.bool_()),
            ),
            ("judge_id", "examinee"),
            "a judge's false positive and false negative rates on one examinee's answers, judged alone",
        ),
        ArtifactSchema(
            "profile_stats",
            1,
            _s(
                pa.field("kind", _STR, nullable=False),
                pa.field("benchmark", _STR),
                pa.field("other", _STR),
                pa.field("judge_id", _STR),
                pa.field("other_judge", _STR),
                pa.field("condition", _STR),
                pa.field("n", pa.int64()),
                pa.field("estimate", _F),
                pa.field("ci_low", _F),
                pa.field("ci_high", _F),
            ),
            ("kind", "benchmark", "other", "judge_id", "other_judge", "condition"),
            "a comparison across profiles: stress degradation, rank stability, profile distance",
        ),
        ArtifactSchema(
            "calibration",
            3,
            _s(
                pa.field("week", pa.date32(), nullable=False),
                pa.field("judge_id", _STR, nullable=False),
                pa.field("estimator", _STR, nullable=False),
                pa.field("stratum", _STR, nullable=False),
                pa.field("fp", _F),
                pa.field("tn", _F),
                pa.field("fn", _F),
                pa.field("tp", _F),
                pa.field("fpr", _F),
                pa.field("fnr", _F),
                pa.field("fpr_sd", _F),
                pa.field("fnr_sd", _F),
                pa.field("n", pa.int64()),
                pa.field("agreement", _F),
                pa.field("drift", pa.bool_()),
                # what moved, as data (the report renders it): the agreement, FPR or FNR, before and after
                pa.field("drift_changes", pa.list_(DRIFT_CHANGE)),
            ),
            ("week", "judge_id", "estimator", "stratum"),
            "a judge's estimated error rates for one week, with the counts the next week starts from "
            "(stratum '' = all bins)",
        ),
        ArtifactSchema(
            "audit",
            1,
            _s(
                pa.field(
                    "task", _STR, nullable=False
                ),  # a hash of what the reviewer sees (labelling/run_audit.py)
                pa.field("run_task", _STR),  # the run's task: pair:presentation
                pa.field("pair_id", _STR),
                pa.field("presentation", _STR),
                pa.field("weight", _F),  # the inverse inclusion probability
                pa.field("consensus", _STR),
                pa.field("posterior", _F),
                pa.field("question", _STR),
                pa.field("answer_A", _STR),  # the canonical frame of the votes
                pa.field("answer_B", _STR),
                pa.field("edit_correct_html", _STR),  # escaped text with <del>/<ins> only (report/samples.py)
                pa.field("edit_flawed_html", _STR),
                pa.field("verdicts_json", _STR),  # [[judge, run, label], ...]
            ),
            ("task",),
            "a task of the run proposed for a person to label, with what the annotation page shows of it",
        ),
        ArtifactSchema(
            "human_agreement",
            1,
            _s(
                pa.field("who", _STR, nullable=False),
                pa.field("kind", _STR, nullable=False),  # judge | consensus
                pa.field("n_tasks", pa.int64()),
                pa.field("accuracy", _F),
                pa.field("accuracy_low", _F),
                pa.field("accuracy_high", _F),
                pa.field("kappa", _F),
                pa.field("kappa_low", _F),
                pa.field("kappa_high", _F),
            ),
            ("who", "kind"),
            "each judge and label-free consensus against people's labels on the audit (weighted; 90 % intervals)",
        ),
        ArtifactSchema(
            "audit_summary",
            1,
            _s(
                pa.field("n_audit", pa.int64(), nullable=False),
                pa.field("n_labels", pa.int64()),  # audited tasks with a usable label
                pa.field("head", _STR),  # what the refit took (audit.refit)
                pa.field("n_annotators", pa.int64()),
                pa.field("people_kappa", _F),
                pa.field("people_alpha", _F),
                pa.field("n_conflicts", pa.int64()),
                pa.field("target_error", _F),
                pa.field("delta", _F),
                pa.field("coverage", _F),
                pa.field("threshold", _F),
                pa.field("abstained", pa.int64()),
                # the refit consensus on judgerEva's answers (pairs with a gold side), and the selective one on the
                # tasks it decided
                pa.field("accuracy", _F),
                pa.field("selective_accuracy", _F),
            ),
            ("n_audit",),
            "the run's audit in one row: labels in, the people's agreement, the refit and selective consensus",
        ),
        ArtifactSchema(
            "estimates",
            1,
            _s(
                pa.field(
                    "quantity", _STR, nullable=False
                ),  # consensus_accuracy | judge_accuracy | judge_fpr | judge_fnr | first_share
                pa.field(
                    "who", _STR, nullable=False
                ),  # the judge; the class for first_share; '' the consensus
                pa.field("estimate", _F),
                pa.field("ci_low", _F),  # the 90 % prediction-powered interval
                pa.field("ci_high", _F),
                pa.field("labels_only_low", _F),  # the labels alone, same labels and design
                pa.field("labels_only_high", _F),
                pa.field("n_labels", pa.int64()),
                pa.field("effective_labels", _F),  # what the verdicts were worth in labels
                pa.field("method", _STR),
                pa.field("label_budget", pa.int64()),  # labels in all for ± half_width; null: none would do
                pa.field("half_width", _F),
            ),
            ("quantity", "who"),
            "the audit's prediction-powered estimates: the consensus's and every judge's accuracy on the whole "
            "workload, and the first class's share (tasks/aggregate/audited_estimates.py)",
        ),
        ArtifactSchema(
            "audit_labels",
            1,
            _s(
                pa.field("task", _STR, nullable=False),
                pa.field("label", _STR),  # a class of the panel, or tie / skip (data_contracts/labels.py)
                pa.field("annotator", _STR, nullable=False),
                pa.field(
                    "adjudicated", pa.bool_(), nullable=False
                ),  # an adjudicator's label settles a conflict
                pa.field("labelled_at", _STR),  # ISO 8601, UTC
                pa.field("seconds", _F),  # on the item before answering
                pa.field("note", _STR),
                pa.field("weight", _F),  # the audit's inclusion weight of the task
                pa.field("source", _STR),  # where the row came from: file:line
            ),
            ("task", "annotator", "adjudicated"),
            "a person's label of an audited task (the latest of each annotator), with who, when and how long",
        ),
    ]
}


class UnknownArtifactError(KeyError):
    pass


def base_name(name: str) -> str:
    return name.removesuffix(QUARANTINE_SUFFIX)


def quarantine_schema(schema: pa.Schema) -> pa.Schema:
    """A quarantined row keeps every original field (nullable: it may be the broken one) plus why."""
    fields = [f.with_nullable(True) for f in schema]
    fields += [
        pa.field("quarantine_row", pa.int64()),
        pa.field("quarantine_rule", _STR),
        pa.field("quarantine_reason", _STR),
    ]
    return pa.schema(fields)


def schema_for(name: str) -> ArtifactSchema:
    """The schema of `name`; `<artifact>__quarantine` derives from its artifact's schema."""
    base = base_name(name)
    if base not in ARTIFACTS:
        raise UnknownArtifactError(
            f"unknown artifact {name!r}: expected one of {sorted(ARTIFACTS)} (or '<name>{QUARANTINE_SUFFIX}')"
        )
    spec = ARTIFACTS[base]
    if name == base:
        return spec
    return ArtifactSchema(
        name, spec.version, quarantine_schema(spec.schema), (), f"rows of {base} set aside by its contract"
    )
