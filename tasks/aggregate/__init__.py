"""Aggregation without labels: every method by name (registry.py, one module per method), and the panel's
verdicts → one `consensus` row per (variant, method) in the evaluate flow (panel.py)."""

from judgeops.tasks.aggregate.panel import (
    aggregate_panel,
    calibrated_rates,
    canonical_votes,
)
from judgeops.tasks.aggregate.registry import (
    AGGREGATORS,
    BINARY_ONLY,
    USES_LABELS,
    USES_RUNS,
    get_aggregator,
)

__all__ = [
    "AGGREGATORS",
    "BINARY_ONLY",
    "USES_LABELS",
    "USES_RUNS",
    "aggregate_panel",
    "calibrated_rates",
    "canonical_votes",
    "get_aggregator",
]
