"""Prediction-powered intervals over many audit draws: do they cover, and how much narrower are they?

    python bench/prediction_powered.py [--draws 1500] [--tasks 2000] [--write]

For each family of predictions (tasks/aggregate/synthetic.py `prediction_family`: calibrated, saturated, useless,
misleading; the workload's accuracy drawn in 0.55-0.95 on every draw), each audit size k and each design (a
simple random audit; a stratified one taking 3/4 of its labels from the least confident quarter, estimated
with its inverse inclusion weights only, or with its strata), draw the workload and the audit, and compute the
90 % interval of the workload's accuracy (`prediction_powered`). Reported: the share of draws whose interval covers
the truth (the promise: >= 88 %), its mean width over the labels-only interval of the same labels and design
(Clopper-Pearson, at Kish's effective size where weighted; with strata, the stratified form at λ = 0), and the
mean effective number of labels.
"""

from __future__ import annotations

import argparse

import numpy as np
from benchmarks_md import section

from judgeops.tasks.aggregate.prediction_powered import prediction_powered
from judgeops.tasks.aggregate.synthetic import (
    PREDICTION_FAMILIES,
    audit_sample,
    inclusion_weights,
    prediction_family,
)


def estimate(design: str, y, f, picked, strata):
    """The 90 % Estimate of y's mean from the audited `picked` and every task's f, as `design` says to read it."""
    rest = np.setdiff1d(np.arange(len(y)), picked)
    if design == "random":
        return prediction_powered(y[picked], f[picked], f[rest], 0.1)
    if design == "stratified, weights":
        w, wu = inclusion_weights(strata, picked)
        return prediction_powered(y[picked], f[picked], f[rest], 0.1, w, wu)
    return prediction_powered(
        y[picked], f[picked], f[rest], 0.1, strata=strata[picked], strata_unlabelled=strata[rest]
    )


DESIGNS = ("random", "stratified, weights", "stratified, strata")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=1500)
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    with section("bench/prediction_powered.py", args.write):
        print(
            f"90 % intervals of a workload's accuracy ({args.tasks} tasks) from k audited labels plus every "
            f"task's prediction, {args.draws} draws per cell: share of draws covering the truth / mean width over "
            "the labels-only interval / mean effective labels.\n"
        )
        print("| design | k | " + " | ".join(PREDICTION_FAMILIES) + " |")
        print("|---|---|" + "---|" * len(PREDICTION_FAMILIES))
        for design in DESIGNS:
            for k in (25, 50, 100):
                rng = np.random.default_rng(1000 * k + (design != "random"))
                cells = []
                for family in PREDICTION_FAMILIES:
                    covered, ratios, effective = 0, [], []
                    for _ in range(args.draws):
                        y, f = prediction_family(family, rng, args.tasks)
                        picked, strata = audit_sample(rng, f, k, design != "random")
                        est = estimate(design, y, f, picked, strata)
                        covered += est.ci[0] <= y.mean() <= est.ci[1]
                        only = est.labels_only_ci[1] - est.labels_only_ci[0]
                        ratios.append((est.ci[1] - est.ci[0]) / only)
                        effective.append(est.effective_labels)
                    cells.append(
                        f"{covered / args.draws:.3f} / {np.mean(ratios):.2f} / {np.mean(effective):.0f}"
                    )
                print(f"| {design} | {k} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
