"""Hard subsets. Hard-Empirical: the plain pairs that a reference pool of judges gets wrong.

(Hard-Constructed, the judge-free branch with subtler edits, is still to come: issue 4.)
"""

from __future__ import annotations

import pandas as pd

from judgeops.tasks.judges import to_canonical
from judgeops.tasks.profile import complete_grid


def hard_empirical(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    reference_judges: list[str],
    max_accuracy: float = 0.5,
) -> pd.Series:
    """pair_ids whose plain variants the reference pool gets right at most `max_accuracy` of the time
    (mean over judges × display orders; a missing verdict counts as wrong)."""
    unknown = sorted(set(reference_judges) - set(verdicts["judge_id"]))
    if unknown:
        raise ValueError(f"hard_empirical: no verdicts from reference judges {unknown}")
    plain = variants[(variants["presentation"] == "plain") & variants["pair_id"].isin(pairs["pair_id"])]
    grid = complete_grid(
        verdicts[verdicts["judge_id"].isin(reference_judges)], plain, sorted(reference_judges)
    )
    accuracy = to_canonical(grid, plain, pairs).groupby("pair_id")["correct"].mean()
    return pd.Series(sorted(accuracy[accuracy <= max_accuracy].index), name="pair_id", dtype=object)
