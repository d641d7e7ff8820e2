"""A judge served like a hosted reasoning model (o3-mini on an OpenAI-protocol server that refuses
`max_tokens`, `temperature`, `logprobs` and `top_logprobs` with HTTP 400, as the hosted API does), beside two
programmatic judges, four calls in flight: calls refused while another call was learning the same refusal are
sent again after the adaptation, and every call is answered once, cached once and found under its key (it
failed with `KeyError: '<call key>'` in run_judge). A backend that returns no reply for a call gives that call
a transport failure, never a crash."""

from __future__ import annotations

import time
from collections import Counter

from judgeops.config import JudgeConfig
from judgeops.data_contracts.coverage_check import coverage_problems
from judgeops.tasks.judges import coverage, judge_variants
from judgeops.tasks.judges.cache import open_cache
from judgeops.tasks.judges.calls import Reply
from judgeops.tasks.judges.runner import UNANSWERED, complete_cached
from tests.openai_server import ServerProcess


def test_a_reasoning_model_judge_completes_with_every_call_answered_once(built, tmp_path, figure):
    items, b = built
    server = ServerProcess(tmp_path / "requests.jsonl", "--reasoning-models", r"^o\d")
    panel = [
        JudgeConfig(name="o3", backend="openai", model="o3-mini", base_url=server.url, max_concurrency=4),
        JudgeConfig(name="length", backend="programmatic", model="length_preference"),
        JudgeConfig(name="reference", backend="programmatic", model="reference_match"),
    ]
    cache = tmp_path / "calls.sqlite"
    try:
        t0 = time.monotonic()
        verdicts = judge_variants(b["variants"], b["pairs"], items, panel, "r", cache_path=str(cache))
        elapsed = time.monotonic() - t0
        log = server.entries()
        again = judge_variants(b["variants"], b["pairs"], items, panel, "r2", cache_path=str(cache))
        assert len(server.entries()) == len(log)  # the rerun is answered from the cache: nothing sent
    finally:
        server.stop()
    ours = verdicts[verdicts["judge_id"] == "o3"]
    assert len(ours) == len(b["variants"]) and ours["error"].isna().all()
    assert (coverage_problems(coverage(verdicts, b["variants"], panel)) == "").all()
    answered = Counter(e["sha256"] for e in log if e["status"] == 200)
    assert len(answered) == len(ours) and set(answered.values()) == {1}  # each call answered once
    refused = sum(e["status"] == 400 for e in log)
    assert refused <= 4 * 4  # at most each parameter refused once per call in flight
    with open_cache(str(cache)) as c:
        assert c.stats()[0]["calls"] == len(ours)  # cached once each
    assert again.loc[again["judge_id"] == "o3", "cached"].all()
    figure(
        "reasoning-model judge (400 unsupported_parameter for 4 parameters), 4 calls in flight",
        "completes; every call answered once, cached once",
        f"{len(ours)} of {len(ours)} calls answered once ({refused} refusals), 0 errors, {elapsed:.1f} s; "
        "rerun: 0 requests",
    )


class _Forgetful:
    """A backend that answers every call but one (a backend bug)."""

    def complete(self, calls):
        return {c.key: Reply(text="A") for c in calls[1:]}

    def close(self):
        pass


def test_a_call_the_backend_returns_no_reply_for_is_a_transport_failure_not_a_crash(tmp_path):
    from judgeops.tasks.judges.calls import Request, make_call

    judge = JudgeConfig(name="j", backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    calls = [make_call(judge, Request(f"p{i}", 1, ("A", "B")), "v", f"u{i}") for i in range(3)]
    with open_cache(str(tmp_path / "c.sqlite")) as cache:
        replies = complete_cached(judge, calls, cache, backend=_Forgetful())
        assert replies[calls[0].key].error == UNANSWERED and replies[calls[0].key].transport_failure
        assert replies[calls[1].key].text == "A"
        assert set(cache.get_many([c.key for c in calls])) == {calls[1].key, calls[2].key}  # never cached
