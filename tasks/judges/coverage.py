"""Honest coverage accounting: per judge, what was expected, what came back, and why the rest did not."""

from __future__ import annotations

import re

import pandas as pd

from judgeops.config import JudgeConfig, Price
from judgeops.schemas.artifacts import FAILURE_CAUSES
from judgeops.schemas.stream import Rows, frames
from judgeops.tasks.judges.calls import PROTOCOL_FAILURE, TRANSPORT_FAILURE
from judgeops.tasks.judges.cost import cost_columns
from judgeops.tasks.judges.runner import select_subset


def transport_failures(verdicts: Rows) -> int:
    """Rows whose call never got an answer (timeouts, 5xx, refused connections): not cached, retried on rerun."""
    return sum(int(f["error"].fillna("").str.startswith(TRANSPORT_FAILURE).sum()) for f in frames(verdicts))


_CONNECTION = (
    "ConnectError",
    "RemoteProtocolError",
    "ReadError",
    "WriteError",
    "NetworkError",
    "ProtocolError",
    "APIConnectionError",  # the SDK's wrapper, where it names no transport error underneath
)


def failure_cause(error: str | None) -> str | None:
    """Why a call gave no verdict, from its recorded error: unparsable (the model answered, but no verdict can be
    read in its reply), protocol_error (a 2xx whose body is not a completion, after the retries), rate_limited
    (429 after the retries), server_error (5xx), client_error (other 4xx), timeout, connection (refused,
    dropped mid-body), other_error."""
    if not error:
        return None
    if error.startswith("unparsable"):
        return "unparsable"
    if error.startswith(PROTOCOL_FAILURE):
        return "protocol_error"
    status = re.search(r"HTTP (\d{3})", error)
    if status:
        code = int(status.group(1))
        return "rate_limited" if code == 429 else "server_error" if code >= 500 else "client_error"
    if "Timeout" in error:
        return "timeout"
    if any(name in error for name in _CONNECTION):
        return "connection"
    return "other_error"


# the verdict columns coverage (and its cost columns) read
COVERAGE_COLUMNS = (
    "judge_id",
    "variant_id",
    "verdict",
    "error",
    "n_calls",
    "cache_hits",
    "tokens_in",
    "tokens_out",
    "request_notes",
)


def _sum_or_none(values: pd.Series) -> int | None:
    return int(values.sum()) if values.notna().any() else None


def _adjustments(notes: pd.Series) -> str | None:
    """What the backend had to change in the requests this run sent (parameters the model refused)."""
    found = sorted({n for joined in notes.dropna() for n in joined.split("; ")})
    return "; ".join(found) or None


def coverage(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    judges: list[JudgeConfig],
    pairs: pd.DataFrame | None = None,
    prices: dict[str, Price] | None = None,
) -> pd.DataFrame:
    """Per judge: calls expected (every variant, or its max_pairs subset), verdicts usable, ties,
    unparsable outputs, errors — split by cause (`failure_cause`; n_error = their sum + n_missing) — backend
    calls made and cache hits, tokens in and out, the request changes a model forced (a parameter it does not
    take, dropped or renamed), and with `prices` what the verdicts cost (tasks/judges/cost.py: cost_columns).

    A missing row counts as an error: nothing is lost silently.
    """
    rows = []
    for judge in judges:
        expected = select_subset(variants, judge.max_pairs, judge.name, pairs)["variant_id"]
        n_expected = len(expected)
        v = verdicts[(verdicts["judge_id"] == judge.name) & verdicts["variant_id"].isin(expected)]
        answered = int(v["verdict"].isin(["A", "B"]).sum())
        tie = int((v["verdict"] == "tie").sum())
        unparsable = int((v["verdict"].isna() & v["error"].fillna("").str.startswith("unparsable")).sum())
        missing = n_expected - v["variant_id"].nunique()
        error = int((v["verdict"].isna()).sum()) - unparsable + missing
        causes = v.loc[v["verdict"].isna(), "error"].map(failure_cause).value_counts()
        rows.append(
            {
                "judge_id": judge.name,
                "n_expected": n_expected,
                "n_answered": answered,
                "n_tie": tie,
                "n_unparsable": unparsable,
                "n_error": error,
                **{f"n_{c}": int(causes.get(c, 0)) for c in FAILURE_CAUSES},
                "n_missing": missing,
                "coverage": answered / n_expected if n_expected else 0.0,
                "n_calls": int(v["n_calls"].sum()),
                "cache_hits": int(v["cache_hits"].sum()),
                "tokens_in": _sum_or_none(v["tokens_in"]),
                "tokens_out": _sum_or_none(v["tokens_out"]),
                "request_adjustments": _adjustments(v["request_notes"]),
                **cost_columns(v, judge, prices or {}),
            }
        )
    return pd.DataFrame(rows)
