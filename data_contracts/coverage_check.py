"""The coverage row check GX cannot express: every expected judge call is accounted for, once."""

from __future__ import annotations

import pandas as pd

from judgeops.schemas.artifacts import COVERAGE_CAUSES


def coverage_problems(coverage: pd.DataFrame) -> pd.Series:
    """Per judge: '' when every expected call is accounted for (answered, tie, unparsable, or an error of one
    named cause), else what does not add up."""
    accounted = coverage[["n_answered", "n_tie", "n_unparsable", *COVERAGE_CAUSES]].sum(axis=1)
    by_cause = coverage[list(COVERAGE_CAUSES)].sum(axis=1)
    return pd.Series(
        [
            ("" if a == e else f"{e} calls expected, {a} accounted for")
            + ("" if c == n else f"; n_error {n} but its causes sum to {c}")
            for a, e, c, n in zip(
                accounted, coverage["n_expected"], by_cause, coverage["n_error"], strict=True
            )
        ],
        index=coverage.index,
    )
