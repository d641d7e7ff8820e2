"""The HTML report: one self-contained file (charts embedded as PNG), plus the key tables as Prefect artifacts."""

from __future__ import annotations

import base64
import datetime as dt
import io
from importlib import resources

import jinja2
import numpy as np
import pandas as pd

from judgeops import __version__
from judgeops.tasks.construct import construction_summary
from judgeops.tasks.profile import BENCHMARK
from judgeops.tasks.profile.conditions import (
    CONDITION_BY_NAME,
    CONDITIONS,
    ERROR_TYPE_CONDITIONS,
    ORDER_CONDITIONS,
)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def grouped_ci_chart(profiles: pd.DataFrame, conditions: list[str], title: str) -> str:
    """Bars of estimate per judge, one colour per condition, with the 95% CI as error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def render_report(
    tables: dict[str, pd.DataFrame], run_id: str, title: str, artifacts: list[dict], judges: list[dict] = ()
) -> str:
    published = external_table(tables["profiles"])
    profiles = tables["profiles"][tables["profiles"]["benchmark"] == BENCHMARK]
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
    )


def publish(tables: dict[str, pd.DataFrame], report_path: str) -> None:
    """The leaderboard and error-type table on the Prefect flow run, with a link to the report."""
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
    overall = profiles[profiles["condition"] == "overall"].sort_values("estimate", ascending=False)
    md = ["| judge | PA overall | 95% CI | n pairs |", "|---|---|---|---|"]
    md += [
        f"| {r.judge_id} | {r.estimate:.3f} | [{r.ci_low:.3f}, {r.ci_high:.3f}] | {r.n} |"
        for r in overall.itertuples()
    ]
    create_markdown_artifact(
        markdown="\n".join(md), key="leaderboard", description="position-averaged accuracy"
    )
    link = report_path if "://" in report_path else f"file://{report_path}"
    create_link_artifact(
        link=link, link_text="judgeops report", key="report", description="the HTML report of this run"
    )
