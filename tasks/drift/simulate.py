"""The 12-week drift simulation of the capability-bias paper (its Figure 4), with known truth.

Each week `items_per_week` items are drawn from two task bins, easy and hard, the share of hard items drifting
linearly from 15 % in week 1 to 85 % in the last week. An examinee answers an easy item correctly with
probability 0.85 and a hard one with 0.35; each judge says "correct" with its own bin-specific rates
(FPR: calls a wrong answer correct; FNR: calls a right answer wrong), so its effective rates move with the mix.
Parameters and seeds are recorded in the result.

Estimators, week by week (each starts from the previous week's state):
- bayesian: Beta(α0, β0) per judge for FPR and for FNR, updated with `n_labelled` audited items a week,
  all weeks pooled (it cannot see the mix move, so it lags);
- stratified: the same per bin, combined with the week's known mix of bins (task labels needed);
- disagreement: no labels; the leave-one-out majority of the other judges is the proxy truth; proxy
  counts are carried from week to week with weight `decay` (0.5: last week's evidence counts half), which
  trades the sampling noise of 40 items against lag behind the drift;
- oracle: the week's true effective rates.
Reported per week: the mean absolute FPR (and FNR) estimation error over judges, and accuracy of the mean
single judge, unweighted MV, weighted MV with each estimator, and oracle WMV (both rules of wmv.py).

Where the disagreement estimator's error comes from (issue 14; BENCHMARKS.md, "Drift"): two more columns
split it. `fpr_error_floor` is the error of the judges' *labelled* counts on the same items, carried with the
same decay — what any estimator that sees this many items pays in binomial noise against the population rate
(√(FPR(1 − FPR)/n_negatives), with 9–26 wrong answers a week at 40 items). `fpr_error_disagreement_in_sample`
compares the disagreement estimate with those labelled counts: the proxy's own bias, without the noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate.wmv import _decide, error_counts, loo_majority
from judgeops.tasks.drift.calibrate import beta_rates

BINS = ("easy", "hard")
P_CORRECT = {"easy": 0.85, "hard": 0.35}  # the examinee's accuracy per bin
# per judge: (FPR easy, FPR hard, FNR easy, FNR hard): lenient judges get much more lenient on hard items
JUDGES = {
    "lenient-strong": (0.05, 0.30, 0.05, 0.10),
    "lenient-weak": (0.15, 0.55, 0.10, 0.15),
    "balanced": (0.10, 0.25, 0.10, 0.20),
    "strict": (0.04, 0.10, 0.20, 0.35),
    "noisy": (0.20, 0.35, 0.20, 0.30),
}
ESTIMATORS = ("bayesian", "stratified", "disagreement", "oracle")


@dataclass
class Setup:
    weeks: int = 12
    items_per_week: int = 40
    n_labelled: int = 8
    prior: tuple[float, float] = (1.0, 9.0)  # Beta(α0, β0) for an error rate: mean 0.1
    decay: float = 0.5  # disagreement: weight of last week's proxy counts in this week's
    hard_start: float = 0.15
    hard_end: float = 0.85
    judges: dict = field(default_factory=lambda: dict(JUDGES))
    p_correct: dict = field(default_factory=lambda: dict(P_CORRECT))


def hard_share(setup: Setup, week: int) -> float:
    return setup.hard_start + (setup.hard_end - setup.hard_start) * week / max(1, setup.weeks - 1)


def true_rates(setup: Setup, week: int) -> pd.DataFrame:
    """Each judge's effective FPR/FNR under week `week`'s mix (what an estimator should track)."""
    h = hard_share(setup, week)
    mix = {"easy": 1 - h, "hard": h}
    wrong = {b: mix[b] * (1 - setup.p_correct[b]) for b in BINS}
    right = {b: mix[b] * setup.p_correct[b] for b in BINS}
    rows = {}
    for j, (fe, fh, ne, nh) in setup.judges.items():
        fpr = (wrong["easy"] * fe + wrong["hard"] * fh) / sum(wrong.values())
        fnr = (right["easy"] * ne + right["hard"] * nh) / sum(right.values())
        rows[j] = (fpr, fnr)
    return pd.DataFrame.from_dict(rows, orient="index", columns=["fpr", "fnr"])


def draw_week(
    setup: Setup, week: int, rng: np.random.Generator
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """(votes: items × judges, 1 = says correct; truth ±1; bin per item)."""
    n = setup.items_per_week
    bins = np.where(rng.random(n) < hard_share(setup, week), "hard", "easy")
    correct = rng.random(n) < np.vectorize(setup.p_correct.get)(bins)
    votes = {}
    for j, (fe, fh, ne, nh) in setup.judges.items():
        fpr = np.where(bins == "hard", fh, fe)
        fnr = np.where(bins == "hard", nh, ne)
        p_yes = np.where(correct, 1 - fnr, fpr)
        votes[j] = (rng.random(n) < p_yes).astype(float)
    return pd.DataFrame(votes), np.where(correct, 1.0, -1.0), bins


def simulate(setup: Setup, seed: int) -> pd.DataFrame:
    """One run: a row per week with estimation errors and accuracies."""
    rng = np.random.default_rng(seed)
    judges = list(setup.judges)
    pooled = np.zeros((len(judges), 2, 2))  # bayesian: all audited items so far
    by_bin = {b: np.zeros((len(judges), 2, 2)) for b in BINS}  # stratified
    proxy = np.zeros((len(judges), 2, 2))  # disagreement
    realized = np.zeros((len(judges), 2, 2))  # the same items' true counts, same decay: the noise floor
    rows = []
    for week in range(setup.weeks):
        votes, truth, bins = draw_week(setup, week, rng)
        x = votes.to_numpy()
        audit = rng.choice(len(truth), size=min(setup.n_labelled, len(truth)), replace=False)
        pooled += error_counts(x[audit], truth[audit])
        for b in BINS:
            idx = audit[bins[audit] == b]
            by_bin[b] += error_counts(x[idx], truth[idx])
        proxy = setup.decay * proxy + error_counts(x, loo_majority(x))
        realized = setup.decay * realized + error_counts(x, truth)
        mix = {b: float(np.mean(bins == b)) for b in BINS}
        truth_rates = true_rates(setup, week)
        estimates = {
            "bayesian": beta_rates(pooled, setup.prior)[0],
            "stratified": sum(mix[b] * beta_rates(by_bin[b], setup.prior)[0] for b in BINS),
            "disagreement": beta_rates(proxy, (1.0, 1.0))[0],
            "oracle": truth_rates[["fpr", "fnr"]].to_numpy(),
        }
        row = {"seed": seed, "week": week + 1, "hard_share": hard_share(setup, week)}
        in_sample = realized[:, 0, 0] / np.maximum(realized[:, 0].sum(-1), 1e-12)
        row["fpr_error_floor"] = float(np.abs(in_sample - truth_rates["fpr"].to_numpy()).mean())
        row["fpr_error_disagreement_in_sample"] = float(
            np.abs(estimates["disagreement"][:, 0] - in_sample).mean()
        )
        row["acc_mean_judge"] = float(np.mean((2 * x - 1) == truth[:, None]))
        mv = np.sign(np.sum(2 * x - 1, axis=1))
        row["acc_mv"] = float(np.mean(mv == truth))  # an exact tie (even panels) counts as wrong
        for name, est in estimates.items():
            err = np.abs(est - truth_rates[["fpr", "fnr"]].to_numpy())
            row[f"fpr_error_{name}"], row[f"fnr_error_{name}"] = (
                float(err[:, 0].mean()),
                float(err[:, 1].mean()),
            )
            for rule in ("spec_sens", "log_odds"):
                p = _decide(x, est[:, 0], est[:, 1], rule)
                row[f"acc_wmv_{name}" + ("" if rule == "spec_sens" else "_log_odds")] = float(
                    np.mean(np.where(p > 0.5, 1.0, np.where(p < 0.5, -1.0, 0.0)) == truth)
                )
        rows.append(row)
    return pd.DataFrame(rows)


def run(setup: Setup, seeds: int) -> pd.DataFrame:
    return pd.concat([simulate(setup, s) for s in range(seeds)], ignore_index=True)


def summary(table: pd.DataFrame) -> pd.Series:
    """Averages over weeks and seeds."""
    return table.drop(columns=["seed", "week", "hard_share"]).mean()


def figure(table: pd.DataFrame, path: str) -> None:
    """Like the paper's Figure 4: FPR estimation error per estimator (left), accuracy per method (right)."""
    import matplotlib  # lazy: matplotlib costs start-up time and only the figure needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    weekly = table.groupby("week").mean(numeric_only=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for name in ("bayesian", "stratified", "disagreement"):
        left.plot(weekly.index, weekly[f"fpr_error_{name}"], marker="o", ms=3, label=name)
    left.set_xlabel("week")
    left.set_ylabel("mean |FPR̂ − FPR|")
    left.set_title("FPR estimation error under drift")
    left.legend(frameon=False)
    for col, label in [
        ("acc_mean_judge", "mean single judge"),
        ("acc_mv", "majority vote"),
        ("acc_wmv_bayesian", "WMV bayesian"),
        ("acc_wmv_stratified", "WMV stratified"),
        ("acc_wmv_disagreement", "WMV disagreement"),
        ("acc_wmv_oracle", "WMV oracle"),
    ]:
        right.plot(
            weekly.index, weekly[col], marker="o", ms=3, label=label, ls="--" if "oracle" in col else "-"
        )
    right.set_xlabel("week")
    right.set_ylabel("accuracy")
    right.set_title("Ensemble accuracy under drift")
    right.legend(frameon=False, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def simulate_to(out: Path, weeks: int = 12, items_per_week: int = 40, seeds: int = 20) -> list[str]:
    """Run the simulation and write the per-week table, every run and the Figure-4 PNG into `out`; returns the
    lines to print (the averages over weeks and seeds, and what was written)."""
    table = run(Setup(weeks=weeks, items_per_week=items_per_week), seeds)
    out.mkdir(parents=True, exist_ok=True)
    weekly = table.groupby("week").mean(numeric_only=True).drop(columns="seed")
    weekly.to_csv(out / "drift_weekly.csv", float_format="%.4f")
    table.to_csv(out / "drift_runs.csv", index=False, float_format="%.4f")
    figure(table, str(out / "drift.png"))
    lines = [f"{seeds} seeds × {weeks} weeks × {items_per_week} items; averages over weeks and seeds:"]
    lines += [
        f"  {name}: {value:.4f}"
        for name, value in summary(table).items()
        if not name.endswith("_oracle") or name.startswith("acc")
    ]
    return [*lines, f"wrote {out / 'drift_weekly.csv'}, {out / 'drift_runs.csv'}, {out / 'drift.png'}"]
