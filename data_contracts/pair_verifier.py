"""The pair verifier: proves, from the recorded edit alone, that a pair holds exactly one planted error.

For every pair: the recorded span of A holds `edit_before`; applying the edit to A gives B; A ≠ B;
and the change is of the recorded type:
- factual_fabrication: a fact token (a number, an option letter or a name) changed; in math, the final
  answer changed too (except in the Hard-Constructed branch, whose middle-step edits leave it);
- logical_reversal: the edit swaps a relation for its known opposite;
- overclaim: a hedge became a wider claim (a scope or certainty marker added);
- critical_omission: B is A minus the recorded span (nothing added).

Run on every write of `pairs` as part of its data contract (`data_contracts.ROW_CHECKS`).
"""

from __future__ import annotations

import re

import pandas as pd

from judgeops.schemas.artifacts import FINAL_CLAIM
from judgeops.schemas.edits import NUMBER_RE, OVERCLAIMS, REVERSALS, SUBTLE_OVERCLAIMS

_SCOPE_MARKERS = {w.lower() for w in [*OVERCLAIMS.values(), *SUBTLE_OVERCLAIMS.values()]}


def _fact_tokens(text: str) -> list[str]:
    """Numbers, and option letters or names (capitalised words): what a fabricated fact changes."""
    return NUMBER_RE.findall(text) + re.findall(r"\b[A-Z][A-Za-z]*\b", text)


def final_claim(text: str) -> str | None:
    claims = re.findall(rf"{FINAL_CLAIM} (.+?)\.?$", text)
    return claims[-1] if claims else None


def verify_pair(
    a: str,
    b: str,
    start: int,
    end: int,
    before: str,
    after: str,
    error_type: str,
    domain: str | None = None,
    hard: bool = False,
) -> list[str]:
    """The problems of one pair (empty when it verifies)."""
    problems = []
    if a == b:
        problems.append("A and B are identical")
    if not 0 <= start <= end <= len(a) or a[start:end] != before:
        problems.append(f"A[{start}:{end}] does not hold the recorded text {before!r}")
    elif a[:start] + after + a[end:] != b:
        problems.append("applying the recorded edit to A does not give B")
    if error_type == "factual_fabrication":
        if _fact_tokens(before) == _fact_tokens(after):
            problems.append("factual_fabrication: no number or fact token changed")
        elif (
            domain == "math" and not hard and final_claim(a) is not None and final_claim(a) == final_claim(b)
        ):
            # a math fabrication carries through to the result (the Hard-Constructed branch leaves it: subtler)
            problems.append("factual_fabrication (math): the final answer did not change")
    elif error_type == "logical_reversal":
        if REVERSALS.get(before) != after:
            problems.append(f"logical_reversal: {before!r} → {after!r} is not a known reversal pair")
    elif error_type == "overclaim":
        added = {w.lower() for w in re.findall(r"[A-Za-z]+(?: [a-z]+)*", after)} - {
            w.lower() for w in re.findall(r"[A-Za-z]+(?: [a-z]+)*", before)
        }
        if not (after.lower() in _SCOPE_MARKERS or added & _SCOPE_MARKERS):
            problems.append(f"overclaim: {before!r} → {after!r} adds no scope or certainty marker")
    elif error_type == "critical_omission":
        if after != "" or not before.strip():
            problems.append("critical_omission: B must be A minus the recorded span")
    else:
        problems.append(f"unknown error type {error_type!r}")
    return problems


def pair_problems(pairs: pd.DataFrame) -> pd.Series:
    """Per row of `pairs`: '; '-joined problems, or '' when the pair verifies."""
    columns = [
        "answer_correct",
        "answer_flawed",
        "edit_start",
        "edit_end",
        "edit_before",
        "edit_after",
        "error_type",
        "domain",
        "qc_flags",
    ]
    problems = [
        "; ".join(
            verify_pair(
                a,
                b,
                int(start),
                int(end),
                before,
                after,
                kind,
                domain,
                hard="hard_constructed" in list(flags if flags is not None else []),
            )
        )
        for a, b, start, end, before, after, kind, domain, flags in pairs[columns].itertuples(index=False)
    ]
    return pd.Series(problems, index=pairs.index, dtype=object)
