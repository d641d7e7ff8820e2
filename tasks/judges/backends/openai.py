"""Any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp server, hosted APIs).

httpx (async) with: bounded concurrency (a semaphore), a token bucket for requests and tokens per
minute, retries with jittered exponential backoff on 429 / 5xx / timeouts / connection errors that
honour Retry-After, a per-call timeout, and a circuit breaker: `breaker_failures` calls failing in a row
(after their retries) stop the batch with JudgeBackendError. Logprobs are asked for (top_logprobs) and
the choice tokens' probabilities at the first position are returned; a server that ignores the field
still works (the protocol parses the text).

The key comes from `api_key_env` or a Prefect Secret block (`api_key_secret`); it is only ever placed
in the Authorization header, never in a message, a log line or the cache.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import random
import threading
import time

import httpx
from prefect.blocks.system import Secret

from judgeops.config import JudgeConfig
from judgeops.tasks.judges.backends.base import JudgeBackendError
from judgeops.tasks.judges.calls import Call, Reply
from judgeops.tasks.judges.prompts import SYSTEM

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


def resolve_api_key(judge: JudgeConfig) -> str | None:
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env)
        if not key:
            raise JudgeBackendError(
                f"judge {judge.name}: environment variable {judge.api_key_env} is not set"
            )
        return key
    if judge.api_key_secret:
        return Secret.load(judge.api_key_secret).get()
    return None


class TokenBucket:
    """Refills `rate` per minute up to one minute's worth; `take(n)` waits until n are available."""

    def __init__(self, per_minute: float | None):
        self.rate = per_minute / 60 if per_minute else None
        self.capacity = per_minute or 0.0
        self.level = self.capacity
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, n: float = 1.0) -> None:
        if self.rate is None:
            return
        n = min(n, self.capacity)
        async with self.lock:
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.level >= n:
                    self.level -= n
                    return
                await asyncio.sleep((n - self.level) / self.rate)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


def choice_probs(logprobs: dict | None, choices: tuple[str, ...]) -> dict[str, float] | None:
    """Probability of each choice at the first generated position: the sum over top_logprobs entries
    whose text, stripped and lower-cased, is the choice (" A", "A" and "a" are all A)."""
    if not choices or not logprobs or not logprobs.get("content"):
        return None
    first = logprobs["content"][0]
    entries = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
    probs = dict.fromkeys(choices, 0.0)
    for entry in entries:
        token = (entry.get("token") or "").strip().lower()
        for choice in choices:
            if token == choice.lower() and entry.get("logprob") is not None:
                probs[choice] += math.exp(entry["logprob"])
    return probs


class _Breaker:
    def __init__(self, limit: int):
        self.limit, self.in_a_row, self.last = limit, 0, ""

    def record(self, reply: Reply) -> None:
        if reply.transport_failure:
            self.in_a_row += 1
            self.last = reply.error or ""
        else:
            self.in_a_row = 0

    @property
    def open(self) -> bool:
        return self.in_a_row >= self.limit


class OpenAIBackend:
    def __init__(self, judge: JudgeConfig):
        self.judge = judge
        self.url = judge.base_url.rstrip("/") + "/chat/completions"
        self._key = resolve_api_key(judge)
        self.breaker = _Breaker(judge.breaker_failures)
        self._pause_until = 0.0  # monotonic time before which no call is sent (a 429's Retry-After)

    def close(self) -> None:
        pass

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        """One reply per call. When the breaker opens, raises JudgeBackendError carrying the replies
        produced so far (`.replies`), so the caller can cache them before the batch stops."""
        out: dict[str, Reply] = {}
        box: dict = {}

        def runner() -> None:  # own thread, own event loop: safe inside a Prefect task or a notebook
            try:
                asyncio.run(self._complete(calls, out))
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=runner, name="judgeops-openai")
        thread.start()
        thread.join()
        if "error" in box:
            box["error"].replies = out
            raise box["error"]
        return out

    async def _complete(self, calls: list[Call], out: dict[str, Reply]) -> None:
        judge = self.judge
        semaphore = asyncio.Semaphore(judge.max_concurrency)
        requests = TokenBucket(judge.requests_per_minute)
        tokens = TokenBucket(judge.tokens_per_minute)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        limits = httpx.Limits(max_connections=judge.max_concurrency)
        async with httpx.AsyncClient(
            timeout=judge.timeout_s, headers=headers, limits=limits, trust_env=False
        ) as client:

            async def one(call: Call) -> None:
                async with semaphore:
                    if self.breaker.open:
                        return
                    estimate = len(SYSTEM + call.request.prompt) / 4 + call.request.max_tokens
                    await requests.take(1)
                    await tokens.take(estimate)
                    reply = self._redacted(await self._call(client, call))
                    self.breaker.record(reply)
                    out[call.key] = reply

            await asyncio.gather(*(one(c) for c in calls))
        if self.breaker.open:
            raise JudgeBackendError(
                f"judge {judge.name}: {self.breaker.in_a_row} calls in a row failed at {self.url} "
                f"(last: {self.breaker.last}); stopping this batch. Finished calls are cached: "
                "rerun to resume from where it stopped."
            )

    def _redacted(self, reply: Reply) -> Reply:
        """A server that echoes the request headers must not put the key into the cache or the verdicts."""
        if self._key:
            for field in ("text", "raw", "error"):
                value = getattr(reply, field)
                if value and self._key in value:
                    setattr(reply, field, value.replace(self._key, "***"))
        return reply

    def _body(self, call: Call) -> dict:
        d = self.judge.decoding
        body = {
            "model": self.judge.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": call.request.prompt},
            ],
            "max_tokens": call.request.max_tokens,
            "temperature": d.temperature,
        }
        if call.seed is not None:
            body["seed"] = call.seed
        if call.request.choices and d.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = d.top_logprobs
        return body

    async def _call(self, client: httpx.AsyncClient, call: Call) -> Reply:
        """One call with its retries. A 429 that says when to come back (Retry-After) is not a failure: it
        is waited out — by every call of this batch, which pause together instead of adding to the storm —
        without spending a retry, within `rate_limit_wait_s` per call. Everything else retryable spends one."""
        body = self._body(call)
        last = ""
        t0 = time.perf_counter()
        attempt, rate_waited = 0, 0.0
        while True:
            pause = self._pause_until - time.monotonic()
            if pause > 0:  # another call of this batch was told to come back later
                await asyncio.sleep(pause)
            wait = None
            try:
                response = await client.post(self.url, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            else:
                if response.status_code < 300:
                    reply = parse_completion(response.text, call.request.choices)
                    reply.latency_ms = (time.perf_counter() - t0) * 1000
                    return reply
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in _RETRY_STATUS:
                    break  # 400/401/404...: retrying will not help
                wait = retry_after_seconds(response.headers.get("retry-after"))
                if response.status_code == 429 and wait is not None:
                    self._pause_until = max(self._pause_until, time.monotonic() + wait)
                    if rate_waited + wait <= self.judge.rate_limit_wait_s:
                        rate_waited += wait
                        await asyncio.sleep(wait)
                        continue
            if attempt >= self.judge.max_retries:
                break
            backoff = min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)  # jittered exponential
            attempt += 1
            await asyncio.sleep(wait if wait is not None else backoff)
        return Reply(error=f"transport: {last}", latency_ms=(time.perf_counter() - t0) * 1000)


def parse_completion(body: str, choices: tuple[str, ...]) -> Reply:
    """A 200 response: text, choice probabilities and usage; malformed JSON or no choices → unparsable."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return Reply(raw=body[:4000], error=f"unparsable: not a chat completion: {body[:80]!r}")
    usage = data.get("usage") or {}
    tokens = usage.get("total_tokens")
    return Reply(
        text=text,
        probs=choice_probs(choice.get("logprobs"), choices),
        tokens=int(tokens) if tokens is not None else None,
        raw=body[:4000],
    )
