"""Weekly recalibration: the estimators against known truth, drift flags, and the chain through the flow."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from judgeops.tasks.drift.calibrate import WeekUnits, drift_events, recalibrate_week
from judgeops.tasks.drift.simulate import Setup, draw_week, true_rates


def simulated_week(setup: Setup, week: int, rng, flip: str | None = None) -> WeekUnits:
    votes, truth, bins = draw_week(setup, week, rng)
    if flip:  # a judge whose behaviour is switched: it now says the opposite of what it would
        votes[flip] = 1 - votes[flip]
    return WeekUnits(votes, pd.Series(truth), pd.Series(bins), "responses")


def test_the_chain_tracks_the_true_rates_and_pools_the_audit():
    setup = Setup(items_per_week=400)
    rng = np.random.default_rng(1)
    previous, weeks = None, pd.date_range("2026-09-07", periods=6, freq="7D")
    for k, week in enumerate(weeks):
        previous = recalibrate_week(week, simulated_week(setup, k, rng), previous, n_audit=40)
    last = previous.set_index(["estimator", "stratum", "judge_id"]).sort_index()
    truth = true_rates(setup, 5)
    disagreement = last.loc[("disagreement", "")]
    assert (disagreement["fpr"] - truth["fpr"]).abs().mean() < 0.06
    bayes = last.loc[("bayesian", "")]
    assert (bayes["fp"] + bayes["tn"] + bayes["fn"] + bayes["tp"] == 6 * 40).all()  # pooled over 6 weeks
    strat = last.loc["stratified"]
    assert set(strat.index.get_level_values("stratum")) == {"", "easy", "hard"}
    assert not previous["drift"].any()  # nothing switched


def test_a_switched_judge_is_flagged_and_becomes_an_event():
    setup = Setup(items_per_week=200)
    rng = np.random.default_rng(2)
    first = recalibrate_week("2026-09-07", simulated_week(setup, 0, rng), None)
    second = recalibrate_week("2026-09-14", simulated_week(setup, 1, rng, flip="balanced"), first)
    flagged = second[second["drift"]]
    assert set(flagged["judge_id"]) == {"balanced"}
    events = drift_events(second)
    assert {e["metric"] for e in events} >= {"fpr", "agreement"}
    e = next(e for e in events if e["metric"] == "fpr")
    assert e["judge"] == "balanced" and e["after"] > e["before"] + 0.3 and e["week"] == "2026-09-14"


@pytest.mark.slow
def test_the_flow_chain_starts_fills_gaps_carries_a_week_without_evaluation_and_restarts_when_asked(
    prefect_server, tmp_path
):
    from judgeops.flows.evaluate import evaluate
    from judgeops.flows.recalibrate import RecalibrationError, recalibrate
    from judgeops.schemas.store import ArtifactStore
    from tests.conftest import small_config

    config = small_config(str(tmp_path / "store"), n_items=24)
    mondays = [dt.date(2026, 11, 2) + dt.timedelta(weeks=k) for k in range(4)]
    for day in mondays[:3]:
        evaluate(config=config, as_of=day + dt.timedelta(days=2))  # a Wednesday of each week
    first = recalibrate(week=mondays[0], config=config)  # the store's first calibration: a new chain
    second = recalibrate(week=mondays[1] + dt.timedelta(days=3), config=config)  # any day of the week
    assert first.status == second.status == "calibrated" and second.week == mondays[1]
    assert ArtifactStore(config.store.url, first.run_id).run_record()["previous_run"] is None
    again = recalibrate(week=mondays[1], config=config)
    assert again.status == "skipped" and again.run_id == second.run_id  # done weeks are not redone
    store = ArtifactStore(config.store.url, second.run_id)
    table = store.read_pandas("calibration")
    assert set(table["estimator"]) == {"bayesian", "stratified", "disagreement"}
    assert store.run_record()["previous_run"] == first.run_id
    # the evaluate flow's WMV uses the latest calibration as of its date
    later = evaluate(config=config, as_of=mondays[2] + dt.timedelta(days=4))
    manifest = ArtifactStore(config.store.url, later.run_id).manifest("consensus")
    calibration = ArtifactStore(config.store.url, second.run_id).ref("calibration")
    assert manifest["parents"]["calibration"] == calibration.sha256  # a declared input of the stage
    assert (
        'id="chart-calibration"' in open(later.report, encoding="utf-8").read()
    )  # the history, in the report
    # a week whose calibration is gone is filled first (from its evaluation), then the week asked for
    store.fs.rm(store._abs(f"runs/{second.run_id}/calibration.manifest.json"))
    third = recalibrate(week=mondays[2], config=config)
    (refilled,) = third.filled
    assert refilled["week"] == "2026-11-09" and refilled["status"] == "calibrated"
    record = ArtifactStore(config.store.url, third.run_id).run_record()
    assert record["previous_run"] == refilled["run_id"] and record["evaluate_run"] == later.run_id
    # a week without an evaluation carries the last calibration forward, flagged, with no drift
    fourth = recalibrate(week=mondays[3], config=config)
    assert fourth.status == "carried" and fourth.carried_from == "2026-11-16" and not fourth.drifted
    carried = ArtifactStore(config.store.url, fourth.run_id)
    assert carried.run_record()["carried_from"] == "2026-11-16"
    before = ArtifactStore(config.store.url, third.run_id).read_pandas("calibration")
    after = carried.read_pandas("calibration")
    assert (after["week"] == mondays[3]).all() and (after["n"] == 0).all() and not after["drift"].any()
    for column in ("fpr", "fnr", "fp", "tn", "fn", "tp"):
        assert np.array_equal(after[column], before[column], equal_nan=True), column
    assert carried.manifest("calibration")["params"]["carried_from"] == "2026-11-16"
    # ... and once that week's evaluation arrives, the carried week is calibrated for real
    evaluate(config=config, as_of=mondays[3] + dt.timedelta(days=1))
    real = recalibrate(week=mondays[3], config=config)
    assert real.status == "calibrated" and real.carried_from is None
    assert ArtifactStore(config.store.url, real.run_id).run_record()["previous_run"] == third.run_id
    # from_scratch starts a new chain at the week; with no evaluation that week there is nothing to start from
    restarted = recalibrate(week=mondays[3], config=config, from_scratch=True, force=True)
    assert ArtifactStore(config.store.url, restarted.run_id).run_record()["previous_run"] is None
    with pytest.raises(RecalibrationError, match="no completed evaluate run for the week of 2026-11-30"):
        recalibrate(week=dt.date(2026, 11, 30), config=config, from_scratch=True)


def test_a_store_without_evaluations_is_refused_with_what_to_run(prefect_server, tmp_path):
    from judgeops.flows.recalibrate import RecalibrationError, recalibrate
    from tests.conftest import small_config

    config = small_config(str(tmp_path / "store"), n_items=24)
    with pytest.raises(RecalibrationError, match="no calibration before it to carry forward.*judgeops run"):
        recalibrate(week=dt.date(2026, 11, 2), config=config)


def test_drift_becomes_a_prefect_event_with_judge_metric_before_after_week(prefect_server, monkeypatch):
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    from judgeops.flows.recalibrate import emit_drift_events

    worker = EventsWorker.instance(AssertingEventsClient)
    monkeypatch.setattr(EventsWorker, "instance", lambda *_: worker)
    setup = Setup(items_per_week=200)
    rng = np.random.default_rng(2)
    first = recalibrate_week("2026-09-07", simulated_week(setup, 0, rng), None)
    second = recalibrate_week("2026-09-14", simulated_week(setup, 1, rng, flip="balanced"), first)
    emit_drift_events(drift_events(second))
    worker.drain()
    emitted = [e for e in AssertingEventsClient.last.events if e.event == "judgeops.judge.drift"]
    assert {e.payload["judge"] for e in emitted} == {"balanced"}
    assert {e.resource.id for e in emitted} == {"judgeops.judge.balanced"}
    agreement = next(e.payload for e in emitted if e.payload["metric"] == "agreement")
    assert agreement["week"] == "2026-09-14" and agreement["after"] < agreement["before"] - 0.5


def test_wmv_takes_given_rates_and_estimates_the_missing_ones():
    from judgeops.tasks.aggregate import calibrated_rates, get_aggregator
    from judgeops.tasks.aggregate.synthetic import make_panel

    panel = make_panel("independent", n_tasks=500, seed=3)
    rates = {"j0": (0.45, 0.45), "j4": (0.02, 0.02)}  # j4 trusted, j0 not
    wmv = get_aggregator("wmv", estimator="given", rates=rates, rule="log_odds").fit(panel.votes)
    assert wmv.errors_.loc["j4"].tolist() == [0.02, 0.02] and wmv.errors_.loc["j0"].tolist() == [0.45, 0.45]
    assert wmv.errors_.loc[["j1", "j2", "j3"]].notna().all().all()  # disagreement estimates for the rest
    j4 = panel.votes[panel.votes["worker"] == "j4"].set_index("task")["label"]
    assert (wmv.labels_ == j4.reindex(wmv.labels_.index)).mean() > 0.95  # it follows the trusted judge
    calibration = pd.DataFrame(
        {
            "judge_id": ["a", "a"],
            "estimator": ["disagreement", "bayesian"],
            "stratum": "",
            "fpr": [0.1, 0.5],
            "fnr": [0.3, 0.5],
        }
    )
    assert calibrated_rates(calibration) == {"a": (0.2, 0.2)}  # symmetric in the randomised canonical frame


@pytest.mark.slow
def test_twelve_weeks_chain_skip_on_rerun_carry_a_missed_monday_and_flag_a_switched_judge(
    prefect_server, tmp_path, monkeypatch
):
    """Twelve weeks of fresh bank batches, evaluated and calibrated in order (in-process flows; the same chain
    through the deployment: tests/test_deploy_e2e.py). From week 7, the judge named reference_match behaves
    like hedge_preference. Week 9 has no evaluation and no recalibration (the team's worker was down that
    Monday): week 10 carries week 8's calibration over it, flagged, and the chain goes on."""
    from prefect.events.clients import AssertingEventsClient
    from prefect.events.worker import EventsWorker

    from judgeops.config import BankDrift, BankSource, CacheConfig, EvaluateConfig, ProfileConfig, StoreConfig
    from judgeops.flows.evaluate import evaluate
    from judgeops.flows.recalibrate import recalibrate
    from judgeops.schemas.store import ArtifactStore

    worker = EventsWorker.instance(AssertingEventsClient)
    monkeypatch.setattr(EventsWorker, "instance", lambda *_: worker)
    start = dt.date(2030, 1, 7)  # dates no other end-to-end test uses (flow run names)
    judges = [j for j in EvaluateConfig().judges if j.backend == "programmatic"]
    switched = [
        j.model_copy(update={"model": "hedge_preference"}) if j.name == "reference_match" else j
        for j in judges
    ]

    def config(week: int) -> EvaluateConfig:
        drift = BankDrift(start=start, weeks=12, from_mix={"math": 1.0}, to_mix={"math": 1.0})
        return EvaluateConfig(
            sources=[BankSource(n_items=12, seed=3, drift=drift)],
            judges=judges if week < 6 else switched,
            profile=ProfileConfig(n_bootstrap=100),
            store=StoreConfig(url=str(tmp_path / "store")),
            cache=CacheConfig(path=str(tmp_path / "calls.sqlite")),
        )

    mondays = [start + dt.timedelta(weeks=k) for k in range(12)]
    results = {}
    for k, monday in enumerate(mondays):
        if k != 8:
            evaluate(config=config(k), as_of=monday)
            results[k] = recalibrate(week=monday, config=config(k))  # week 1: the store's first, a new chain
    (missed,) = results[9].filled
    assert missed == {
        "week": "2030-03-04",
        "status": "carried",
        "run_id": missed["run_id"],
        "carried_from": "2030-02-25",
    }
    run_ids = {k: r.run_id for k, r in results.items()} | {8: missed["run_id"]}
    store = ArtifactStore(str(tmp_path / "store"))
    chain = [ArtifactStore(store.url, run_ids[k]).run_record()["previous_run"] for k in range(12)]
    assert chain == [None] + [run_ids[k] for k in range(11)]  # each week continues the one before
    before = len(store.list_runs())
    assert all(recalibrate(week=m, config=config(k)).status == "skipped" for k, m in enumerate(mondays))
    assert len(store.list_runs()) == before  # re-running the chain does nothing new
    # the switch is flagged in week 7, for the switched judge, and becomes a Prefect event
    flagged = {e["judge"] for e in results[6].drifted}
    assert "reference_match" in flagged and not any(results[k].drifted for k in range(1, 6))
    worker.drain()
    events = [e for e in AssertingEventsClient.last.events if e.event == "judgeops.judge.drift"]
    assert any(e.payload["judge"] == "reference_match" and e.payload["week"] == "2030-02-18" for e in events)
    # deleting week 5's calibration: recomputing week 6 fills week 5 again first, from its evaluation
    store.fs.rm(store._abs(f"runs/{results[4].run_id}/calibration.manifest.json"))
    redone = recalibrate(week=mondays[5], config=config(5), force=True)
    assert redone.status == "calibrated" and [f["week"] for f in redone.filled] == ["2030-02-04"]
    assert redone.filled[0]["status"] == "calibrated"
