"""Prefect's own retries and timeouts on the evaluate flow's stage tasks (`stages:` in judgeops.yaml): a
transient error is retried, a deterministic one is not, and a stage over its time limit fails."""

from __future__ import annotations

import pytest

from tests.conftest import small_config

pytestmark = pytest.mark.slow


def _failing(monkeypatch, error: BaseException | None, times: int, sleep_s: float = 0.0) -> dict:
    """Make the report stage's first `times` attempts raise `error` (or sleep `sleep_s`); counts attempts."""
    import time

    import judgeops.tasks.stages as stages

    real, seen = stages.write_report, {"attempts": 0}

    def flaky(*args, **kwargs):
        seen["attempts"] += 1
        if seen["attempts"] <= times:
            if sleep_s:
                time.sleep(sleep_s)
            if error is not None:
                raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(stages, "write_report", flaky)
    return seen


def test_a_transient_error_is_retried_and_the_run_completes(prefect_server, tmp_path, monkeypatch):
    from judgeops.flows.evaluate import evaluate

    seen = _failing(monkeypatch, ConnectionResetError("the store's connection dropped"), times=1)
    config = small_config(str(tmp_path / "store"), n_items=12)
    config.stages.retry_delay_s = 0
    result = evaluate(config=config)
    assert seen["attempts"] == 2 and result.report.endswith("report.html")


def test_a_deterministic_error_is_not_retried(prefect_server, tmp_path, monkeypatch):
    from judgeops.flows.evaluate import evaluate

    seen = _failing(monkeypatch, KeyError("a bug: retrying would not help"), times=5)
    config = small_config(str(tmp_path / "store"), n_items=12)
    config.stages.retries, config.stages.retry_delay_s = 3, 0
    with pytest.raises(KeyError, match="a bug"):
        evaluate(config=config)
    assert seen["attempts"] == 1


def test_a_stage_over_its_time_limit_fails_with_a_timeout(prefect_server, tmp_path, monkeypatch):
    """A first run fills the store, so the second reuses every stage but the report (always re-rendered):
    only the slowed report can reach the limit, however loaded the machine is."""
    from judgeops.flows.evaluate import evaluate

    config = small_config(str(tmp_path / "store"), n_items=12)
    evaluate(config=config)
    seen = _failing(monkeypatch, None, times=1, sleep_s=60)
    config.stages.retries, config.stages.timeout_s = 0, 10.0
    with pytest.raises(TimeoutError):
        evaluate(config=config)
    assert seen["attempts"] == 1
