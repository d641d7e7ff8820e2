"""WS: the Snorkel label model (Ratner et al. 2019, "Training complex models with multi-task weak supervision").

Each judge's vote is one-hot over the two classes with no abstain column (a missing vote is all zeros, and
adds nothing). With conditionally independent judges the overlap matrix O = LᵀL/n has off-diagonal blocks
O_ij = Σ_y P(y) μ_i[:, y] μ_jᵀ[:, y], where μ_j[v, y] = P(judge j votes v | Y = y) (times its coverage).
μ is fitted to O off the diagonal blocks, plus Snorkel's term tying each row's marginal to diag(O), by
L-BFGS-B on the analytic gradient. Snorkel's own implementation needs torch for this one least-squares fit;
numpy and scipy are enough. Like Snorkel, the fit starts from "each judge 70 % right" and, of the two
mirror-image solutions, keeps the one where the judges are on average better than chance.

The class balance prior is uniform unless given: it is never estimated from labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from judgeops.tasks.aggregate._base import BinaryAggregator, binary_classes, check_frame, vote_matrix


class WeakSupervision(BinaryAggregator):
    """Fitted: `mu_` ((worker, vote) × class: P(vote, voted | class)), `skills_` (worker: mean P(right)),
    `probas_`, `labels_`."""

    def __init__(
        self,
        class_balance: tuple[float, float] = (0.5, 0.5),
        prec_init: float = 0.7,
        l2: float = 0.0,
        classes: tuple[str, str] | None = None,
    ):
        self.class_balance, self.prec_init, self.l2, self.classes = class_balance, prec_init, l2, classes

    def fit(self, df: pd.DataFrame) -> WeakSupervision:
        df = check_frame(df, "label", "WeakSupervision", min_workers=3)
        classes = binary_classes(df["label"], self.classes, "WeakSupervision")
        share = vote_matrix(df, "label", classes)  # share of a judge's runs voting classes[0]
        tasks, workers = share.index, share.columns
        x = share.to_numpy()
        voted = ~np.isnan(x)
        # one-hot without abstain, columns (w0 c0, w0 c1, w1 c0, ...): runs split fractionally
        one_hot = np.zeros((len(tasks), 2 * len(workers)))
        one_hot[:, 0::2] = np.where(voted, x, 0.0)
        one_hot[:, 1::2] = np.where(voted, 1.0 - x, 0.0)
        n, d = one_hot.shape
        overlap = one_hot.T @ one_hot / n
        block = np.kron(np.eye(len(workers)), np.ones((2, 2))) > 0
        p = np.asarray(self.class_balance, dtype=float)
        coverage = np.repeat(voted.mean(axis=0), 2)
        right = np.tile(
            [[self.prec_init, 1 - self.prec_init], [1 - self.prec_init, self.prec_init]], (len(workers), 1)
        )
        mu0 = right * coverage[:, None]

        def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
            mu = flat.reshape(d, 2)
            resid = np.where(block, 0.0, mu @ np.diag(p) @ mu.T - overlap)
            marg = mu @ p - np.diag(overlap)
            value = (resid**2).sum() + (marg**2).sum() + self.l2 * ((mu - mu0) ** 2).sum()
            grad = 4 * resid @ mu * p + 2 * np.outer(marg, p) + 2 * self.l2 * (mu - mu0)
            return float(value), grad.ravel()

        fit = minimize(
            loss,
            mu0.ravel(),
            jac=True,
            method="L-BFGS-B",
            bounds=[(1e-6, 1.0)] * (2 * d),
            options={"maxiter": 2000, "ftol": 1e-14, "gtol": 1e-10},
        )
        mu = np.clip(fit.x.reshape(d, 2), 0.01, 0.99)
        if np.trace(mu.reshape(-1, 2, 2).sum(axis=0)) < np.trace(mu.reshape(-1, 2, 2).sum(axis=0)[:, ::-1]):
            mu = mu[:, ::-1]  # the mirror solution: keep judges better than chance on average
        log_post = one_hot @ np.log(mu) + np.log(p)
        log_post -= log_post.max(axis=1, keepdims=True)
        post = np.exp(log_post)
        post /= post.sum(axis=1, keepdims=True)
        self.mu_ = pd.DataFrame(
            mu,
            index=pd.MultiIndex.from_product([workers, classes], names=["worker", "vote"]),
            columns=classes,
        )
        per = mu.reshape(-1, 2, 2)
        self.skills_ = pd.Series(
            (per[:, 0, 0] * p[0] + per[:, 1, 1] * p[1]) / np.maximum(per.sum(axis=1) @ p, 1e-12),
            index=workers,
            name="skill",
        )
        return self._finish(post[:, 0], tasks, classes)
