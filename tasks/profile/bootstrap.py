"""Percentile bootstrap of a mean, vectorised: one (n_boot × n) index draw, no Python loop over resamples."""

from __future__ import annotations

import warnings

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


def resample_counts(n_units: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot × n_units) multiplicities of a with-replacement resample of the units, one row per resample."""
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=n_boot).astype(np.float32)


def bootstrap_cells(
    scores: np.ndarray, n_boot: int = 1000, confidence: float = 0.95, rng: np.random.Generator | None = None
) -> dict[str, np.ndarray]:
    """Every cell's mean and percentile CI from ONE resampling of the units (rows), vectorised.

    scores: units × cells, NaN where a unit has no score in that cell (a judge's sample, a condition's
    subset). A resample is a row of multiplicities W; a cell's resampled mean is (W @ s) / (W @ has), two
    matrix products for all cells at once. Sharing W makes the CIs of cells joint (a difference of two cells
    is bootstrapped pair by pair) and keeps a cell's CI unchanged when other cells are added.
    Returns estimate, low, high, n (per cell) and draws (n_boot × cells)."""
    scores = np.asarray(scores, dtype=float)
    rng = rng if rng is not None else np.random.default_rng(0)
    has = ~np.isnan(scores)
    n = has.sum(axis=0)
    estimate = np.divide(np.where(has, scores, 0.0).sum(axis=0), n, out=np.full(n.shape, np.nan), where=n > 0)
    if scores.shape[0] == 0:
        empty = np.full(scores.shape[1], np.nan)
        return {
            "estimate": empty,
            "low": empty,
            "high": empty,
            "n": n,
            "draws": np.empty((n_boot, scores.shape[1])),
        }
    w = resample_counts(scores.shape[0], n_boot, rng)
    totals = w @ np.where(has, scores, 0.0).astype(np.float32)
    counts = w @ has.astype(np.float32)
    draws = np.divide(totals, counts, out=np.full(totals.shape, np.nan, dtype=np.float32), where=counts > 0)
    alpha = (1 - confidence) / 2
    with np.errstate(all="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: a cell with no units
            low, high = np.nanquantile(draws, [alpha, 1 - alpha], axis=0)
    return {
        "estimate": estimate,
        "low": np.fmin(low, estimate),
        "high": np.fmax(high, estimate),
        "n": n,
        "draws": draws.astype(float),
    }
