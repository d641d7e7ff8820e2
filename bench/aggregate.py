"""Label-free aggregators on the synthetic regimes (tasks/aggregate/synthetic.py), against known truth.

    python bench/aggregate.py [--seeds 5] [--tasks 2000]

Prints a markdown table: mean accuracy over seeds of the best single judge (chosen with the truth: a
ceiling no label-free method is promised), majority vote, and each implemented aggregator.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate import AGGREGATORS, get_aggregator
from judgeops.tasks.aggregate.synthetic import make_panel

REGIMES = ["independent", "clique", "confounder_follows_quality", "confounder_independent"]


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=2000)
    args = parser.parse_args()
    methods = [m for m, (_, kind) in AGGREGATORS.items() if kind == "label"]
    print(f"Command: `python bench/aggregate.py --seeds {args.seeds} --tasks {args.tasks}`\n")
    print("| regime | best single judge | " + " | ".join(methods) + " | fit time (s, all methods) |")
    print("|---" * (len(methods) + 3) + "|")
    for regime in REGIMES:
        best, scores, seconds = [], {m: [] for m in methods}, 0.0
        for seed in range(args.seeds):
            panel = make_panel(
                regime, n_tasks=args.tasks, seed=seed, strength=3.0 if "confounder" in regime else 2.0
            )
            per_judge = panel.votes.pivot(index="task", columns="worker", values="label")
            best.append(max(accuracy(per_judge[w], panel.truth) for w in per_judge.columns))
            for m in methods:
                t0 = time.perf_counter()
                scores[m].append(accuracy(get_aggregator(m).fit_predict(panel.votes), panel.truth))
                seconds += time.perf_counter() - t0
        row = " | ".join(f"{np.mean(scores[m]):.3f}" for m in methods)
        print(f"| {regime} | {np.mean(best):.3f} | {row} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
