"""Reading a user's vote and truth tables, and scoring a consensus against truth, with no silent failure.

- Labels of any kind compare by one key (`label_key`): booleans as "true"/"false", whole numbers as "0", "1",
  strings stripped. So 0/1 votes against 0/1 truth work, and 0/1 votes against A/B truth are a label-space
  error, never an accuracy of 0.
- A label equal to `tie_label` is a judge's explicit tie: no vote for either side, counted and reported.
- Truth is checked against the tasks that were voted on: tasks the votes do not know, tasks without truth and
  duplicated tasks are counted and refused (unless `allow_partial`, which scores only the usable tasks).
- Accuracy counts a task the method ties (or cannot decide) as wrong; `accuracy_decided` is over the decided
  tasks only, and `coverage` and `ties` say how many those are, so the two are never confused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgeops.schemas.names import file_kind
from judgeops.tasks.aggregate._base import TIE


class InputError(ValueError):
    """A vote or truth table judgeops cannot use; the message names the file and what is wrong."""


def read_table(path: str, what: str) -> pd.DataFrame:
    """A csv or parquet table, or an InputError that names the file in one line."""
    file, kind = Path(path), file_kind(path)
    if kind == "unusable":
        raise InputError(f"{what} file {str(path)[:120]!r}: not a usable path")
    if kind == "missing":
        raise InputError(f"{what} file not found: {file}")
    if kind == "other":
        raise InputError(f"{file}: the {what} file is not a regular file")
    if file.suffix not in (".csv", ".parquet"):
        raise InputError(f"{file}: expected a .csv or .parquet file")
    try:
        table = pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)
    except pd.errors.EmptyDataError:
        raise InputError(f"{file}: the {what} file is empty") from None
    except Exception as exc:  # noqa: BLE001 - any reader failure becomes one line naming the file
        raise InputError(f"{file}: cannot read the {what} file ({type(exc).__name__}: {exc})") from None
    if table.empty:
        raise InputError(f"{file}: the {what} file has a header but no rows")
    return table


def label_key(values: pd.Series) -> pd.Series:
    """Labels as comparable strings: True → "true", 1 / 1.0 → "1", " yes " → "yes"; missing stays missing."""

    def key(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return None
        if isinstance(v, bool | np.bool_):
            return "true" if v else "false"
        if isinstance(v, int | np.integer):
            return str(int(v))
        if isinstance(v, float | np.floating):
            return str(int(v)) if float(v).is_integer() else repr(float(v))
        return str(v).strip()

    return values.map(key).astype(object)


def prepare_votes(
    votes: pd.DataFrame, kind: str, file: str, tie_label: str | None = "tie"
) -> tuple[pd.DataFrame, int]:
    """(the usable vote rows with string task ids and keyed labels, the number of explicit tie rows)."""
    missing = [c for c in ("task", "worker", kind) if c not in votes.columns]
    if missing:
        raise InputError(f"{file}: expected columns task, worker, {kind}; missing {missing}")
    votes = votes.assign(task=votes["task"].astype(str))
    ties = 0
    if kind == "label":
        keyed = label_key(votes["label"])
        tied = keyed == tie_label if tie_label is not None else pd.Series(False, index=votes.index)
        ties = int(tied.sum())
        votes = votes.assign(label=keyed)[~tied]
        if "shown_first" in votes.columns:  # names a label: keyed the same way, or 0/1 labels never match it
            votes = votes.assign(shown_first=label_key(votes["shown_first"]))
    if "run" in votes.columns:
        votes = votes.assign(run=votes["run"].astype(str))
    return votes, ties


def read_label_votes(path: str, tie_label: str | None = "tie") -> pd.DataFrame:
    """A vote file read for the label methods (keyed labels, explicit ties left out)."""
    return prepare_votes(read_table(path, "votes"), "label", path, tie_label)[0]


# a reviewer's "cannot say" (skipped) or "both equally good": no evidence either way
NO_LABEL = ("skip", "tie")


def read_audit_labels(path: str) -> tuple[pd.Series, pd.Series | None, pd.DataFrame | None]:
    """(task → audited label, task → weight or None, the people's labels or None) from a filled audit csv; only
    the filled rows, `skip` and `tie` left out. With an `annotator` column (several people per task) the label
    is the strict majority of the people (agreement.annotators; a task without one waits for adjudication and
    is left out, unless an `adjudicated` row settles it) and the third item is the long table (task, annotator,
    label) for their agreement."""
    return parse_audit_labels(read_table(path, "audit labels"), path)


MAX_LABEL_ROWS = 200_000  # an audit labels hundreds to thousands of tasks, by a handful of people each
MAX_ANNOTATORS = 1_000  # their agreement is a tasks × people table


def parse_audit_labels(
    table: pd.DataFrame, path: str, weightless: bool = False
) -> tuple[pd.Series, pd.Series | None, pd.DataFrame | None]:
    """`read_audit_labels` on a table already read (e.g. the annotation page's label log: api/people.py). Refused
    with one line: more than MAX_LABEL_ROWS rows or MAX_ANNOTATORS people (a 2,000,000-row file ran silent for
    over 10 minutes), a weight that is not a positive finite number (it was used: -5, 0, NaN). `weightless`: a
    missing weight is allowed (weight 1: a label given to another run's audit, as the people stage reads them)."""
    if not {"task", "label"} <= set(table.columns):
        raise InputError(f"{path}: expected columns task, label (and weight from propose)")
    if len(table) > MAX_LABEL_ROWS:
        raise InputError(
            f"{path}: {len(table):,} rows, more than the {MAX_LABEL_ROWS:,} an audit's labels may have (an audit "
            "labels hundreds to thousands of tasks): is it the right file?"
        )
    table = table.assign(task=table["task"].astype(str), label=label_key(table["label"]))
    filled = table.dropna(subset=["label"])
    filled = filled[~filled["label"].str.strip().isin(["", *NO_LABEL])]
    if filled.empty:
        raise InputError(f"{path}: no label is filled in")
    if "weight" in filled.columns:
        weight = pd.to_numeric(filled["weight"], errors="coerce")
        bad = ~(np.isfinite(weight) & (weight > 0))
        if weightless:  # only a weight that is there and wrong
            bad &= filled["weight"].notna()
        if bad.any():
            row = filled.index[bad.to_numpy()][0]
            where = filled["source"][row] if "source" in filled.columns else f"row {int(row) + 2}"
            value = filled["weight"][row]
            shown = repr(value) if isinstance(value, str) else str(value)
            raise InputError(
                f"{path}, {where}, field 'weight': {shown} is not a positive finite number "
                "(an inclusion weight: its stratum's size over its sample)"
            )
        filled = filled.assign(weight=weight)
    if "annotator" in filled.columns and filled["annotator"].nunique() > MAX_ANNOTATORS:
        raise InputError(
            f"{path}, field 'annotator': {filled['annotator'].nunique():,} people, more than the "
            f"{MAX_ANNOTATORS:,} whose agreement an audit computes"
        )
    people = None
    if "annotator" in filled.columns:
        from judgeops.tasks.aggregate.agreement import majority_labels

        people = filled.assign(annotator=filled["annotator"].fillna("").astype(str))
        nameless = people.index[people["annotator"].str.strip() == ""]
        if len(nameless):
            raise InputError(f"{path}, row {int(nameless[0]) + 2}, field 'annotator': empty")
        flag = people["adjudicated"] if "adjudicated" in people else pd.Series(False, index=people.index)
        settled = flag.fillna(False).astype(bool)
        adjudicated = (
            majority_labels(people.loc[~settled, ["task", "annotator", "label"]])
            if (~settled).any()
            else pd.Series(dtype=object)
        )
        # an adjudicator's (latest) label settles its task, conflict or not
        final = people[settled].drop_duplicates("task", keep="last").set_index("task")["label"]
        adjudicated = final.combine_first(adjudicated)
        people = people[~settled]
        weights = filled.groupby("task")["weight"].first() if "weight" in filled.columns else None
        labels = adjudicated.dropna().rename("label")
        if labels.empty:
            raise InputError(f"{path}: no task has a majority label among its annotators")
        return labels, None if weights is None else weights.reindex(labels.index), people
    duplicated = filled["task"].duplicated()
    if duplicated.any():
        row = int(filled.index[duplicated.to_numpy()][0]) + 2
        raise InputError(
            f"{path}, row {row}, field 'task': {filled['task'][duplicated].iloc[0]!r} is labelled twice "
            "(several people per task: add an `annotator` column)"
        )
    filled = filled.set_index("task")
    return filled["label"], filled["weight"] if "weight" in filled.columns else None, None


def check_truth(
    table: pd.DataFrame, tasks: pd.Index, file: str, kind: str = "label", allow_partial: bool = False
) -> pd.Series:
    """Truth per task (keyed labels, or scores), checked against the voted tasks."""
    if "task" not in table.columns or kind not in table.columns:
        raise InputError(f"{file}: expected columns task, {kind}")
    table = table.assign(task=table["task"].astype(str))
    values = label_key(table[kind]) if kind == "label" else pd.to_numeric(table[kind], errors="coerce")
    truth = pd.Series(values.to_numpy(), index=table["task"].to_numpy()).dropna()
    duplicated = truth.index[truth.index.duplicated(keep=False)].unique()
    known = pd.Index(tasks.astype(str))
    unknown = truth.index.difference(known).unique()
    missing = known.difference(truth.index)
    problems = []
    if len(duplicated):
        problems.append(f"{len(duplicated)} duplicated tasks (e.g. {list(duplicated[:3])})")
    if len(unknown):
        problems.append(f"{len(unknown)} tasks not in the votes (e.g. {list(unknown[:3])})")
    if len(missing):
        problems.append(f"{len(missing)} voted tasks without truth (e.g. {list(missing[:3])})")
    if problems and not allow_partial:
        raise InputError(
            f"{file}: " + "; ".join(problems) + " (--allow-partial-truth scores the usable tasks)"
        )
    truth = truth[~truth.index.isin(duplicated)]
    return truth[truth.index.isin(known)]


def score_labels(labels: pd.Series, truth: pd.Series, label_space: list, file: str) -> dict:
    """accuracy (ties and undecided count wrong), accuracy_decided, coverage, ties, n — or an InputError when
    the truth's labels are not labels the votes use."""
    outside = sorted(set(truth.unique()) - set(label_space), key=str)
    if outside:
        raise InputError(
            f"{file}: truth labels {outside[:5]} are not labels the votes use ({sorted(label_space, key=str)[:5]}); "
            "the two files must name the classes the same way"
        )
    pred = label_key(labels).reindex(truth.index)
    decided = pred.notna() & (pred != TIE)
    right = (pred == truth) & decided
    n = len(truth)
    return {
        "n": n,
        "accuracy": float(right.mean()) if n else float("nan"),
        "accuracy_decided": float(right[decided].mean()) if decided.any() else float("nan"),
        "coverage": float(decided.mean()) if n else float("nan"),
        "ties": int((pred == TIE).sum()),
        "undecided": int(pred.isna().sum()),
    }


def score_scores(scores: pd.Series, truth: pd.Series) -> dict:
    from scipy.stats import kendalltau  # lazy: scipy.stats adds ~0.6 s to every `judgeops aggregate`

    pred = scores.reindex(truth.index)
    answered = pred.notna()
    return {
        "n": len(truth),
        "mae": float((pred[answered] - truth[answered]).abs().mean()),
        "kendall_tau": float(kendalltau(pred[answered], truth[answered]).statistic),
        "coverage": float(answered.mean()),
    }
