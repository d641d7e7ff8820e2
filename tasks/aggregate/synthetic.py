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
| adversarial_surface         | (vi) most judges below chance because they follow a surface cue that   |
|                             | favours the wrong answer; the cue and their position bias make them    |
|                             | order- and presentation-unstable; one or two stable strong judges      |
| clique_shared_bias          | (vii) a clique of 3–5 judges shares a bias (a cue independent of the   |
|                             | truth); the strong judge is independent and in the minority            |
| versions                    | (viii) 2–4 versions of one model err together (a shared per-item       |
|                             | error, stable across orders and presentations) beside one stronger     |
|                             | independent judge and 2–4 weak, order-swayed ones                      |
| many_weak_correlated        | (ix) 15–30 judges of accuracy 0.6–0.8 in 3–6 families; errors correlate |
|                             | within a family; each task shown once; class balance 0.3–0.7           |
| order_invariant_clique      | (x) 3–6 score-derived judges whose verdict never changes with the      |
|                             | order (reward models: they share a surface preference) beside one LLM  |
|                             | judge, the best, that answers by position on 15–30 % of pairs          |
| binary_confounded           | (xi) labels only, shown once: a clique of 4–8 follows a binary         |
|                             | confounder independent of the truth; 2–4 good judges                   |

(vi) and (vii) are pairwise panels with perturbations: each item (pair) is a task per presentation (plain,
polished, padded; `item` and `presentation` columns), each task is shown in both orders (`run` "AB": the
candidate labelled A shown first), and judge j's preference for A in a run is

    d = α_j·y + β_j·s + γ_j·f + ε,    ε ~ N(0, 1),   label = A if d > 0,

with y = ±1 the truth, f = ±1 whether A is shown first, and s = ±1 the cue the judge follows: in (vi) a
surface cue that favours the wrong answer on a share `adversarial` of items, kept by each presentation with
probability `cue_kept` and otherwise redrawn (polishing or padding changes which answer looks better); in
(vii) a shared bias independent of the truth, kept across presentations the same way.

(viii) and (x) are pairwise panels like (vi) and (vii), with two more terms in a judge's preference: a per-item
error shared by a family of judges (versions of one model), fixed across orders and presentations, and for (x)
judges that score each answer on its own, whose noise and verdict are the same in both orders. (ix) and (xi)
are shown once (`task, worker, label`; no runs): judge j votes A when α_j·y + λ_j·G_{family(j),t} + β_j·c_t +
τ_j + ε > 0, with G a family's shared error, c a binary confounder (xi) and τ_j a judge's lean.

Families: `make_panel(regime, seed=s, family=True)` draws the regime's parameters (number of judges,
accuracies, clique size, confounder strength and share, position bias, cue persistence) at random from
wide ranges (`draw_params`), so a method is judged on the family, not on one hand-picked setting. The
fixed settings (`family=False`) are the ones of the tests and of the issue-6 tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import norm

REGIMES = (
    "independent",
    "clique",
    "confounder_follows_quality",
    "confounder_independent",
    "below_chance_order",
    "adversarial_surface",
    "clique_shared_bias",
    "versions",
    "many_weak_correlated",
    "order_invariant_clique",
    "binary_confounded",
)
PAIRWISE = ("adversarial_surface", "clique_shared_bias", "versions", "order_invariant_clique")
SHOWN_ONCE = ("many_weak_correlated", "binary_confounded")
PRESENTATIONS = ("plain", "polished", "padded")


@dataclass(frozen=True)
class Panel:
    votes: pd.DataFrame  # task, worker, label, score (and order for below_chance_order)
    truth: pd.Series  # task → "A" / "B"
    params: dict = field(default_factory=dict)


def best_single_judge(panel: Panel) -> float:
    """The bar a consensus is compared with: the best judge's accuracy over all its votes (position-averaged
    where each task is shown in both orders), picked with the truth — a bar, not a method."""
    joined = panel.votes.merge(panel.truth.rename("truth"), left_on="task", right_index=True)
    return float((joined["label"] == joined["truth"]).groupby(joined["worker"]).mean().max())


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


def draw_params(regime: str, rng: np.random.Generator) -> dict:
    """A regime's parameters drawn from wide ranges: one member of the regime's family."""
    u = rng.uniform
    if regime == "independent":
        a = u(0.2, 2.5, rng.integers(3, 13))
        return {"quality": a, "confounder": np.zeros_like(a), "clique": np.zeros_like(a), "strength": 0.0}
    if regime == "clique":  # one strong judge, 0–3 fair ones, a clique of 3–6 weak ones sharing noise
        fair, size = rng.integers(0, 4), rng.integers(3, 7)
        a = np.concatenate([u(2.0, 3.5, 1), u(0.5, 1.2, fair), u(0.3, 0.8, size)])
        strength = u(1.0, 3.0)
        g = np.concatenate([np.zeros(1 + fair), np.ones(size)]) * strength
        return {"quality": a, "confounder": np.zeros_like(a), "clique": g, "strength": strength}
    if regime == "confounder_follows_quality":  # 2–4 strong judges, 4–8 weak; the confounder ⟂ quality
        strong, weak = rng.integers(2, 5), rng.integers(4, 9)
        a = np.concatenate([u(1.8, 3.0, strong), u(0.4, 0.9, weak)])
        raw = np.concatenate([-u(0.3, 0.6, strong), u(0.7, 1.3, weak)])
        b = raw - (raw @ a) / (a @ a) * a
        strength = u(0.5, 1.5)
        return {
            "quality": a,
            "confounder": strength * b / np.abs(b).max(),
            "clique": np.zeros_like(a),
            "strength": strength,
        }
    if regime == "confounder_independent":  # 9–15 similar judges; 40–100 % of them load on the confounder
        p = rng.integers(9, 16)
        a = u(0.7, 1.3, p)
        loads = rng.random(p) < u(0.4, 1.0)
        loads[rng.integers(p)] = True
        strength = u(1.0, 2.0)
        b = np.where(loads, u(0.2, 2.0, p), 0.0) * strength
        return {"quality": a, "confounder": b, "clique": np.zeros_like(a), "strength": strength}
    if regime == "below_chance_order":  # 1–2 good judges, 3–6 below chance, position bias independent
        good, bad = rng.integers(1, 3), rng.integers(3, 7)
        accuracy = np.concatenate([u(0.65, 0.85, good), u(0.30, 0.48, bad)])
        return {"accuracy": accuracy, "position_bias": u(0.0, 0.7, good + bad)}
    if regime == "adversarial_surface":  # 1–2 strong, stable judges; 3–8 that follow the surface cue
        strong, weak = rng.integers(1, 3), rng.integers(3, 9)
        return {
            "content": np.concatenate([u(1.5, 3.0, strong), u(0.0, 0.6, weak)]),
            "cue": np.concatenate([u(0.0, 0.4, strong), u(0.6, 1.5, weak)]),
            "position": np.concatenate([u(0.0, 0.4, strong), u(0.3, 1.5, weak)]),
            "adversarial": u(0.6, 0.95),
            "cue_kept": u(0.2, 0.8),
        }
    if regime == "clique_shared_bias":  # the strong judge, 0–2 fair ones, a clique of 3–5 sharing a bias
        fair, size = rng.integers(0, 3), rng.integers(3, 6)
        return {
            "content": np.concatenate([u(1.5, 2.5, 1), u(0.5, 1.2, fair), u(0.3, 1.0, size)]),
            "cue": np.concatenate([np.zeros(1 + fair), u(1.0, 2.0, size)]),
            "position": u(0.0, 0.5, 1 + fair + size),
            "adversarial": 0.5,
            "cue_kept": u(0.2, 0.8),
        }
    return draw_new_family(regime, rng)


def draw_new_family(regime: str, rng: np.random.Generator) -> dict:
    """(viii)–(xi): each judge's loadings; `family` numbers the judges that share an error (−1: none)."""
    u = rng.uniform
    if regime == "versions":  # one strong independent judge, 2–4 versions of one model, 2–4 weak judges
        versions, weak = rng.integers(2, 5), rng.integers(2, 5)
        n = 1 + versions + weak
        return {
            "content": np.concatenate([u(1.2, 2.2, 1), u(0.9, 1.6, versions), u(0.4, 1.0, weak)]),
            "shared": np.concatenate([[0.0], u(0.8, 1.5, versions), np.zeros(weak)]),
            "family": np.concatenate([[-1], np.zeros(versions, dtype=int), -np.ones(weak, dtype=int)]),
            "cue": np.concatenate([u(0.0, 0.3, 1), u(0.0, 0.5, versions), u(0.2, 0.8, weak)]),
            "position": np.concatenate([u(0.0, 0.3, 1), u(0.0, 0.6, versions), u(0.2, 1.2, weak)]),
            "invariant": np.zeros(n, dtype=bool),
            "flip": np.zeros(n),
            "adversarial": 0.5,
            "cue_kept": u(0.2, 0.8),
        }
    if regime == "order_invariant_clique":  # 3–6 reward models sharing a surface preference; one LLM judge
        rms = rng.integers(3, 7)
        return {
            "content": np.concatenate([u(1.0, 1.7, 1), u(0.3, 0.8, rms)]),
            "shared": np.zeros(1 + rms),
            "family": -np.ones(1 + rms, dtype=int),
            "cue": np.concatenate([[0.0], u(0.8, 1.5, rms)]),
            "position": np.zeros(1 + rms),
            "invariant": np.concatenate([[False], np.ones(rms, dtype=bool)]),
            "flip": np.concatenate([u(0.15, 0.30, 1), np.zeros(rms)]),
            "adversarial": 0.5,
            "cue_kept": u(0.5, 0.9),
        }
    if regime == "many_weak_correlated":  # 15–30 judges in 3–6 families, accuracies about 0.6–0.8
        n_families = rng.integers(3, 7)
        n = rng.integers(max(15, n_families * 2), 31)
        family = np.sort(np.concatenate([np.arange(n_families), rng.integers(0, n_families, n - n_families)]))
        shared = u(
            1.0, 2.0, n
        )  # a strong family error; the content loading gives each judge accuracy 0.6–0.8
        return {
            "content": norm.ppf(u(0.6, 0.8, n)) * np.sqrt(1 + shared**2),
            "shared": shared,
            "family": family,
            "confounder": np.zeros(n),
            "lean": u(-0.3, 0.3, n),
            "balance": u(0.3, 0.7),
        }
    if regime == "binary_confounded":  # a clique of 4–8 follows a binary confounder; 2–4 good judges
        good, clique = rng.integers(2, 5), rng.integers(4, 9)
        n = good + clique
        return {
            "content": np.concatenate([u(0.8, 1.5, good), u(0.2, 0.6, clique)]),
            "shared": np.zeros(n),
            "family": -np.ones(n, dtype=int),
            "confounder": np.concatenate([u(0.0, 0.3, good), u(1.5, 3.0, clique)]),
            "lean": u(-0.2, 0.2, n),
            "balance": 0.5,
        }
    raise ValueError(f"unknown regime {regime!r}; one of {REGIMES}")


FIXED = {  # the fixed settings of the perturbation regimes (family=False)
    "adversarial_surface": {
        "content": np.array([2.5, 0.3, 0.2, 0.4, 0.1, 0.3]),
        "cue": np.array([0.2, 1.0, 1.2, 0.8, 1.0, 1.1]),
        "position": np.array([0.2, 0.8, 1.0, 0.5, 1.2, 0.7]),
        "adversarial": 0.8,
        "cue_kept": 0.5,
    },
    "clique_shared_bias": {
        "content": np.array([2.0, 0.8, 0.6, 0.6, 0.6, 0.6]),
        "cue": np.array([0.0, 0.0, 1.5, 1.5, 1.5, 1.5]),
        "position": np.array([0.1, 0.3, 0.3, 0.3, 0.3, 0.3]),
        "adversarial": 0.5,
        "cue_kept": 0.5,
    },
}
FIXED_SEED = {"versions": 3, "many_weak_correlated": 3, "order_invariant_clique": 3, "binary_confounded": 3}


def make_panel(
    regime: str, n_tasks: int = 2000, seed: int = 0, strength: float | None = None, family: bool = False
) -> Panel:
    """A panel of the given regime; `strength` scales the confounder (iii, iv) or the clique's shared noise
    (ii); None takes the regime's default (DEFAULT_STRENGTH). family=True draws the regime's parameters
    from wide ranges with this seed (`draw_params`); (vi) and (vii) have n_tasks // 3 items × 3
    presentations."""
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; one of {REGIMES}")
    rng = np.random.default_rng(seed)
    drawn = draw_params(regime, np.random.default_rng([seed, 1])) if family else None
    if regime in FIXED_SEED and drawn is None:  # the fixed setting: one recorded draw of the family
        drawn = draw_params(regime, np.random.default_rng([FIXED_SEED[regime], 1]))
    if regime in ("adversarial_surface", "clique_shared_bias"):
        return _perturbed(rng, regime, n_tasks // 3, seed, drawn or FIXED[regime], family)
    if regime in ("versions", "order_invariant_clique"):
        return _pairwise_families(rng, regime, n_tasks // 3, seed, drawn, family)
    if regime in SHOWN_ONCE:
        return _shown_once(rng, regime, n_tasks, seed, drawn, family)
    q = rng.integers(0, 2, n_tasks)
    truth = pd.Series(np.where(q == 1, "A", "B"), index=pd.RangeIndex(n_tasks, name="task"), name="label")
    if regime == "below_chance_order":
        return _below_chance_order(rng, q, truth, seed, drawn)
    if drawn is not None:
        a, b, clique, strength = drawn["quality"], drawn["confounder"], drawn["clique"], drawn["strength"]
    else:
        strength = DEFAULT_STRENGTH.get(regime, 0.0) if strength is None else strength
        a, b, clique = regime_loadings(regime, strength)
    c = rng.integers(0, 2, n_tasks)
    shared = rng.normal(size=n_tasks)
    scores = np.outer(q, a) + np.outer(c, b) + np.outer(shared, clique) + rng.normal(size=(n_tasks, len(a)))
    names = [f"j{i}" for i in range(len(a))]
    votes = _scores_to_votes(scores, a / 2 + b / 2, names)
    params = {
        "regime": regime,
        "seed": seed,
        "n_tasks": n_tasks,
        "strength": float(strength),
        "family": family,
        "quality": dict(zip(names, a.tolist(), strict=True)),
        "confounder_loading": dict(zip(names, b.tolist(), strict=True)),
        "clique_loading": dict(zip(names, clique.tolist(), strict=True)),
    }
    return Panel(votes, truth, params)


def _perturbed(
    rng: np.random.Generator, regime: str, n_items: int, seed: int, p: dict, family: bool
) -> Panel:
    """(vi) and (vii): every item in three presentations × two orders; the model in the module docstring."""
    alpha, beta, gamma = p["content"], p["cue"], p["position"]
    n_judges = len(alpha)
    y = np.where(rng.random(n_items) < 0.5, 1.0, -1.0)
    # the item's cue: against the truth on a share `adversarial` of items (vi), or a coin (vii)
    item_cue = np.where(rng.random(n_items) < p["adversarial"], -y, y)
    kept = rng.random((n_items, len(PRESENTATIONS))) < p["cue_kept"]
    fresh = np.where(rng.random((n_items, len(PRESENTATIONS))) < 0.5, 1.0, -1.0)
    cue = np.where(kept, item_cue[:, None], fresh)  # items × presentations
    rows = []
    for k, presentation in enumerate(PRESENTATIONS):
        for run, f in (("AB", 1.0), ("BA", -1.0)):
            d = (
                np.outer(y, alpha)
                + np.outer(cue[:, k], beta)
                + f * gamma
                + rng.normal(size=(n_items, n_judges))
            )
            rows.append(_run_rows(d, presentation, run))
    votes = pd.concat(rows, ignore_index=True)
    truth = _item_truth(y)
    names = [f"j{j}" for j in range(n_judges)]
    params = {
        "regime": regime,
        "seed": seed,
        "n_tasks": len(truth),
        "family": family,
        "adversarial": float(p["adversarial"]),
        "cue_kept": float(p["cue_kept"]),
        **{
            key: dict(zip(names, np.asarray(p[key]).tolist(), strict=True))
            for key in ("content", "cue", "position")
        },
    }
    return Panel(votes, truth.sort_index(), params)


def _run_rows(d: np.ndarray, presentation: str, run: str) -> pd.DataFrame:
    """One run of every item in one presentation: d (items × judges) is each judge's preference for A."""
    n_items, n_judges = d.shape
    return pd.DataFrame(
        {
            "task": np.repeat([f"{i}:{presentation}" for i in range(n_items)], n_judges),
            "worker": np.tile([f"j{j}" for j in range(n_judges)], n_items),
            "label": np.where(d > 0, "A", "B").ravel(),
            "score": (1 / (1 + np.exp(-1.7 * d))).ravel(),
            "run": run,
            "item": np.repeat(np.arange(n_items), n_judges),
            "presentation": presentation,
        }
    )


def _item_truth(y: np.ndarray) -> pd.Series:
    """task (`item:presentation`) → the item's true label, every presentation."""
    tasks = [f"{i}:{pr}" for pr in PRESENTATIONS for i in range(len(y))]
    return pd.Series(
        np.tile(np.where(y > 0, "A", "B"), len(PRESENTATIONS)),
        index=pd.Index(tasks, name="task"),
        name="label",
    )


def _pairwise_families(
    rng: np.random.Generator, regime: str, n_items: int, seed: int, p: dict, family: bool
) -> Panel:
    """(viii) and (x): every item in three presentations × two orders. Judge j's preference for A in a run:

        d = α_j·y + λ_j·G_{family(j), item} + β_j·s_{item, presentation} + γ_j·f + ε,

    G a family's shared error on the item (the same in every order and presentation: versions of one model
    misread the same items), s the surface cue, f = ±1 whether A is shown first. An order-invariant judge
    (`invariant`) scores each answer on its own: its ε is drawn once per item and presentation, so both
    orders give the same verdict. A judge with `flip` φ answers "the first shown" on a share φ of the
    (item, presentation)s, in both orders (it is right there in exactly one of the two)."""
    alpha, lam, beta, gamma = p["content"], p["shared"], p["cue"], p["position"]
    n_judges = len(alpha)
    y = np.where(rng.random(n_items) < 0.5, 1.0, -1.0)
    item_cue = np.where(rng.random(n_items) < p["adversarial"], -y, y)
    kept = rng.random((n_items, len(PRESENTATIONS))) < p["cue_kept"]
    fresh = np.where(rng.random((n_items, len(PRESENTATIONS))) < 0.5, 1.0, -1.0)
    cue = np.where(kept, item_cue[:, None], fresh)
    families = np.asarray(p["family"])
    shared = rng.normal(size=(n_items, max(int(families.max()) + 1, 1)))
    g = np.where(families >= 0, shared[:, np.maximum(families, 0)], 0.0) * lam  # items × judges
    rows = []
    for k, presentation in enumerate(PRESENTATIONS):
        still = rng.normal(size=(n_items, n_judges))  # an order-invariant judge's noise, both orders
        flips = rng.random((n_items, n_judges)) < p["flip"]
        for run, f in (("AB", 1.0), ("BA", -1.0)):
            noise = np.where(p["invariant"], still, rng.normal(size=(n_items, n_judges)))
            d = np.outer(y, alpha) + g + np.outer(cue[:, k], beta) + f * gamma + noise
            d = np.where(flips, f * 10.0, d)
            rows.append(_run_rows(d, presentation, run))
    votes = pd.concat(rows, ignore_index=True)
    truth = _item_truth(y)
    names = [f"j{j}" for j in range(n_judges)]
    params = {
        "regime": regime,
        "seed": seed,
        "n_tasks": len(truth),
        "family": family,
        "cue_kept": float(p["cue_kept"]),
        **{
            key: dict(zip(names, np.asarray(p[key]).tolist(), strict=True))
            for key in ("content", "shared", "family", "cue", "position", "invariant", "flip")
        },
    }
    return Panel(votes, truth.sort_index(), params)


def _shown_once(
    rng: np.random.Generator, regime: str, n_tasks: int, seed: int, p: dict, family: bool
) -> Panel:
    """(ix) and (xi): each task shown once; judge j votes A when α_j·y + λ_j·G_{family(j), t} + β_j·c_t + τ_j + ε
    > 0 (y, c = ±1; G, ε ~ N(0, 1)). Labels only: no score column."""
    alpha, lam, beta, lean = p["content"], p["shared"], p["confounder"], p["lean"]
    y = np.where(rng.random(n_tasks) < p["balance"], 1.0, -1.0)
    c = np.where(rng.random(n_tasks) < 0.5, 1.0, -1.0)
    families = np.asarray(p["family"])
    shared = rng.normal(size=(n_tasks, max(int(families.max()) + 1, 1)))
    g = np.where(families >= 0, shared[:, np.maximum(families, 0)], 0.0) * lam
    d = np.outer(y, alpha) + g + np.outer(c, beta) + lean + rng.normal(size=(n_tasks, len(alpha)))
    names = [f"j{j}" for j in range(len(alpha))]
    votes = pd.DataFrame(
        {
            "task": np.repeat(np.arange(n_tasks), len(alpha)),
            "worker": np.tile(names, n_tasks),
            "label": np.where(d > 0, "A", "B").ravel(),
        }
    )
    truth = pd.Series(np.where(y > 0, "A", "B"), index=pd.RangeIndex(n_tasks, name="task"), name="label")
    params = {
        "regime": regime,
        "seed": seed,
        "n_tasks": n_tasks,
        "family": family,
        "balance": float(p["balance"]),
        **{
            key: dict(zip(names, np.asarray(p[key]).tolist(), strict=True))
            for key in ("content", "shared", "family", "confounder", "lean")
        },
    }
    return Panel(votes, truth, params)


def _below_chance_order(
    rng: np.random.Generator, q: np.ndarray, truth: pd.Series, seed: int, drawn: dict | None = None
) -> Panel:
    """Pairwise judges shown each task in both orders: content accuracy below chance for most, and a
    judge-specific pull towards the first-shown answer."""
    accuracy = np.array([0.40, 0.42, 0.45, 0.38, 0.75])  # four below chance, one good
    position_bias = np.array([0.05, 0.30, 0.60, 0.15, 0.10])  # P(answers "first shown" regardless)
    if drawn is not None:
        accuracy, position_bias = drawn["accuracy"], drawn["position_bias"]
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
                    {
                        "task": np.arange(n),
                        "worker": name,
                        "order": order,
                        "run": order,
                        "label": np.where(said == 1, "A", "B"),
                        "score": said.astype(float),
                    }
                )
            )
    params = {
        "regime": "below_chance_order",
        "seed": seed,
        "n_tasks": n,
        "family": drawn is not None,
        "accuracy": dict(zip(names, accuracy.tolist(), strict=True)),
        "position_bias": dict(zip(names, position_bias.tolist(), strict=True)),
    }
    return Panel(pd.concat(rows, ignore_index=True), truth, params)


PREDICTION_FAMILIES = ("calibrated", "saturated", "useless", "misleading")


def prediction_family(
    family: str, rng: np.random.Generator, n_tasks: int = 2000
) -> tuple[np.ndarray, np.ndarray]:
    """(Y, f) on a workload of n tasks: Y whether the consensus is right (its accuracy drawn in 0.55–0.95), f a
    prediction of Y from the votes alone, of one of PREDICTION_FAMILIES — for the prediction-powered estimates'
    coverage (tests/test_prediction_powered.py, bench/prediction_powered.py)."""
    accuracy = rng.uniform(0.55, 0.95)  # drawn wide: the truth differs on every draw
    y = (rng.random(n_tasks) < accuracy).astype(float)
    if family == "calibrated":  # a posterior whose confidence means what it says, of varied sharpness
        sharp = rng.uniform(0.5, 3.0)
        f = 1 / (1 + np.exp(-(sharp * (2 * y - 1) + rng.normal(0, 1, n_tasks))))
    elif family == "saturated":  # most tasks at ≥ 0.99, a good share of those wrong (issue 47's posteriors)
        f = np.where(
            rng.random(n_tasks) < 0.8, rng.uniform(0.99, 1.0, n_tasks), rng.uniform(0.5, 0.99, n_tasks)
        )
        f = np.where(y == 1, f, np.where(rng.random(n_tasks) < 0.6, f, 1 - f + 0.5))
    elif family == "useless":  # independent of the truth
        f = rng.uniform(0, 1, n_tasks)
    else:  # misleading: confident where it is wrong
        f = np.clip(0.9 - 0.5 * y + rng.normal(0, 0.1, n_tasks), 0, 1)
    return y, f


def audit_sample(rng: np.random.Generator, f: np.ndarray, k: int, stratified: bool):
    """(picked, strata): k audited tasks, at random (strata None), or 3/4 of them from the least confident
    quarter of f and the rest from the other tasks (strata: 0 or 1 for every task)."""
    n_tasks = len(f)
    if not stratified:
        return rng.choice(n_tasks, k, replace=False), None
    strata = (f > np.quantile(f, 0.25)).astype(int)
    sizes = [3 * k // 4, k - 3 * k // 4]
    picked = np.concatenate(
        [rng.choice(np.flatnonzero(strata == h), m, replace=False) for h, m in enumerate(sizes)]
    )
    return picked, strata


def inclusion_weights(strata: np.ndarray, picked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w, w_unlabelled): 1/π for the audited tasks (stratum size over its sample) and, for the others, stratum
    size over its unlabelled count — the Hájek weights of `prediction_powered` without its strata."""
    labelled = np.zeros(len(strata), bool)
    labelled[picked] = True
    w_all, wu_all = np.empty(len(strata)), np.empty(len(strata))
    for h in np.unique(strata):
        members = strata == h
        m = int((members & labelled).sum())
        w_all[members], wu_all[members] = members.sum() / m, members.sum() / (members.sum() - m)
    return w_all[picked], wu_all[~labelled]
