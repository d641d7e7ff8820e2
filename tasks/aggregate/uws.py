"""UWS: universal weak supervision for continuous scores (Shin et al. 2022), the triplet method.

Model: each judge's standardised score is z_i = ρ_i·Y + noise with Var(Y) = 1 and independent noise, so for
three judges O_ij O_ik / O_jk = ρ_i² (O the correlation matrix). |ρ_i| is the median of that ratio over every
pair (j, k) of other judges (the median, not one triplet, so that one near-zero O_jk cannot blow it up); the
signs come from the leading eigenvector of O, oriented so that the judges agree with the consensus on
average. The consensus is the Gaussian posterior mean E[Y | z] ∝ Σ_i ρ_i/(1 − ρ_i²)·z_i; binary decisions
come from a two-component mixture on it (no labels, no assumed class balance); with `neutral` (the score
that means "no preference", 0.5 for P(first wins)) missing votes take that value and the split is a
symmetric mixture around the consensus of an all-neutral row, so "no evidence" is a tie.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import (
    DEFAULT_CLASSES,
    BinaryAggregator,
    check_frame,
    impute_neutral,
    standardise,
    symmetric_posterior,
    two_component_posterior,
    vote_matrix,
)


def leading_axis(corr: np.ndarray) -> np.ndarray:
    """The leading eigenvector of a correlation matrix, signed so that its entries sum positive."""
    _, vecs = np.linalg.eigh(corr)
    v = vecs[:, -1]
    return v if v.sum() >= 0 else -v


class UniversalWeakSupervision(BinaryAggregator):
    """Fitted: `accuracies_` (worker: ρ, the correlation with the latent truth), `weights_`, `scores_` (on a
    standardised scale: `scale_` "rank")
    (posterior mean of the standardised truth), `probas_`, `labels_` (the upper mixture component is
    `classes[0]`)."""

    def __init__(
        self,
        max_accuracy: float = 0.99,
        neutral: float | None = None,
        classes: tuple[str, str] = DEFAULT_CLASSES,
    ):
        self.max_accuracy, self.neutral, self.classes = max_accuracy, neutral, classes

    def fit(self, df: pd.DataFrame) -> UniversalWeakSupervision:
        df = check_frame(df, "score", "UniversalWeakSupervision", min_workers=3)
        matrix = vote_matrix(df, "score")
        z, mean, sd = standardise(impute_neutral(matrix.to_numpy(), self.neutral))
        corr = np.clip(z.T @ z / len(z), -1.0, 1.0)
        p = corr.shape[0]
        rho2 = np.empty(p)
        for i in range(p):
            ratios = [
                abs(corr[i, j] * corr[i, k] / corr[j, k])
                for j, k in combinations([m for m in range(p) if m != i], 2)
                if abs(corr[j, k]) > 1e-6
            ]
            rho2[i] = np.median(ratios) if ratios else 0.0
        rho = np.sqrt(np.clip(rho2, 0.0, self.max_accuracy**2)) * np.sign(leading_axis(corr))
        weights = rho / (1.0 - rho**2)
        score = z @ weights / (1.0 + rho @ weights)
        self.accuracies_ = pd.Series(rho, index=matrix.columns, name="accuracy")
        self.weights_ = pd.Series(weights, index=matrix.columns, name="weight")
        self.scores_ = pd.Series(score, index=matrix.index, name="score")
        self.scale_ = "rank"  # the standardised truth's posterior mean: compare it by rank, not by MAE
        if self.neutral is None:
            post = two_component_posterior(score)
        else:
            post = symmetric_posterior(score - ((self.neutral - mean) / sd) @ weights / (1.0 + rho @ weights))
        return self._finish(post, matrix.index, tuple(self.classes))
