"""A finished run's verdict for a CI job: one summary object, and the exit code its gates give.

Exit codes (the command line's, documented in the README): 0 every gate passed; 2 a gate failed (an
accuracy under its `--fail-under` bar, or drift with `--fail-on drift`); 3 partial coverage (a judge call
ended without an answer — or, with `--fail-on coverage`, any judge below full coverage, ties and
unparsable outputs included); 1 the run itself stopped (elsewhere). Where several apply, 2 wins over 3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from judgeops.api.pipeline import Run
from judgeops.schemas.vocabulary import PANEL_PREFIX
from judgeops.tasks.drift.calibrate import drift_events
from judgeops.tasks.profile.profiles import BENCHMARK
from judgeops.tasks.stages import latest_calibration

EXIT_OK, EXIT_GATE, EXIT_PARTIAL = 0, 2, 3
FAIL_ON = ("drift", "coverage")


class GateError(ValueError):
    """A gate that cannot be read: a malformed `NAME=ACC`, or a name no judge or method has."""


def parse_fail_under(specs: list[str] | None) -> dict[str, float]:
    """`["reference_match=0.6", "auto=0.8"]` → {name: minimum accuracy}."""
    out = {}
    for spec in specs or []:
        name, sep, value = spec.partition("=")
        try:
            minimum = float(value)
        except ValueError:
            minimum = None
        if not sep or not name or minimum is None or not 0 <= minimum <= 1:
            raise GateError(
                f"--fail-under {spec!r}: expected JUDGE_OR_METHOD=ACCURACY with an accuracy in [0, 1]"
            )
        out[name] = minimum
    return out


def summary(run: Run, fail_under: dict[str, float] | None = None, fail_on: list[str] | None = None) -> dict:
    """The run's headline numbers (each judge's and each consensus method's position-averaged accuracy on
    judgerEva with its 95% CI, coverage and cost; drift flagged by the latest calibration) and its gates."""
    profiles, cov = run.load("profiles"), run.load("coverage")
    overall = profiles[(profiles["benchmark"] == BENCHMARK) & (profiles["condition"] == "overall")]
    overall = overall.set_index("judge_id")
    cov = cov.set_index("judge_id")
    judges = {
        judge: {
            "accuracy": _number(overall, judge, "estimate"),
            "ci": [_number(overall, judge, "ci_low"), _number(overall, judge, "ci_high")],
            "coverage": float(row["coverage"]),
            "calls_without_answer": int(row["n_error"]),
            "cost_usd": float(row["cost_usd"]),
        }
        for judge, row in cov.iterrows()
    }
    notes = _notes(run)
    ident = _identifiability(notes) or {}
    consensus = {
        judge.removeprefix(PANEL_PREFIX): {
            "accuracy": _number(overall, judge, "estimate"),
            "ci": [_number(overall, judge, "ci_low"), _number(overall, judge, "ci_high")],
            **_label_free(notes, judge.removeprefix(PANEL_PREFIX), ident.get("warning")),
        }
        for judge in overall.index
        if judge.startswith(PANEL_PREFIX)
    }
    gates = [_gate(name, minimum, judges, consensus) for name, minimum in (fail_under or {}).items()]
    drift = _drift(run)
    fail_on = set(fail_on or [])
    partial = any(j["calls_without_answer"] for j in judges.values()) or (
        "coverage" in fail_on and any(j["coverage"] < 1 for j in judges.values())
    )
    failed = any(not g["passed"] for g in gates) or ("drift" in fail_on and bool(drift))
    return {
        "run_id": run.run_id,
        "as_of": str(run.as_of),
        "report": str(run.report),
        "judges": judges,
        "consensus": consensus,
        "identifiability": _identifiability(notes),
        "audit": _audit(run),
        "drift": drift,
        "gates": gates,
        "partial_coverage": partial,
        "exit_code": EXIT_GATE if failed else EXIT_PARTIAL if partial else EXIT_OK,
    }


def _label_free(notes: pd.DataFrame, method: str, auto_warning: str | None) -> dict:
    """A consensus method's accuracy estimated without labels (tasks/aggregate/estimate.py), beside judgerEva's
    measured one: `estimated_accuracy` null where it must not be read as a number (estimate.withheld: auto's
    identifiability warning or the method's own, or an interval over 0.10 wide), the bounds kept, the reason,
    and the text the run prints."""
    from judgeops.tasks.aggregate.estimate import label_free_text, withheld

    estimate = _number(notes, method, "estimated_accuracy")
    low, high = _number(notes, method, "estimated_ci_low"), _number(notes, method, "estimated_ci_high")
    if estimate is None or low is None or high is None:
        return {"estimated_accuracy": None, "estimated_accuracy_ci": [low, high]}
    own = notes.at[method, "warning"] if "warning" in notes.columns else None
    warning = auto_warning or (own if isinstance(own, str) and own else None)
    why = withheld(low, high, warning)
    return {
        "estimated_accuracy": None if why else estimate,
        "estimated_accuracy_ci": [low, high],
        "estimated_accuracy_withheld": why,
        "label_free_text": label_free_text(estimate, low, high, warning),
    }


def summary_lines(result: dict) -> list[str]:
    """The summary as `judgeops run` prints it without --json: the consensus's best available number first
    (measured on judgerEva; prediction-powered from an audit; what the votes alone allow, as bounds where they do
    not pin it down), then where the run is, then gates and coverage."""
    lines = [f"run {result['run_id']}"]
    auto = result["consensus"].get("auto") or {}
    if auto.get("accuracy") is not None:
        low, high = auto["ci"]
        lines.append(
            f"auto: accuracy {auto['accuracy']:.3f} [{low:.3f}, {high:.3f}] measured on judgerEva (its planted "
            "errors; 95 % CI)"
        )
    audited = {r["quantity"]: r for r in (result.get("audit") or {}).get("estimates") or []}
    if "consensus_accuracy" in audited:
        r = audited["consensus_accuracy"]
        lines.append(
            f"auto refit with the audit: accuracy {r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}] on "
            f"the whole workload ({r['method']}, {r['n_labels']} labels; 90 %)"
        )
    if auto.get("label_free_text"):
        lines.append(f"auto: {auto['label_free_text']}")
    if (result.get("identifiability") or {}).get("warning"):
        lines.append(f"warning: {result['identifiability']['warning']}")
    lines += [f"artifacts: {Path(result['report']).parent}", f"report: {result['report']}"]
    for g in result["gates"]:
        lines.append(
            f"gate {g['name']} ≥ {g['minimum']}: {g['accuracy']} {'passed' if g['passed'] else 'FAILED'}"
        )
    short = {j: v for j, v in result["judges"].items() if v["calls_without_answer"] or v["coverage"] < 1}
    if result["partial_coverage"]:
        lines.append("partial coverage: " + ", ".join(f"{j} {v['coverage']:.3f}" for j, v in short.items()))
    return lines


def _notes(run: Run) -> pd.DataFrame:
    """The run's aggregation notes by method (empty where the run has none)."""
    try:
        return run.load("aggregation_notes").set_index("method")
    except Exception:  # noqa: BLE001 - an older run, or one without an aggregate stage: no estimates
        return pd.DataFrame(columns=["estimated_accuracy", "estimated_ci_low", "estimated_ci_high"])


def _audit(run: Run) -> dict | None:
    """The run's audit where people labelled it: its summary row and every judge and consensus against them."""
    try:
        row = run.load("audit_summary").iloc[0].to_dict()
        agreement = run.load("human_agreement")
    except Exception:  # noqa: BLE001 - no audit configured, or no label yet
        return None

    def clean(d: dict) -> dict:
        return {k: (None if pd.isna(v) else v.item() if hasattr(v, "item") else v) for k, v in d.items()}

    try:
        estimates = [clean(r) for r in run.load("estimates").to_dict("records")]
    except Exception:  # noqa: BLE001 - fewer than 2 labels, or a run from before the estimates
        estimates = []
    return {
        **clean(row),
        "human_agreement": [clean(r) for r in agreement.to_dict("records")],
        "estimates": estimates,
    }


def _identifiability(notes: pd.DataFrame) -> dict | None:
    """auto's identifiability diagnostic (effective judges, identifiable, reasons, audit_k, warning)."""
    if "auto" not in notes.index or "evidence" not in notes.columns or not notes.at["auto", "evidence"]:
        return None
    return json.loads(notes.at["auto", "evidence"]).get("identifiability")


def _number(table: pd.DataFrame, judge: str, column: str) -> float | None:
    if judge not in table.index or pd.isna(table.at[judge, column]):
        return None
    return float(table.at[judge, column])


def _gate(name: str, minimum: float, judges: dict, consensus: dict) -> dict:
    found = judges.get(name) or consensus.get(name.removeprefix(PANEL_PREFIX))
    if found is None:
        known = sorted([*judges, *consensus])
        raise GateError(
            f"--fail-under {name}: no judge or consensus method of this run has that name; known: {known}"
        )
    value = found["accuracy"]
    return {
        "name": name,
        "minimum": minimum,
        "accuracy": value,
        "passed": value is not None and value >= minimum,
    }


def _drift(run: Run) -> list[dict]:
    """What the latest calibration on or before the run's date flagged: judge, metric, before, after, week."""
    refs = latest_calibration(run.store, run.as_of)
    return drift_events(run.store.read_pandas(refs["calibration"])) if refs else []
