"""Percentile bootstrap of a mean, vectorised: one (n_boot × n) index draw, no Python loop over resamples.

`bootstrap_cells` draws its resamples in blocks of BLOCK, each block from its own seed: a block is the same
wherever and in whatever order it is computed, so the blocks can go to a task runner (`map_blocks`; the
profile stage's `profile-bootstrap` flow) and give exactly the resamples computed here, and a block's
(BLOCK × units) multiplicities are all the memory a resample needs, not (n_boot × units)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

BLOCK = 100  # resamples per block
Block = tuple[int, int, int]  # (seed, block index, resamples in it)
# computes every block's (totals, counts) from (filled scores, has), in block order
MapBlocks = Callable[[np.ndarray, np.ndarray, list[Block]], list[tuple[np.ndarray, np.ndarray]]]


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


def blocks_of(n_boot: int, rng: np.random.Generator) -> list[Block]:
    """The resamples in blocks of BLOCK, each seeded by (one draw from `rng`, its index)."""
    seed = int(rng.integers(2**63))
    return [(seed, i, min(BLOCK, n_boot - start)) for i, start in enumerate(range(0, n_boot, BLOCK))]


def resample_block(filled: np.ndarray, has: np.ndarray, block: Block) -> tuple[np.ndarray, np.ndarray]:
    """One block's resampled totals and counts (resamples × cells): W @ filled, W @ has."""
    seed, index, size = block
    w = resample_counts(filled.shape[0], size, np.random.default_rng([seed, index]))
    return w @ filled, w @ has


def blocks_here(
    filled: np.ndarray, has: np.ndarray, blocks: list[Block]
) -> list[tuple[np.ndarray, np.ndarray]]:
    return [resample_block(filled, has, block) for block in blocks]


def bootstrap_cells(
    scores: np.ndarray,
    n_boot: int = 1000,
    confidence: float = 0.95,
    rng: np.random.Generator | None = None,
    map_blocks: MapBlocks | None = None,
) -> dict[str, np.ndarray]:
    """Every cell's mean and percentile CI from ONE resampling of the units (rows), vectorised.

    scores: units × cells, NaN where a unit has no score in that cell (a judge's sample, a condition's
    subset). A resample is a row of multiplicities W; a cell's resampled mean is (W @ s) / (W @ has), two
    matrix products for all cells at once. Sharing W makes the CIs of cells joint (a difference of two cells
    is bootstrapped pair by pair) and keeps a cell's CI unchanged when other cells are added.
    `map_blocks` computes the blocks of resamples (default: here, in order; the result is the same).
    Returns estimate, low, high, n (per cell) and draws (n_boot × cells)."""
    scores = np.asarray(scores, dtype=float)
    rng = rng if rng is not None else np.random.default_rng(0)
    has = ~np.isnan(scores)
    n = has.sum(axis=0)
    # the resamples read float32 copies, filled column block by column block: at 100k pairs × 575 cells a
    # float64 copy of the matrix is 0.5 GB, and the sums behind the estimates stay float64
    filled = np.empty(scores.shape, dtype=np.float32)
    total = np.empty(scores.shape[1])
    for start in range(0, scores.shape[1], 64):
        block = np.where(has[:, start : start + 64], scores[:, start : start + 64], 0.0)
        total[start : start + 64] = block.sum(axis=0)
        filled[:, start : start + 64] = block
    estimate = np.divide(total, n, out=np.full(n.shape, np.nan), where=n > 0)
    has = has.astype(np.float32)
    if scores.shape[0] == 0:
        empty = np.full(scores.shape[1], np.nan)
        return {
            "estimate": empty,
            "low": empty,
            "high": empty,
            "n": n,
            "draws": np.empty((n_boot, scores.shape[1])),
        }
    parts = (map_blocks or blocks_here)(filled, has, blocks_of(n_boot, rng))
    totals, counts = np.vstack([t for t, _ in parts]), np.vstack([c for _, c in parts])
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
