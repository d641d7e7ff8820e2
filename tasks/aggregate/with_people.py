"""The consensus checked by people: the audited labels refit it (audit.refit), every judge and label-free
consensus is scored against them (agreement.judge_vs_human), the people against each other
(agreement.annotators), and, given a target error rate, a selective consensus is certified on them
(selective.selective_labels). One function, so `judgeops audit apply` and the evaluate flow's audit stage say
the same numbers."""

from __future__ import annotations

import pandas as pd

from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate.agreement import annotators, judge_vs_human


def finite(row: dict) -> dict:
    """NaN as None, so the summary stays JSON."""
    return {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}


def check_with_people(
    votes: pd.DataFrame,
    labels: pd.Series,
    weights: pd.Series | None = None,
    people: pd.DataFrame | None = None,
    method: str = "auto",
    target_error: float | None = None,
    delta: float = 0.1,
) -> tuple[pd.Series, dict, pd.Series]:
    """(task → the refit consensus's label, `abstain` where a selective consensus does not decide; the summary:
    n_labels, head, audit_accuracy, human_agreement (rows of agreement.AGREEMENT_COLUMNS), annotators (with
    several people per task), selective (with `target_error`); task → the refit label before any abstention)."""
    result = audit.refit(votes, labels, weights, method)
    rows = judge_vs_human(votes, result["audited"], result["weights"], result["label_free_labels"])
    summary = {
        "n_labels": result["n_labels"],
        "head": result["head"],
        "audit_accuracy": result["scores"],
        "human_agreement": [finite(r) for r in rows.to_dict(orient="records")],
    }
    if (
        result["n_labels"] >= 2
    ):  # one label says nothing of a workload (audit apply refuses it; a run skips it)
        from judgeops.tasks.aggregate._base import binary_classes
        from judgeops.tasks.aggregate.audited_estimates import audited_estimates

        summary.update(audited_estimates(votes, result, binary_classes(votes["label"], None, "audit")))
    if people is not None and people["annotator"].nunique() > 1:
        summary["annotators"] = finite(annotators(people[["task", "annotator", "label"]])[0].as_dict())
    chosen = refit = result["labels"]
    if target_error is not None:
        from judgeops.tasks.aggregate.selective import ABSTAIN, selective_labels

        chosen, certified = selective_labels(
            chosen,
            result["confidence"],
            result["audit_hits"],
            result["audited"],
            target_error,
            delta,
            result["weights"],
        )
        summary["selective"] = certified.as_dict()
        summary["selective"]["abstained"] = int((chosen == ABSTAIN).sum())
    return chosen, summary, refit
