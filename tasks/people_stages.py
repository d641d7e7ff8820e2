"""The evaluate flow's people-in-the-loop stages (config `audit:`), thin Prefect tasks like every stage (runner.py):

- `audit`: the k tasks of the run worth a person's label, with what the annotation page shows of them
  (labelling/run_audit.py: propose_run_audit);
- `people`: the labels found in the label log for them — checked by the labels contract, written as
  `audit_labels` — refit the consensus, score every judge and label-free consensus against people
  (`human_agreement`, also a Prefect table artifact) and, with `audit.target_error`, certify a selective
  consensus (`audit_summary`). Its key includes a hash of the labels it read: new labels, a new result.

Waiting for the labels is the flow's (flows/evaluate.py); counting them is here.
"""

from __future__ import annotations

import pandas as pd
from prefect import task
from prefect.artifacts import create_table_artifact
from prefect.cache_policies import NO_CACHE

from judgeops.config import AuditConfig
from judgeops.schemas.store import ArtifactStore, stable_hash
from judgeops.tasks.labelling.run_audit import (
    check_run_with_people,
    labelled_tasks,
    labels_for,
    propose_run_audit,
)
from judgeops.tasks.log import logger
from judgeops.tasks.runner import Refs, Stage, run_stage

AUDIT = Stage(
    "audit",
    ("judgeops.tasks.labelling.run_audit",),
    ("verdicts", "variants", "pairs", "items"),
    ("external_pairs",),
    columns={
        "verdicts": ("judge_id", "variant_id", "verdict", "p_first"),
        "variants": ("variant_id", "pair_id", "presentation", "order", "text_a", "text_b"),
        "external_pairs": ("pair_id", "question"),
        "pairs": (
            "pair_id",
            "item_id",
            "answer_correct",
            "edit_start",
            "edit_end",
            "edit_before",
            "edit_after",
        ),
        "items": ("item_id", "question"),
    },
    streamed=("verdicts",),
)
PEOPLE = Stage(
    "people",
    ("judgeops.tasks.labelling.run_audit",),
    ("audit", "verdicts", "variants"),
    columns={
        "verdicts": ("judge_id", "variant_id", "verdict", "p_first"),
        "variants": ("variant_id", "pair_id", "presentation", "order", "gold_position"),
    },
    streamed=("verdicts",),
)


def _proposal(config: AuditConfig, coin_seed: int) -> dict:
    return {"k": config.k, "strategy": config.strategy, "seed": config.seed, "coin_seed": coin_seed}


@task(name="audit", cache_policy=NO_CACHE)
def audit_stage(
    store: ArtifactStore, artifacts: Refs, config: AuditConfig, coin_seed: int, reuse: bool = True
) -> Refs:
    """Propose the run's audit (`audit` artifact)."""

    def compute(t: dict) -> dict[str, pd.DataFrame]:
        return {
            "audit": propose_run_audit(
                t["verdicts"],
                t["variants"],
                t["pairs"],
                t["items"],
                config.k,
                config.strategy,
                coin_seed,
                config.seed,
                t.get("external_pairs"),
            )
        }

    refs = run_stage(
        store, AUDIT, AUDIT.select(artifacts), {"audit": _proposal(config, coin_seed)}, compute, reuse
    )
    logger().info(
        "audit: %d tasks to label; label them with `judgeops label --run %s` (labels: %s)",
        refs["audit"].rows,
        store.run_id,
        config.labels,
    )
    return refs


def labels_in(audit: pd.DataFrame, config: AuditConfig) -> tuple[pd.DataFrame, int]:
    """(the log's labels for the run's audit — the `audit` artifact, read —, how many of its tasks have a usable
    label)."""
    labels = labels_for(audit, config.labels)
    return labels, labelled_tasks(labels)


@task(name="people", cache_policy=NO_CACHE)
def people_stage(
    store: ArtifactStore, artifacts: Refs, config: AuditConfig, coin_seed: int, reuse: bool = True
) -> Refs:
    """The consensus checked by the people who labelled the audit; nothing when no task has a label yet."""
    labels, n = labels_in(store.read_pandas(artifacts["audit"]), config)
    if n == 0:
        logger().info(
            "people: no label yet for the %d audited tasks (`judgeops label --run %s`)",
            config.k,
            store.run_id,
        )
        return {}

    def compute(t: dict) -> dict[str, pd.DataFrame]:
        return check_run_with_people(
            t["audit"], labels, t["verdicts"], t["variants"], coin_seed, config.target_error, config.delta
        )

    params = {
        "audit": _proposal(config, coin_seed),
        "target_error": config.target_error,
        "delta": config.delta,
    }
    extra = {"labels": stable_hash(labels.drop(columns="source").to_dict("records"))}
    refs = run_stage(store, PEOPLE, PEOPLE.select(artifacts), params, compute, reuse, extra_key=extra)
    agreement = store.read_pandas(refs["human_agreement"])
    create_table_artifact(
        table=agreement.round(3).astype(object).where(agreement.notna(), None).to_dict("records"),
        key="human-agreement",
        description=f"judges and consensus against people's labels on {n} audited tasks (weighted; 90 % intervals)",
    )
    if "estimates" in refs:
        estimates = store.read_pandas(refs["estimates"])
        create_table_artifact(
            table=estimates.round(4).astype(object).where(estimates.notna(), None).to_dict("records"),
            key="estimates",
            description=(
                f"prediction-powered accuracies on the whole workload from {n} labels and every verdict "
                "(90 % intervals; label_budget: labels in all for ± half_width)"
            ),
        )
    return refs
