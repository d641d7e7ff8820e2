"""The words every part of judgeops shares: verdicts, ties, display orders, the panel's judge ids, and the
one place where a displayed verdict becomes "the correct answer won".

Judges write these words, aggregation reads and writes them, profiling and the report read them. Each
imports them from here and none imports another part for them, so the parts stay independent
(ARCHITECTURE.md).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.schemas.artifacts import VERDICTS

# a pairwise verdict names the candidate shown first ("A") or second ("B"), or neither (a tie); an examinee
# answer judged alone (protocol response_check) is correct or incorrect. The values are the `verdict`
# column's (schemas/artifacts.py); display orders: "AB" shows the correct answer first, "BA" second.
FIRST, SECOND, TIE, CORRECT, INCORRECT = VERDICTS

# a consensus row that is not a decision: no judge voted, or the method could not fit the panel
NO_VOTES = "no_votes"
UNAVAILABLE = "unavailable"

# the panel's consensus is profiled like a judge, under the id `panel:<method>`
PANEL_PREFIX = "panel:"


def panel_judge_id(method: str | pd.Series) -> str | pd.Series:
    """The judge id under which a consensus method is profiled and reported."""
    return PANEL_PREFIX + method


def is_panel(judge_ids: pd.Series) -> pd.Series:
    """True for the consensus methods' rows of a frame with a judge_id column."""
    return judge_ids.str.startswith(PANEL_PREFIX)


def to_canonical(verdicts: pd.DataFrame, variants: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Map display-frame verdicts to the canonical frame: did the correct answer win?

    Adds pair_id, error_type, presentation, order, `correct` (True only when the verdict names the
    gold position: ties, unparsable outputs and errors count as wrong) and `p_correct` (the judge's
    probability that the correct answer is better; NaN where it gave none).
    """
    meta = variants[["variant_id", "pair_id", "presentation", "order", "gold_position"]].merge(
        pairs[["pair_id", "error_type", "domain"]], on="pair_id"
    )  # inner: only the variants of these pairs (judgerEva, or one published set)
    out = verdicts.merge(meta, on="variant_id", how="inner", validate="many_to_one")
    out["correct"] = (out["verdict"] == out["gold_position"]).astype(bool)
    out["p_correct"] = np.where(out["gold_position"] == FIRST, out["p_first"], 1 - out["p_first"])
    return out


def consensus_as_verdicts(consensus: pd.DataFrame) -> pd.DataFrame:
    """The panel's decisions shaped like verdicts (judge_id `panel:<method>`), so they are profiled like a judge.

    A method that could not fit the panel (label `unavailable`) made no decision and is left out."""
    consensus = consensus[consensus["label"] != UNAVAILABLE]
    return pd.DataFrame(
        {
            "judge_id": panel_judge_id(consensus["method"]),
            "variant_id": consensus["unit_id"],
            "verdict": consensus["label"].where(consensus["label"].isin([FIRST, SECOND, TIE])),
            "p_first": consensus["posterior"],
        }
    )
