"""Percentile bootstrap of a mean, vectorised: one (n_boot × n) index draw, no Python loop over resamples."""

from __future__ import annotations

import numpy as np


def bootstrap_mean_ci(
    scores: np.ndarray, n_boot: int = 1000, confidence: float = 0.95, rng: np.random.Generator | None = None
) -> tuple[float, float, float]:
    """(mean, low, high) of `scores` with a percentile CI from resampling the units with replacement."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        raise ValueError("bootstrap_mean_ci: no units to resample")
    rng = rng if rng is not None else np.random.default_rng(0)
    idx = rng.integers(0, scores.size, size=(n_boot, scores.size))
    means = scores[idx].mean(axis=1)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    estimate = float(scores.mean())
    return estimate, float(min(low, estimate)), float(max(high, estimate))
