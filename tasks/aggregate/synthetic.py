"""Synthetic judge panels with known truth, for checking aggregators against ground truth.

The score model is CARE's (ALGORITHMS.md §6): judge j's score on task t is

    J_tj = a_j · Q_t + b_j · C_t + (clique_j · G_t) + ε_tj,    ε ~ N(0, 1),

with Q ∈ {0, 1} the true class ("A" when 1), C ∈ {0, 1} a confounder, G a noise term shared by a clique
of judges, and a vote `label = "A" if J > threshold_j else "B"` (threshold_j = a_j/2 + b_j/2 centres each
judge). Every panel records its parameters and seed, so a result can be traced to the regime that made it.

| regime                      | what it stresses                                                       |
|-----------------------------|------------------------------------------------------------------------|
| independent                 | (i) conditionally independent judges of mixed accuracy                 |
| clique                      | (ii) a correlated clique of four weak judges outvotes one strong judge |
| confounder_follows_quality  | (iii) a confounder orthogonal to quality; the dominant covariance still |
|                             | follows quality (second order is enough)                               |
| confounder_independent      | (iv) twelve judges; a confounder independent of quality, loading       |
|                             | unevenly, dominates the covariance (second order is not enough)        |
| below_chance_order          | (v) most judges below chance, with judge-specific position bias; each  |
|                             | task shown in both orders, each order a separate run (`order` column)  |
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

REGIMES = (
    "independent",
    "clique",
    "confounder_follows_quality",
    "confounder_independent",
    "below_chance_order",
)


@dataclass(frozen=True)
class Panel:
    votes: pd.DataFrame  # task, worker, label, score (and order for below_chance_order)
    truth: pd.Series  # task → "A" / "B"
    params: dict = field(default_factory=dict)


def _scores_to_votes(scores: np.ndarray, thresholds: np.ndarray, names: list[str]) -> pd.DataFrame:
    n, p = scores.shape
    return pd.DataFrame(
        {
            "task": np.repeat(np.arange(n), p),
            "worker": np.tile(names, n),
            "label": np.where(scores > thresholds, "A", "B").ravel(),
            "score": scores.ravel(),
        }
    )


DEFAULT_STRENGTH = {"clique": 2.0, "confounder_follows_quality": 1.5, "confounder_independent": 2.0}


def regime_loadings(regime: str, strength: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(quality a, confounder b, clique g) loadings per judge of a score regime."""
    if regime == "independent":
        a = np.array([0.3, 0.6, 1.0, 1.5, 2.5])
        return a, np.zeros_like(a), np.zeros_like(a)
    if regime == "clique":  # one strong judge, two fair ones, four weak ones that share their noise
        a = np.array([3.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5])
        return a, np.zeros_like(a), strength * np.array([0, 0, 0, 1.0, 1, 1, 1])
    if regime == "confounder_follows_quality":
        # three strong judges the confounder pushes down, six weak ones it pushes up (b ⟂ a); quality keeps
        # the larger share of the covariance while strength < 1.75 (‖a‖² = 20.9 > 6.7·strength²)
        a = np.array([2.5, 2.5, 2.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6])
        return a, strength * np.array([-0.48, -0.48, -0.48, 1, 1, 1, 1, 1, 1]), np.zeros_like(a)
    # confounder_independent: twelve judges of similar quality; the confounder loads on them unevenly and
    # carries most of the covariance from strength ≈ 0.8 on (‖b‖² = 20.7·strength² vs ‖a‖² ≈ 12.3)
    a = np.array([0.8, 1.2, 1.0, 0.9, 1.1, 1.0, 0.8, 1.2, 1.0, 0.9, 1.1, 1.0])
    b = strength * np.array([2.0, 0.2, 1.4, 0.4, 1.8, 1.0, 1.6, 0.3, 1.2, 0.6, 1.9, 0.5])
    return a, b, np.zeros_like(a)


def make_panel(regime: str, n_tasks: int = 2000, seed: int = 0, strength: float | None = None) -> Panel:
    """A panel of the given regime; `strength` scales the confounder (iii, iv) or the clique's shared noise
    (ii); None takes the regime's default (DEFAULT_STRENGTH)."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; one of {REGIMES}")
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 2, n_tasks)
    truth = pd.Series(np.where(q == 1, "A", "B"), index=pd.RangeIndex(n_tasks, name="task"), name="label")
    if regime == "below_chance_order":
        return _below_chance_order(rng, q, truth, seed)
    strength = DEFAULT_STRENGTH.get(regime, 0.0) if strength is None else strength
    a, b, clique = regime_loadings(regime, strength)
    c = rng.integers(0, 2, n_tasks)
    shared = rng.normal(size=n_tasks)
    scores = np.outer(q, a) + np.outer(c, b) + np.outer(shared, clique) + rng.normal(size=(n_tasks, len(a)))
    names = [f"j{i}" for i in range(len(a))]
    votes = _scores_to_votes(scores, a / 2 + b / 2, names)
    params = {"regime": regime, "seed": seed, "n_tasks": n_tasks, "strength": strength,
              "quality": dict(zip(names, a.tolist(), strict=True)),
              "confounder_loading": dict(zip(names, b.tolist(), strict=True)),
              "clique_loading": dict(zip(names, clique.tolist(), strict=True))}  # fmt: skip
    return Panel(votes, truth, params)


def _below_chance_order(rng: np.random.Generator, q: np.ndarray, truth: pd.Series, seed: int) -> Panel:
    """Pairwise judges shown each task in both orders: content accuracy below chance for most, and a
    judge-specific pull towards the first-shown answer."""
    accuracy = np.array([0.40, 0.42, 0.45, 0.38, 0.75])  # four below chance, one good
    position_bias = np.array([0.05, 0.30, 0.60, 0.15, 0.10])  # P(answers "first shown" regardless)
    n, rows = len(q), []
    names = [f"j{i}" for i in range(len(accuracy))]
    for order in ("AB", "BA"):
        for j, name in enumerate(names):
            right = rng.random(n) < accuracy[j]
            content = np.where(right, q, 1 - q)  # 1: picks the true "A" answer
            # in BA, the true-A answer is shown second: "first shown" is the B answer
            first = 1 if order == "AB" else 0
            said = np.where(rng.random(n) < position_bias[j], first, content)
            rows.append(
                pd.DataFrame(
                    {"task": np.arange(n), "worker": name, "order": order,
                     "label": np.where(said == 1, "A", "B"), "score": said.astype(float)}
                )
            )  # fmt: skip
    params = {"regime": "below_chance_order", "seed": seed, "n_tasks": n,
              "accuracy": dict(zip(names, accuracy.tolist(), strict=True)),
              "position_bias": dict(zip(names, position_bias.tolist(), strict=True))}  # fmt: skip
    return Panel(pd.concat(rows, ignore_index=True), truth, params)
