"""`judgeops audit apply`'s prediction-powered estimates over many audit draws: do their 90 % intervals cover?

    python bench/audited_estimates.py [--panels 5] [--audits 10] [--tasks 600] [--k 25 50 100] [--regimes ...]
        [--strategies stratified random] [--write]

For each synthetic regime (tasks/aggregate/synthetic.py `make_panel`, family=True: every panel's parameters drawn
from the regime's wide ranges), each audit size k and `panels` × `audits` draws (a fresh panel, then audits
drawn on it as `audit propose` draws them: stratified by uncertainty, with weights; or a simple random sample),
the audited labels are the truth; `audit.refit` and `audited_estimates` give the consensus's accuracy (of the predictions `--out` writes:
the audited tasks keep their labels), every judge's accuracy (the share of its votes that are right) and the
share of tasks whose truth is the first class. Reported per cell: the share of draws whose interval covers the
truth (the promise: >= 88 %) for the consensus, for the judges (all judges of all draws pooled) and for the
share; and the consensus interval's mean width over the labels-only one of the same labels.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from benchmarks_md import section

from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate._base import binary_classes
from judgeops.tasks.aggregate.audited_estimates import audited_estimates
from judgeops.tasks.aggregate.synthetic import make_panel

REGIMES = ("independent", "clique", "below_chance_order", "binary_confounded")


def covers(estimate: dict, truth: float) -> bool:
    return estimate["ci"][0] - 1e-12 <= truth <= estimate["ci"][1] + 1e-12


def one_draw(panel, cands, k: int, seed: int, strategy: str) -> tuple[bool, list[bool], bool, float]:
    """(consensus covered, each judge covered, first share covered, width ratio) for one audit of `panel`."""
    proposal = audit.propose(panel.votes, k, seed=seed, strategy=strategy).set_index("task")
    result = audit.refit(
        panel.votes, panel.truth.reindex(proposal.index), proposal["weight"], candidates=cands
    )
    classes = binary_classes(panel.votes["label"], None, "audit")
    block = audited_estimates(panel.votes, result, classes)["estimates"]
    truth = panel.truth
    consensus = float((result["labels"].reindex(truth.index) == truth).mean())
    votes = panel.votes.dropna(subset=["label"])
    right = (votes["label"] == votes["task"].map(truth)).groupby(votes["worker"]).mean()
    judges = [covers(block["judges"][str(j)]["accuracy"], float(right[j])) for j in right.index]
    first = float((truth == classes[0]).mean())
    est = block["consensus_accuracy"]
    ratio = (est["ci"][1] - est["ci"][0]) / max(est["labels_only_ci"][1] - est["labels_only_ci"][0], 1e-12)
    return covers(est, consensus), judges, covers(block["first_share"], first), ratio


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--panels", type=int, default=5)
    parser.add_argument("--audits", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=600)
    parser.add_argument("--k", type=int, nargs="+", default=[25, 50])
    parser.add_argument("--regimes", nargs="+", default=list(REGIMES), choices=REGIMES)
    parser.add_argument(
        "--strategies", nargs="+", default=["stratified", "random"], choices=["stratified", "random"]
    )
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    draws = args.panels * args.audits
    with section("bench/audited_estimates.py", args.write):
        print(
            f"`audit apply`'s 90 % prediction-powered intervals on synthetic panels ({args.tasks} tasks; audits as "
            f"`audit propose` draws them, stratified or random), {draws} draws per cell ({args.panels} panels × {args.audits} "
            "audits): share of draws covering the truth for the consensus accuracy / every judge's accuracy "
            "(pooled) / the first class's share; the consensus interval's mean width over the labels-only one.\n"
        )
        print("| regime | audit | k | consensus | judges | first share | width ratio |")
        print("|---|---|---|---|---|---|---|")
        for regime, strategy, k in itertools.product(args.regimes, args.strategies, args.k):
            consensus, judges, first, ratios = [], [], [], []
            for p in range(args.panels):
                panel = make_panel(regime, n_tasks=args.tasks, seed=7000 + p, family=True)
                cands = audit.method_labels(panel.votes)
                for a in range(args.audits):
                    c, j, s, r = one_draw(panel, cands, k, seed=100 * p + a, strategy=strategy)
                    consensus.append(c)
                    judges += j
                    first.append(s)
                    ratios.append(r)
            cells = f"{np.mean(consensus):.3f} | {np.mean(judges):.3f} | {np.mean(first):.3f} | {np.mean(ratios):.2f}"
            print(
                f"| {regime} | {strategy} | {k} | {cells} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
