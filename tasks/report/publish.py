"""The report's key tables and a link to it as Prefect artifacts on the flow run."""

from __future__ import annotations

import numpy as np
import pandas as pd
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext, TaskRunContext

from judgeops.tasks.profile.conditions import CAP, ERROR_TYPE_CONDITIONS, ORDER_CONDITIONS
from judgeops.tasks.profile.profiles import BENCHMARK
from judgeops.tasks.report.tables import auto_choice


def _round(x: float) -> float | None:
    return None if x is None or np.isnan(x) else round(float(x), 3)


def publish(tables: dict[str, pd.DataFrame], report_link: str) -> None:
    """The leaderboard, the accuracy and CAP tables and the pointwise bias on the Prefect flow run, with a
    link to the report."""
    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    profiles = tables["profiles"]
    profiles = profiles[profiles["benchmark"] == BENCHMARK]
    keep = profiles[profiles["condition"].isin(["overall", *ERROR_TYPE_CONDITIONS, *ORDER_CONDITIONS])]
    rows = [
        {
            "judge": r.judge_id,
            "condition": r.condition,
            "n": int(r.n),
            "estimate": round(r.estimate, 3),
            "ci_95": f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
        }
        for r in keep.itertuples()
    ]
    create_table_artifact(
        table=rows, key="judge-profiles", description="accuracy per judge and condition, 95% bootstrap CI"
    )
    cap = profiles[profiles["condition"].isin(CAP)]
    create_table_artifact(
        table=[
            {
                "judge": r.judge_id,
                "condition": r.condition,
                "n": int(r.n),
                "estimate": round(r.estimate, 3),
                "ci_95": f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
                "evidence": r.evidence,
            }
            for r in cap.itertuples()
        ],
        key="cap-profile",
        description="CAP conditions C1-C8 per judge and panel method, 95% bootstrap CI",
    )
    bias = tables.get("pointwise_bias")
    if bias is not None and len(bias):
        create_table_artifact(
            table=[
                {
                    "judge": r.judge_id,
                    "examinee": r.examinee,
                    "n": int(r.n),
                    "fpr": _round(r.fpr),
                    "fnr": _round(r.fnr),
                    "directional_bias": _round(r.directional_bias),
                    "self_evaluation": bool(r.self_evaluation),
                }
                for r in bias.itertuples()
            ],
            key="pointwise-bias",
            description="judges on examinee answers shown alone: FPR, FNR, FPR - FNR",
        )
    overall = profiles[profiles["condition"] == "overall"].sort_values("estimate", ascending=False)
    md = ["| judge | PA overall | 95% CI | n pairs |", "|---|---|---|---|"]
    md += [
        f"| {r.judge_id} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.n} |"
        for r in overall.itertuples()
    ]
    create_markdown_artifact(
        markdown="\n".join(md), key="leaderboard", description="position-averaged accuracy"
    )
    notes = tables.get("aggregation_notes")
    if notes is not None and len(notes):
        choice = auto_choice(notes)
        md = (
            [
                f"**auto chose {choice['choice']}**: {choice['reason']}.",
                "",
                f"Evidence: {choice['evidence']}.",
                "",
            ]
            if choice
            else []
        )
        md += [
            "| method | accuracy estimated without labels [90% CI] | agreement with MV | agreement with auto "
            "| warning | fallbacks |",
            "|---|---|---|---|---|---|",
        ]
        md += [
            f"| {r.method} | {r.estimated_accuracy:.3f} [{r.estimated_ci_low:.3f}, {r.estimated_ci_high:.3f}] "
            f"| {r.agreement_with_mv:.3f} | {r.agreement_with_auto:.3f} | {r.warning} | {r.fallbacks} |"
            for r in notes.itertuples()
        ]
        create_markdown_artifact(
            markdown="\n".join(md),
            key="aggregation",
            description="auto's choice and each method's label-free check",
        )
    create_link_artifact(  # report_link: file://, or a presigned HTTPS URL for an object store
        link=report_link, link_text="judgeops report", key="report", description="the HTML report of this run"
    )
