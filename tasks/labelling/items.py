"""What a person sees of each audited task on the annotation page: the question, the candidates side by side in an
order drawn per reviewer and task, and — only once the reviewer has answered — the judges' verdicts and, for a
judgerEva pair, the planted edit as the words that changed.

A task's content comes from columns of the audit file or of a separate items file joined on `task`: `question`,
and `answer_<class>` for each class of the panel (`answer_A`, `answer_B` for pairwise votes). Without them the
page shows the task id and the classes to choose from.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Audit:
    """The tasks to label (in the audit's order), the panel's classes, each task's inclusion weight, content and the
    judges' verdicts (worker, run, label)."""

    tasks: list[str]
    classes: list[str]
    weights: dict[str, float]
    content: dict[str, dict] = field(default_factory=dict)
    verdicts: dict[str, list[list]] = field(default_factory=dict)

    def item(self, task: str, annotator: str) -> dict:
        """The item as the page shows it before an answer: content, and the classes in this reviewer's order."""
        shown = dict(self.content.get(task, {}))
        answers = shown.pop("answers", {})
        order = display_order(self.classes, task, annotator)
        return {
            "task": task,
            "question": shown.get("question"),
            "choices": [{"label": c, "text": answers.get(c)} for c in order],
        }

    def reveal(self, task: str) -> dict:
        """What the page may show once the reviewer has answered: the judges' verdicts, and the planted edit."""
        edit = self.content.get(task, {}).get("edit")
        return {"task": task, "verdicts": self.verdicts.get(task, []), "edit": edit}


def display_order(classes: list[str], task: str, annotator: str) -> list[str]:
    """The classes in the order one reviewer sees a task's candidates: a coin from sha256(annotator, task), so the
    same reviewer sees the same order after a restart and two reviewers see independent orders."""
    coin = hashlib.sha256(f"{annotator}\x00{task}".encode()).digest()[0] % 2
    return list(classes) if coin == 0 or len(classes) != 2 else list(reversed(classes))


def from_tables(audit: pd.DataFrame, votes: pd.DataFrame, items: pd.DataFrame | None = None) -> Audit:
    """An Audit from the proposal table (task, weight; content columns optional), the panel's votes (task, worker,
    label; run optional) and an optional items table (task, question, answer_<class>)."""
    tasks = audit["task"].astype(str).drop_duplicates().tolist()
    used = votes.dropna(subset=["label"]).assign(task=lambda d: d["task"].astype(str))
    classes = sorted(set(used["label"].astype(str)) - {"tie"}, key=str)
    weights = (
        dict(
            zip(
                audit["task"].astype(str),
                pd.to_numeric(audit["weight"], errors="coerce").fillna(1.0),
                strict=True,
            )
        )
        if "weight" in audit.columns
        else dict.fromkeys(tasks, 1.0)
    )
    source = audit if items is None else items
    source = source.assign(task=source["task"].astype(str)).drop_duplicates("task").set_index("task")
    content = {}
    for task in tasks:
        if task not in source.index:
            continue
        row = source.loc[task]
        answers = {c: _text(row.get(f"answer_{c}")) for c in classes}
        content[task] = {
            "question": _text(row.get("question")),
            "answers": {c: a for c, a in answers.items() if a is not None},
        }
    mine = used[used["task"].isin(tasks)]
    runs = mine["run"].astype(str) if "run" in mine.columns else pd.Series("", index=mine.index)
    verdicts: dict[str, list[list]] = {}
    for task, worker, run, label in zip(
        mine["task"], mine["worker"].astype(str), runs, mine["label"].astype(str), strict=True
    ):
        verdicts.setdefault(task, []).append([worker, run, label])
    return Audit(tasks, classes, weights, content, {t: sorted(v) for t, v in verdicts.items()})


def _text(value) -> str | None:
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value)
