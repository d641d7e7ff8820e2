"""A guaranteed error rate: decide only the tasks the consensus is sure enough of, certified on the audit.

Given a confidence c_t for every task's decision (label-free: auto's posterior probability of the label taken),
a target error α and a risk δ, find the most permissive threshold λ̂ such that the error among the tasks with
c_t ≥ λ̂ is at most α with probability at least 1 − δ, and label the others `abstain` (the items to escalate to a
person). The certificate is Learn-then-Test (Angelopoulos, Bates, Candès, Jordan & Lei 2021): for a grid of
thresholds from the most conservative down, test H₀(λ): R(λ) > α with R(λ) the error rate among the accepted
tasks, on the audited tasks that λ accepts; fixed-sequence testing (stop at the first λ whose null is not
rejected) controls the family-wise error at δ without a correction, so P(R(λ̂) ≤ α) ≥ 1 − δ.

The test: among the n_λ audited tasks λ accepts, the errors of the consensus (as it would decide without that
task's label: cross-fitted, `audit.refit`'s `audit_hits`) are Binomial(n_λ, R(λ)) for a simple random audit;
p(λ) = P(Binomial(n_λ, α_λ) ≤ e_λ) (the exact binomial tail, scipy). A stratified audit over-samples uncertain
tasks: each audited task then stands for `weight` tasks, the error rate is the weighted one and n_λ is Kish's
effective sample size (Σw)²/Σw², an approximation that keeps the test honest about what the weights cost.

The promise is about the tasks actually decided, not only the rate behind them: m_λ decided tasks with error
rate R show an error that varies by about √(R(1 − R)/m_λ). So (`realised=True`) δ is split in two — δ/2 for the
test, δ/2 for that sampling — and the null tested is R(λ) > α_λ = α − z_{δ/2}·√(α(1 − α)/m_λ). Thresholds whose
null no audit of this size could reject even with no error ((1 − α_λ)^n_λ > δ/2) are not in the sequence; which
those are depends on the confidences and on which tasks were audited, never on their labels. Measured
(bench/selective.py): without the split the realised error exceeded α on up to a quarter of the draws of a
family; with it, on 0–15 % (20 draws each). The head `audit.refit` takes is the best of about a dozen on the same
audit, so its audit record is a little optimistic; the split absorbs part of that too.

What it needs: an audit drawn before the labels were seen (`judgeops audit propose`), and a confidence that did
not look at the audit — on an audited task, the confidence of the decision the head makes without that task's
label (`audit.refit` gives it; a head fitted with the labels would otherwise be "sure" of every audited task
exactly where it is right, and the certificate would see none of its errors). What it cannot do: certify a target below what the audit can show — with n audited tasks
no threshold is certified when even zero errors among them has probability above δ under α (n < log δ / log(1 −
α): 22 tasks for α = 0.1, δ = 0.1); then every task abstains, and the result says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

ABSTAIN = "abstain"


@dataclass(frozen=True)
class Selective:
    """`target_error`, `delta`, `threshold` (None: nothing certified), `coverage` (share of tasks decided),
    `audit_error` (the weighted error on the audited tasks the threshold accepts), `n_certified` (their
    effective number) and `p_value` (of the last null rejected)."""

    target_error: float
    delta: float
    threshold: float | None
    coverage: float
    audit_error: float | None
    n_certified: float
    p_value: float | None

    def as_dict(self) -> dict:
        return {**asdict(self), "labels_needed": labels_needed(self.target_error, self.delta)}


def labels_needed(target_error: float, delta: float) -> int:
    """The fewest audited tasks that can certify `target_error` at 1 − `delta` at all: even with none of them
    wrong, the binomial test rejects "error > A" only once (1 − A)^n ≤ δ (22 for A = δ = 0.1). A label budget
    for the selective consensus: fewer decided audited tasks than this certify nothing, however right."""
    return math.ceil(math.log(delta) / math.log1p(-target_error))


def certify(
    confidence: pd.Series,
    audit_hits: pd.Series,
    target_error: float,
    delta: float = 0.1,
    weights: pd.Series | None = None,
    grid: int = 200,
    realised: bool = True,
) -> tuple[float | None, float, float | None, float | None]:
    """(λ̂, the effective number of audited tasks it accepts, their weighted error rate, the p-value) by
    fixed-sequence Learn-then-Test (module docstring), or (None, 0, None, None) when no threshold is certified:
    `confidence` per task, `audit_hits` per audited task (1 right, 0 wrong), `weights` per audited task."""
    from scipy.stats import binom, norm  # lazy: scipy.stats is slow to import

    if not 0 < target_error < 1 or not 0 < delta < 1:
        raise ValueError(f"target error and delta must lie in (0, 1), got {target_error} and {delta}")
    hits = audit_hits.dropna()
    c = confidence.reindex(hits.index).to_numpy(dtype=float)
    w = (
        np.ones(len(hits))
        if weights is None
        else pd.Series(weights).reindex(hits.index).fillna(1.0).to_numpy()
    )
    wrong = 1.0 - hits.to_numpy(dtype=float)
    levels = np.unique(np.quantile(confidence.to_numpy(dtype=float), np.linspace(1, 0, grid)))[::-1]
    found = (None, 0.0, None, None)
    # the sequence starts where the audit could reject a null at all (zero errors among n: (1 − α)^n ≤ δ); where
    # each λ stands depends on the confidences and on which tasks were audited, never on their labels
    test_delta = delta / 2 if realised else delta  # the other half: the decided tasks' own sampling
    unaudited = ~confidence.index.isin(hits.index)
    all_c = confidence.to_numpy(dtype=float)
    for lam in levels:  # from the most conservative threshold down; stop at the first null kept
        take = c >= lam
        if not take.any():
            continue
        n_eff = w[take].sum() ** 2 / (w[take] ** 2).sum()
        n = np.floor(n_eff + 1e-9)  # whole tasks: Kish's n of equal weights is their count, up to rounding
        bar = target_error
        m = int(np.sum(unaudited & (all_c >= lam)))
        if realised and m:  # the error the m decided tasks show varies around the rate by ~√(α(1 − α)/m)
            bar = target_error - norm.isf(delta / 2) * np.sqrt(target_error * (1 - target_error) / m)
        # a λ whose null no audit of this size could reject (zero errors: (1 − bar)^n > δ) is not tested
        if bar <= 0 or n < np.ceil(np.log(test_delta) / np.log(1 - bar)):
            continue
        rate = float(np.average(wrong[take], weights=w[take]))
        p = float(binom.cdf(np.floor(rate * n + 1e-9), n, bar))
        if p > test_delta:
            break
        found = (float(lam), float(n_eff), rate, p)
    return found


def selective_labels(
    labels: pd.Series,
    confidence: pd.Series,
    audit_hits: pd.Series,
    audited: pd.Series,
    target_error: float,
    delta: float = 0.1,
    weights: pd.Series | None = None,
) -> tuple[pd.Series, Selective]:
    """The labels with every task below the certified threshold set to `abstain` (an audited task keeps its
    audited label: it is known), and what was certified."""
    lam, n_eff, rate, p = certify(confidence, audit_hits, target_error, delta, weights)
    out = labels.astype(object).copy()
    if lam is None:
        out[:] = ABSTAIN
    else:
        out[confidence.reindex(out.index).fillna(-np.inf).to_numpy() < lam] = ABSTAIN
    known = audited.dropna()
    out.loc[known.index.intersection(out.index)] = known.reindex(known.index.intersection(out.index))
    coverage = float((out != ABSTAIN).mean()) if len(out) else 0.0
    return out, Selective(target_error, delta, lam, coverage, rate, n_eff, p)
