"""Aggregation: the panel's verdicts on each variant → one `consensus` row per (variant, method).

Aggregators see only the judges' votes in the display frame (which answer was shown first), never
the gold position: the methods are label-free. Units with no usable vote are kept with label
"no_votes", so nothing disappears between verdicts and consensus.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate.dawid_skene import DawidSkene
from judgeops.tasks.aggregate.mv import TIE, MajorityVote, ScoreAverage

NO_VOTES = "no_votes"

# name → (estimator class, input kind). Categorical methods read `task, worker, label`; continuous ones
# read `task, worker, score`.
AGGREGATORS = {
    "mv": (MajorityVote, "label"),
    "avg": (ScoreAverage, "score"),
    "dawid_skene": (DawidSkene, "label"),
}
PLANNED = ("ws", "uws", "care_svd", "care_tensor", "wmv", "baer")  # issue 6, not built yet


def get_aggregator(name: str, **params):
    """An unfitted estimator by name, e.g. get_aggregator("dawid_skene", n_iter=50)."""
    if name in AGGREGATORS:
        return AGGREGATORS[name][0](**params)
    if name in PLANNED:
        raise ValueError(f"aggregator {name!r} is not implemented yet; available: {sorted(AGGREGATORS)}")
    raise ValueError(f"unknown aggregator {name!r}; available: {sorted(AGGREGATORS)}")


def _majority_vote(verdicts: pd.DataFrame, units: pd.Index) -> pd.DataFrame:
    votes = verdicts[verdicts["verdict"].isin(["A", "B"])]
    votes = votes.rename(columns={"variant_id": "task", "judge_id": "worker", "verdict": "label"})
    mv = MajorityVote().fit(votes[["task", "worker", "label"]])
    counts = mv.counts_.reindex(index=units, columns=["A", "B"], fill_value=0)
    n = counts.sum(axis=1)
    return pd.DataFrame(
        {
            "unit_id": units,
            "method": "mv",
            "score": ((counts["A"] - counts["B"]) / n.replace(0, np.nan)).to_numpy(),
            "label": mv.labels_.reindex(units).fillna(NO_VOTES).to_numpy(),
            "posterior": (counts["A"] / n.replace(0, np.nan)).to_numpy(),
            "n_votes": n.to_numpy(),
        }
    )


def _score_average(verdicts: pd.DataFrame, units: pd.Index) -> pd.DataFrame:
    scored = verdicts.dropna(subset=["p_first"])
    scored = scored.rename(columns={"variant_id": "task", "judge_id": "worker", "p_first": "score"})
    avg = ScoreAverage().fit(scored[["task", "worker", "score"]])
    p = avg.scores_.reindex(units)
    label = np.where(p > 0.5, "A", np.where(p < 0.5, "B", TIE))
    return pd.DataFrame(
        {
            "unit_id": units,
            "method": "avg",
            "score": (2 * p - 1).to_numpy(),
            "label": np.where(p.isna(), NO_VOTES, label),
            "posterior": p.to_numpy(),
            "n_votes": avg.counts_.reindex(units).fillna(0).astype(int).to_numpy(),
        }
    )


METHODS = {"mv": _majority_vote, "avg": _score_average}


def aggregate(verdicts: pd.DataFrame, variants: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    """One consensus row per variant and method, in the display frame (label "A" = first shown wins)."""
    units = pd.Index(variants["variant_id"], name="unit_id")
    return pd.concat([METHODS[m](verdicts, units) for m in methods], ignore_index=True)


def consensus_as_verdicts(consensus: pd.DataFrame) -> pd.DataFrame:
    """The panel's decisions shaped like verdicts (judge_id `panel:<method>`), so they are profiled like a judge."""
    return pd.DataFrame(
        {
            "judge_id": "panel:" + consensus["method"],
            "variant_id": consensus["unit_id"],
            "verdict": consensus["label"].where(consensus["label"].isin(["A", "B", TIE])),
            "p_first": consensus["posterior"],
        }
    )
