"""An evaluation run's audit: the k tasks (one presentation of one pair, `pair:presentation`, as the aggregate stage
names them) whose labels would inform the consensus most, with what a person needs to label them — the question,
both candidates in the canonical frame of the votes (class A is the candidate the seeded coin put first), the
judges' verdicts and the planted edit for after the answer — and, once people have answered, their labels matched
back to the run's tasks.

A task's key on the page and in the label log is a hash of what the reviewer saw (presentation, question,
candidate A, candidate B): a later run, a rerun or a backfill that shows the same texts in the same frame finds the same labels, and one
whose texts changed (a new construction, another coin seed) does not reuse a label given to something else.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd

from judgeops.data_contracts.labels import NO_LABEL
from judgeops.schemas.stream import Rows
from judgeops.tasks.aggregate import audit as audit_mod
from judgeops.tasks.aggregate.agreement import majority_labels
from judgeops.tasks.aggregate.panel import canonical_votes
from judgeops.tasks.labelling import log
from judgeops.tasks.labelling.items import Audit
from judgeops.tasks.report.samples import pair_marks

CLASSES = ["A", "B"]  # the canonical frame of the votes (aggregate/panel.py)


def content_key(presentation: str, question: str, answer_a: str, answer_b: str) -> str:
    """What the reviewer sees, hashed: the task's key on the page and in the label log (module docstring)."""
    shown = "\x00".join([presentation, question, answer_a, answer_b])
    return hashlib.sha256(shown.encode()).hexdigest()[:24]


def named_votes(verdicts: Rows, variants: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """canonical_votes with tasks and items as names (`pair:presentation`, pair id) instead of codes."""
    votes, variant = canonical_votes(verdicts, variants, seed)
    task_names = variant.drop_duplicates("code").set_index("code")["task"]
    votes["task"] = task_names.reindex(votes["task"]).to_numpy()
    votes["item"] = pd.Index(sorted(variant["item"].unique())).take(votes["item"].to_numpy())
    return votes.dropna(subset=["label"]), variant


def propose_run_audit(
    verdicts: Rows,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    items: pd.DataFrame,
    k: int,
    strategy: str = "stratified",
    coin_seed: int = 0,
    seed: int = 0,
    external_pairs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The `audit` artifact's rows: audit.propose over the run's votes, with each task's content (module docstring):
    a judgerEva pair's question from its item, a published pair's (`external_pairs`) its own."""
    votes, variant = named_votes(verdicts, variants, coin_seed)
    proposal = audit_mod.propose(votes, min(k, votes["task"].nunique()), strategy=strategy, seed=seed)
    shown = variants.set_index("variant_id")  # `variant` is indexed by variant id too
    ab = shown.assign(task=variant["task"], first_is_canonical=variant["first_is_canonical"])
    ab = ab[ab["order"] == "AB"].drop_duplicates("task").set_index("task")
    pair_rows = pairs.set_index("pair_id")
    questions = items.set_index("item_id")["question"] if "question" in items else pd.Series(dtype=object)
    published = (
        external_pairs.set_index("pair_id")["question"]
        if external_pairs is not None
        else pd.Series(dtype=object)
    )
    rows = []
    for r in proposal.itertuples(index=False):
        v = ab.loc[r.task]
        a, b = (v["text_a"], v["text_b"]) if v["first_is_canonical"] else (v["text_b"], v["text_a"])
        pair = pair_rows.loc[v["pair_id"]] if v["pair_id"] in pair_rows.index else None
        question = ""
        if pair is not None and "item_id" in pair and pair["item_id"] in questions.index:
            question = str(questions[pair["item_id"]])
        elif v["pair_id"] in published.index and isinstance(published[v["pair_id"]], str):
            question = published[v["pair_id"]]
        edit_correct = edit_flawed = None
        if pair is not None and isinstance(pair.get("answer_correct"), str):
            edit_correct, edit_flawed = pair_marks(pair)
        said = votes.loc[votes["task"] == r.task, ["worker", "run", "label"]].astype(str)
        rows.append(
            {
                "task": content_key(str(v["presentation"]), question, str(a), str(b)),
                "run_task": r.task,
                "pair_id": v["pair_id"],
                "presentation": v["presentation"],
                "weight": float(r.weight),
                "consensus": str(r.consensus),
                "posterior": float(r.posterior),
                "question": question,
                "answer_A": str(a),
                "answer_B": str(b),
                "edit_correct_html": edit_correct,
                "edit_flawed_html": edit_flawed,
                "verdicts_json": json.dumps(sorted(said.values.tolist())),
            }
        )
    return pd.DataFrame(rows)


def run_audit(audit: pd.DataFrame) -> Audit:
    """The annotation page's Audit of a run's `audit` artifact."""
    content = {}
    for r in audit.to_dict("records"):
        edit = None
        if r.get("edit_correct_html"):
            edit = {"correct_html": r["edit_correct_html"], "flawed_html": r["edit_flawed_html"]}
        content[r["task"]] = {
            "question": r["question"],
            "answers": {"A": r["answer_A"], "B": r["answer_B"]},
            "edit": edit,
        }
    return Audit(
        tasks=audit["task"].tolist(),
        classes=CLASSES,
        weights=dict(zip(audit["task"], audit["weight"].astype(float), strict=True)),
        content=content,
        verdicts={r["task"]: json.loads(r["verdicts_json"]) for r in audit.to_dict("records")},
    )


def labels_for(audit: pd.DataFrame, log_path: str) -> pd.DataFrame:
    """The `audit_labels` rows for this audit: the log's latest answer of each person (and adjudicator) on its
    tasks, every record checked by the labels contract's rules (a record that breaks one stays out)."""
    records, _ = log.read(log_path)
    mine = log.latest(records[records["task"].isin(audit["task"])]) if len(records) else records
    good, _ = log.checked(mine, audit["task"], CLASSES)
    return good.reset_index(drop=True)


def labelled_tasks(labels: pd.DataFrame) -> int:
    """How many tasks have a usable label: an adjudicated one, or a strict majority of the people (tie and skip
    are answers, not labels)."""
    if labels.empty:
        return 0
    usable = labels[~labels["label"].isin(NO_LABEL)]
    settled = set(usable.loc[usable["adjudicated"], "task"])
    people = usable.loc[~usable["adjudicated"], ["task", "annotator", "label"]]
    majority = set(majority_labels(people).dropna().index) if len(people) else set()
    return len(settled | majority)


def canonical_gold(variants: pd.DataFrame, variant: pd.DataFrame) -> pd.Series:
    """task → the class of the correct candidate in the votes' frame, where the variants know it (judgerEva pairs)."""
    shown = variants.set_index("variant_id").assign(task=variant["task"], first=variant["first_is_canonical"])
    shown = shown[shown["gold_position"].isin(CLASSES)].drop_duplicates("task")
    flip = {"A": "B", "B": "A"}
    gold = [g if first else flip[g] for g, first in zip(shown["gold_position"], shown["first"], strict=True)]
    return pd.Series(gold, index=shown["task"].to_numpy())


def check_run_with_people(
    audit: pd.DataFrame,
    labels: pd.DataFrame,
    verdicts: Rows,
    variants: pd.DataFrame,
    coin_seed: int = 0,
    target_error: float | None = None,
    delta: float = 0.1,
) -> dict[str, pd.DataFrame]:
    """The people stage's artifacts: `audit_labels` (the labels used), `human_agreement` (every judge and label-free
    consensus against them), `audit_summary` (one row: the people's agreement, the refit consensus and, with a
    target error, the selective one — each also scored on judgerEva's answers where the pairs know them) and
    `estimates` (the prediction-powered accuracies of the consensus and every judge on the whole workload)."""
    from judgeops.tasks.aggregate.scoring import parse_audit_labels
    from judgeops.tasks.aggregate.selective import ABSTAIN
    from judgeops.tasks.aggregate.with_people import check_with_people

    votes, variant = named_votes(verdicts, variants, coin_seed)
    to_run = dict(zip(audit["task"], audit["run_task"], strict=True))
    table = labels.assign(task=labels["task"].map(to_run))[
        ["task", "label", "annotator", "adjudicated", "weight"]
    ]
    human, weights, people = parse_audit_labels(table, "the label log", weightless=True)
    chosen, summary, refit = check_with_people(votes, human, weights, people, "auto", target_error, delta)
    gold = canonical_gold(variants, variant)
    known = gold.index.intersection(chosen.index)
    decided = chosen[known][chosen[known] != ABSTAIN]
    people_summary = summary.get("annotators") or {}
    selective = summary.get("selective") or {}
    row = {
        "n_audit": len(audit),
        "n_labels": summary["n_labels"],
        "head": summary["head"],
        "n_annotators": int(labels.loc[~labels["adjudicated"], "annotator"].nunique()),
        "people_kappa": people_summary.get("kappa"),
        "people_alpha": people_summary.get("alpha"),
        "n_conflicts": len(people_summary.get("conflicts", [])),
        "target_error": target_error,
        "delta": delta if target_error is not None else None,
        "coverage": selective.get("coverage"),
        "threshold": selective.get("threshold"),
        "abstained": selective.get("abstained"),
        "accuracy": float((refit[known] == gold[known]).mean()) if len(known) else None,
        "selective_accuracy": (
            float((decided == gold[decided.index]).mean())
            if target_error is not None and len(decided)
            else None
        ),
    }
    out = {
        "audit_labels": labels[log.COLUMNS],
        "human_agreement": pd.DataFrame(summary["human_agreement"]),
        "audit_summary": pd.DataFrame([row]),
    }
    if "estimates" in summary:  # from 2 usable labels on
        from judgeops.tasks.aggregate.audited_estimates import estimate_rows

        out["estimates"] = estimate_rows(summary)
    return out
