"""Every aggregation method by name: `get_aggregator(name, **params)` builds an unfitted estimator.

Every method is an estimator with one interface (crowd-kit / scikit-learn style; see _base.py):
`fit(df)`, `fit_predict(df)`, `fit_predict_proba(df)` on a long frame `task, worker, label` or
`task, worker, score`, fitted attributes ending in `_`.
"""

from __future__ import annotations

from judgeops import plugins
from judgeops.schemas.artifacts import BUILTIN_AGGREGATORS

# The estimators are found by name through the `judgeops.aggregators` entry points (judgeops/plugins.py; the
# built-ins are registered in pyproject.toml): a method's module (scikit-learn for baer, tensorly for care_tensor)
# loads when it is asked for, so `judgeops aggregate --method mv` starts as fast as a pandas script.
# name → the input a built-in reads by default (schemas/artifacts.py; a plugin's: its class attribute
# `default_input`, else label). Estimators with an `input` parameter read either; those in USES_LABELS also take
# `dev_labels` (a labelled development split) in fit().
AGGREGATORS = BUILTIN_AGGREGATORS
USES_LABELS = ("care_svd", "care_tensor", "wmv", "baer")
BINARY_ONLY = ("ws", "uws", "care_svd", "care_tensor", "wmv", "baer", "cwv", "ds_position", "auto")
# methods that read the perturbation columns (`run`, `shown_first`, `item`) beside task, worker, label
USES_RUNS = ("cwv", "ds_position", "auto")


def estimator_class(name: str) -> type:
    """The estimator class of a method name (a PluginError, a ValueError, lists the installed ones)."""
    return plugins.load("aggregators", name)


def default_input(name: str) -> str:
    """`label` or `score`: what the method reads unless told otherwise."""
    if name in AGGREGATORS:
        return AGGREGATORS[name]
    return getattr(estimator_class(name), "default_input", "label")


def get_aggregator(name: str, **params):
    """An unfitted estimator by name, e.g. get_aggregator("wmv", estimator="disagreement")."""
    return estimator_class(name)(**params)
