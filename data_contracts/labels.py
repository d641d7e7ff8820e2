"""The row rules of people's audit labels, in one place: the `audit_labels` contract (suites.py) runs them on an
imported or stored table, and the annotation page (tasks/labelling) runs them on every answer before it is
written, so a label the contract would quarantine never reaches the log. Plain pandas: the page checks an
answer in microseconds, without Great Expectations' import.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

NO_LABEL = ("tie", "skip")  # a person's answer that is no class: counted as labelled, never used as a label
MAX_NAME = 100  # an annotator's name, in characters


def label_problems(df: pd.DataFrame, tasks: Iterable[str] | None, classes: Iterable[str] | None) -> pd.Series:
    """Per failing row of `df` (columns task, label, annotator) the reason it breaks a rule ("field: why"),
    indexed like `df`; the rows that pass are absent. `tasks`: the audit's tasks (None: not checked);
    `classes`: the panel's class space (None: not checked)."""
    reasons = pd.Series("", index=df.index, dtype=object)

    def add(bad: pd.Series, why: str) -> None:
        bad = bad.fillna(False).to_numpy(dtype=bool)
        reasons[bad] = reasons[bad] + why + "; "

    task = df["task"].astype("string")
    add(task.isna() | (task.str.strip() == ""), "task: empty")
    if tasks is not None:
        known = pd.Index([str(t) for t in tasks])
        add(task.notna() & ~task.isin(known), "task: not in the audit")
    label = df["label"].astype("string")
    add(label.isna() | (label.str.strip() == ""), "label: empty")
    if classes is not None:
        space = [str(c) for c in classes]
        outside = label.notna() & (label.str.strip() != "") & ~label.isin([*space, *NO_LABEL])
        add(outside, f"label: not one of {[*space, *NO_LABEL]}")
    name = df["annotator"].astype("string")
    add(name.isna() | (name.str.strip() == ""), "annotator: empty")
    add(name.str.len() > MAX_NAME, f"annotator: longer than {MAX_NAME} characters")
    failing = reasons[reasons != ""]
    return failing.str.rstrip("; ")
