"""The selective consensus on every regime family: is the certified error rate kept, and at what coverage?

    python bench/selective.py [--seeds 20] [--tasks 1200] [--k 120] [--strategy random] [--write]

For each family draw: `audit.propose` picks k tasks (a simple random sample by default: every audited task weighs
the same, so the audit's effective size is k), the truth fills their labels, `audit.refit` fits the consensus
with them, and `selective.selective_labels` certifies, for each target error A (δ = 0.1), the threshold above
which the error among decided tasks is at most A with probability 0.9 (Learn-then-Test). Measured on the tasks
not audited: the realised error among the decided ones, the coverage (the share decided), and the share of
draws whose realised error is within A (the promise: at least 1 − δ = 90 %). Pin to two cores (`taskset -c 0,1`).
"""

from __future__ import annotations

import argparse
import warnings

import pandas as pd
from benchmarks_md import section

from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate.selective import ABSTAIN, selective_labels
from judgeops.tasks.aggregate.synthetic import REGIMES, make_panel

warnings.filterwarnings("ignore", category=UserWarning)
NUMERALS = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi"]
LABELS = {r: f"({n}) {r}" for n, r in zip(NUMERALS, REGIMES, strict=True)}
TARGETS = (0.05, 0.1, 0.2)
DELTA = 0.1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=1200)
    parser.add_argument("--k", type=int, default=120)
    parser.add_argument("--strategy", default="random", choices=["random", "stratified"])
    parser.add_argument("--regimes", nargs="*", default=list(REGIMES))
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    with section("bench/selective.py", args.write):
        print(
            f"{args.k} audited tasks of {args.tasks} ({args.strategy} selection), δ = {DELTA}, {args.seeds} draws per "
            "family; on the tasks not audited: the realised error among the decided ones (mean over the draws), "
            "the coverage, and the share of draws whose realised error is within the target.\n"
        )
        print(
            "| regime family | target A | realised error | coverage | within target | certified a threshold |"
        )
        print("|---|---|---|---|---|---|")
        worst = 1.0
        for regime in args.regimes:
            rows = []
            for seed in range(args.seeds):
                panel = make_panel(regime, n_tasks=args.tasks, seed=seed, family=True)
                votes = panel.votes[
                    ["task", "worker", "label", *[c for c in ("run", "item") if c in panel.votes]]
                ]
                proposal = audit.propose(votes, args.k, strategy=args.strategy, seed=seed).set_index("task")
                fit = audit.refit(votes, panel.truth.reindex(proposal.index), proposal["weight"])
                for target in TARGETS:
                    labels, certified = selective_labels(
                        fit["labels"],
                        fit["confidence"],
                        fit["audit_hits"],
                        fit["audited"],
                        target,
                        DELTA,
                        fit["weights"],
                    )
                    rest = labels.drop(proposal.index)
                    decided = rest != ABSTAIN
                    truth = panel.truth.reindex(rest.index)
                    error = float((rest[decided] != truth[decided]).mean()) if decided.any() else 0.0
                    rows.append(
                        {
                            "target": target,
                            "error": error,
                            "coverage": float(decided.mean()),
                            "within": error <= target,
                            "certified": certified.threshold is not None,
                        }
                    )
            table = pd.DataFrame(rows).groupby("target").mean()
            for target, r in table.iterrows():
                worst = min(worst, r["within"])
                print(
                    f"| {LABELS[regime]} | {target:g} | {r['error']:.3f} | {r['coverage']:.1%} | {r['within']:.0%} | "
                    f"{r['certified']:.0%} |",
                    flush=True,
                )
        print(
            f"\nTarget: the realised error within A on ≥ {1 - DELTA:.0%} of the draws, every family and target: "
            f"{'met' if worst >= 1 - DELTA else '**not met**'} (lowest share {worst:.0%})."
        )


if __name__ == "__main__":
    main()
