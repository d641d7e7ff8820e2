"""Every wait has an end. A provider batch that never ends was polled past 424 s with no deadline, and a run
waiting on something (a batch, fleet slots, a Retry-After) did not yield to SIGTERM (alive 11 minutes). Now a
polled batch is given up after `batch_max_wait_s` with one line (the batch stays recorded: the rerun reads it
without paying again), a run waiting for people's labels goes on without them after `audit.timeout_s`, and SIGTERM
ends a run waiting on a batch, a Retry-After or labels within seconds, recorded as cancelled. A real HTTP server
speaking OpenAI's Batch API, real `judgeops run` processes."""

from __future__ import annotations

import datetime as dt
import os
import signal
import time

import pytest

from judgeops.config import AuditConfig, dump_config
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.judges.backends.base import JudgeBackendError
from tests.conftest import judge_all, small_config
from tests.openai_batch_server import BatchServerProcess
from tests.openai_server import ServerProcess
from tests.reliability.faults import judgeops_process, wait_while_running, with_http_judge
from tests.test_batch_judge import batch_judge, one_by_one

pytestmark = pytest.mark.slow


def sigterm_while_waiting(tmp_path, config, happened, what: str, quiet: bool = True) -> float:
    """`judgeops run` on `config`, SIGTERMed once `happened(run)` (it is waiting then): the seconds it took to end,
    asserted to be the one-line end of a cancelled run (exit 143, no traceback) within 30 s."""
    (tmp_path / "judgeops.yaml").write_text(dump_config(config))
    run = judgeops_process("run", cwd=tmp_path, quiet=quiet)
    wait_while_running(run, lambda: happened(run), what)
    time.sleep(1.0)  # inside the wait's sleep
    os.kill(run.pid, signal.SIGTERM)
    sent = time.monotonic()
    out = run.communicate(timeout=300)[0]
    took = time.monotonic() - sent
    assert run.returncode == 128 + signal.SIGTERM, out[-2000:]
    assert "Traceback" not in out and "interrupted by SIGTERM" in out.splitlines()[-1]
    assert took < 30
    return took


def test_a_batch_that_does_not_end_is_given_up_in_one_line_and_read_by_the_rerun(
    built, tmp_path, monkeypatch, figure
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    server = BatchServerProcess(tmp_path / "batches.jsonl", "--batch-s", "6")
    try:
        judge = batch_judge(server.url, batch_max_wait_s=1.5)
        t0 = time.monotonic()
        with pytest.raises(JudgeBackendError) as stopped:
            judge_all(built, judge, tmp_path / "c.sqlite")
        took = time.monotonic() - t0
        time.sleep(6)  # the batch ends
        verdicts = judge_all(built, judge, tmp_path / "c.sqlite")
        created = server.batches_created()
    finally:
        server.stop()
    message = str(stopped.value)
    assert "\n" not in message and "has not ended after 1.5 s" in message and took < 30
    assert len(created) == 1 and verdicts["error"].isna().all()  # the rerun read the same batch
    figure(
        "a provider batch still running past batch_max_wait_s (1.5 s)",
        "the stage stops in one line; the rerun reads the same batch, paying nothing again",
        f"stopped after {took:.1f} s: {message[:80]}…; rerun: 1 batch in all, {len(verdicts)} answered",
    )


def test_sigterm_ends_a_run_polling_its_batch_within_seconds(tmp_path, monkeypatch, figure):
    monkeypatch.setenv("BATCH_KEY", "sk-test-batch")
    server = BatchServerProcess(tmp_path / "batches.jsonl", "--batch-s", "3600")
    try:
        config = small_config(str(tmp_path / "store"), n_items=12)
        judge = one_by_one(
            server.url, batch=True, batch_wait="poll", batch_poll_s=30, max_pairs=4, api_key_env="BATCH_KEY"
        )
        config.judges = [*config.judges, judge]
        took = sigterm_while_waiting(tmp_path, config, lambda run: server.batches_created(), "the batch")
    finally:
        server.stop()
    figure(
        "SIGTERM to `judgeops run` while it polls a provider batch (batch_poll_s 30, the batch an hour away)",
        "the run ends within seconds, cancelled, one line",
        f"exit {128 + signal.SIGTERM} {took:.1f} s after the signal, the run cancelled",
    )


def test_sigterm_ends_a_run_waiting_out_a_retry_after_within_seconds(tmp_path, figure):
    """The wait is in the judge backend's event loop (a 429 with Retry-After: 300, within rate_limit_wait_s): the
    signal ends it there as a plain error, so the loop's thread dies with no traceback."""
    server = ServerProcess(tmp_path / "requests.jsonl", "--rate-limit", "100000", "--retry-after", "300")
    try:
        config = with_http_judge(small_config(str(tmp_path / "store"), n_items=12), server.url)
        took = sigterm_while_waiting(tmp_path, config, lambda run: server.entries(), "the first 429")
    finally:
        server.stop()
    figure(
        "SIGTERM to `judgeops run` while its judge waits out a 429's Retry-After: 300",
        "the run ends within seconds, cancelled, one line, no traceback from the judge's thread",
        f"exit {128 + signal.SIGTERM} {took:.1f} s after the signal",
    )


def test_sigterm_ends_a_run_waiting_for_its_labels_within_seconds(tmp_path, figure):
    config = small_config(str(tmp_path / "store"), n_items=24)
    config.audit = AuditConfig(k=4, labels=str(tmp_path / "labels.jsonl"), wait=True)  # a week's timeout
    output: list[str] = []  # its log, line by line, until it says it waits
    took = sigterm_while_waiting(
        tmp_path,
        config,
        lambda run: output.append(run.stdout.readline()) or "audit: waiting for" in output[-1],
        "the label wait",
        quiet=False,
    )
    assert "Traceback" not in "".join(output)
    figure(
        "SIGTERM to `judgeops run` waiting for its audit's labels (audit.wait, a week's timeout)",
        "the run ends within seconds, cancelled, one line",
        f"exit {128 + signal.SIGTERM} {took:.1f} s after the signal",
    )


def test_a_run_waiting_for_labels_goes_on_without_them_past_its_timeout(
    prefect_server, tmp_path, caplog, figure
):
    config = small_config(str(tmp_path / "store"), n_items=24)
    config.audit = AuditConfig(k=4, labels=str(tmp_path / "labels.jsonl"), wait=True, timeout_s=2)
    t0 = time.monotonic()
    result = evaluate(config=config, as_of=dt.date(2026, 10, 27))
    took = time.monotonic() - t0
    store = ArtifactStore(str(tmp_path / "store"))
    warned = [r.getMessage() for r in caplog.records if "going on with those" in r.getMessage()]
    assert warned == ["audit: 0 of 4 tasks labelled after 2 s; going on with those"]
    assert store.run_record(result.run_id)["status"] == "completed"
    figure(
        "a run waiting for 4 labels that never come (audit.timeout_s 2)",
        "it goes on without them after the timeout, with one warning, and completes",
        f"completed in {took:.0f} s, 0 of 4 labelled, warned once",
    )
