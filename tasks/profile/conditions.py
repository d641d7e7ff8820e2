"""The CAP conditions, in one table (ALGORITHMS.md §2).

Each condition turns judges' canonical verdicts into one score per judge and pair (the pair is the unit the
bootstrap resamples; a Series indexed by `BY`, every judge of the frame in one pass):
- PA (position-averaged accuracy): the mean of `correct` over the pair's AB and BA plain variants.
- strict BC (both correct): 1 when the judge is right on both members of a contrast (plain vs
  polished, plain vs padded, AB vs BA) of the same pair, averaged over the pair's contrasts.
- order accuracy: accuracy on the plain variant shown in one order.
- consistency: the same canonical choice (right or wrong) on both members of a contrast, both verdicts
  valid; stable-but-wrong = both members consistently wrong (consistency − strict BC, pair by pair, so its
  bootstrap is joint with theirs).
- C8 rationale: over the pair's correct verdicts that carry a rationale, the share whose rationale names
  the planted edit (`rationale.names_edit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import pandas as pd

from judgeops.tasks.profile.rationale import names_edit

PairScores = Callable[[pd.DataFrame], pd.Series]


BY = ["judge_id", "pair_id"]  # every condition scores each judge's pairs: one pass over many judges


def position_averaged(df: pd.DataFrame, error_type: str | None = None) -> pd.Series:
    d = df[df["presentation"] == "plain"]
    if error_type is not None:
        d = d[d["error_type"] == error_type]
    return d.groupby(BY, observed=True)["correct"].mean()


def order_accuracy(df: pd.DataFrame, order: str) -> pd.Series:
    d = df[(df["presentation"] == "plain") & (df["order"] == order)]
    return d.groupby(BY, observed=True)["correct"].mean()


def strict_both_correct(df: pd.DataFrame, contrast: str, first: str, second: str) -> pd.Series:
    """Both members of the contrast right; the other display factor is held fixed."""
    wide = _contrast(df, contrast, first, second, "correct")
    if wide.empty:
        return pd.Series(dtype=float)
    both = (wide[first].astype(bool) & wide[second].astype(bool)).astype(float)
    return both.groupby(level=BY, observed=True).mean()


def _contrast(df: pd.DataFrame, contrast: str, first: str, second: str, value: str) -> pd.DataFrame:
    """(judge_id, pair_id, the held factor) × the contrast's two members: the first non-missing `value` of each,
    rows with both."""
    held = "order" if contrast == "presentation" else "presentation"
    d = df[df[contrast].isin([first, second])]
    wide = d.groupby([*BY, held, contrast], observed=True)[value].first().unstack(contrast)
    if first not in wide or second not in wide:
        return pd.DataFrame(columns=[first, second])
    return wide.dropna(subset=[first, second])


def consistency(
    df: pd.DataFrame, contrast: str, first: str, second: str, wrong_only: bool = False
) -> pd.Series:
    """Same canonical choice on both members (both verdicts valid); `wrong_only`: and both wrong."""
    choice = df.assign(choice=df["correct"].astype(float).where(df["valid"]))
    wide = _contrast(choice, contrast, first, second, "choice")
    if wide.empty:
        return pd.Series(dtype=float)
    same = wide[first] == wide[second]
    if wrong_only:
        same &= wide[first] == 0
    return same.astype(float).groupby(level=BY, observed=True).mean()


def rationale_quality(df: pd.DataFrame) -> pd.Series:
    if not {"rationale", "edit_before", "edit_after"} <= set(df.columns):
        return pd.Series(dtype=float)  # no rationales, or no planted edit to name (a published set)
    d = df[df["correct"] & df["rationale"].notna()]
    if d.empty:
        return pd.Series(dtype=float)
    named = [
        names_edit(r, b, a) for r, b, a in zip(d["rationale"], d["edit_before"], d["edit_after"], strict=True)
    ]
    return pd.Series(named, index=d.index, dtype=float).groupby([d[c] for c in BY], observed=True).mean()


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
    Condition("C8_rationale", "rationale names the planted edit", "rationale", rationale_quality),
]
for _name, _contrast_args in {
    "C5": ("presentation", "plain", "polished"),
    "C6": ("presentation", "plain", "padded"),
    "C7": ("order", "AB", "BA"),
}.items():
    _c, _f, _s = _contrast_args
    CONDITIONS += [
        Condition(
            f"{_name}_consistency",
            f"same choice, {_f} vs {_s}",
            "consistency",
            partial(consistency, contrast=_c, first=_f, second=_s),
        ),
        Condition(
            f"{_name}_stable_wrong",
            f"consistently wrong, {_f} vs {_s}",
            "stable-but-wrong",
            partial(consistency, contrast=_c, first=_f, second=_s, wrong_only=True),
        ),
    ]
CONDITION_BY_NAME = {c.name: c for c in CONDITIONS}
ERROR_TYPE_CONDITIONS = ["C1_factual", "C2_logical", "C3_overclaim", "C4_omission"]
CONTENT_CONDITIONS = ["overall", *ERROR_TYPE_CONDITIONS]  # where label noise in construction bites
ORDER_CONDITIONS = ["order_AB", "order_BA"]
CAP = [*ERROR_TYPE_CONDITIONS, "C5_style", "C6_length", "C7_position", "C8_rationale"]
