"""`audit apply`'s prediction-powered intervals on judgerEva, whose truth is known by construction.

    python bench/audited_judgereva.py --store STORE [--run RUN_ID] [--k 50] [--draws 50] [--write]

Reads a finished run's verdicts and variants (the default `judgeops run` makes one), hides the truth, and on
each draw audits k tasks as the evaluate flow's audit does (`audit propose`'s stratified draw over the run's
votes, with a new seed), labels them with judgerEva's planted truth, refits and estimates
(`audit.refit`, `audited_estimates`). Measured per draw against the whole run's truth: the consensus's accuracy
(the labels `--out` would write: the audited tasks keep their labels) and each judge's share of votes right.
Reported: the share of draws whose 90 % interval covers the measured value (the promise: >= 88 %), per judge
and for the consensus, and the mean width of the consensus's interval beside the labels-only one.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from benchmarks_md import section

from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.aggregate import audit
from judgeops.tasks.aggregate._base import binary_classes
from judgeops.tasks.aggregate.audited_estimates import audited_estimates
from judgeops.tasks.labelling.run_audit import canonical_gold, named_votes


def run_votes(store_url: str, run_id: str | None) -> tuple[pd.DataFrame, pd.Series, str]:
    """(label votes over the run's judgerEva tasks, their truth, the run id)."""
    store = ArtifactStore(store_url)
    run_id = run_id or [r for r in store.list_runs() if r["flow"] == "evaluate"][-1]["run_id"]
    store = ArtifactStore(store_url, run_id)
    variants = store.read_pandas("variants")
    votes, variant = named_votes(store.read_pandas("verdicts"), variants, 0)
    gold = canonical_gold(variants, variant)
    votes = votes[votes["task"].isin(gold.index)]
    return votes[["task", "worker", "label", "run"]], gold.reindex(sorted(votes["task"].unique())), run_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--run", default=None)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--draws", type=int, default=50)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    votes, truth, run_id = run_votes(args.store, args.run)
    classes = binary_classes(votes["label"], None, "audit")
    right = (votes["label"] == votes["task"].map(truth)).groupby(votes["worker"]).mean()
    cands = audit.method_labels(votes)
    covered: dict[str, list[bool]] = {str(j): [] for j in right.index}
    covered["consensus"], widths = [], []
    for seed in range(args.draws):
        proposal = audit.propose(votes, args.k, seed=seed).set_index("task")
        result = audit.refit(votes, truth.reindex(proposal.index), proposal["weight"], candidates=cands)
        block = audited_estimates(votes, result, classes)["estimates"]
        measured = float((result["labels"].reindex(truth.index) == truth).mean())
        est = block["consensus_accuracy"]
        covered["consensus"].append(est["ci"][0] <= measured <= est["ci"][1])
        widths.append((est["ci"][1] - est["ci"][0], est["labels_only_ci"][1] - est["labels_only_ci"][0]))
        for judge, share in right.items():
            if str(judge) in block["judges"]:  # a judge on a fixed sample may meet fewer than 2 audited tasks
                e = block["judges"][str(judge)]["accuracy"]
                covered[str(judge)].append(e["ci"][0] <= share <= e["ci"][1])
    with section("bench/audited_judgereva.py", args.write):
        width, only = np.mean(widths, axis=0)
        print(
            f"The default run's verdicts ({votes['task'].nunique()} judgerEva tasks, {votes['worker'].nunique()} "
            f"judges; run {run_id}), truth hidden, k = {args.k} audited as `audit propose` draws them, "
            f"{args.draws} draws: the share of draws whose 90 % prediction-powered interval covers the accuracy "
            f"measured on every task. The consensus interval's mean width: {width:.3f} (labels alone {only:.3f}).\n"
        )
        print("| who | accuracy measured | draws with an estimate | share of them covered |")
        print("|---|---|---|---|")
        print(
            f"| consensus (audit apply --out) | (per draw) | {args.draws} | {np.mean(covered['consensus']):.2f} |"
        )
        for judge, share in right.items():
            seen = covered[str(judge)]
            shown = f"{np.mean(seen):.2f}" if seen else "–"
            print(f"| {judge} | {share:.3f} | {len(seen)} | {shown} |")


if __name__ == "__main__":
    main()
