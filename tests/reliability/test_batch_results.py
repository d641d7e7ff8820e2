"""A provider batch whose results file has bad lines (cut short, not JSON): it failed the run with a
JSONDecodeError traceback, and every rerun failed the same way, the batch left open and its good answers never
read. Now each line is read on its own: a bad line is its call's failure (not cached, asked again by a rerun),
the good answers are read and cached, and the batch is closed, never read twice. Both providers' protocols,
against a real HTTP server speaking OpenAI's Batch API and Anthropic's Message Batches."""

from __future__ import annotations

import pytest

from judgeops.tasks.judges.cache import open_cache
from tests.conftest import judge_all
from tests.openai_batch_server import BatchServerProcess
from tests.test_batch_judge import batch_judge

GARBLED = 5


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_bad_result_lines_are_their_calls_failures_and_the_batch_closes(
    built, tmp_path, monkeypatch, provider, figure
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-batch")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-batch")
    server = BatchServerProcess(
        tmp_path / "batches.jsonl", "--batch-s", "0.2", "--garble-first", str(GARBLED)
    )
    cache_path = tmp_path / "batch.sqlite"
    judge = batch_judge(server.url, provider)
    try:
        first = judge_all(built, judge, cache_path)
        with open_cache(str(cache_path)) as cache:
            still_open = cache._rows("SELECT COUNT(*) FROM batches")[0][0]
        again = judge_all(built, judge, cache_path)
        third = judge_all(built, judge, cache_path)
        created = server.batches_created()
    finally:
        server.stop()
    failed = first["error"].notna()
    assert int(failed.sum()) == GARBLED and first["error"][failed].str.contains("unreadable").all()
    assert first["verdict"][~failed].notna().all() and still_open == 0
    assert [b["n"] for b in created] == [len(first), GARBLED]  # the rerun asks again only for the bad lines
    assert again["error"].isna().all() and third["cached"].all()
    figure(
        f"a {provider} batch results file with {GARBLED} lines cut short and a line of garbage",
        "each bad line its call's failure; the good answers read and cached; the batch closed; a rerun asks "
        "again only for the bad lines",
        f"first run: {len(first) - GARBLED} of {len(first)} answered, {GARBLED} failures, 0 batches left open; "
        f"rerun: 1 batch of {created[-1]['n']} calls, all answered; third run: 0 batches",
    )
