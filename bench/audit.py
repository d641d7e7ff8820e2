"""The few-labels learning curve: accuracy against k audited labels on every regime family, stratified
(uncertainty-weighted) against random selection.

    python bench/audit.py [--seeds 10] [--tasks 1200]

For each regime family (tasks/aggregate/synthetic.py, family=True) and seed: the label-free consensus (k = 0,
`auto`), then for k in 10, 20, 50, 100 the audit proposes k tasks (`tasks/aggregate/audit.py`), the truth
fills their labels, and `refit` chooses a head; accuracy is over every task (the audited ones keep their
labels). Beside it, the best single judge (position-averaged, picked with the truth) and the smallest k whose
mean accuracy reaches it. Pin to two cores (`taskset -c 0,1`).
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate.synthetic import REGIMES, best_single_judge, make_panel

warnings.filterwarnings("ignore", category=UserWarning)
KS = (0, 10, 20, 50, 100)
LABELS = {r: f"({n}) {r}" for n, r in zip(["i", "ii", "iii", "iv", "v", "vi", "vii"], REGIMES, strict=True)}


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=1200)
    parser.add_argument("--regimes", nargs="*", default=list(REGIMES))
    args = parser.parse_args()
    print(f"Command: `taskset -c 0,1 python bench/audit.py --seeds {args.seeds} --tasks {args.tasks}`\n")
    print(
        "| regime family | best single judge | selection | "
        + " | ".join(f"k = {k}" for k in KS)
        + " | first k ≥ best judge | heads taken at k = 50 |"
    )
    print("|---" * (len(KS) + 5) + "|")
    for regime in args.regimes:
        acc = {(s, k): [] for s in ("stratified", "random") for k in KS}
        heads = {s: Counter() for s in ("stratified", "random")}
        best = []
        for seed in range(args.seeds):
            panel = make_panel(regime, n_tasks=args.tasks, seed=seed, family=True)
            votes, truth = panel.votes, panel.truth
            best.append(best_single_judge(panel))
            free = accuracy(audit._consensus(votes, "auto").labels_, truth)
            candidates = audit.method_labels(votes)  # the other label-free methods, fitted once per panel
            for strategy in ("stratified", "random"):
                acc[strategy, 0].append(free)
                for k in KS[1:]:
                    proposal = audit.propose(votes, k, strategy=strategy, seed=seed).set_index("task")
                    result = audit.refit(
                        votes, truth.reindex(proposal.index), proposal["weight"], candidates=candidates
                    )
                    acc[strategy, k].append(accuracy(result["labels"], truth))
                    if k == 50:
                        heads[strategy][result["head"]] += 1
        bar = float(np.mean(best))
        for strategy in ("stratified", "random"):
            means = [float(np.mean(acc[strategy, k])) for k in KS]
            reach = next(
                (f"{k} ({100 * k / args.tasks:.1f} %)" for k, m in zip(KS, means, strict=True) if m >= bar),
                "not by 100",
            )
            print(
                f"| {LABELS[regime]} | {bar:.3f} | {strategy} | "
                + " | ".join(f"{m:.3f}" for m in means)
                + f" | {reach} | {', '.join(f'{h} {n}' for h, n in heads[strategy].most_common())} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
