"""A few labels, chosen well: which tasks to audit, and the consensus refitted with the audited labels."""

from __future__ import annotations

import pandas as pd

from judgeops.api.people import read_labels
from judgeops.tasks.aggregate import audit, scoring
from judgeops.tasks.aggregate.scoring import InputError


def audit_propose(
    votes_path: str,
    k: int,
    method: str = "auto",
    by: str | None = None,
    strategy: str = "stratified",
    seed: int = 0,
) -> tuple[pd.DataFrame, int]:
    """The k tasks whose labels would inform the consensus most (and how many tasks there are)."""
    votes = scoring.read_label_votes(votes_path)
    return audit.propose(votes, k, method, by, strategy, seed), votes["task"].nunique()


def labels_to_ask(votes_path: str, k: int, half_width: float = 0.03) -> str:
    """How many labels the consensus's accuracy needs for ± `half_width` (90 %), before any label: the labels-only
    worst case over its label-free interval (prediction_powered.label_budget: the predictions are not trusted
    before a label has checked them); after the audit, `audit apply` says it from the audit's own variance."""
    from judgeops.tasks.aggregate.estimate import consensus_accuracy, identifiability
    from judgeops.tasks.aggregate.prediction_powered import label_budget
    from judgeops.tasks.aggregate.registry import get_aggregator

    votes = scoring.read_label_votes(votes_path)
    try:
        auto = get_aggregator("auto").fit(votes)
        est = consensus_accuracy(auto, auto.labels_, identifiability(auto))
    except ValueError as exc:  # votes auto cannot read: no budget, and the proposal stands
        return f"(no label budget: {exc})"
    need = label_budget(half_width, 0.1, label_free_interval=(est.ci_low, est.ci_high))
    enough = "enough" if k >= need else f"{need - k} more after these"
    return (
        f"label budget: about {need} labels for the consensus's accuracy ± {half_width} (90 %), a worst case over "
        f"its label-free interval [{est.ci_low:.3f}, {est.ci_high:.3f}] ({enough}); `audit apply` says how many "
        "more from the audit's own variance"
    )


def audit_lines(summary: dict) -> list[str]:
    """`audit_apply`'s summary as a person reads it."""
    out = [f"{summary['n_labels']} audited labels; head taken: {summary['head']}"]
    out += [f"warning: {line}" for line in summary.get("labels_left_out", [])]
    for head, score in summary["audit_accuracy"].items():
        loo = " (leave-one-out)" if head in audit.HEADS[1:] else ""
        out.append(f"  {head}: weighted accuracy on the audit {score:.3f}{loo}")
    if "estimates" in summary:
        from judgeops.tasks.aggregate.audited_estimates import estimate_lines

        out += estimate_lines(summary)
    if "selective" in summary:
        sel = summary["selective"]
        if sel["threshold"] is None:
            out.append(
                f"selective: no threshold certifies an error ≤ {sel['target_error']} with probability "
                f"{1 - sel['delta']:.2f} on this audit: every unaudited task abstains (audit more tasks: it takes "
                f"at least {sel['labels_needed']} audited tasks the consensus decides, with none wrong)"
            )
        else:
            out.append(
                f"selective: error ≤ {sel['target_error']} with probability {1 - sel['delta']:.2f} on the "
                f"{sel['coverage']:.1%} of tasks decided (confidence ≥ {sel['threshold']:.4f}); "
                f"{sel['abstained']} tasks abstain: escalate them to a person"
            )
    if "annotators" in summary:
        a = summary["annotators"]
        kappa = "" if a["kappa"] is None else f"Cohen's κ {a['kappa']:.2f}, "
        out.append(
            f"people: {a['n_annotators']} annotators on {a['n_tasks']} shared tasks: {kappa}Krippendorff's α "
            f"{_num(a['alpha'])} (90 % interval {_num(a['alpha_low'])}–{_num(a['alpha_high'])}); "
            f"{len(a['conflicts'])} conflicts to adjudicate (no majority: left out)"
        )
    rows = summary.get("human_agreement") or []
    if rows:
        out.append("agreement with people on the audited tasks (weighted; 90 % intervals):")
        for r in rows:
            out.append(
                f"  {r['kind']} {r['who']}: accuracy {_num(r['accuracy'])} [{_num(r['accuracy_low'])}, "
                f"{_num(r['accuracy_high'])}], κ {_num(r['kappa'])} [{_num(r['kappa_low'])}, {_num(r['kappa_high'])}]"
                f" on {r['n_tasks']} tasks"
            )
    if "scored" in summary:
        out.append(f"accuracy: {summary['scored']['accuracy']:.4f} (audited tasks keep their labels)")
    return out


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


# `audit apply`'s options, in audit_apply's order (the command line passes them through)
AUDIT_APPLY_ARGS = ("votes", "labels", "method", "truth", "allow_partial_truth", "target_error", "delta")


def audit_apply(
    votes_path: str,
    labels_path: str,
    method: str = "auto",
    truth_path: str | None = None,
    allow_partial_truth: bool = False,
    target_error: float | None = None,
    delta: float = 0.1,
) -> tuple[pd.DataFrame, dict]:
    """The consensus refitted with the audited labels (the head chosen on the audit): predictions, summary.
    With `target_error` (and `delta`), a selective consensus: only the tasks whose error rate is certified at
    most `target_error` with probability 1 − `delta` on the audit are decided, the rest are `abstain`
    (tasks/aggregate/selective.py)."""
    for name, value in (("--target-error", target_error), ("--delta", delta)):
        if value is not None and not 0 < value < 1:
            raise InputError(f"{name} {value}: expected a number strictly between 0 and 1")
    votes = scoring.read_label_votes(votes_path)
    if votes["worker"].nunique() < 2:
        raise InputError(
            f"{votes_path}: a panel of one judge ({votes['worker'].iloc[0]}): there is no consensus to audit; "
            "score the judge against the labels with `judgeops aggregate --truth`"
        )
    left_out: list[str] = []
    labels, weights, people = read_labels(labels_path, left_out.append)  # a filled csv, or the page's log
    if len(labels) < 2:
        raise InputError(
            f"{labels_path}: only {len(labels)} label filled in: an audit needs at least 2 to say anything "
            "(`audit propose --k` suggests how many)"
        )
    stray = sorted(set(labels.index) - set(votes["task"].astype(str)), key=str)
    if stray:  # an audit of another panel, or a task id mistyped: it would be ignored in silence
        raise InputError(
            f"{labels_path}, field 'task': {len(stray)} audited task(s) that {votes_path} does not have, "
            f"e.g. {stray[:3]}"
        )
    classes = sorted(set(votes["label"].dropna().astype(str)), key=str)
    unknown = sorted(set(labels.astype(str)) - set(classes), key=str)
    if unknown:
        raise InputError(
            f"{labels_path}, field 'label': {unknown[:5]} are not labels the votes use ({classes})"
        )
    from judgeops.tasks.aggregate.with_people import check_with_people

    chosen, summary, _ = check_with_people(votes, labels, weights, people, method, target_error, delta)
    if left_out:
        summary["labels_left_out"] = left_out
    out = chosen.rename("label").rename_axis("task").reset_index()
    if truth_path:
        tasks = chosen.index
        truth = scoring.check_truth(
            scoring.read_table(truth_path, "truth"), tasks, truth_path, allow_partial=allow_partial_truth
        )
        space = sorted(set(votes["label"].dropna()), key=str)
        decided = chosen.where(chosen != "abstain")  # an abstention is no decision
        summary["scored"] = scoring.score_labels(decided, truth, space, truth_path)
    return out, summary


def audit_gates(summary: dict, specs: list[str] | None) -> list[str]:
    """The `--fail-under NAME=VALUE` gates of `audit apply` that fail (one line each; [] where all pass). NAME is
    consensus_accuracy, first_share or a judge's name (its accuracy), with `_lo` for the interval's lower end;
    a malformed gate or an unknown name is a GateError (exit 2, one line)."""
    from judgeops.api.gates import GateError, parse_fail_under

    gates = {}
    for spec in specs or []:  # parse_fail_under's message names the run's form; this command's is NAME=VALUE
        try:
            gates.update(parse_fail_under([spec]))
        except GateError:
            raise GateError(f"--fail-under {spec!r}: expected NAME=VALUE with a value in [0, 1]") from None
    if not gates:
        return []
    estimates = summary.get("estimates")
    if estimates is None:
        raise GateError("--fail-under: this audit has no usable label, so there is no estimate to gate on")
    named = {"consensus_accuracy": estimates["consensus_accuracy"], "first_share": estimates["first_share"]}
    named.update({judge: e["accuracy"] for judge, e in estimates["judges"].items()})
    failed = []
    for name, minimum in gates.items():
        base, low = (name[:-3], True) if name.endswith("_lo") and name[:-3] in named else (name, False)
        if base not in named:
            known = ", ".join(sorted(named))
            raise GateError(f"--fail-under {name}: no estimate has that name; known: {known} (each with _lo)")
        value = named[base]["ci"][0] if low else named[base]["estimate"]
        if value < minimum:
            what = f"the 90 % interval's lower end of {base}" if low else base
            failed.append(f"gate failed: {what} is {value:.3f}, under {minimum}")
    return failed
