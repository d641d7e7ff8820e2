"""The CAP conditions, in one table (ALGORITHMS.md §2).

Each condition turns one judge's canonical verdicts into one score per pair (the unit the
bootstrap resamples):
- PA (position-averaged accuracy): the mean of `correct` over the pair's AB and BA plain variants.
- strict BC (both correct): 1 when the judge is right on both members of a contrast (plain vs
  polished, plain vs padded, AB vs BA) of the same pair, averaged over the pair's contrasts.
- order accuracy: accuracy on the plain variant shown in one order.
C8 (rationale quality) needs the rationale check of issue 7 and is not computed yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd

PairScores = Callable[[pd.DataFrame], pd.Series]


def position_averaged(df: pd.DataFrame, error_type: str | None = None) -> pd.Series:
    d = df[df["presentation"] == "plain"]
    if error_type is not None:
        d = d[d["error_type"] == error_type]
    return d.groupby("pair_id")["correct"].mean()


def order_accuracy(df: pd.DataFrame, order: str) -> pd.Series:
    d = df[(df["presentation"] == "plain") & (df["order"] == order)]
    return d.groupby("pair_id")["correct"].mean()


def strict_both_correct(df: pd.DataFrame, contrast: str, first: str, second: str) -> pd.Series:
    """Both members of the contrast right; the other display factor is held fixed."""
    held = "order" if contrast == "presentation" else "presentation"
    d = df[df[contrast].isin([first, second])]
    wide = d.pivot_table(index=["pair_id", held], columns=contrast, values="correct", aggfunc="first")
    if first not in wide or second not in wide:
        return pd.Series(dtype=float)
    wide = wide.dropna(subset=[first, second])
    both = (wide[first].astype(bool) & wide[second].astype(bool)).astype(float)
    return both.groupby(level="pair_id").mean()


@dataclass(frozen=True)
class Condition:
    name: str
    label: str
    operator: str
    pair_scores: PairScores


CONDITIONS: list[Condition] = [
    Condition("overall", "all plain pairs", "PA", position_averaged),
    Condition(
        "C1_factual",
        "factual fabrication",
        "PA",
        partial(position_averaged, error_type="factual_fabrication"),
    ),
    Condition(
        "C2_logical", "logical reversal", "PA", partial(position_averaged, error_type="logical_reversal")
    ),
    Condition("C3_overclaim", "overclaim", "PA", partial(position_averaged, error_type="overclaim")),
    Condition(
        "C4_omission", "critical omission", "PA", partial(position_averaged, error_type="critical_omission")
    ),
    Condition(
        "C5_style",
        "plain vs polished",
        "strict BC",
        partial(strict_both_correct, contrast="presentation", first="plain", second="polished"),
    ),
    Condition(
        "C6_length",
        "plain vs padded",
        "strict BC",
        partial(strict_both_correct, contrast="presentation", first="plain", second="padded"),
    ),
    Condition(
        "C7_position",
        "AB vs BA",
        "strict BC",
        partial(strict_both_correct, contrast="order", first="AB", second="BA"),
    ),
    Condition("order_AB", "correct answer shown first", "accuracy", partial(order_accuracy, order="AB")),
    Condition("order_BA", "correct answer shown second", "accuracy", partial(order_accuracy, order="BA")),
]
CONDITION_BY_NAME = {c.name: c for c in CONDITIONS}
ERROR_TYPE_CONDITIONS = ["C1_factual", "C2_logical", "C3_overclaim", "C4_omission"]
ORDER_CONDITIONS = ["order_AB", "order_BA"]
