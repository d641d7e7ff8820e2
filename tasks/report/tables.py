"""The report's tables: profiles by condition, changes since the previous run, statistics, the panel, the
aggregation notes and the prompt-injection probe, as HTML fragments or rows for the template."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from judgeops.schemas.vocabulary import PANEL_PREFIX, is_panel
from judgeops.tasks.aggregate.estimate import label_free_text, withheld
from judgeops.tasks.profile.conditions import CAP, CONDITIONS
from judgeops.tasks.profile.profiles import BENCHMARK


def previous_run_changes(current: pd.DataFrame, previous: pd.DataFrame) -> pd.DataFrame:
    """Per judge and condition (judgerEva): the change since the previous run with a 95% CI (normal
    approximation from the two percentile CIs: independent runs), flagged where the two CIs do not overlap."""
    key = ["judge_id", "condition"]
    now = current[current["benchmark"] == BENCHMARK].set_index(key)
    before = previous[previous["benchmark"] == BENCHMARK].set_index(key)
    both = now.join(before, how="inner", lsuffix="", rsuffix="_prev")
    if both.empty:
        return pd.DataFrame()
    se = np.sqrt(
        ((both["ci_high"] - both["ci_low"]) / 3.92) ** 2
        + ((both["ci_high_prev"] - both["ci_low_prev"]) / 3.92) ** 2
    )
    change = both["estimate"] - both["estimate_prev"]
    out = pd.DataFrame(
        {
            "previous": both["estimate_prev"].round(3),
            "now": both["estimate"].round(3),
            "change": change.round(3),
            "change 95% CI": [
                f"[{c - 1.96 * s:+.3f}, {c + 1.96 * s:+.3f}]" for c, s in zip(change, se, strict=True)
            ],
            "CIs overlap": np.where(
                (both["ci_low"] > both["ci_high_prev"]) | (both["ci_high"] < both["ci_low_prev"]), "NO", "yes"
            ),
        }
    )
    return out.reset_index()


def stats_tables(stats: pd.DataFrame | None) -> dict[str, str | None]:
    """HTML tables of profile_stats: stress degradation, rank stability, profile distance."""
    if stats is None or stats.empty:
        return {"stress": None, "rank": None, "distance": None}

    def ci(r) -> str:
        return f"{r.estimate:+.2f}" + ("" if np.isnan(r.ci_low) else f" [{r.ci_low:+.2f}, {r.ci_high:+.2f}]")

    stats = stats.assign(cell=[ci(r) for r in stats.itertuples()])
    stress = stats[stats["kind"] == "stress_degradation"]
    stress_html = None
    if len(stress):
        wide = stress.pivot_table(
            index=["benchmark", "judge_id"], columns="condition", values="cell", aggfunc="first"
        )
        wide = wide[[c for c in ["overall", *CAP] if c in wide.columns]]
        stress_html = wide.reset_index().to_html(index=False, classes="grid", na_rep="–")
    rank = stats[stats["kind"].str.startswith("rank_stability")]
    rank_html = None
    if len(rank):
        rank_html = (
            rank[["kind", "benchmark", "other", "condition", "n", "cell"]]
            .rename(columns={"n": "judges", "cell": "Spearman ρ [95% CI]"})
            .to_html(index=False, classes="grid")
        )
    dist = stats[stats["kind"].isin(["profile_distance", "family_distance"])]
    dist_html = None
    if len(dist):
        dist_html = (
            dist[["kind", "judge_id", "other_judge", "condition", "n", "estimate"]]
            .rename(columns={"n": "conditions", "estimate": "mean |Δ|"})
            .to_html(index=False, classes="grid", float_format="%.3f")
        )
    return {"stress": stress_html, "rank": rank_html, "distance": dist_html}


def _cell(row: pd.Series) -> str:
    return f"{row.estimate:.2f} [{row.ci_low:.2f}, {row.ci_high:.2f}] n={row.n}"


def condition_table(profiles: pd.DataFrame, index: list[str]) -> str:
    """HTML: one row per `index` value, one column per condition (in CAP order), "estimate [CI] n" cells."""
    cells = profiles.assign(cell=profiles.apply(_cell, axis=1))
    wide = cells.pivot(index=index, columns="condition", values="cell")
    wide = wide[[c.name for c in CONDITIONS if c.name in wide.columns]]
    wide.columns.name = None
    return wide.reset_index().to_html(index=False, classes="grid", na_rep="–")


def external_table(profiles: pd.DataFrame) -> str | None:
    """Judges on the other benchmarks of the run (Hard-Constructed, published pairwise sets), with CIs."""
    published = profiles[profiles["benchmark"] != BENCHMARK]
    return None if published.empty else condition_table(published, ["benchmark", "judge_id"])


JUDGE_NOTES = {
    (
        "programmatic",
        "reference_match",
    ): "a heuristic, not a language model; reference-guided (it sees the gold "
    "answer); defaults to the first answer when both or neither final claims match",
    (
        "programmatic",
        "numeric_consistency",
    ): "a heuristic, not a language model; says tie when no arithmetic or comparison can be checked",
    ("programmatic", "length_preference"): "a heuristic, not a language model; prefers the longer answer",
    ("programmatic", "hedge_preference"): "a heuristic, not a language model; prefers cautious wording",
    (
        "local",
        "smollm2-135m-instruct",
    ): "a real but weak LLM (135M parameters): near chance, answers A almost "
    "always, so its position robustness (C7) is near zero",
}


def panel_rows(judges: list[dict]) -> list[dict]:
    """The configured judges with what a reader must know about each (from the run's configuration)."""
    return [{**j, "note": JUDGE_NOTES.get((j.get("backend"), j.get("model")), "")} for j in judges]


def consistency_table(consistency: pd.DataFrame | None, profiles: pd.DataFrame) -> str | None:
    """Per judge: its label-free consistency signals next to its measured accuracy (overall PA)."""
    if consistency is None or consistency.empty:
        return None
    overall = consistency[consistency["condition"] == "overall"].set_index("judge_id")
    accuracy = profiles[profiles["condition"] == "overall"].set_index("judge_id")["estimate"]
    table = pd.DataFrame(
        {
            "accuracy (PA, labels)": accuracy.reindex(overall.index),
            "order consistency": overall["order_consistency"],
            "presentation consistency": overall["presentation_consistency"],
            "position bias (share first shown)": overall["position_bias"],
            "implied accuracy (no labels)": overall["implied_accuracy"],
            "weight in cwv": overall["weight"],
            "decisive votes": overall["n_decisive"],
        }
    ).sort_values("implied accuracy (no labels)", ascending=False)
    table = table.rename_axis("judge").reset_index()
    return table.to_html(index=False, classes="grid", float_format="%.3f", na_rep="–")


def auto_choice(notes: pd.DataFrame | None, overall: pd.DataFrame | None = None) -> dict | None:
    """auto's row of the aggregation notes as the report shows it: its choice and reason, the evidence, its
    accuracy estimated without labels beside its judgerEva accuracy (`overall`: the profiles' overall rows), and
    the identifiability warning."""
    if notes is None or notes.empty or "auto" not in set(notes["method"]):
        return None
    row = notes.set_index("method").loc["auto"]
    evidence = json.loads(row["evidence"]) if row["evidence"] else {}
    ident = evidence.pop("identifiability", {})
    measured = _judgereva(overall).get("auto")
    return {
        "choice": row["choice"],
        "reason": row["reason"],
        "evidence": ", ".join(
            f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}" for k, v in evidence.items()
        ),
        # a number only where it can be read as one (estimate.withheld); else bounds, the reason, a label budget
        "estimate": None
        if pd.isna(row.get("estimated_accuracy"))
        or withheld(row["estimated_ci_low"], row["estimated_ci_high"], row["warning"] or None)
        else f"{row['estimated_accuracy']:.3f} [{row['estimated_ci_low']:.3f}, {row['estimated_ci_high']:.3f}]",
        "label_free": None
        if pd.isna(row.get("estimated_accuracy"))
        else label_free_text(
            row["estimated_accuracy"],
            row["estimated_ci_low"],
            row["estimated_ci_high"],
            row["warning"] or None,
        ),
        "judgereva": None if measured is None else f"{measured:.3f}",
        "effective_judges": ident.get("effective_judges"),
        "warning": row["warning"],
    }


def summary(
    overall: pd.DataFrame, auto: dict | None, notes: pd.DataFrame | None, coverage: pd.DataFrame | None
) -> dict:
    """The top of the report, for a reader who wants two answers: which judge can I use (the best judge on
    judgerEva with its CI), how good is the consensus (auto's accuracy measured on judgerEva and estimated
    without labels), and one line per warning (auto's identifiability, a method on the mirror side, a judge
    whose calls did not all come back)."""
    judges = overall[~is_panel(overall["judge_id"])].sort_values("estimate", ascending=False)
    best = judges.iloc[0] if len(judges) else None
    warnings = [f"auto: {auto['warning']}"] if auto and auto.get("warning") else []
    if notes is not None and not notes.empty:
        flagged = notes[notes["warning"].fillna("").astype(str).str.len() > 0]
        warnings += [f"{r.method}: {r.warning}" for r in flagged.itertuples() if r.method != "auto"]
    if coverage is not None and not coverage.empty:
        short = coverage[coverage["coverage"] < 1].sort_values("coverage")
        warnings += [
            f"{r.judge_id}: {r.coverage:.0%} of its calls gave a verdict: the coverage table says why"
            for r in short.itertuples()
        ]
    return {
        "best": None
        if best is None
        else {
            "judge": best["judge_id"],
            "estimate": f"{best['estimate']:.3f}",
            "ci": f"[{best['ci_low']:.3f}, {best['ci_high']:.3f}]",
        },
        "auto": auto,
        "warnings": warnings,
    }


def _judgereva(overall: pd.DataFrame | None) -> dict[str, float]:
    """method → the consensus's position-averaged judgerEva accuracy (profiles, condition overall)."""
    if overall is None or overall.empty:
        return {}
    panel = overall[overall["judge_id"].astype(str).str.startswith(PANEL_PREFIX)]
    return dict(zip(panel["judge_id"].str.removeprefix(PANEL_PREFIX), panel["estimate"], strict=True))


def label_free_cell(estimate: float, low: float, high: float, warning: str | None) -> str:
    """A method's label-free accuracy in a table cell: `0.912 [0.880, 0.945]`, or `[0.460, 0.990], bounds only`
    where it must not be read as a number (estimate.withheld)."""
    if pd.isna(estimate):
        return "–"
    if withheld(low, high, warning or None):
        return f"[{low:.3f}, {high:.3f}], bounds only"
    return f"{estimate:.3f} [{low:.3f}, {high:.3f}]"


def notes_table(notes: pd.DataFrame | None, overall: pd.DataFrame | None = None) -> str | None:
    """Per method: the label-free checks, the accuracy estimated without labels (90% interval) and, beside it,
    the judgerEva accuracy measured with the planted labels."""
    if notes is None or notes.empty:
        return None
    table = notes.assign(
        estimated=[
            label_free_cell(r.estimated_accuracy, r.estimated_ci_low, r.estimated_ci_high, r.warning)
            for r in notes.itertuples()
        ],
        judgereva=notes["method"].map(_judgereva(overall)),
    )
    table = table[
        [
            "method",
            "estimated",
            "judgereva",
            "agreement_with_mv",
            "agreement_with_auto",
            "warning",
            "fallbacks",
        ]
    ]
    table.columns = [
        "method",
        "accuracy estimated without labels [90% CI]",
        "judgerEva accuracy (labels)",
        "agreement_with_mv",
        "agreement_with_auto",
        "warning",
        "fallbacks",
    ]
    return table.to_html(index=False, classes="grid", float_format="%.3f", na_rep="–")


def injection_table(robustness: pd.DataFrame | None) -> str | None:
    """The prompt-injection probe per judge, most swayed first; None when the probe did not run."""
    if robustness is None or not len(robustness):
        return None
    table = robustness.sort_values("followed", ascending=False)[
        [
            "judge_id",
            "protocol",
            "n",
            "accuracy_plain",
            "accuracy_injected",
            "change",
            "followed",
            "changed_verdicts",
        ]
    ]
    return table.to_html(index=False, classes="grid", float_format="%.3f")


def calibration_table(calibration: pd.DataFrame) -> str:
    """Every week's rates per judge and estimator; a drifting judge's changes read "fpr 0.120 → 0.310"."""
    table = calibration.sort_values(["week", "judge_id", "estimator"]).copy()
    if "drift_changes" in table:
        table["drift_changes"] = table["drift_changes"].map(
            lambda changes: (
                "; ".join(f"{c['metric']} {c['before']:.3f} → {c['after']:.3f}" for c in changes)
                if changes is not None
                else ""
            )
        )
    return table.to_html(index=False, classes="grid", float_format="%.3f")


def estimate_sentences(estimates: pd.DataFrame | None) -> list[str]:
    """One sentence per prediction-powered number of the audit (the `estimates` artifact), the consensus first:
    the estimate, its 90 % interval, where it came from, and how many labels would make it ± half_width."""
    if estimates is None or estimates.empty:
        return []
    out = []
    for r in estimates.itertuples():
        what = {
            "consensus_accuracy": "the consensus is right on",
            "judge_accuracy": f"judge {r.who}'s votes are right on",
            "judge_fpr": f"judge {r.who} votes for the first class (a false positive) on",
            "judge_fnr": f"judge {r.who} votes for the second class (a false negative) on",
            "first_share": f"the truth is {r.who!r} on",
        }[r.quantity]
        whose = {
            "judge_accuracy": "of its votes",
            "judge_fpr": "of its votes where the truth is the second class",
            "judge_fnr": "of its votes where the truth is the first class",
        }.get(r.quantity, "of the workload's tasks")
        if (r.ci_high - r.ci_low) / 2 <= r.half_width:
            budget = f"within ± {r.half_width:g} already"
        elif pd.isna(r.label_budget):
            budget = f"no number of labels makes it ± {r.half_width:g}"
        else:
            budget = f"about {max(int(r.label_budget), int(r.n_labels) + 1)} labels in all make it ± {r.half_width:g}"
        out.append(
            f"{what} {r.estimate:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}] {whose} (90 %, {r.method}, from "
            f"{int(r.n_labels)} labels and every verdict, worth {r.effective_labels:.0f} labels; labels alone "
            f"[{r.labels_only_low:.3f}, {r.labels_only_high:.3f}]); {budget}"
        )
    return out


def people_section(
    agreement: pd.DataFrame | None, audit: pd.DataFrame | None, estimates: pd.DataFrame | None = None
) -> dict | None:
    """The run's audit as the report shows it: one line on the labels and the consensus they checked, the
    selective consensus with its certified error rate, the prediction-powered estimates (one sentence each),
    and the judges and consensus against people (table)."""
    if audit is None or audit.empty:
        return None
    a = audit.iloc[0]

    def num(v, fmt: str = "{:.3f}") -> str:
        return "–" if v is None or pd.isna(v) else fmt.format(v)

    people = f"{int(a['n_annotators'])} annotator(s)"
    if a["n_annotators"] and a["n_annotators"] > 1:
        people += f", Cohen's κ {num(a['people_kappa'], '{:.2f}')}, Krippendorff's α {num(a['people_alpha'], '{:.2f}')}"
        people += f", {int(a['n_conflicts'])} conflict(s)"
    head = "the label-free consensus kept" if a["head"] == "label_free" else f"head taken: {a['head']}"
    line = (
        f"{int(a['n_labels'])} of {int(a['n_audit'])} audited tasks labelled by {people}; the consensus refit "
        f"with them ({head}) is {num(a['accuracy'])} accurate on judgerEva"
    )
    selective = None
    if pd.notna(a["target_error"]):
        selective = (
            f"selective consensus: error ≤ {a['target_error']:g} with probability {1 - a['delta']:.2f} certified on "
            f"the audit, deciding {num(a['coverage'], '{:.1%}')} of the tasks ({num(a['abstained'], '{:.0f}')} "
            f"abstain, to escalate); {num(a['selective_accuracy'])} accurate on judgerEva where it decided"
        )
    table = None
    if agreement is not None and len(agreement):
        shown = agreement.assign(
            accuracy=[
                f"{num(r.accuracy)} [{num(r.accuracy_low)}, {num(r.accuracy_high)}]"
                for r in agreement.itertuples()
            ],
            kappa=[
                f"{num(r.kappa)} [{num(r.kappa_low)}, {num(r.kappa_high)}]" for r in agreement.itertuples()
            ],
        )[["kind", "who", "n_tasks", "accuracy", "kappa"]]
        table = shown.to_html(index=False, classes="grid")
    return {"line": line, "selective": selective, "table": table, "estimates": estimate_sentences(estimates)}
