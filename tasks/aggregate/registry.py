"""Every aggregation method by name: `get_aggregator(name, **params)` builds an unfitted estimator.

Every method is an estimator with one interface (crowd-kit / scikit-learn style; see _base.py):
`fit(df)`, `fit_predict(df)`, `fit_predict_proba(df)` on a long frame `task, worker, label` or
`task, worker, score`, fitted attributes ending in `_`.
"""

from __future__ import annotations

from judgeops.tasks.aggregate.auto import AutoAggregator
from judgeops.tasks.aggregate.baer import BAER
from judgeops.tasks.aggregate.care import CareSVD, CareTensor
from judgeops.tasks.aggregate.cwv import ConsistencyWeightedVote
from judgeops.tasks.aggregate.dawid_skene import DawidSkene
from judgeops.tasks.aggregate.mv import MajorityVote, ScoreAverage
from judgeops.tasks.aggregate.position_ds import PositionDawidSkene
from judgeops.tasks.aggregate.uws import UniversalWeakSupervision
from judgeops.tasks.aggregate.wmv import WeightedMajorityVote
from judgeops.tasks.aggregate.ws import WeakSupervision

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
    "cwv": (ConsistencyWeightedVote, "label"),
    "ds_position": (PositionDawidSkene, "label"),
    "auto": (AutoAggregator, "label"),
}
USES_LABELS = ("care_svd", "care_tensor", "wmv", "baer")
BINARY_ONLY = ("ws", "uws", "care_svd", "care_tensor", "wmv", "baer", "cwv", "ds_position", "auto")
# methods that read the perturbation columns (`run`, `shown_first`, `item`) beside task, worker, label
USES_RUNS = ("cwv", "ds_position", "auto")


def get_aggregator(name: str, **params):
    """An unfitted estimator by name, e.g. get_aggregator("wmv", estimator="disagreement")."""
    if name not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {name!r}; available: {sorted(AGGREGATORS)}")
    return AGGREGATORS[name][0](**params)


def check_params(params: dict[str, dict]) -> None:
    """Every method's parameters build an estimator (a config check, run before any stage)."""
    for name, kwargs in params.items():
        try:
            get_aggregator(name, **kwargs)
        except TypeError as exc:
            raise ValueError(f"aggregation.params.{name}: {exc}") from exc
