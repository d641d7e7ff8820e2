"""Displayed variants: every presentation of every pair (plain, polished, padded) in both display orders."""

from __future__ import annotations

import pandas as pd

from judgeops.config import ConstructionConfig
from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.construct.pairs import _seed
from judgeops.tasks.construct.presentation import padded, padding_for, polished


def build_variants(pairs: pd.DataFrame, config: ConstructionConfig) -> pd.DataFrame:
    """Every presentation of every pair, in both display orders, with the gold position recorded."""
    rows = []
    for pair in pairs.itertuples(index=False):
        correct, flawed = pair.answer_correct, pair.answer_flawed
        rows += _presented(pair.pair_id, correct, flawed, True, len(correct), config)
    return pd.DataFrame(rows)


def _presented(pair_id: str, one: str, two: str, one_better: bool, pad_len: int, config) -> list[dict]:
    """Variant rows of one pair: each configured presentation (plain, polished, padded: the same rewrite of
    both answers) in each configured order (AB shows `one` first), with the better answer's position."""
    shown = {"plain": (one, two)}
    if "polished" in config.presentations:
        shown["polished"] = (polished(one), polished(two))
    if "padded" in config.presentations:
        prefix, suffix = padding_for(pad_len, _seed(config.seed, pair_id, "padding"))
        shown["padded"] = (padded(one, prefix, suffix), padded(two, prefix, suffix))
    rows = []
    for presentation in config.presentations:
        first, second = shown[presentation]
        for order in config.orders:
            a, b = (first, second) if order == "AB" else (second, first)
            rows.append(
                {
                    "variant_id": f"{pair_id}:{presentation}:{order}",
                    "pair_id": pair_id,
                    "presentation": presentation,
                    "order": order,
                    "text_a": a,
                    "text_b": b,
                    "gold_position": "A" if one_better == (order == "AB") else "B",
                }
            )
    return rows


def external_variants(external_pairs: pd.DataFrame, config: ConstructionConfig) -> pd.DataFrame:
    """Published pairs as displayed prompts, in each configured order and presentation, with the gold position.

    They have no planted edit: the order contrast (C7) is direct; the polished and padded presentations are
    generated here by the same deterministic rewrites as judgerEva's, so C5/C6 on a published set are
    "augmented" evidence."""
    rows = []
    for pair in external_pairs.itertuples(index=False):
        longer = max(len(pair.answer_1), len(pair.answer_2))
        rows += _presented(pair.pair_id, pair.answer_1, pair.answer_2, pair.gold == "1", longer, config)
    return pd.DataFrame(rows, columns=schema_for("variants").schema.names)
