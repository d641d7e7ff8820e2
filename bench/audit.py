"""The few-labels learning curve: accuracy against k audited labels on every regime family, stratified
(uncertainty-weighted) against random selection.

    python bench/audit.py [--seeds 10] [--tasks 1200]
    python bench/audit.py --llmbar 200     (LLMBar Natural's real 6-judge panel, k = 5, 10, 20 %)

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
from benchmarks_md import section
from consistency import PANEL6, panel6_votes

from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate.synthetic import REGIMES, best_single_judge, make_panel

warnings.filterwarnings("ignore", category=UserWarning)
KS = (0, 10, 20, 50, 100)
NUMERALS = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi"]
LABELS = {r: f"({n}) {r}" for n, r in zip(NUMERALS, REGIMES, strict=True)}


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--tasks", type=int, default=1200)
    parser.add_argument("--regimes", nargs="*", default=list(REGIMES))
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument(
        "--llmbar",
        type=int,
        metavar="DRAWS",
        default=0,
        help="only LLMBar Natural's curve, over DRAWS audits",
    )
    args = parser.parse_args()
    if args.llmbar:
        with section("bench/audit.py", args.write, key="bench/audit.py --llmbar"):
            llmbar_curve(args.llmbar)
        return
    with section("bench/audit.py", args.write):
        curves(args)


def llmbar_curve(draws: int) -> None:
    """The curve on a real panel: the 6 LLM judges of LLMBar Natural (100 pairs, both orders), k = 5, 10, 20 %
    of its tasks audited over `draws` audits each, the truth filling their labels."""
    if not PANEL6.exists():
        print(f"(LLMBar panel skipped: {PANEL6} not found)")
        return
    votes, truth = panel6_votes()
    right = (votes["label"] == votes["task"].map(truth)).groupby(votes["worker"]).mean()
    bar, best = float(right.max()), str(right.idxmax())
    free = accuracy(audit._consensus(votes, "auto").labels_, truth)
    candidates = audit.method_labels(votes)
    ks = (5, 10, 20)
    print(
        f"LLMBar Natural ({truth.size} pairs, 6 LLM judges in both orders): the best judge, {best}, is right on "
        f"{bar:.3f} of its votes (position-averaged); `auto` without labels {free:.3f}. Mean accuracy over {draws} "
        "audits per cell (the audited tasks keep their labels), and the share of audits at or above the best "
        "judge − 0.02:\n"
    )
    print(
        "| selection | "
        + " | ".join(f"k = {k} ({100 * k / truth.size:.0f} %)" for k in ks)
        + " | heads at k = 10 |"
    )
    print("|---" * (len(ks) + 2) + "|")
    for strategy in ("stratified", "random"):
        cells, heads = [], Counter()
        for k in ks:
            acc = []
            for seed in range(draws):
                proposal = audit.propose(votes, k, strategy=strategy, seed=seed).set_index("task")
                result = audit.refit(
                    votes, truth.reindex(proposal.index), proposal["weight"], candidates=candidates
                )
                acc.append(accuracy(result["labels"], truth))
                heads[result["head"]] += k == 10
            acc = np.array(acc)
            cells.append(f"{acc.mean():.3f} ({np.mean(acc >= bar - 0.02):.0%})")
        taken = ", ".join(f"{h} {n}" for h, n in heads.most_common() if n)
        print(f"| {strategy} | " + " | ".join(cells) + f" | {taken} |", flush=True)


def curves(args) -> None:
    print(
        "| regime family | best single judge | selection | "
        + " | ".join(f"k = {k}" for k in KS)
        + " | first k ≥ best judge | heads taken at k = 50 |"
    )
    print("|---" * (len(KS) + 5) + "|")
    first_k: dict[tuple[str, str], int | None] = {}
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
            first_k[regime, strategy] = k_reached = next(
                (k for k, m in zip(KS, means, strict=True) if m >= bar), None
            )
            reach = (
                "not by 100" if k_reached is None else f"{k_reached} ({100 * k_reached / args.tasks:.1f} %)"
            )
            print(
                f"| {LABELS[regime]} | {bar:.3f} | {strategy} | "
                + " | ".join(f"{m:.3f}" for m in means)
                + f" | {reach} | {', '.join(f'{h} {n}' for h, n in heads[strategy].most_common())} |",
                flush=True,
            )
    limit = 0.05 * args.tasks
    print(f"\nTarget: the curve reaches the best single judge at k ≤ 5 % of the tasks (k ≤ {limit:.0f}).\n")
    for strategy in ("stratified", "random"):
        reached = [first_k[r, strategy] for r in args.regimes]
        met = sum(k is not None and k <= limit for k in reached)
        worst = "one never does, by k = 100" if None in reached else f"the last at k = {max(reached)}"
        print(f"- {strategy} selection: met on {met} of {len(reached)} families ({worst}).")


if __name__ == "__main__":
    main()
