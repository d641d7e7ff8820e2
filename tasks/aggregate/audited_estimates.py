"""The numbers a team quotes after an audit, each prediction-powered (prediction_powered.workload_mean): a few
labels correct the panel's own predictions on every task, and the interval stays valid whatever those predictions
are worth.

- `consensus_accuracy`: the share of the workload's tasks on which the consensus `audit apply --out` writes is
  right. The audited tasks keep their labels (right by construction); on the others it is the refit head's
  decision. Y on an audited task is whether the head decides it right without that task's label (its left-out or
  cross-fitted hit: `audit.refit`'s `audit_hits`), f the label-free posterior of the head's decision. The head's
  accuracy θ over the workload is estimated, and the consensus's is n/N + (1 − n/N) θ (an affine map of θ and its
  interval).
- `judges.<name>.accuracy`: the share of the judge's votes (each run of it a vote) that are right. Per task, Y is
  the share of its votes there that match the label, f the mean over those votes of the label-free posterior
  that the truth is what it voted; the estimate is the mean over the tasks it voted on (the share of its votes
  where each task has as many).
- `judges.<name>.fpr`, `.fnr`: its error rates, the first class the positive one: the share of its votes on the
  tasks whose truth is the second class that say the first, and the converse. Which tasks are in a class is
  itself estimated (the label-free posterior, rectified by the audit): `prediction_powered.workload_ratio`.
  Absent where no audited task is of that class.
- `first_share`: the share of tasks whose truth is the first class (a pairwise set: how often the first
  candidate is the better one), Y = [label is that class], f = the label-free posterior of it.

The predictions f never see the labels (the label-free consensus is fitted on the votes alone), which is what
makes the correction unbiased. The audit's weights (`audit propose`: a stratum's size over its sample) make the
estimate stand for the whole workload, not the strata the audit favoured.

`label_budget`: for each, how many labels in all would make its 90 % interval ± `half_width` (None: no number of
labels would, the predictions' own variance is already wider).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate.prediction_powered import Estimate, label_budget, workload_mean, workload_ratio

HALF_WIDTH = 0.03


def audited_estimates(
    votes: pd.DataFrame, result: dict, classes: tuple, alpha: float = 0.1, half_width: float = HALF_WIDTH
) -> dict:
    """{"estimates": {"consensus_accuracy", "judges": {name: {"accuracy", "fpr", "fnr"}}, "first_share"}, each an
    Estimate.to_dict(); "label_budget": {the same names: labels in all for ± half_width}, "half_width", "alpha",
    "first_class"} from `audit.refit`'s result on `votes`."""
    named = lambda series: series.set_axis(series.index.astype(str))  # noqa: E731 - task ids as text, as in a file
    audited = named(result["audited"]).astype(str)
    weights = named(result["weights"]).reindex(audited.index).astype(float)
    p_first = named(result["p_first"]).astype(float)
    tasks = p_first.index
    n_tasks = len(tasks)
    estimates: dict = {"judges": {}}
    budget: dict = {"judges": {}}

    # the consensus: the head's blind hits on the audited tasks, the posterior of its decision everywhere
    hits = named(result["audit_hits"]).reindex(audited.index).astype(float)
    known = hits.notna()
    confidence = named(result["confidence"]).reindex(tasks).astype(float)
    f_labelled = confidence.reindex(audited.index[known]).to_numpy()
    head = workload_mean(hits[known].to_numpy(), f_labelled, confidence.to_numpy(), weights[known], alpha)
    share = len(audited) / n_tasks  # the audited tasks: right by construction in what --out writes
    lift = lambda v: min(1.0, share + (1 - share) * v)  # noqa: E731
    consensus = Estimate(
        lift(head.estimate),
        (lift(head.ci[0]), lift(head.ci[1])),
        (lift(head.labels_only_ci[0]), lift(head.labels_only_ci[1])),
        head.n_labels,
        head.effective_labels,
        head.lam,
        head.method + "; audited tasks keep their labels",
    )
    estimates["consensus_accuracy"] = consensus.to_dict()
    # the head's half-width scales by (1 - share) in the consensus's
    budget["consensus_accuracy"] = label_budget(
        half_width / max(1 - share, 1e-9), alpha, hits[known].to_numpy(), f_labelled, confidence.to_numpy()
    )

    # each judge: per task, the share of its votes that are right and the posterior that they are
    frame = votes.dropna(subset=["task", "worker", "label"])
    frame = frame.assign(task=frame["task"].astype(str), label=frame["label"].astype(str))
    truth_first = p_first.reindex(frame["task"]).to_numpy()
    frame = frame.assign(
        believed=np.where(
            frame["label"] == str(classes[0]),
            truth_first,
            np.where(frame["label"] == str(classes[1]), 1 - truth_first, 0.0),
        ),
        right=(frame["label"] == frame["task"].map(audited)).astype(float),
        says_first=(frame["label"] == str(classes[0])).astype(float),
        says_second=(frame["label"] == str(classes[1])).astype(float),
    )
    for judge, rows in frame.groupby("worker", sort=True):
        per_task = rows.groupby("task").agg(
            f=("believed", "mean"),
            y=("right", "mean"),
            first=("says_first", "mean"),
            second=("says_second", "mean"),
        )
        labelled = per_task.index.intersection(audited.index)
        if len(labelled) < 2:  # a judge that voted on fewer audited tasks gets no number
            continue
        y, f = per_task.loc[labelled, "y"].to_numpy(), per_task.loc[labelled, "f"].to_numpy()
        est = workload_mean(y, f, per_task["f"].to_numpy(), weights.reindex(labelled), alpha)
        estimates["judges"][str(judge)] = {"accuracy": est.to_dict()}
        budget["judges"][str(judge)] = label_budget(half_width, alpha, y, f, per_task["f"].to_numpy())
        estimates["judges"][str(judge)].update(
            _error_rates(per_task, labelled, audited, p_first, weights.reindex(labelled), classes, alpha)
        )

    # the workload's own quantity: how often the truth is the first class
    y = (audited == str(classes[0])).astype(float).to_numpy()
    f = p_first.reindex(audited.index).to_numpy()
    estimates["first_share"] = workload_mean(y, f, p_first.to_numpy(), weights, alpha).to_dict()
    budget["first_share"] = label_budget(half_width, alpha, y, f, p_first.to_numpy())
    return {
        "estimates": estimates,
        "label_budget": budget,
        "half_width": half_width,
        "alpha": alpha,
        "first_class": str(classes[0]),
    }


def _error_rates(per_task, labelled, audited, p_first, weights, classes, alpha) -> dict:
    """A judge's FPR and FNR, the first class the positive one: the share of its votes on the tasks whose truth
    is the second class that say the first, and the converse (`workload_ratio`: which tasks are in a class is
    itself estimated, from the label-free posterior and the audit)."""
    p = p_first.reindex(per_task.index).to_numpy()
    truth_first = (audited.reindex(labelled) == str(classes[0])).to_numpy(dtype=float)
    at = per_task.index.get_indexer(labelled)
    out = {}
    for name, member, member_f, wrong in (
        ("fpr", 1.0 - truth_first, 1.0 - p, "first"),
        ("fnr", truth_first, p, "second"),
    ):
        said = per_task[wrong].to_numpy()
        est = workload_ratio(
            member * said[at],
            member,
            member_f[at] * said[at],
            member_f[at],
            member_f * said,
            member_f,
            weights,
            alpha,
        )
        if est is not None:
            out[name] = est.to_dict()
    return out


QUANTITIES = ("consensus_accuracy", "judge_accuracy", "judge_fpr", "judge_fnr", "first_share")


def estimate_rows(block: dict) -> pd.DataFrame:
    """`audited_estimates`'s numbers as a table (the run's `estimates` artifact): quantity (QUANTITIES), who (the
    judge; the class for first_share; '' for the consensus), estimate, ci_low, ci_high, labels_only_low,
    labels_only_high, n_labels, effective_labels, method, label_budget (labels in all for ± half_width; null
    where none would do), half_width."""
    est, budget = block["estimates"], block["label_budget"]
    named = [("consensus_accuracy", "", est["consensus_accuracy"], budget["consensus_accuracy"])]
    for judge, e in est["judges"].items():
        named.append(("judge_accuracy", judge, e["accuracy"], budget["judges"].get(judge)))
        named += [(f"judge_{rate}", judge, e[rate], None) for rate in ("fpr", "fnr") if rate in e]
    named.append(("first_share", block["first_class"], est["first_share"], budget["first_share"]))
    rows = [
        {
            "quantity": quantity,
            "who": who,
            "estimate": e["estimate"],
            "ci_low": e["ci"][0],
            "ci_high": e["ci"][1],
            "labels_only_low": e["labels_only_ci"][0],
            "labels_only_high": e["labels_only_ci"][1],
            "n_labels": e["n_labels"],
            "effective_labels": e["effective_labels"],
            "method": e["method"],
            "label_budget": need,
            "half_width": block["half_width"],
        }
        for quantity, who, e, need in named
    ]
    return pd.DataFrame(rows).astype({"label_budget": "Int64"})


def estimate_lines(block: dict) -> list[str]:
    """`audited_estimates`'s numbers as a person reads them: one line each, with where it came from."""
    level = round(100 * (1 - block["alpha"]))
    est, budget = block["estimates"], block["label_budget"]

    def line(name: str, e: dict, need) -> str:
        if (e["ci"][1] - e["ci"][0]) / 2 <= block["half_width"]:
            more = "reached"
        else:
            more = (
                "no number of labels reaches it"
                if need is None
                else f"about {max(need, e['n_labels'] + 1)} labels in all"
            )
        return (
            f"  {name}: {e['estimate']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}] ({level} %; labels alone "
            f"[{e['labels_only_ci'][0]:.3f}, {e['labels_only_ci'][1]:.3f}]; the verdicts were worth "
            f"{e['effective_labels']:.0f} labels; ± {block['half_width']}: {more})"
        )

    first = est["consensus_accuracy"]
    out = [f"estimates from {first['n_labels']} labels and every task's verdicts ({first['method']}):"]
    out.append(line("consensus accuracy", first, budget["consensus_accuracy"]))
    for judge, e in est["judges"].items():
        out.append(line(f"judge {judge} accuracy", e["accuracy"], budget["judges"].get(judge)))
        rates = [
            f"{rate.upper()} {e[rate]['estimate']:.3f} [{e[rate]['ci'][0]:.3f}, {e[rate]['ci'][1]:.3f}]"
            for rate in ("fpr", "fnr")
            if rate in e
        ]
        if rates:
            out.append(f"    {', '.join(rates)} ({block['first_class']!r} the positive class)")
    out.append(
        line(
            f"share of tasks whose truth is {block['first_class']!r}",
            est["first_share"],
            budget["first_share"],
        )
    )
    return out
