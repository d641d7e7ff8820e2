"""The capability-bias paper's 12-week drift simulation (tasks/drift/simulate.py), against known truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from judgeops.tasks.drift.simulate import Setup, draw_week, hard_share, run, summary, true_rates


def test_the_mix_drifts_linearly_and_the_true_rates_follow_it():
    setup = Setup()
    assert hard_share(setup, 0) == pytest.approx(0.15) and hard_share(setup, 11) == pytest.approx(0.85)
    first, last = true_rates(setup, 0), true_rates(setup, 11)
    assert (last["fpr"] > first["fpr"]).all()  # every judge is more lenient on hard items
    # by hand for one judge in week 1: wrong answers come from easy items with weight .85 × .15, hard .15 × .65
    fe, fh = setup.judges["balanced"][:2]
    w_easy, w_hard = 0.85 * 0.15, 0.15 * 0.65
    assert first.loc["balanced", "fpr"] == pytest.approx((w_easy * fe + w_hard * fh) / (w_easy + w_hard))
    # the simulated votes have those rates (many items)
    votes, truth, _ = draw_week(Setup(items_per_week=200_000), 0, np.random.default_rng(0))
    empirical = votes[truth < 0].mean()
    assert np.allclose(empirical.to_numpy(), first["fpr"].to_numpy(), atol=0.01)


def test_the_estimators_rank_as_in_the_paper_and_label_free_wmv_is_near_the_oracle():
    means = summary(run(Setup(), seeds=6))
    errors = {e: means[f"fpr_error_{e}"] for e in ("bayesian", "stratified", "disagreement")}
    assert errors["disagreement"] < min(
        errors["bayesian"], errors["stratified"]
    )  # measured .063 vs .094, .112
    assert means["acc_wmv_disagreement"] >= means["acc_wmv_oracle"] - 0.01
    assert means["acc_mv"] > means["acc_mean_judge"] + 0.05
    assert means["fpr_error_oracle"] == 0


def test_simulate_drift_command_writes_the_table_and_the_figure(tmp_path, capsys):
    from judgeops.cli import main

    assert (
        main(
            [
                "simulate-drift",
                "--weeks",
                "6",
                "--items-per-week",
                "30",
                "--seeds",
                "2",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    weekly = pd.read_csv(tmp_path / "drift_weekly.csv")
    assert len(weekly) == 6 and {"fpr_error_disagreement", "acc_wmv_oracle", "acc_mv"} <= set(weekly.columns)
    assert (tmp_path / "drift.png").stat().st_size > 10_000
    assert "fpr_error_disagreement" in capsys.readouterr().out


def test_the_disagreement_error_is_mostly_the_noise_of_forty_items_a_week():
    """Issue 14 item 7: at 40 items a week even the judges' labelled counts on the same items miss the
    population FPR by ~0.06, and the disagreement estimate is within a point of that floor; at 400 items a
    week it is under the paper's 0.04."""
    from judgeops.tasks.drift.simulate import Setup, run, summary

    small = summary(run(Setup(items_per_week=40), 8))
    assert small["fpr_error_floor"] > 0.045  # measured 0.059 (20 seeds)
    assert small["fpr_error_disagreement"] - small["fpr_error_floor"] < 0.015  # measured 0.004
    large = summary(run(Setup(items_per_week=400), 4))
    assert large["fpr_error_disagreement"] < 0.04  # measured 0.024
