"""The report from tables, without a flow: every section appears when its table is there, and the comparison
with the previous run flags changes whose CIs do not overlap."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd

from judgeops.config import ProfileConfig
from judgeops.tasks.profile import profile_all, profile_rows
from judgeops.tasks.profile.compare import profile_stats
from judgeops.tasks.report import previous_run_changes, render_report
from tests.browser import driver, needs_chromium
from tests.test_profile import tiny_fixture, with_judges

NOW = dt.datetime(2026, 11, 16, 9, 0, tzinfo=dt.UTC)


def tables():
    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(
        qc_flags=[[], []], edit_before="a", edit_after="b", edit_note="n", item_id=["i1", "i2"]
    )
    profiles = profile_all(with_judges(verdicts, variants), variants, pairs, ProfileConfig(n_bootstrap=200))
    log = pd.DataFrame(
        {
            "item_id": ["i1", "i2"],
            "error_type": pairs["error_type"],
            "branch": "standard",
            "status": "accepted",
            "reason": None,
        }
    )
    weeks = [dt.date(2026, 11, 2) + dt.timedelta(days=7 * k) for k in range(3)]
    calibration = pd.DataFrame(
        [
            {
                "week": w,
                "judge_id": j,
                "estimator": e,
                "fpr": 0.1 + 0.05 * k,
                "fnr": 0.2,
                "n": 40,
                "alpha": 1.0,
                "beta": 1.0,
                "drift_changes": [{"metric": "fpr", "before": 0.1, "after": 0.3}]
                if (k, j) == (2, "j")
                else [],
            }
            for k, w in enumerate(weeks)
            for j in "jk"
            for e in ("disagreement", "bayesian")
        ]
    )
    bias = pd.DataFrame(
        {
            "judge_id": ["j", "j", "k"],
            "examinee": ["x", "k", "x"],
            "n": 10,
            "n_missing": 0,
            "n_wrong": 5,
            "n_correct": 5,
            "fpr": [0.2, 0.6, np.nan],
            "fnr": [0.1, 0.0, 0.3],
            "directional_bias": [0.1, 0.6, np.nan],
            "examinee_accuracy": 0.5,
            "self_evaluation": [False, True, False],
        }
    )
    coverage = pd.DataFrame({"judge_id": ["j"], "coverage": [1.0]})
    return {
        "profiles": profile_rows(profiles),
        "profile_stats": profile_stats(profiles, 0.95),
        "pairs": pairs,
        "construction_log": log,
        "coverage": coverage,
        "calibration": calibration,
        "pointwise_bias": bias,
    }


def test_every_section_renders_when_its_table_is_present():
    t = tables()
    html = render_report(t, run_id="r2", title="t", artifacts=[], previous=("r1", t["profiles"]), now=NOW)
    for needle in [
        'id="chart-heatmap"',
        'id="chart-radar"',
        'id="chart-calibration"',
        'id="chart-bias"',
        'id="stress"',
        'id="rank-stability"',
        'id="profile-distance"',
        'id="changes"',
        "Against run <code>r1</code>",
        "fpr 0.100 → 0.300",  # a drift, stored as data, rendered only here
    ]:
        assert needle in html, needle
    bare = render_report(
        {k: t[k] for k in ("profiles", "pairs", "construction_log", "coverage")}, "r", "t", [], now=NOW
    )
    assert 'id="chart-calibration"' not in bare and 'id="chart-bias"' not in bare
    assert "No earlier completed run" in bare


def test_changes_since_the_previous_run_are_flagged_when_the_cis_do_not_overlap():
    now = pd.DataFrame(
        {
            "judge_id": ["j", "j"],
            "benchmark": "judgereva",
            "condition": ["overall", "C7_position"],
            "estimate": [0.9, 0.52],
            "ci_low": [0.85, 0.45],
            "ci_high": [0.95, 0.6],
        }
    )
    before = now.assign(estimate=[0.6, 0.5], ci_low=[0.55, 0.42], ci_high=[0.65, 0.58])
    changes = previous_run_changes(now, before).set_index("condition")
    assert (
        changes.loc["overall", "CIs overlap"] == "NO" and changes.loc["C7_position", "CIs overlap"] == "yes"
    )
    assert changes.loc["overall", "change"] == 0.3


def test_the_summary_names_the_best_judge_and_one_line_per_warning_escaped():
    t = tables()
    t["coverage"] = pd.DataFrame({"judge_id": ["j", "k<img src=x onerror=alert(1)>"], "coverage": [1.0, 0.5]})
    html = render_report(t, run_id="r", title="t", artifacts=[], now=NOW)
    top = html[: html.index("<h2>Leaderboard</h2>")]
    assert 'id="summary-best"' in top and "Best judge: <b>" in top
    assert top.count("<li>") == 1 and "50% of its calls gave a verdict" in top
    assert "<img src=x" not in html and "k&lt;img src=x onerror=alert(1)&gt;" in top
    clean = render_report(
        {**t, "coverage": tables()["coverage"]}, run_id="r", title="t", artifacts=[], now=NOW
    )
    assert "No warnings." in clean


@needs_chromium
def test_the_summary_is_at_the_top_and_wide_tables_scroll_in_their_own_box(tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_report(tables(), run_id="r", title="t", artifacts=[], now=NOW), encoding="utf-8")
    browser = driver()
    try:
        browser.set_window_size(1400, 900)
        browser.get(path.resolve().as_uri())
        summary = browser.find_element("id", "summary")
        assert summary.is_displayed() and summary.location["y"] < 300
        page_width = browser.execute_script("return document.documentElement.scrollWidth")
        assert page_width <= browser.execute_script("return window.innerWidth")
        overflow = browser.execute_script(
            "return getComputedStyle(document.getElementById('profiles')).overflowX"
        )
        assert overflow == "auto"
    finally:
        browser.quit()
