"""Pointwise bias (the capability-bias paper; ALGORITHMS.md §3): each judge says whether an examinee's answer,
shown alone, is correct.

Per judge × examinee: FPR = P(says correct | the answer is wrong), FNR = P(says incorrect | the answer is
right), DirectionalBias = FPR − FNR (positive: lenient, negative: strict), with n. Only usable verdicts count
(a tie or a failed call is in `n_missing`, never silently dropped). A cell is a self-evaluation when the
examinee is the judge itself, its model or its family. Leniency towards stronger examinees: per judge, the
correlation between its FPR on an examinee and that examinee's accuracy (`profile_stats`, kind "leniency").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.schemas.artifacts import schema_for

BIAS_COLUMNS = schema_for("pointwise_bias").schema.names


def pointwise_bias(
    verdicts: pd.DataFrame, responses: pd.DataFrame | None, judges: list[dict] = ()
) -> pd.DataFrame:
    if responses is None or responses.empty or "response_id" not in verdicts:
        return pd.DataFrame(columns=BIAS_COLUMNS)
    on = verdicts[verdicts["response_id"].notna()][["judge_id", "response_id", "verdict"]]
    if on.empty:
        return pd.DataFrame(columns=BIAS_COLUMNS)
    known = responses[responses["is_correct"].notna()][["response_id", "examinee", "is_correct"]]
    d = on.merge(known, on="response_id", how="inner")
    d["is_correct"] = d["is_correct"].astype(bool)
    accuracy = known.assign(c=known["is_correct"].astype(bool)).groupby("examinee")["c"].mean()
    names = {
        j["name"]: {str(j.get(k) or "").lower() for k in ("name", "model", "family")} - {""} for j in judges
    }
    rows = []
    for (judge, examinee), g in d.groupby(["judge_id", "examinee"], sort=True):
        usable = g[g["verdict"].isin(["correct", "incorrect"])]
        says = usable["verdict"] == "correct"
        wrong, right = usable[~usable["is_correct"]], usable[usable["is_correct"]]
        fpr = float(says[wrong.index].mean()) if len(wrong) else np.nan
        fnr = float((~says[right.index]).mean()) if len(right) else np.nan
        rows.append(
            {
                "judge_id": judge,
                "examinee": examinee,
                "n": len(usable),
                "n_missing": len(g) - len(usable),
                "n_wrong": len(wrong),
                "n_correct": len(right),
                "fpr": fpr,
                "fnr": fnr,
                "directional_bias": fpr - fnr,
                "examinee_accuracy": float(accuracy.get(examinee, np.nan)),
                "self_evaluation": str(examinee).lower() in names.get(judge, {str(judge).lower()}),
            }
        )
    return pd.DataFrame(rows, columns=BIAS_COLUMNS)


def leniency(bias: pd.DataFrame, min_examinees: int = 3) -> list[dict]:
    """Per judge: Pearson r between FPR on an examinee and the examinee's accuracy (> 0: more lenient
    towards stronger examinees)."""
    out = []
    for judge, g in bias.dropna(subset=["fpr", "examinee_accuracy"]).groupby("judge_id"):
        if len(g) < min_examinees or g["fpr"].nunique() < 2 or g["examinee_accuracy"].nunique() < 2:
            continue
        r = float(np.corrcoef(g["fpr"], g["examinee_accuracy"])[0, 1])
        out.append(
            {
                "kind": "leniency",
                "benchmark": "responses",
                "judge_id": judge,
                "condition": "fpr~accuracy",
                "n": len(g),
                "estimate": r,
            }
        )
    return out
