"""Data contracts: run an artifact's Great Expectations suite and decide stop / quarantine / pass.

`check_contract(name, df, related)` is called by the store on every write. The GX suites are in
`suites.py`; rules GX cannot express (the pair verifier) are Python row checks (`_row_checks`). This
module runs both, in chunks for large tables, and turns the results into a decision and a message a
person can act on (the artifact, each failed expectation, example rows).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pandas as pd

from judgeops.data_contracts.coverage_check import coverage_problems
from judgeops.data_contracts.pair_verifier import pair_problems
from judgeops.schemas.artifacts import schema_for

log = logging.getLogger(__name__)

EXAMPLE_ROWS = 3


class ContractViolation(Exception):
    """An artifact broke a `stop` rule of its contract; nothing downstream may run."""

    def __init__(self, artifact: str, message: str, failures: list[dict]):
        super().__init__(message)
        self.artifact = artifact
        self.failures = failures


@dataclass
class ContractOutcome:
    artifact: str
    validation: dict[str, Any]
    clean: pd.DataFrame
    quarantined: pd.DataFrame | None
    stop_failures: list[dict] = field(default_factory=list)
    quarantine_failures: list[dict] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.stop_failures

    def message(self) -> str:
        n = self.validation["statistics"]["evaluated_expectations"]
        lines = [
            f"data contract of artifact {self.artifact!r} failed: "
            f"{len(self.stop_failures)} of {n} expectations broken (nothing downstream was written)"
        ]
        for f in self.stop_failures:
            lines.append(f"  - {f['expectation']}: {f['summary']}")
            if f.get("examples"):
                lines.extend("      " + row for row in f["examples"].splitlines())
        return "\n".join(lines)

    def raise_if_stopped(self) -> None:
        if self.stop_failures:
            raise ContractViolation(self.artifact, self.message(), self.stop_failures)

    def markdown(self) -> str:
        status = "passed" if self.passed else "FAILED"
        stats = self.validation["statistics"]
        md = [
            f"### Data contract `{self.artifact}`: {status}",
            f"{stats['successful_expectations']} of {stats['evaluated_expectations']} expectations met; "
            f"{self.validation['rows']} rows, {self.validation['quarantined_rows']} quarantined.",
            "",
            "| expectation | on fail | result |",
            "|---|---|---|",
        ]
        for r in self.validation["results"]:
            md.append(f"| `{r['expectation']}` | {r['on_fail']} | {'ok' if r['success'] else r['summary']} |")
        return "\n".join(md)


class ContractParts:
    """The contract of an artifact written in parts (the store's streamed write): each part's outcome (`add`)
    merged into one result (`finish`), and the key's uniqueness across parts, which GX checks within each part
    only: the key columns of every clean row are hashed (8 bytes a row: 38 MB for 4.8M verdicts), and a hash
    seen in two rows is a duplicate key. (A 64-bit collision among n keys has probability about n² / 2⁶⁵:
    6 × 10⁻⁷ at 4.8M rows.)"""

    def __init__(self, artifact: str, key: tuple[str, ...]):
        self.artifact, self.key = artifact, tuple(key)
        self.results: list[dict] | None = None
        self.rows = self.quarantined = self.parts = 0
        self.stop: list[dict] = []
        self.quarantine: list[dict] = []
        self.hashes: list = []

    def add(self, outcome: ContractOutcome) -> None:
        """One part's outcome."""
        import numpy as np

        v = outcome.validation
        self.parts += 1
        self.rows += v["rows"]
        self.quarantined += v["quarantined_rows"]
        if self.results is None:
            self.results = [dict(r) for r in v["results"]]
        else:
            for mine, theirs in zip(self.results, v["results"], strict=True):
                if mine["success"] and not theirs["success"]:
                    mine.update(theirs)  # the first part that broke it speaks for the rule
        self.stop += outcome.stop_failures
        self.quarantine += outcome.quarantine_failures
        if self.key and set(self.key) <= set(outcome.clean.columns):
            keys = outcome.clean[list(self.key)]
            self.hashes.append(np.asarray(pd.util.hash_pandas_object(keys, index=False), dtype=np.uint64))

    def validation(self) -> dict[str, Any]:
        results = self.results or []
        return {
            "artifact": self.artifact,
            "success": not self.stop,
            "rows": self.rows,
            "quarantined_rows": self.quarantined,
            "parts": self.parts,
            "statistics": {
                "evaluated_expectations": len(results),
                "successful_expectations": sum(r["success"] for r in results),
            },
            "results": [{k: v for k, v in r.items() if k != "row_indices"} for r in results],
        }

    def finish(self) -> ContractOutcome:
        """The merged outcome, with the key's uniqueness across parts added as a stop rule."""
        import numpy as np

        if self.key and self.parts > 1:
            hashes = np.sort(np.concatenate(self.hashes)) if self.hashes else np.zeros(0, dtype=np.uint64)
            repeated = int(np.count_nonzero(hashes[1:] == hashes[:-1]))
            entry = {
                "expectation": f"{', '.join(self.key)} unique across the artifact's {self.parts} parts",
                "on_fail": "stop",
                "success": not repeated,
                "summary": "ok" if not repeated else f"{repeated} rows repeat a key of an earlier row",
            }
            self.results = [*(self.results or []), entry]
            if repeated:
                self.stop.append(entry)
        return ContractOutcome(
            self.artifact, self.validation(), pd.DataFrame(), None, self.stop, self.quarantine
        )


# `functools.cache` does not stop two threads (two flow runs in one worker) from building the same GX object at
# once, and GX refuses a second asset of one name: the builders below run under this lock
_GX_LOCK = threading.RLock()


def _batch_definition(artifact: str):
    """One ephemeral GX context for the process (no files, no network); one asset per artifact."""
    with _GX_LOCK:
        return _batch_definition_once(artifact)


@cache
def _batch_definition_once(artifact: str):
    asset = _datasource().add_dataframe_asset(name=artifact)
    return asset.add_batch_definition_whole_dataframe("whole")


@cache
def _datasource():  # called under _GX_LOCK only
    return _context().data_sources.add_pandas("judgeops")


@cache
def _context():  # called under _GX_LOCK only
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    logging.getLogger("great_expectations").setLevel(logging.WARNING)
    import great_expectations as gx  # lazy: 6-7 s, paid only when a contract runs (never on a reused run)
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.WARNING)  # again: importing gx resets it
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def _describe(cfg) -> str:
    if isinstance(cfg, RowCheck):
        return cfg.name
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id",)}
    if "value_set" in kwargs and len(kwargs["value_set"]) > 8:
        kwargs["value_set"] = f"<{len(kwargs['value_set'])} values>"
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{cfg.type}({args})"


def _columns_of(kwargs: Mapping[str, Any]) -> list[str]:
    named = [
        kwargs.get("column"),
        kwargs.get("column_A"),
        kwargs.get("column_B"),
        *(kwargs.get("column_list") or []),
    ]
    return [c for c in named if c]


def _example_columns(artifact: str, cfg, df: pd.DataFrame) -> list[str]:
    """The artifact's key columns and the columns the expectation is about: enough to find the row."""
    columns = [*schema_for(artifact).key, *_columns_of(cfg.kwargs)]
    return [c for c in dict.fromkeys(columns) if c in df.columns]


@dataclass(frozen=True)
class RowCheck:
    """A rule GX cannot express, in Python: `problems(df)` gives each row's problems ('' when fine), indexed
    like `df`; it may leave out the rows that are fine.

    Shaped like a GX expectation configuration (type, kwargs, meta) so results read the same."""

    name: str
    problems: Any  # Callable[[pd.DataFrame], pd.Series]
    meta: dict = field(default_factory=lambda: {"on_fail": "stop"})
    kwargs: dict = field(default_factory=dict)  # column_list: the columns shown with example rows
    type: str = "row_check"


def _row_checks(
    artifact: str, df: pd.DataFrame, more: list[RowCheck] = ()
) -> list[tuple[Any, bool, dict, str | None]]:
    """The suite's own row checks (`more`, e.g. references) and the artifact's rules GX cannot express."""
    checks = {
        "coverage": [
            RowCheck(
                "every expected call accounted for, errors by cause",
                coverage_problems,
                kwargs={"column_list": ["judge_id", "n_expected", "n_answered", "n_error"]},
            ),
        ],
        "pairs": [
            RowCheck(
                "verify_pair(recorded edit, error type)",
                pair_problems,
                kwargs={"column_list": ["error_type", "edit_before", "edit_after"]},
            ),
        ],
    }
    out = []
    for check in [*more, *checks.get(artifact, [])]:
        problems = check.problems(df) if len(df) else pd.Series(dtype=object)
        failing = problems[problems != ""]
        info = {
            "unexpected_index_list": failing.index.tolist(),
            "unexpected_count": len(failing),
            "partial_unexpected_list": failing.head(20).tolist(),
        }
        out.append((check, failing.empty, info, None))
    return out


CHUNK_ROWS = 200_000
_WHOLE_TABLE = {"expect_column_values_to_be_unique"}  # needs every row at once, despite its name


def _row_level(expectation) -> bool:
    kind = expectation.expectation_type
    return kind not in _WHOLE_TABLE and kind.startswith(
        ("expect_column_values_to_", "expect_column_value_lengths_", "expect_column_pair_values_")
    )


def _run(artifact: str, frame: pd.DataFrame, expectations: list) -> list:
    import great_expectations as gx  # lazy: see _context

    suite = gx.ExpectationSuite(name=artifact, expectations=expectations)
    return (
        _batch_definition(artifact)
        .get_batch(batch_parameters={"dataframe": frame})
        .validate(suite, result_format="COMPLETE")
        .results
    )


def _validate(artifact: str, df: pd.DataFrame, build_suite) -> list[tuple[Any, bool, dict, str | None]]:
    """(expectation config, success, result, error) per expectation of the suite, in suite order.

    GX copies the frame it validates, so it gets only the columns each check reads, and row-level
    checks run on chunks of CHUNK_ROWS (their unexpected rows keep their positions in `df`): a
    1M-row artifact costs a few columns × 200k rows of extra memory, not a copy of the whole table.
    """
    expectations = build_suite()
    whole = [i for i, e in enumerate(expectations) if not _row_level(e) or len(df) <= CHUNK_ROWS]
    rows = [i for i in range(len(expectations)) if i not in whole]
    merged: dict[int, list] = {}

    def run(indices: list[int], frame: pd.DataFrame) -> None:
        fresh = build_suite()  # a suite owns its expectations: build new ones for each run
        chosen = [fresh[i] for i in indices]
        columns = sorted(
            {c for e in chosen for c in _columns_of(e.configuration.kwargs)} & set(frame.columns)
        )
        for i, r in zip(indices, _run(artifact, frame[columns] if columns else frame, chosen), strict=True):
            merged.setdefault(i, []).append(r)

    if whole:
        run(whole, df)
    for start in range(0, len(df), CHUNK_ROWS) if rows else ():
        run(rows, df.iloc[start : start + CHUNK_ROWS])

    out = []
    for i in range(len(expectations)):
        parts = merged[i]
        error = next(
            (
                r.exception_info.get("exception_message")
                for r in parts
                if r.exception_info and r.exception_info.get("raised_exception")
            ),
            None,
        )
        info = dict(parts[0].result or {})
        if len(parts) > 1:
            info["unexpected_index_list"] = [
                j for r in parts for j in (r.result or {}).get("unexpected_index_list") or []
            ]
            info["unexpected_count"] = sum((r.result or {}).get("unexpected_count") or 0 for r in parts)
            info["partial_unexpected_list"] = [
                v for r in parts for v in (r.result or {}).get("partial_unexpected_list") or []
            ]
        out.append((parts[0].expectation_config, all(bool(r.success) for r in parts), info, error))
    return out


def check_contract(
    artifact: str, df: pd.DataFrame, related: Mapping[str, pd.DataFrame] | None = None, first_row: int = 0
) -> ContractOutcome:
    """Validate `df` against the suite of `artifact`; return the clean rows, the quarantined rows and the result.
    `first_row`: the artifact's row number of df's first row, where df is one part of an artifact written in parts
    (the store's streamed write): row numbers in messages and `quarantine_row` count from it."""
    from judgeops.data_contracts.suites import SUITES  # lazy: great_expectations takes 6-7 s to import

    if artifact not in SUITES:
        raise KeyError(f"no data contract for artifact {artifact!r}; known: {sorted(SUITES)}")
    df = df.reset_index(drop=True)
    suite = SUITES[artifact](related or {})
    gx_part = [i for i, e in enumerate(suite) if not isinstance(e, RowCheck)]
    checks = _validate(artifact, df, lambda: [SUITES[artifact](related or {})[i] for i in gx_part])
    checks += _row_checks(artifact, df, [e for e in suite if isinstance(e, RowCheck)])

    results, stop, quarantine = [], [], []
    bad_rows: dict[int, list[str]] = {}
    for cfg, success, info, error in checks:
        on_fail = (cfg.meta or {}).get("on_fail", "stop")
        entry = {
            "expectation": _describe(cfg),
            "on_fail": on_fail,
            "success": success,
            "summary": "ok",
        }
        if error:
            entry.update(success=False, summary=f"could not run: {error}")
            on_fail = entry["on_fail"] = "stop"
        elif not success:
            indices = list(info.get("unexpected_index_list") or [])
            if indices:
                values = list(info.get("partial_unexpected_list") or [])[:EXAMPLE_ROWS]
                entry["summary"] = (
                    f"{info.get('unexpected_count', len(indices))} of {len(df)} rows"
                    + (f" (rows {first_row}–{first_row + len(df) - 1})" if first_row else "")
                    + f" unexpected, e.g. values {values}"
                )
                entry["row_indices"] = [int(i) for i in indices]  # positions in df; reported from first_row
                entry["examples"] = df.iloc[indices[:EXAMPLE_ROWS]][
                    _example_columns(artifact, cfg, df)
                ].to_string(max_colwidth=48)
            else:
                entry["summary"] = f"observed {info.get('observed_value', info)}"
        results.append(entry)
        if not entry["success"]:
            if on_fail == "quarantine" and entry.get("row_indices"):
                quarantine.append(entry)
                for i in entry["row_indices"]:
                    bad_rows.setdefault(i, []).append(entry["expectation"])
            else:
                stop.append(entry)

    quarantined = None
    clean = df
    if bad_rows and not stop:
        idx = sorted(bad_rows)
        quarantined = df.iloc[idx].copy()
        quarantined["quarantine_row"] = [first_row + i for i in idx]
        quarantined["quarantine_rule"] = ["; ".join(bad_rows[i]) for i in idx]
        quarantined["quarantine_reason"] = [
            f"row {first_row + i} of {artifact} broke {len(bad_rows[i])} row-level rule(s): "
            + "; ".join(bad_rows[i])
            for i in idx
        ]
        clean = df.drop(index=idx).reset_index(drop=True)
        log.warning("contract %s: %d rows quarantined to %s__quarantine", artifact, len(idx), artifact)

    validation = {
        "artifact": artifact,
        "success": not stop,
        "rows": len(df),
        "quarantined_rows": 0 if quarantined is None else len(quarantined),
        "statistics": {
            "evaluated_expectations": len(results),
            "successful_expectations": sum(e["success"] for e in results),
        },
        "results": [{k: v for k, v in e.items() if k != "row_indices"} for e in results],
    }
    return ContractOutcome(artifact, validation, clean, quarantined, stop, quarantine)
