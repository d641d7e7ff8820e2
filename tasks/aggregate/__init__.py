"""Aggregation: the panel's verdicts → one `consensus` row per (variant, method), without labels.

Every method is an estimator with one interface (crowd-kit / scikit-learn style; see _base.py):
`fit(df)`, `fit_predict(df)`, `fit_predict_proba(df)` on a long frame `task, worker, label` or
`task, worker, score`, fitted attributes ending in `_`. `get_aggregator(name, **params)` builds one.

In the evaluate flow (`aggregate`), a task is one presentation of one pair (`pair_id:presentation`), and
each judge's verdicts in the two display orders are two runs of it. The aggregators see the candidates in
a canonical order that is randomised per pair with a seeded coin: judgerEva always builds a pair as
(correct, flawed), so a fixed order would hand class-balance-based methods a degenerate prior, and the
coin hides nothing else — the mapping uses only the display order, never the gold position. Each method's
decision is then mapped back to every displayed variant, so profiles treat the panel like a judge.
"""

from __future__ import annotations

import hashlib
import logging

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import TIE
from judgeops.tasks.aggregate.baer import BAER
from judgeops.tasks.aggregate.care import CareSVD, CareTensor
from judgeops.tasks.aggregate.dawid_skene import DawidSkene
from judgeops.tasks.aggregate.mv import MajorityVote, ScoreAverage
from judgeops.tasks.aggregate.uws import UniversalWeakSupervision
from judgeops.tasks.aggregate.wmv import WeightedMajorityVote
from judgeops.tasks.aggregate.ws import WeakSupervision

NO_VOTES = "no_votes"
UNAVAILABLE = "unavailable"  # the method could not fit this panel (the reason is logged)

# name → (estimator class, the input it reads by default). Estimators with an `input` parameter read
# either; those in USES_LABELS also take `dev_labels` (a labelled development split) in fit().
AGGREGATORS = {
    "mv": (MajorityVote, "label"),
    "avg": (ScoreAverage, "score"),
    "dawid_skene": (DawidSkene, "label"),
    "ws": (WeakSupervision, "label"),
    "uws": (UniversalWeakSupervision, "score"),
    "care_svd": (CareSVD, "score"),
    "care_tensor": (CareTensor, "score"),
    "wmv": (WeightedMajorityVote, "label"),
    "baer": (BAER, "score"),
}
USES_LABELS = ("care_svd", "care_tensor", "wmv", "baer")
BINARY_ONLY = ("ws", "uws", "care_svd", "care_tensor", "wmv", "baer")

log = logging.getLogger(__name__)


def get_aggregator(name: str, **params):
    """An unfitted estimator by name, e.g. get_aggregator("wmv", estimator="disagreement")."""
    if name not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {name!r}; available: {sorted(AGGREGATORS)}")
    return AGGREGATORS[name][0](**params)


def _coin(seed: int, pair_id: str) -> bool:
    return hashlib.sha256(f"{seed}:{pair_id}".encode()).digest()[0] % 2 == 1


def canonical_votes(
    verdicts: pd.DataFrame, variants: pd.DataFrame, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long votes `task, worker, run, label, score` in each pair's canonical frame, and per variant its
    `task` and whether its first-shown answer is the canonical first candidate: `first_is_canonical`)."""
    v = variants.set_index("variant_id")
    flip = v["pair_id"].map(lambda p: _coin(seed, str(p)))
    first_is_canonical = (v["order"] == "AB") != flip
    task = v["pair_id"].astype(str) + ":" + v["presentation"].astype(str)
    rows = verdicts[verdicts["variant_id"].isin(v.index)]
    keep = first_is_canonical.reindex(rows["variant_id"]).to_numpy()
    verdict = rows["verdict"].where(rows["verdict"].isin(["A", "B"]))
    swapped = verdict.map({"A": "B", "B": "A"})
    votes = pd.DataFrame(
        {
            "task": task.reindex(rows["variant_id"]).to_numpy(),
            "worker": rows["judge_id"].to_numpy(),
            "run": v["order"].reindex(rows["variant_id"]).to_numpy(),
            "label": np.where(keep, verdict, swapped),
            "score": np.where(keep, rows["p_first"], 1.0 - rows["p_first"]),
        }
    )
    return votes, pd.DataFrame({"task": task, "first_is_canonical": first_is_canonical})


def _fit_one(method: str, votes: pd.DataFrame, params: dict) -> tuple[pd.Series, pd.Series]:
    """P(canonical first candidate) and the number of votes per task."""
    defaults = (
        {"neutral": 0.5} if method in ("uws", "care_svd", "care_tensor") else {}
    )  # P(first) = .5: no view
    estimator = get_aggregator(method, **{**defaults, **params.get(method, {})})
    kind = AGGREGATORS[method][1]
    used = votes.dropna(subset=[kind])
    if method in BINARY_ONLY:
        estimator.classes = ("A", "B")  # both classes exist even if every vote names one
    probas = estimator.fit(used[["task", "worker", kind]]).probas_
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


def aggregate(
    verdicts: pd.DataFrame, variants: pd.DataFrame, methods: list[str], seed: int = 0,
    params: dict | None = None, calibration: pd.DataFrame | None = None,
) -> pd.DataFrame:  # fmt: skip
    """One consensus row per variant and method, in the display frame (label "A" = first shown wins).

    With a weekly `calibration` (the latest as of the run's date), WMV weighs the judges by its rates."""
    if calibration is not None and len(calibration) and "wmv" in methods:
        params = {**(params or {}), "wmv": {**(params or {}).get("wmv", {}), "estimator": "given",
                                            "rates": calibrated_rates(calibration)}}  # fmt: skip
    votes, shown = canonical_votes(verdicts, variants, seed)
    task = shown["task"].to_numpy()
    out = []
    for method in methods:
        try:
            p, n = _fit_one(method, votes, params or {})
            reason = None
        except ValueError as exc:
            log.warning("aggregate: %s could not fit this panel: %s", method, exc)
            p, n, reason = pd.Series(dtype=float), pd.Series(dtype=float), str(exc)
        p_task = p.reindex(task).to_numpy(dtype=float)
        p_first = np.where(shown["first_is_canonical"].to_numpy(), p_task, 1.0 - p_task)
        n_votes = n.reindex(task).fillna(0).astype(int).to_numpy()
        label = np.where(p_first > 0.5, "A", np.where(p_first < 0.5, "B", TIE)).astype(object)
        label[np.isnan(p_first)] = UNAVAILABLE if reason else NO_VOTES
        label[(n_votes == 0) & (reason is None)] = NO_VOTES
        p_first[n_votes == 0] = np.nan
        out.append(
            pd.DataFrame(
                {
                    "unit_id": shown.index,
                    "method": method,
                    "score": 2 * p_first - 1,
                    "label": label,
                    "posterior": p_first,
                    "n_votes": n_votes,
                }
            )
        )
    return pd.concat(out, ignore_index=True)


def consensus_as_verdicts(consensus: pd.DataFrame) -> pd.DataFrame:
    """The panel's decisions shaped like verdicts (judge_id `panel:<method>`), so they are profiled like a judge.

    A method that could not fit the panel (label `unavailable`) made no decision and is left out."""
    consensus = consensus[consensus["label"] != UNAVAILABLE]
    return pd.DataFrame(
        {
            "judge_id": "panel:" + consensus["method"],
            "variant_id": consensus["unit_id"],
            "verdict": consensus["label"].where(consensus["label"].isin(["A", "B", TIE])),
            "p_first": consensus["posterior"],
        }
    )
