"""Aggregating any table of votes without labels, and scoring it against truth."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import pandas as pd
import yaml

from judgeops.schemas.vocabulary import TIE
from judgeops.tasks.aggregate import scoring
from judgeops.tasks.aggregate.registry import USES_LABELS, default_input, get_aggregator

InputError = scoring.InputError


def parse_params(specs: list[str], method: str, **wmv_flags: str | None) -> dict:
    """`KEY=VALUE` estimator parameters (values read as YAML: numbers, booleans, lists), and the flags that
    only `wmv` takes (`estimator`, `rule`) where given."""
    params = {}
    for text in specs:
        key, sep, value = text.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects key=value, got {text!r}")
        params[key] = yaml.safe_load(value)
    for flag, value in wmv_flags.items():
        if value and method != "wmv":
            raise InputError(f"--{flag} applies to --method wmv only")
        if value:
            params[flag] = value
    return params


def aggregate(votes: pd.DataFrame, method: str, dev_labels: pd.Series | None = None, **params):
    """Fit one aggregator on a long frame (`task, worker, label` or `task, worker, score`, plus the run
    columns where the method reads them) and return it fitted: `labels_`, `probas_`, `scores_`, ..."""
    estimator = get_aggregator(method, **params)
    return estimator.fit(votes, **({"dev_labels": dev_labels} if dev_labels is not None else {}))


@dataclass
class Aggregated:
    """`judgeops aggregate`'s result: one prediction per task, and the summary it prints (or --json)."""

    predictions: pd.DataFrame
    summary: dict
    estimator: object = field(repr=False, default=None)

    def lines(self, tie_label: str | None = TIE) -> list[str]:
        """The summary as a person reads it: ties, auto's choice, and the scores against the truth."""
        s, out = self.summary, []
        if s["tie_votes"]:
            out.append(
                f"explicit tie votes (label {tie_label!r}, not counted for either side): {s['tie_votes']}"
            )
        if s["method"] == "auto":
            out.append(f"auto chose {s['choice']}: {s['reason']}")
        out += [f"{s['method']} fell back: {note}" for note in s.get("fallbacks", [])]
        if "estimated_accuracy_ci" in s:
            out.append(
                f"label-free estimate: {s['label_free_text']} "
                f"({s['identifiability']['effective_judges']:.1f} effective judges)"
            )
            if s["identifiability"]["warning"]:
                out.append(f"warning: {s['identifiability']['warning']}")
        scored = s.get("scored") or {}
        if scored.get("scored_outside_dev_labels"):
            out.append(f"scored on {scored['n']} tasks outside the development labels")
        if "accuracy" in scored:
            decided = scored["n"] - scored["ties"] - scored["undecided"]
            out += [
                f"accuracy: {scored['accuracy']:.4f} (ties and undecided count as wrong)",
                f"accuracy on decided tasks: {scored['accuracy_decided']:.4f}",
                f"coverage: {scored['coverage']:.4f} ({decided} of {scored['n']} tasks decided; ties: {scored['ties']})",
            ]
        elif scored:
            out += [
                f"{k}: {scored[k]:.4f}"
                if scored[k] is not None
                else f"{k}: – ({scored.get(k + '_unavailable')})"
                for k in ("mae", "kendall_tau", "coverage")
            ]
        return out


def aggregate_file(
    votes_path: str,
    method: str,
    params: dict | None = None,
    truth_path: str | None = None,
    dev_labels_path: str | None = None,
    tie_label: str | None = TIE,
    allow_partial_truth: bool = False,
) -> Aggregated:
    """Read a votes file (csv/parquet), fit `method`, and score it against a truth file when given.
    Raises InputError (a bad file, a wrong spelling of the labels) or ValueError (the method cannot fit)."""
    params = dict(params or {})
    estimator = get_aggregator(method, **params)
    table = scoring.read_table(votes_path, "votes")
    kind = params.get("input", default_input(method))
    if "input" in inspect.signature(type(estimator)).parameters and kind not in table.columns:
        other = "label" if kind == "score" else "score"
        if other in table.columns and "input" not in params:
            kind = estimator.input = other
    votes, tie_votes = scoring.prepare_votes(table, kind, votes_path, tie_label)
    tasks = pd.Index(votes["task"].unique())
    fit_kwargs, dev = {}, None
    if dev_labels_path:
        if method not in USES_LABELS:
            raise InputError(f"{method} does not use development labels; {list(USES_LABELS)} do")
        dev = scoring.check_truth(
            scoring.read_table(dev_labels_path, "dev labels"), tasks, dev_labels_path, allow_partial=True
        )
        fit_kwargs["dev_labels"] = dev
    if method == "wmv" and params.get("estimator") == "oracle":
        if not truth_path:
            raise InputError("the oracle estimator reads the true labels: give --truth")
        oracle = scoring.read_table(truth_path, "truth")
        fit_kwargs["dev_labels"] = scoring.check_truth(oracle, tasks, truth_path, allow_partial=True)
    elif method == "wmv" and params.get("estimator") in ("bayesian", "stratified") and dev is None:
        raise InputError(f"the {params['estimator']} estimator needs an audit set: give --dev-labels")
    truth, truth_kind = None, "label"
    if truth_path:
        truth_table = scoring.read_table(truth_path, "truth")
        truth_kind = "score" if kind == "score" and "label" not in truth_table.columns else "label"
        truth = scoring.check_truth(truth_table, tasks, truth_path, truth_kind, allow_partial_truth)
        if dev is not None:
            truth = truth.drop(index=dev.index, errors="ignore")
    try:
        estimator.fit(votes, **fit_kwargs)
    except ValueError as exc:
        raise ValueError(f"{votes_path}: {exc}") from exc
    labels = estimator.labels_.rename("label")
    out = labels.rename_axis("task").reset_index()
    if hasattr(estimator, "probas_"):  # the decision's confidence
        out["probability"] = estimator.probas_.reindex(labels.index).max(axis=1).to_numpy()
    if hasattr(estimator, "scores_"):
        out["score"] = estimator.scores_.reindex(labels.index).to_numpy()
    summary = {
        "method": method,
        "votes": votes_path,
        "n_tasks": int(len(labels)),
        "n_votes": int(len(votes)),
        "tie_votes": tie_votes,
        "ties": int((labels == TIE).sum()),
    }
    if method == "auto":
        summary.update(choice=estimator.choice_, reason=estimator.reason_, evidence=estimator.evidence_)
    if hasattr(estimator, "scale_"):
        summary["score_scale"] = estimator.scale_
    if getattr(estimator, "fallbacks_", None):
        summary["fallbacks"] = list(estimator.fallbacks_)
    summary.update(_estimated(estimator, method, votes, kind, labels))
    if truth is not None:
        summary["scored"] = _score(estimator, labels, votes, kind, truth, truth_kind, truth_path)
        if dev is not None:
            summary["scored"]["scored_outside_dev_labels"] = True
    return Aggregated(out, summary, estimator)


def _estimated(estimator, method: str, votes: pd.DataFrame, kind: str, labels: pd.Series) -> dict:
    """The consensus's accuracy estimated without labels (`estimated_accuracy`, `estimated_accuracy_ci`), each
    judge's (`judges_estimated_accuracy`) and the identifiability diagnostic, under auto's reading of the votes
    (tasks/aggregate/estimate.py); for binary label votes only, else `estimated_accuracy_unavailable` says why."""
    if kind != "label":
        return {
            "estimated_accuracy_unavailable": "estimated for label votes (scores are not read as classes)"
        }
    if votes["label"].nunique() != 2:
        return {"estimated_accuracy_unavailable": "estimated for two classes only"}
    from judgeops.tasks.aggregate.estimate import (
        consensus_accuracy,
        identifiability,
        judge_accuracy,
        label_free_text,
        withheld,
    )
    from judgeops.tasks.aggregate.prediction_powered import label_budget

    auto = estimator if method == "auto" else None
    if auto is None:
        try:
            auto = get_aggregator("auto").fit(votes)
        except ValueError as exc:
            return {"estimated_accuracy_unavailable": f"auto cannot read these votes: {exc}"}
    open_alternatives = identifiability(auto)
    est = consensus_accuracy(auto, labels, open_alternatives)
    judges = judge_accuracy(auto, votes, open_alternatives)
    ident = identifiability(auto, est.estimate)
    why = withheld(est.ci_low, est.ci_high, ident.warning)
    return {
        # null where it must not be read as a number (estimate.withheld): the bounds stay, with the reason
        "estimated_accuracy": None if why else est.estimate,
        "estimated_accuracy_ci": [est.ci_low, est.ci_high],
        "estimated_accuracy_withheld": why,
        "label_budget": label_budget(0.03, 0.1, label_free_interval=(est.ci_low, est.ci_high)),
        "label_free_text": label_free_text(est.estimate, est.ci_low, est.ci_high, ident.warning),
        "identifiability": ident.as_dict(),
        "judges_estimated_accuracy": {
            str(r.worker): {"estimate": r.estimate, "ci": [r.ci_low, r.ci_high], "n": int(r.n)}
            for r in judges.itertuples()
        },
    }


def _score(estimator, labels, votes, kind, truth, truth_kind, truth_path) -> dict:
    if truth_kind == "label":
        if kind == "score":  # the decisions of score votes are named by the estimator's classes
            space = list(getattr(estimator, "classes_", None) or getattr(estimator, "classes", ("A", "B")))
            outside = sorted(set(truth.unique()) - set(space), key=str)
            if outside:
                raise InputError(
                    f"{truth_path}: truth labels {outside[:5]} for score votes: a score method decides {space[0]!r} "
                    f"(the first candidate has the higher score) or {space[1]!r}; spell the truth that way, or "
                    "give score truth (a `score` column)"
                )
            return scoring.score_labels(labels, truth, space, truth_path)
        space = set(votes["label"].dropna())
        return scoring.score_labels(labels, truth, sorted(space, key=str), truth_path)
    if not hasattr(estimator, "scores_"):
        raise InputError(
            f"{truth_path}: score truth needs a method whose output is a score per task "
            "(avg, uws, care_svd, care_tensor, auto --param input=score)"
        )
    scored = scoring.score_scores(estimator.scores_, truth)
    if getattr(estimator, "scale_", "input") != "input":  # not on the truth's scale: by rank only
        scored["mae"] = None
        scored["mae_unavailable"] = "the method's scores are not on the judges' scale: compare by Kendall τ"
    return scored
