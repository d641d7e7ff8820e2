"""judgerEva construction: items → plain pairs (pairs.py) → displayed variants (variants.py).

`construct(items, config)` returns the `pairs`, `variants` and `construction_log` tables.
"""

from __future__ import annotations

import pandas as pd

from judgeops.config import ConstructionConfig
from judgeops.tasks.construct.pairs import HARD, LLM, LLM_EXPAND, build_pairs
from judgeops.tasks.construct.variants import build_variants, external_variants


def construct(
    items: pd.DataFrame,
    config: ConstructionConfig,
    external_pairs: pd.DataFrame | None = None,
    cache_path: str | None = None,
) -> dict[str, pd.DataFrame]:
    """judgerEva pairs and their variants; published pairs, when given, join the variants as they are.
    `cache_path`: the judge-call cache, for the LLM generator's calls."""
    pairs, log = build_pairs(items, config, cache_path=cache_path)
    if config.hard_constructed:
        hard_pairs, hard_log = build_pairs(items, config, branch=HARD)
        pairs = pd.concat([pairs, hard_pairs], ignore_index=True)
        log = pd.concat([log, hard_log], ignore_index=True)
    if pairs.empty:
        raise ValueError(
            f"construction produced no pairs from {len(items)} items; reasons: "
            f"{log['reason'].value_counts().head(5).to_dict()}"
        )
    variants = build_variants(pairs, config)
    if external_pairs is not None and len(external_pairs):
        variants = pd.concat([variants, external_variants(external_pairs, config)], ignore_index=True)
    return {"pairs": pairs, "variants": variants, "construction_log": log}


def construction_summary(pairs: pd.DataFrame, log: pd.DataFrame) -> pd.DataFrame:
    """Per error type: accepted pairs per domain, and how many attempts were skipped or rejected by the gate
    (the rule-based operators); with the LLM generator, its own outcomes in `llm_*` columns."""
    counts = pd.crosstab(pairs["error_type"], pairs["domain"])
    rules = log[~log["branch"].isin([LLM, LLM_EXPAND])]
    outcomes = rules.pivot_table(
        index="error_type", columns="status", values="item_id", aggfunc="count", fill_value=0
    )
    table = counts.join(outcomes, how="outer").fillna(0).astype(int)
    gated = table.get("accepted", 0) + table.get("rejected", 0)  # skipped attempts never reached the gate
    table["gate_acceptance"] = (table.get("accepted", 0) / gated.where(gated > 0)).round(3)
    tried = log[log["branch"] == LLM]
    if len(tried):
        llm = tried.pivot_table(
            index="error_type", columns="status", values="item_id", aggfunc="count", fill_value=0
        )
        llm = llm.reindex(columns=["accepted", "rejected", "skipped"], fill_value=0).add_prefix("llm_")
        table = table.join(llm, how="left").fillna({c: 0 for c in llm.columns})
        table[llm.columns] = table[llm.columns].astype(int)
        table["llm_acceptance"] = (table["llm_accepted"] / llm.sum(axis=1).reindex(table.index)).round(3)
    written = log[log["branch"] == LLM_EXPAND]
    if len(written):  # answer A written by the LLM: used, or kept the template (by the item's assigned type)
        a = pd.crosstab(written["error_type"], written["status"]).reindex(
            columns=["accepted", "rejected"], fill_value=0
        )
        table["llm_answer_a_used"] = a["accepted"].reindex(table.index).fillna(0).astype(int)
        table["llm_answer_a_rejected"] = a["rejected"].reindex(table.index).fillna(0).astype(int)
    return table.reset_index()
