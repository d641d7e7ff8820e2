"""The capability-bias paper's 12-week drift simulation (tasks/drift/simulate.py): estimator errors and WMV
accuracy, then the disagreement FPR error split into sampling floor and proxy bias at several weekly sizes.

    python bench/drift_simulation.py [--weeks 12] [--seeds 20] [--sizes 40 100 400] [--write]

The first table is what `judgeops simulate-drift --weeks 12 --items-per-week 40 --seeds 20` averages (the
command also writes the per-week CSVs and the Figure-4 PNG); the second reruns it at each size in `--sizes`.
"""

from __future__ import annotations

import argparse
import time

from benchmarks_md import section

from judgeops.tasks.drift.simulate import ESTIMATORS, Setup, run, summary

LABELS = {
    "bayesian": "bayesian (audit, pooled)",
    "stratified": "stratified (audit, per bin, current mix)",
    "disagreement": "disagreement (no labels)",
    "oracle": "oracle (true weekly rates)",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--weeks", type=int, default=12)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--sizes", type=int, nargs="+", default=[40, 100, 400])
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    t0 = time.perf_counter()
    means = {n: summary(run(Setup(weeks=args.weeks, items_per_week=n), args.seeds)) for n in args.sizes}
    seconds = time.perf_counter() - t0
    first = means[args.sizes[0]]
    with section("bench/drift_simulation.py", args.write, prefix=""):
        print(
            f"{args.seeds} seeds × {args.weeks} weeks; averages over weeks and seeds ({seconds:.1f} s for every "
            f"size). At {args.sizes[0]} items a week:\n"
        )
        print(
            "| estimator | mean \\|FPR̂ − FPR\\| | mean \\|FNR̂ − FNR\\| | WMV accuracy (spec/sens) "
            "| WMV accuracy (log-odds) |\n|---|---|---|---|---|"
        )
        for name in ESTIMATORS:
            print(
                f"| {LABELS[name]} | {first[f'fpr_error_{name}']:.3f} | {first[f'fnr_error_{name}']:.3f} | "
                f"{first[f'acc_wmv_{name}']:.3f} | {first[f'acc_wmv_{name}_log_odds']:.3f} |"
            )
        print(f"\nMean single judge {first['acc_mean_judge']:.3f}, unweighted MV {first['acc_mv']:.3f}.\n")
        print(
            "| items per week | floor: labelled counts vs population | disagreement vs labelled counts "
            "| disagreement vs population | WMV disagreement / oracle |\n|---|---|---|---|---|"
        )
        for n, m in means.items():
            print(
                f"| {n} | {m['fpr_error_floor']:.3f} | {m['fpr_error_disagreement_in_sample']:.3f} | "
                f"{m['fpr_error_disagreement']:.3f} | {m['acc_wmv_disagreement']:.3f} / {m['acc_wmv_oracle']:.3f} |"
            )


if __name__ == "__main__":
    main()
