"""Where a label-free accuracy is printed as a number, is it calibrated?

    python bench/label_free_estimate.py [--seeds 30] [--tasks 400 2000] [--first-seed 1000] [--write]

`judgeops aggregate` and the run's last lines print the consensus's accuracy estimated without labels as a number
only where the identifiability check does not warn and its 90 % interval is at most 0.10 wide
(`estimate.withheld`); elsewhere they print the bounds and a label budget. The promise (issue 46): where it is
printed, its mean absolute error is at most 0.03 and its interval covers the truth in at least 88 % of draws.

For every regime family of tasks/aggregate/synthetic.py (family=True: each draw's parameters from the family's
wide ranges), each workload size and each seed (from `--first-seed`, apart from the seeds 0-49 that
bench/consistency.py tunes and reports on): `auto` fitted on the panel's votes as `judgeops aggregate` fits it,
its estimate, interval and warning as `aggregate --json` computes them (judgeops/api/votes.py), and the truth.
Reported per family and pooled: the share of draws printed, and on the printed ones the mean absolute error,
the mean error, and the share of intervals covering the truth.
"""

from __future__ import annotations

import argparse
import itertools
import warnings

import numpy as np
from benchmarks_md import section

from judgeops.tasks.aggregate import get_aggregator
from judgeops.tasks.aggregate.estimate import consensus_accuracy, identifiability, withheld
from judgeops.tasks.aggregate.synthetic import REGIMES, make_panel

warnings.filterwarnings("ignore", category=UserWarning)


def one_draw(regime: str, n_tasks: int, seed: int) -> tuple[bool, float, bool]:
    """(printed, estimate − truth, interval covers the truth) for one panel of the family."""
    panel = make_panel(regime, n_tasks=n_tasks, seed=seed, family=True)
    auto = get_aggregator("auto").fit(panel.votes)
    est = consensus_accuracy(auto, auto.labels_, identifiability(auto))
    ident = identifiability(auto, est.estimate)
    truth = float((auto.labels_.reindex(panel.truth.index) == panel.truth).mean())
    printed = withheld(est.ci_low, est.ci_high, ident.warning) is None
    return printed, est.estimate - truth, est.ci_low <= truth <= est.ci_high


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--tasks", type=int, nargs="+", default=[400, 2000])
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=REGIMES)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    with section("bench/label_free_estimate.py", args.write):
        print(
            f"`auto`'s label-free accuracy estimate where it is printed as a number (no identifiability warning, "
            f"90 % interval ≤ 0.10 wide), {args.seeds} draws per family and workload size "
            f"({', '.join(map(str, args.tasks))} tasks; seeds from {args.first_seed}): the share printed, and on "
            "the printed draws the mean absolute error, the mean error and the share of intervals covering the "
            "truth (the promise: ≤ 0.03 and ≥ 88 %).\n"
        )
        print("| regime family | tasks | printed | mean abs error | mean error | interval covers |")
        print("|---|---|---|---|---|---|")
        pooled = []
        for regime, n_tasks in itertools.product(args.regimes, args.tasks):
            draws = [one_draw(regime, n_tasks, seed) for seed in seeds]
            pooled += draws
            print(row(regime, str(n_tasks), draws), flush=True)
        print(row("all families", "all", pooled))


def row(name: str, tasks: str, draws: list[tuple[bool, float, bool]]) -> str:
    printed = [(e, c) for p, e, c in draws if p]
    if not printed:
        return f"| {name} | {tasks} | 0 of {len(draws)} | – | – | – |"
    err = np.array([e for e, _ in printed])
    covered = np.mean([c for _, c in printed])
    return (
        f"| {name} | {tasks} | {len(printed)} of {len(draws)} | {np.abs(err).mean():.3f} | {err.mean():+.3f} "
        f"| {covered:.0%} |"
    )


if __name__ == "__main__":
    main()
