"""The HTML report: one self-contained file (charts embedded as PNG) rendered from a run's artifacts."""

from __future__ import annotations

import datetime as dt
from importlib import resources

import jinja2
import pandas as pd

from judgeops import __version__
from judgeops.schemas.vocabulary import is_panel
from judgeops.tasks.construct import construction_summary
from judgeops.tasks.profile.conditions import CAP, CONDITIONS, ERROR_TYPE_CONDITIONS, ORDER_CONDITIONS
from judgeops.tasks.profile.profiles import BENCHMARK
from judgeops.tasks.report.charts import (
    bias_matrix_chart,
    calibration_chart,
    grouped_ci_chart,
    heatmap_chart,
    radar_chart,
)
from judgeops.tasks.report.tables import (
    auto_choice,
    calibration_table,
    condition_table,
    consistency_table,
    external_table,
    injection_table,
    notes_table,
    panel_rows,
    people_section,
    previous_run_changes,
    stats_tables,
    summary,
)


def render_report(
    tables: dict[str, pd.DataFrame],
    run_id: str,
    title: str,
    artifacts: list[dict],
    judges: list[dict] = (),
    previous: tuple[str, pd.DataFrame] | None = None,
    *,
    now: dt.datetime,
) -> str:
    """The report of run `run_id`, rendered at `now` (the flow's clock)."""
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
    auto = auto_choice(tables.get("aggregation_notes"), overall)
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    template = env.from_string(
        resources.files("judgeops.tasks.report").joinpath("report.html.j2").read_text(encoding="utf-8")
    )
    return template.render(
        title=title,
        run_id=run_id,
        version=__version__,
        generated=now.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
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
        calibration_table=calibration_table(calibration) if has_calibration else None,
        consistency_table=consistency_table(tables.get("consistency"), judges_only),
        injection_table=injection_table(tables.get("robustness")),
        auto=auto,
        people=people_section(
            tables.get("human_agreement"), tables.get("audit_summary"), tables.get("estimates")
        ),
        summary=summary(overall, auto, tables.get("aggregation_notes"), tables.get("coverage")),
        notes_table=notes_table(tables.get("aggregation_notes"), overall),
        bias_chart=bias_matrix_chart(bias) if has_bias else None,
        bias_table=bias.to_html(index=False, classes="grid", float_format="%.3f", na_rep="–")
        if has_bias
        else None,
    )
