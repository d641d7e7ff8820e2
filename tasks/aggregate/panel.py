"""Aggregation: the panel's verdicts → one `consensus` row per (variant, method), without labels.

In the evaluate flow (`aggregate`), a task is one presentation of one pair (`pair_id:presentation`), and
each judge's verdicts in the two display orders are two runs of it. The aggregators see the candidates in
a canonical order that is randomised per pair with a seeded coin: judgerEva always builds a pair as
(correct, flawed), so a fixed order would hand class-balance-based methods a degenerate prior, and the
coin hides nothing else — the mapping uses only the display order, never the gold position. Each method's
decision is then mapped back to every displayed variant, so profiles treat the panel like a judge.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging

import numpy as np
import pandas as pd

from judgeops.schemas.artifacts import schema_for
from judgeops.schemas.stream import Rows, frames, unite_codes
from judgeops.schemas.vocabulary import NO_VOTES, TIE, UNAVAILABLE
from judgeops.tasks.aggregate._base import DEFAULT_CLASSES
from judgeops.tasks.aggregate.consistency import RUN_COLUMNS, SIGNALS, consistency_signals
from judgeops.tasks.aggregate.estimate import AccuracyEstimate, consensus_accuracy, diagnosis, identifiability
from judgeops.tasks.aggregate.registry import (
    BINARY_ONLY,
    USES_RUNS,
    default_input,
    get_aggregator,
)

NOTE_COLUMNS = schema_for("aggregation_notes").schema.names

log = logging.getLogger(__name__)


def _coin(seed: int, pair_id: str) -> bool:
    return hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()[0] % 2 == 1


def _shared(names: pd.Index, codes: np.ndarray) -> pd.Series:
    """Python strings by code (−1: missing), each name one shared object (8 bytes a row; an Arrow string column's
    `to_numpy()` makes a new object per row, which the estimators' pandas code does again and again)."""
    return pd.Series(np.append(np.asarray(names, dtype=object), None)[codes], dtype=object)  # −1: None


def canonical_votes(
    verdicts: Rows, variants: pd.DataFrame, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long votes `task, worker, run, shown_first, item, presentation, label, score` in each pair's canonical
    frame, and per variant its `task` name, the `code` of its task in the votes and whether its first-shown
    answer is the canonical first candidate: `first_is_canonical`).

    A vote's `task` and `item` are integer codes, numbered in the sorted order of the task names
    (`pair:presentation`) and pair ids, so every estimator sorts them as it would the names: at 100k pairs
    × 12 judges on every variant the votes have 7.2M rows, and codes keep them at ~60 bytes a row."""
    v = variants.set_index("variant_id")
    pair = v["pair_id"].astype(str)
    flip = pair.map(lambda p: _coin(seed, p))
    first_is_canonical = (v["order"] == "AB") != flip
    task = pair + ":" + v["presentation"].astype(str)
    task_code, _ = pd.factorize(task, sort=True)
    item_code, _ = pd.factorize(pair, sort=True)
    presentation_code, presentations = pd.factorize(v["presentation"].astype(str))
    # each verdict's variant by position, looked up once: every per-variant column below is a numpy take;
    # `verdicts` may be a stream of row groups (the aggregate stage's), each reduced to codes as it is read
    ats, says_a, says_b, workers_seen, p_firsts = [], [], [], [], []
    for frame in frames(verdicts):
        at = v.index.get_indexer(frame["variant_id"])
        mine = at >= 0
        ats.append(at[mine])
        says_a.append(frame["verdict"].isin(["A"]).to_numpy()[mine])
        says_b.append(frame["verdict"].isin(["B"]).to_numpy()[mine])
        workers_seen.append(frame["judge_id"][mine])
        p_firsts.append(frame["p_first"].to_numpy(dtype=float)[mine])
    at = np.concatenate(ats) if ats else np.zeros(0, dtype=np.intp)
    said_a = np.concatenate(says_a) if says_a else np.zeros(0, dtype=bool)
    said_b = np.concatenate(says_b) if says_b else np.zeros(0, dtype=bool)
    p_first = np.concatenate(p_firsts) if p_firsts else np.zeros(0)
    worker_code, workers = unite_codes(workers_seen)
    keep = first_is_canonical.to_numpy()[at]
    label = np.full(len(at), None, dtype=object)
    label[(keep & said_a) | (~keep & said_b)] = "A"
    label[(keep & said_b) | (~keep & said_a)] = "B"
    shown = keep.astype(np.intp)  # 1: the canonical first candidate shown first
    votes = pd.DataFrame(
        {
            "task": task_code[at],
            "worker": _shared(workers, worker_code),
            # the display order in the canonical frame ("AB": the canonical first candidate shown first), so
            # a run says what was shown first without saying which candidate is correct
            "run": _shared(pd.Index(["BA", "AB"]), shown),
            "shown_first": _shared(pd.Index(["B", "A"]), shown),
            "item": item_code[at],
            "presentation": _shared(presentations, presentation_code[at]),
            "label": pd.Series(label, dtype=object),
            "score": np.where(keep, p_first, 1.0 - p_first),
        }
    )
    variant = pd.DataFrame(
        {"task": task, "code": task_code, "item": pair, "first_is_canonical": first_is_canonical}
    )
    return votes, variant


def _fit_one(
    method: str, votes: pd.DataFrame, params: dict, fitted: dict | None = None
) -> tuple[pd.Series, pd.Series]:
    """P(canonical first candidate) and the number of votes per task (the estimator goes in `fitted`)."""
    defaults = (
        {"neutral": 0.5} if method in ("uws", "care_svd", "care_tensor") else {}
    )  # P(first) = .5: no view
    estimator = get_aggregator(method, **{**defaults, **params.get(method, {})})
    # what it reads: its default, or its `input` parameter (e.g. {"auto": {"input": "score"}})
    kind = params.get(method, {}).get("input", default_input(method))
    # every method gets the runs (display orders): the consistency methods read them as perturbations, the
    # one-vote-per-judge methods as workers of their own (_base.run_workers), never averaged into one vote
    extra = [c for c in (RUN_COLUMNS if method in USES_RUNS else ("run",)) if c in votes.columns]
    used = votes[["task", "worker", kind, *extra]].dropna(subset=[kind])  # the columns it reads, not 8
    if method in BINARY_ONLY:
        estimator.classes = ("A", "B")  # both classes exist even if every vote names one
    probas = estimator.fit(used).probas_
    if fitted is not None:
        fitted[method] = estimator
    p = probas["A"] if "A" in probas.columns else pd.Series(0.0, index=probas.index)
    return p, used.groupby("task").size()


def calibrated_rates(
    calibration: pd.DataFrame, estimator: str = "disagreement"
) -> dict[str, tuple[float, float]]:
    """WMV rates from a weekly calibration (display frame: positive = the first shown answer wins). The
    aggregators see each pair in a canonical order chosen by a coin, so a judge's canonical FPR and FNR are
    both the mean of its display-frame FPR and FNR."""
    rows = calibration[(calibration["estimator"] == estimator) & (calibration["stratum"] == "")]
    return {r.judge_id: ((r.fpr + r.fnr) / 2, (r.fpr + r.fnr) / 2) for r in rows.itertuples()}


def aggregate_panel(
    verdicts: Rows,
    variants: pd.DataFrame,
    methods: list[str],
    seed: int = 0,
    params: dict | None = None,
    calibration: pd.DataFrame | None = None,
    pairs: pd.DataFrame | None = None,
) -> dict[str, pd.DataFrame]:
    """`consensus` (one row per variant and method, in the display frame: label "A" = the first shown wins;
    with a weekly `calibration`, WMV weighs the judges by its rates), `consistency` (perturbation signals per
    judge, overall and per error type when `pairs` are given) and `aggregation_notes` (auto's choice and each
    method's label-free check)."""
    if calibration is not None and len(calibration) and "wmv" in methods:
        params = {
            **(params or {}),
            "wmv": {
                **(params or {}).get("wmv", {}),
                "estimator": "given",
                "rates": calibrated_rates(calibration),
            },
        }
    votes, shown = canonical_votes(verdicts, variants, seed)
    task = shown["code"].to_numpy()
    out, fitted, reasons, labels, task_labels = [], {}, {}, {}, {}
    for method in methods:
        try:
            p, n = _fit_one(method, votes, params or {}, fitted)
            reason = None
            task_labels[method] = pd.Series(
                np.where(p > 0.5, "A", np.where(p < 0.5, "B", TIE)), index=p.index, dtype=object
            )
        except ValueError as exc:
            log.warning("aggregate: %s could not fit this panel: %s", method, exc)
            p, n, reason = pd.Series(dtype=float), pd.Series(dtype=float), str(exc)
            reasons[method] = reason
        p_task = p.reindex(task).to_numpy(dtype=float)
        p_first = np.where(shown["first_is_canonical"].to_numpy(), p_task, 1.0 - p_task)
        n_votes = n.reindex(task).fillna(0).astype(int).to_numpy()
        code = np.where(p_first > 0.5, 0, np.where(p_first < 0.5, 1, 2))
        code[np.isnan(p_first)] = 3 if reason else 4
        code[(n_votes == 0) & (reason is None)] = 4
        labels[method] = pd.Series(
            np.array(["A", "B", TIE, UNAVAILABLE, NO_VOTES], dtype=object)[code], dtype=object
        )
        p_first[n_votes == 0] = np.nan
        out.append(
            pd.DataFrame(
                {
                    "unit_id": shown.index,
                    "method": method,
                    "score": 2 * p_first - 1,
                    "label": labels[method],
                    "posterior": p_first,
                    "n_votes": n_votes,
                }
            )
        )
    reference = fitted.get("auto")  # the reading every method's accuracy is estimated under: auto on labels
    if reference is None or getattr(reference, "input", "label") != "label":
        reading: dict = {}
        with contextlib.suppress(ValueError):
            _fit_one("auto", votes, {}, reading)
        reference = reading.get("auto")
    estimates = estimated_accuracies(reference, task_labels)
    return {
        "consensus": pd.concat(out, ignore_index=True),
        "consistency": panel_consistency(votes, pairs, shown),
        "aggregation_notes": aggregation_notes(pd.DataFrame(labels), fitted, reasons, estimates),
    }


def estimated_accuracies(auto, task_labels: dict[str, pd.Series]) -> dict[str, AccuracyEstimate]:
    """Each method's accuracy on the panel's tasks, estimated without labels under auto's reading (estimate.py);
    {} when auto could not fit the panel."""
    if auto is None:
        return {}
    ident = diagnosis(auto)  # once for every method's labels
    return {method: consensus_accuracy(auto, labels, ident) for method, labels in task_labels.items()}


def panel_consistency(
    votes: pd.DataFrame, pairs: pd.DataFrame | None = None, shown: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Perturbation consistency per judge, overall and per error type of the pair (consistency.py); `shown`
    (canonical_votes' second table) names the pairs the votes' `item` codes number."""
    usable = votes.dropna(subset=["label"])
    columns = ["judge_id", "condition", *SIGNALS]
    if usable.empty or usable["label"].nunique() < 1:
        return pd.DataFrame(columns=columns)
    frames = [consistency_signals(usable, DEFAULT_CLASSES).assign(condition="overall")]
    if pairs is not None and "error_type" in pairs.columns:
        kind = pairs.set_index(pairs["pair_id"].astype(str))["error_type"]
        if shown is not None:  # item codes → pair ids → error types
            _, named = pd.factorize(shown["item"], sort=True)  # code i is pair named[i]
            kind = kind.reindex(named).reset_index(drop=True)
        typed = usable.assign(condition=usable["item"].map(kind)).dropna(subset=["condition"])
        if len(typed):
            frames.append(consistency_signals(typed, DEFAULT_CLASSES, by="condition"))
    table = pd.concat(frames, ignore_index=True).rename(columns={"worker": "judge_id"})
    return table[columns].reset_index(drop=True)


def soft_agreement(labels: pd.Series, reference: pd.Series) -> float:
    """On the units the reference decides (A or B): 1 where `labels` says the same, ½ where it makes no
    decision (a tie, no votes), 0 where it says the other; NaN if the reference decides nothing."""
    decided = reference.isin(["A", "B"])
    if not decided.any():
        return float("nan")
    ours, ref = labels[decided], reference[decided]
    score = np.where(ours == ref, 1.0, np.where(ours.isin(["A", "B"]), 0.0, 0.5))
    return float(score.mean())


def aggregation_notes(
    wide: pd.DataFrame, fitted: dict, reasons: dict, estimates: dict[str, AccuracyEstimate] | None = None
) -> pd.DataFrame:
    """Per method (in name order): its agreement with majority vote and with auto's consensus (soft_agreement:
    a non-decision counts ½), its accuracy estimated without labels (`estimates`), and a warning when its
    label-free check fails (it takes the mirror side of majority vote, or it strays from auto's consensus further
    than majority vote does). auto's row says what it chose and why, carries the identifiability diagnostic in
    its evidence, and warns when the panel may not be resolvable without labels. `wide`: the consensus labels,
    one column per method, one row per unit."""
    estimates = estimates or {}
    rows = []
    for method in sorted(wide.columns):
        mv = soft_agreement(wide[method], wide["mv"]) if "mv" in wide else np.nan
        auto = soft_agreement(wide[method], wide["auto"]) if "auto" in wide else np.nan
        mv_auto = soft_agreement(wide["mv"], wide["auto"]) if {"mv", "auto"} <= set(wide) else np.nan
        warning = ""
        if method in reasons:
            warning = f"could not fit this panel: {reasons[method]}"
        elif method not in ("mv", "auto") and mv < 0.5:
            warning = f"takes the mirror side of majority vote (agrees on {mv:.0%} of what MV decides)"
        elif method not in ("mv", "auto") and auto < mv_auto - 0.05:
            warning = (
                f"strays from auto's consensus (agrees on {auto:.0%}) further than majority vote "
                f"({mv_auto:.0%}): likely below majority vote here"
            )
        choice, reason, evidence = "", "", ""
        estimate = estimates.get(method)
        if method == "auto" and "auto" in fitted:
            est = fitted["auto"]
            choice, reason = est.choice_, est.reason_
            extra = {}
            if getattr(est, "input", "label") == "label":  # auto on scores has no identifiability reading
                ident = identifiability(est, estimate.estimate if estimate else None)
                warning, extra = warning or ident.warning, {"identifiability": ident.as_dict()}
            evidence = json.dumps({**est.evidence_, **extra}, sort_keys=True, default=float)
        fallbacks = "; ".join(getattr(fitted.get(method), "fallbacks_", None) or [])
        if fallbacks:
            log.warning("aggregate: %s fell back: %s", method, fallbacks)
        rows.append(
            {
                "method": method,
                "agreement_with_mv": mv,
                "agreement_with_auto": auto,
                "estimated_accuracy": estimate.estimate if estimate else np.nan,
                "estimated_ci_low": estimate.ci_low if estimate else np.nan,
                "estimated_ci_high": estimate.ci_high if estimate else np.nan,
                "warning": warning,
                "choice": choice,
                "reason": reason,
                "evidence": evidence,
                "fallbacks": fallbacks,
            }
        )
    return pd.DataFrame(rows, columns=NOTE_COLUMNS)
