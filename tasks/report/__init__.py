"""The HTML report: one self-contained file (charts embedded as PNG), plus the key tables as Prefect artifacts."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from importlib import resources

import jinja2
import numpy as np
import pandas as pd

from judgeops import __version__
from judgeops.schemas.vocabulary import is_panel
from judgeops.tasks.construct import construction_summary
from judgeops.tasks.profile import BENCHMARK
from judgeops.tasks.profile.conditions import (
    CAP,
    CONDITION_BY_NAME,
    CONDITIONS,
    ERROR_TYPE_CONDITIONS,
    ORDER_CONDITIONS,
)


def _plt():
    """pyplot on the non-interactive backend (imported on first use: matplotlib costs start-up time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def grouped_ci_chart(profiles: pd.DataFrame, conditions: list[str], title: str) -> str:
    """Bars of estimate per judge, one colour per condition, with the 95% CI as error bars."""
    plt = _plt()
    judges = sorted(profiles["judge_id"].unique())
    cells = profiles.set_index(["judge_id", "condition"])
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(judges)), 3.6))
    width = 0.8 / len(conditions)
    x = np.arange(len(judges))
    for k, cond in enumerate(conditions):
        est = np.array([cells["estimate"].get((j, cond), np.nan) for j in judges])
        lo = np.array([cells["ci_low"].get((j, cond), np.nan) for j in judges])
        hi = np.array([cells["ci_high"].get((j, cond), np.nan) for j in judges])
        ax.bar(
            x + (k - (len(conditions) - 1) / 2) * width,
            est,
            width,
            yerr=[est - lo, hi - est],
            capsize=2,
            label=f"{cond} ({CONDITION_BY_NAME[cond].label})",
        )
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, judges, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False)
    return _png(fig)


def heatmap_chart(profiles: pd.DataFrame, conditions: list[str]) -> str:
    """Judges × conditions, colour = estimate, each cell annotated with its estimate and 95% CI."""
    plt = _plt()
    conditions = [c for c in conditions if c in set(profiles["condition"])]
    cells = profiles.set_index(["judge_id", "condition"])
    judges = sorted(profiles["judge_id"].unique())
    est = np.array([[cells["estimate"].get((j, c), np.nan) for c in conditions] for j in judges])
    fig, ax = plt.subplots(figsize=(1.25 * len(conditions) + 2.5, 0.55 * len(judges) + 1.5))
    im = ax.imshow(np.ma.masked_invalid(est), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i, j in enumerate(judges):
        for k, c in enumerate(conditions):
            if (j, c) in cells.index:
                r = cells.loc[(j, c)]
                ax.text(k, i, f"{r.estimate:.2f}\n[{r.ci_low:.2f},{r.ci_high:.2f}]", ha="center", va="center",
                        fontsize=6.5)  # fmt: skip
    ax.set_xticks(range(len(conditions)), conditions, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(judges)), judges, fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label="estimate")
    ax.set_title("Judges × CAP conditions (estimate, 95% CI); blank = no cell")
    return _png(fig)


def radar_chart(profiles: pd.DataFrame, conditions: list[str] = CAP) -> str:
    """One small radar per judge over C1–C8 (a missing cell is drawn at 0 and named in the title)."""
    plt = _plt()
    judges = sorted(profiles["judge_id"].unique())
    cells = profiles.set_index(["judge_id", "condition"])["estimate"]
    cols = min(4, len(judges))
    rows = int(np.ceil(len(judges) / cols))
    fig, axes = plt.subplots(rows, cols, subplot_kw={"projection": "polar"}, figsize=(3.1 * cols, 3.1 * rows),
                             squeeze=False)  # fmt: skip
    angles = np.linspace(0, 2 * np.pi, len(conditions), endpoint=False)
    for ax, judge in zip(axes.ravel(), judges, strict=False):
        values = np.array([cells.get((judge, c), np.nan) for c in conditions])
        closed = np.append(np.nan_to_num(values), np.nan_to_num(values[0]))
        ax.plot(np.append(angles, angles[0]), closed, lw=1.5)
        ax.fill(np.append(angles, angles[0]), closed, alpha=0.25)
        ax.set_xticks(angles, [c.split("_")[0] for c in conditions], fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.5, 1.0], ["", ""])
        missing = [c.split("_")[0] for c, v in zip(conditions, values, strict=True) if np.isnan(v)]
        ax.set_title(judge + (f"\n(no {', '.join(missing)})" if missing else ""), fontsize=8)
    for ax in axes.ravel()[len(judges) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return _png(fig)


def bias_matrix_chart(bias: pd.DataFrame) -> str:
    """Judges × examinees, colour = DirectionalBias (red: lenient, blue: strict), n per cell, self-evaluation
    cells boxed."""
    plt = _plt()
    judges, examinees = sorted(bias["judge_id"].unique()), sorted(bias["examinee"].unique())
    cells = bias.set_index(["judge_id", "examinee"])
    grid = np.array([[cells["directional_bias"].get((j, e), np.nan) for e in examinees] for j in judges])
    fig, ax = plt.subplots(figsize=(1.3 * len(examinees) + 3, 0.6 * len(judges) + 1.6))
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="coolwarm", vmin=-1, vmax=1, aspect="auto")
    for i, j in enumerate(judges):
        for k, e in enumerate(examinees):
            if (j, e) not in cells.index:
                continue
            r = cells.loc[(j, e)]
            text = "–" if np.isnan(r.directional_bias) else f"{r.directional_bias:+.2f}"
            ax.text(k, i, f"{text}\nn={r.n}", ha="center", va="center", fontsize=7)
            if r.self_evaluation:
                ax.add_patch(plt.Rectangle((k - 0.5, i - 0.5), 1, 1, fill=False, lw=2.2, ec="black"))
    ax.set_xticks(range(len(examinees)), examinees, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(judges)), judges, fontsize=8)
    ax.set_xlabel("examinee")
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label="FPR − FNR")
    ax.set_title("Directional bias (red: lenient, blue: strict; boxed: self-evaluation)")
    return _png(fig)


def calibration_chart(calibration: pd.DataFrame) -> str:
    """FPR and FNR per judge over the weeks, one panel per estimator."""
    plt = _plt()
    estimators = sorted(calibration["estimator"].unique())
    fig, axes = plt.subplots(1, len(estimators), figsize=(4.6 * len(estimators), 3.2), squeeze=False)
    for ax, est in zip(axes[0], estimators, strict=True):
        part = calibration[calibration["estimator"] == est].sort_values("week")
        for k, (judge, g) in enumerate(part.groupby("judge_id")):
            colour = f"C{k % 10}"
            ax.plot(g["week"], g["fpr"], color=colour, marker="o", ms=3, label=f"{judge} FPR")
            ax.plot(g["week"], g["fnr"], color=colour, marker="x", ms=3, ls="--", label=f"{judge} FNR")
        ax.set_title(est)
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    axes[0][0].set_ylabel("error rate")
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return _png(fig)


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


def auto_choice(notes: pd.DataFrame | None) -> dict | None:
    if notes is None or notes.empty or "auto" not in set(notes["method"]):
        return None
    row = notes.set_index("method").loc["auto"]
    evidence = json.loads(row["evidence"]) if row["evidence"] else {}
    return {"choice": row["choice"], "reason": row["reason"],
            "evidence": ", ".join(f"{k} = {v:.3f}" if isinstance(v, float) else f"{k} = {v}"
                                  for k, v in evidence.items())}  # fmt: skip


def notes_table(notes: pd.DataFrame | None) -> str | None:
    if notes is None or notes.empty:
        return None
    table = notes[["method", "agreement_with_mv", "agreement_with_auto", "warning", "fallbacks"]]
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


def render_report(
    tables: dict[str, pd.DataFrame],
    run_id: str,
    title: str,
    artifacts: list[dict],
    judges: list[dict] = (),
    previous: tuple[str, pd.DataFrame] | None = None,
) -> str:
    published = external_table(tables["profiles"])
    profiles = tables["profiles"][tables["profiles"]["benchmark"] == BENCHMARK]
    judges_only = profiles[~is_panel(profiles["judge_id"])]
    panel = profiles[is_panel(profiles["judge_id"])]
    aggregation = None
    if len(panel):
        keep = panel[
            panel["condition"].isin(
                ["overall", *ERROR_TYPE_CONDITIONS, "C5_style", "C6_length", "C7_position"]
            )
        ]
        aggregation = condition_table(keep, ["judge_id"])
    changes = (
        previous_run_changes(tables["profiles"], previous[1]) if previous is not None else pd.DataFrame()
    )
    bias = tables.get("pointwise_bias")
    has_bias = bias is not None and len(bias) > 0
    calibration = tables.get("calibration")
    has_calibration = calibration is not None and len(calibration) > 0
    pairs = tables["pairs"]
    log = tables["construction_log"]
    overall = profiles[profiles["condition"] == "overall"].sort_values("estimate", ascending=False)
    acceptance = construction_summary(pairs, log)
    counts = pd.crosstab(pairs["domain"], pairs["error_type"], margins=True, margins_name="total")
    examples = pairs.groupby("error_type").head(1)[
        ["error_type", "domain", "edit_before", "edit_after", "edit_note"]
    ]
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(
        resources.files(__package__).joinpath("report.html.j2").read_text(encoding="utf-8")
    )
    return template.render(
        title=title,
        run_id=run_id,
        version=__version__,
        generated=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        error_chart=grouped_ci_chart(
            profiles, ERROR_TYPE_CONDITIONS, "Accuracy by error type (position-averaged)"
        ),
        order_chart=grouped_ci_chart(profiles, ORDER_CONDITIONS, "Accuracy by display order (plain)"),
        robustness_chart=grouped_ci_chart(
            profiles, ["C5_style", "C6_length", "C7_position"], "Robustness (strict both-correct)"
        ),
        leaderboard=overall.to_dict("records"),
        conditions=CONDITIONS,
        profile_table=condition_table(profiles, ["judge_id"]),
        counts_table=counts.to_html(classes="grid"),
        acceptance_table=acceptance.to_html(index=False, classes="grid"),
        examples=examples.to_dict("records"),
        coverage_table=tables["coverage"].to_html(index=False, classes="grid", float_format="%.3f"),
        panel=panel_rows(list(judges)),
        artifacts=artifacts,
        n_pairs=len(pairs),
        external_table=published,
        heatmap=heatmap_chart(judges_only, ["overall", *CAP]),
        radar=radar_chart(judges_only),
        aggregation_table=aggregation,
        stats=stats_tables(tables.get("profile_stats")),
        previous_run=previous[0] if previous is not None else None,
        changes_table=changes.to_html(index=False, classes="grid") if len(changes) else None,
        calibration_chart=calibration_chart(calibration) if has_calibration else None,
        calibration_table=calibration.sort_values(["week", "judge_id", "estimator"]).to_html(
            index=False, classes="grid", float_format="%.3f"
        )
        if has_calibration
        else None,
        consistency_table=consistency_table(tables.get("consistency"), judges_only),
        injection_table=injection_table(tables.get("robustness")),
        auto=auto_choice(tables.get("aggregation_notes")),
        notes_table=notes_table(tables.get("aggregation_notes")),
        bias_chart=bias_matrix_chart(bias) if has_bias else None,
        bias_table=bias.to_html(index=False, classes="grid", float_format="%.3f", na_rep="–")
        if has_bias
        else None,
    )


def _round(x: float) -> float | None:
    return None if x is None or np.isnan(x) else round(float(x), 3)


def publish(tables: dict[str, pd.DataFrame], report_path: str) -> None:
    """The leaderboard, the accuracy and CAP tables and the pointwise bias on the Prefect flow run, with a
    link to the report."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
    from prefect.context import FlowRunContext, TaskRunContext

    if FlowRunContext.get() is None and TaskRunContext.get() is None:
        return
    profiles = tables["profiles"]
    profiles = profiles[profiles["benchmark"] == BENCHMARK]
    keep = profiles[profiles["condition"].isin(["overall", *ERROR_TYPE_CONDITIONS, *ORDER_CONDITIONS])]
    rows = [
        {
            "judge": r.judge_id,
            "condition": r.condition,
            "n": int(r.n),
            "estimate": round(r.estimate, 3),
            "ci_95": f"[{r.ci_low:.3f}, {r.ci_high:.3f}]",
        }
        for r in keep.itertuples()
    ]
    create_table_artifact(
        table=rows, key="judge-profiles", description="accuracy per judge and condition, 95% bootstrap CI"
    )
    cap = profiles[profiles["condition"].isin(CAP)]
    create_table_artifact(
        table=[
            {"judge": r.judge_id, "condition": r.condition, "n": int(r.n), "estimate": round(r.estimate, 3),
             "ci_95": f"[{r.ci_low:.3f}, {r.ci_high:.3f}]", "evidence": r.evidence}
            for r in cap.itertuples()
        ],
        key="cap-profile",
        description="CAP conditions C1-C8 per judge and panel method, 95% bootstrap CI",
    )  # fmt: skip
    bias = tables.get("pointwise_bias")
    if bias is not None and len(bias):
        create_table_artifact(
            table=[
                {"judge": r.judge_id, "examinee": r.examinee, "n": int(r.n), "fpr": _round(r.fpr),
                 "fnr": _round(r.fnr), "directional_bias": _round(r.directional_bias),
                 "self_evaluation": bool(r.self_evaluation)}
                for r in bias.itertuples()
            ],
            key="pointwise-bias",
            description="judges on examinee answers shown alone: FPR, FNR, FPR - FNR",
        )  # fmt: skip
    overall = profiles[profiles["condition"] == "overall"].sort_values("estimate", ascending=False)
    md = ["| judge | PA overall | 95% CI | n pairs |", "|---|---|---|---|"]
    md += [
        f"| {r.judge_id} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.n} |"
        for r in overall.itertuples()
    ]
    create_markdown_artifact(
        markdown="\n".join(md), key="leaderboard", description="position-averaged accuracy"
    )
    notes = tables.get("aggregation_notes")
    if notes is not None and len(notes):
        choice = auto_choice(notes)
        md = (
            [
                f"**auto chose {choice['choice']}**: {choice['reason']}.",
                "",
                f"Evidence: {choice['evidence']}.",
                "",
            ]
            if choice
            else []
        )
        md += [
            "| method | agreement with MV | agreement with auto | warning | fallbacks |",
            "|---|---|---|---|---|",
        ]
        md += [f"| {r.method} | {r.agreement_with_mv:.3f} | {r.agreement_with_auto:.3f} | {r.warning} | {r.fallbacks} |"
               for r in notes.itertuples()]  # fmt: skip
        create_markdown_artifact(
            markdown="\n".join(md),
            key="aggregation",
            description="auto's choice and each method's label-free check",
        )
    link = report_path if "://" in report_path else f"file://{report_path}"
    create_link_artifact(
        link=link, link_text="judgeops report", key="report", description="the HTML report of this run"
    )
