"""Every aggregation method by name: `get_aggregator(name, **params)` builds an unfitted estimator.

Every method is an estimator with one interface (crowd-kit / scikit-learn style; see _base.py):
`fit(df)`, `fit_predict(df)`, `fit_predict_proba(df)` on a long frame `task, worker, label` or
`task, worker, score`, fitted attributes ending in `_`.
"""

from __future__ import annotations

import importlib

# name → (module:class of the estimator, the input it reads by default). Estimators with an `input` parameter
# read either; those in USES_LABELS also take `dev_labels` (a labelled development split) in fit(). The table
# is data: a method's module (scikit-learn for baer, tensorly for care_tensor) loads when it is asked for, so
# `judgeops aggregate --method mv` starts as fast as a pandas script.
AGGREGATORS = {
    "mv": ("mv:MajorityVote", "label"),
    "avg": ("mv:ScoreAverage", "score"),
    "dawid_skene": ("dawid_skene:DawidSkene", "label"),
    "ws": ("ws:WeakSupervision", "label"),
    "uws": ("uws:UniversalWeakSupervision", "score"),
    "care_svd": ("care:CareSVD", "score"),
    "care_tensor": ("care:CareTensor", "score"),
    "wmv": ("wmv:WeightedMajorityVote", "label"),
    "baer": ("baer:BAER", "score"),
    "cwv": ("cwv:ConsistencyWeightedVote", "label"),
    "ds_position": ("position_ds:PositionDawidSkene", "label"),
    "auto": ("auto:AutoAggregator", "label"),
}
USES_LABELS = ("care_svd", "care_tensor", "wmv", "baer")
BINARY_ONLY = ("ws", "uws", "care_svd", "care_tensor", "wmv", "baer", "cwv", "ds_position", "auto")
# methods that read the perturbation columns (`run`, `shown_first`, `item`) beside task, worker, label
USES_RUNS = ("cwv", "ds_position", "auto")


def estimator_class(name: str) -> type:
    """The estimator class of a method name."""
    if name not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {name!r}; available: {sorted(AGGREGATORS)}")
    module, cls = AGGREGATORS[name][0].split(":")
    return getattr(importlib.import_module(f"judgeops.tasks.aggregate.{module}"), cls)


def get_aggregator(name: str, **params):
    """An unfitted estimator by name, e.g. get_aggregator("wmv", estimator="disagreement")."""
    return estimator_class(name)(**params)


def check_params(params: dict[str, dict]) -> None:
    """Every method's parameters build an estimator (a config check, run before any stage)."""
    for name, kwargs in params.items():
        try:
            get_aggregator(name, **kwargs)
        except TypeError as exc:
            raise ValueError(f"aggregation.params.{name}: {exc}") from exc
