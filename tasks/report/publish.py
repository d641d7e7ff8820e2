"""The report's key tables and a link to it as Prefect artifacts on the flow run."""

from __future__ import annotations

import numpy as np
import pandas as pd
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.context import FlowRunContext, TaskRunContext

from judgeops.tasks.profile.conditions import CAP, ERROR_TYPE_CONDITIONS, ORDER_CONDITIONS
from judgeops.tasks.profile.profiles import BENCHMARK
from judgeops.tasks.report.tables import auto_choice, label_free_cell


def _round(x: float) -> float | None:
    return None if x is None or np.isnan(x) else round(float(x), 3)


def publish(tables: dict[str, pd.DataFrame], report_link: str, on_disk_of: str | None = None) -> None:
    """The leaderboard, the accuracy and CAP tables and the pointwise bias on the Prefect flow run, with a
    link to the report: a presigned URL for an object store; for a local store (`on_disk_of`: the host whose
    disk holds it) a note saying where the file is, since a file:// link opens nothing on another machine."""
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
            f"| {r.method} | {label_free_cell(r.estimated_accuracy, r.estimated_ci_low, r.estimated_ci_high, r.warning)} "
            f"| {r.agreement_with_mv:.3f} | {r.agreement_with_auto:.3f} | {r.warning} | {r.fallbacks} |"
            for r in notes.itertuples()
        ]
        create_markdown_artifact(
            markdown="\n".join(md),
            key="aggregation",
            description="auto's choice and each method's label-free check",
        )
    if on_disk_of is None:  # an object store: a presigned HTTPS URL (or the store's own URL)
        create_link_artifact(
            link=report_link,
            link_text="judgeops report",
            key="report",
            description="the HTML report of this run",
        )
        return
    path = report_link.removeprefix("file://")
    create_markdown_artifact(
        markdown=(
            f"The report is a file on the disk of **{on_disk_of}**, the machine that ran this flow (a local "
            f"store): `{path}`.\n\nOn that machine: [open it]({report_link.replace(' ', '%20')}) in a browser. From another "
            "machine it cannot be opened here: give the runs a shared store (`store.url: s3://…`) and "
            "this becomes a link that opens anywhere."
        ),
        key="report",
        description=f"the HTML report of this run: on {on_disk_of}'s disk",
    )


def publish_calibration(table: pd.DataFrame, summary: str) -> None:
    """A recalibration's result on its flow run (the rates and drift flags were only in the log): every judge's
    error rates with their standard deviations and drift flags as a table, and `summary`, one line of what the
    run did, as markdown."""
    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    rows = [
        {
            "judge": r.judge_id,
            "stratum": r.stratum,
            "estimator": r.estimator,
            "fpr": _round(r.fpr),
            "fpr_sd": _round(r.fpr_sd),
            "fnr": _round(r.fnr),
            "fnr_sd": _round(r.fnr_sd),
            "n": int(r.n),
            "agreement": _round(r.agreement),
            "drift": "; ".join(
                f"{c['metric']} {c['before']:.3f} → {c['after']:.3f}" for c in r.drift_changes
            ),
        }
        for r in table.itertuples()
    ]
    week = table["week"].iloc[0] if len(table) else ""
    create_table_artifact(
        table=rows, key="calibration", description=f"each judge's error rates for the week of {week}"
    )
    create_markdown_artifact(markdown=summary, key="recalibration", description="what this recalibration did")
