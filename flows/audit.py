"""The audit flow: propose the k tasks worth labelling, or refit the consensus with the filled-in labels.

Run it twice: once without `labels` (writes the proposal csv to fill in), once with them (writes the
refitted predictions). The logic is in judgeops.tasks.aggregate.audit; this wires files, tasks and the
artifacts a person sees in the Prefect UI.
"""

from __future__ import annotations

import pandas as pd
from prefect import flow, task
from prefect.artifacts import create_table_artifact

from judgeops.tasks.aggregate import audit, scoring


@task(name="propose-audit")
def propose_audit(votes_path: str, k: int, by: str | None, strategy: str, seed: int) -> pd.DataFrame:
    return audit.propose(scoring.read_label_votes(votes_path), k, by=by, strategy=strategy, seed=seed)


@task(name="refit-with-audit")
def refit_with_audit(votes_path: str, labels_path: str) -> dict:
    labels, weights, _ = scoring.read_audit_labels(labels_path)
    return audit.refit(scoring.read_label_votes(votes_path), labels, weights)


@flow(name="audit", flow_run_name="audit-{k}-labels")
def audit_flow(
    votes: str,
    k: int = 50,
    labels: str | None = None,
    out: str = "audit.csv",
    by: str | None = None,
    strategy: str = "stratified",
    seed: int = 0,
) -> dict:
    """Without `labels`: write the k tasks to audit to `out`. With `labels`: write the refitted predictions."""
    if labels is None:
        proposal = propose_audit(votes, k, by, strategy, seed)
        proposal.to_csv(out, index=False)
        create_table_artifact(
            table=proposal.drop(columns="label").round(3).to_dict("records"),
            key="audit-proposal",
            description=f"{len(proposal)} tasks to audit ({strategy}); fill their labels in {out}",
        )
        return {"proposed": len(proposal), "out": out}
    result = refit_with_audit(votes, labels)
    result["labels"].rename("label").rename_axis("task").reset_index().to_csv(out, index=False)
    create_table_artifact(
        table=[
            {"head": h, "weighted_audit_accuracy": round(float(s), 3), "taken": h == result["head"]}
            for h, s in result["scores"].items()
        ],
        key="audit-refit",
        description=f"heads scored on {result['n_labels']} audited labels (leave-one-out for the labelled ones)",
    )
    return {"head": result["head"], "n_labels": result["n_labels"], "out": out}
