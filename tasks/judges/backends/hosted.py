"""What every hosted-model backend shares, around the provider's official SDK client.

The SDK does the protocol: authentication, endpoints (Azure's deployment URLs included), proxies from the
environment, error types. Around it the project keeps what a judge panel needs and the SDKs do not give a
whole batch: bounded concurrency (a semaphore), the limits on requests and tokens per minute of this process
and of the provider account's budget (tasks/judges/backends/limits.py: shared by a fleet through Prefect),
retries with jittered exponential backoff on 429 / 5xx / timeouts / dropped connections that honour
Retry-After across the batch (and, with a shared budget, across the fleet), a circuit breaker
(`breaker_failures` calls failing in a row, after their retries, stop the batch with JudgeBackendError), and
per-model capability handling: a request parameter the server rejects as unsupported is dropped or renamed
once, the call sent again without spending a retry, and the finding remembered for that endpoint and model
(`Reply.notes`, counted in coverage). The SDK's own retries are off (max_retries=0) so that one policy decides.

A subclass names its SDK's error classes and says how to build the client, send one request and read the
reply. The key comes from `api_key_env` or a Prefect Secret block (`api_key_secret`), else the SDK reads
its own environment variable; it is only ever placed in a header, never in a message, a log line or the
cache.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import threading
import time
from collections.abc import Callable

from prefect.blocks.system import Secret

from judgeops.config import JudgeConfig
from judgeops.schemas.liveness import stop_if_signalled
from judgeops.tasks.judges.backends.base import JudgeBackendError
from judgeops.tasks.judges.backends.limits import Limiter
from judgeops.tasks.judges.calls import TRANSPORT_FAILURE, Call, Reply, token_estimate

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}  # 529: Anthropic's "overloaded"

# what each endpoint and model was found not to take: (backend, base_url, model) -> {param: fix}; a fix is
# "drop" or the name to send the value under instead. Shared by the batches of one process.
_FINDINGS: dict[tuple[str, str, str], dict[str, str]] = {}
_FINDINGS_LOCK = threading.Lock()


def resolve_api_key(judge: JudgeConfig) -> str | None:
    """The configured key, or None to let the SDK read its own environment variable."""
    if judge.api_key_env:
        key = os.environ.get(judge.api_key_env)
        if not key:
            raise JudgeBackendError(
                f"judge {judge.name}: environment variable {judge.api_key_env} is not set"
            )
        return key
    if judge.api_key_secret:
        return secret_value(judge.api_key_secret)
    return None


def secret_value(name: str) -> str:
    """The value of the Prefect Secret block `name` (a judge's key, the call cache's password), loaded
    synchronously wherever it is called from."""
    return Secret.load(name, _sync=True).get()


async def patient_sleep(seconds: float) -> None:
    """asyncio.sleep in slices of at most a second, raising SignalNoted once SIGINT or SIGTERM has been noted: a
    wait in the backend's thread (a Retry-After, a slot) ends within a second of the signal, not when it is over."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        stop_if_signalled()
        await asyncio.sleep(min(1.0, left))
    stop_if_signalled()


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


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


def _transport_name(exc: BaseException) -> str:
    """'ConnectError: ...', 'ReadTimeout: ...': the transport's own error under the SDK's wrapper, which
    is what coverage sorts causes by (tasks/judges/coverage.py: failure_cause)."""
    cause = exc.__cause__ or exc
    text = str(cause)
    return f"{type(cause).__name__}: {text}" if text else type(cause).__name__


class HostedBackend:
    """One judge's batches through an SDK client; see the module docstring."""

    kind = "hosted"
    status_error: type[BaseException] = ()  # the SDK's HTTP-status error (has .status_code, .response)
    connection_error: type[BaseException] = ()  # the SDK's timeout/connection error

    def __init__(self, judge: JudgeConfig):
        self.judge = judge
        self._key = resolve_api_key(judge)
        self.breaker = _Breaker(judge.breaker_failures)
        self.limiter = Limiter(judge)  # its buckets last as long as the backend, not one batch
        self._pause_until = 0.0  # monotonic time before which no call is sent (a 429's Retry-After)
        self._loop: asyncio.AbstractEventLoop | None = None  # see _event_loop
        self._loop_thread: threading.Thread | None = None
        self._sdk_client = None
        where = (self.kind, judge.base_url or "", judge.model)
        with _FINDINGS_LOCK:
            self.findings = _FINDINGS.setdefault(where, {})

    # --- what a subclass provides ---------------------------------------------------------------------
    def _client(self):
        raise NotImplementedError

    async def _send(self, client, call: Call) -> tuple[str, int]:
        """Send one request; (raw body, HTTP status) of a 2xx answer; the SDK raises for the rest."""
        raise NotImplementedError

    def _parse(self, body: str, call: Call) -> Reply:
        raise NotImplementedError

    def _unsupported(self, status: int, body: str) -> tuple[str, str] | None:
        """(parameter, fix) when this error says the model does not take a parameter we send."""
        return None

    # --- the shared skeleton --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the client and stop the event loop thread (both started on the first batch)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.limiter.aclose(), loop).result(timeout=30)
        if self._sdk_client is not None:
            asyncio.run_coroutine_threadsafe(self._sdk_client.close(), loop).result(timeout=30)
            self._sdk_client = None
        loop.call_soon_threadsafe(loop.stop)
        self._loop_thread.join(timeout=30)
        loop.close()

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """This backend's event loop, in its own thread (safe inside a Prefect task or a notebook, which may
        run a loop of their own); it lives from the first batch to close(), so one client (its TLS context,
        its connection pool) serves every batch: a client per batch cost ~1 ms of CPU per call."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._loop_thread = threading.Thread(
                target=self._loop.run_forever, name=f"judgeops-{self.kind}", daemon=True
            )
            self._loop_thread.start()
        return self._loop

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        """One reply per call. When the breaker opens, raises JudgeBackendError carrying the replies
        produced so far (`.replies`), so the caller can cache them before the batch stops."""
        out: dict[str, Reply] = {}
        future = asyncio.run_coroutine_threadsafe(self._complete(calls, out), self._event_loop())
        try:
            future.result()
        except BaseException as exc:
            future.cancel()  # an interrupt in this thread: stop the batch's calls too
            exc.replies = out
            raise
        return out

    async def _complete(self, calls: list[Call], out: dict[str, Reply]) -> None:
        judge, limiter = self.judge, self.limiter
        semaphore = asyncio.Semaphore(limiter.in_flight)
        if self._sdk_client is None:
            self._sdk_client = self._client()
        client = self._sdk_client
        await limiter.ready()

        tripped = False  # once the breaker opens, the batch stops, even if a call in flight then succeeds

        async def one(call: Call) -> None:
            nonlocal tripped
            async with semaphore:
                if tripped:
                    return
                reply = self._redacted(await self._call(client, call))
                self.breaker.record(reply)
                out[call.key] = reply
                tripped = tripped or self.breaker.open

        async with limiter.slots(len(calls)):
            # every call ends before the batch does, so a failure of one (the fleet's server unreachable) loses
            # no reply another call is still receiving: those are cached before the error goes up
            done = await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)
        failed = next((d for d in done if isinstance(d, BaseException)), None)
        if failed is not None:
            raise failed
        if tripped:
            raise JudgeBackendError(
                f"judge {judge.name}: {self.breaker.in_a_row} calls in a row failed at "
                f"{judge.base_url or 'the default endpoint'} (last: {self.breaker.last}); stopping this "
                "batch. Finished calls are cached: rerun to resume from where it stopped."
            )

    def _redacted(self, reply: Reply) -> Reply:
        """A server that echoes the request headers must not put the key into the cache or the verdicts."""
        if self._key:
            for field in ("text", "raw", "error"):
                value = getattr(reply, field)
                if value and self._key in value:
                    setattr(reply, field, value.replace(self._key, "***"))
        return reply

    def _learn(self, param: str, fix: str) -> str:
        with _FINDINGS_LOCK:
            self.findings[param] = fix
        return _fix_note(param, fix)

    async def _call(self, client, call: Call) -> Reply:
        """One call with its retries. A 429 that says when to come back (Retry-After) is not a failure: it
        is waited out — by every call of this batch, which pause together instead of adding to the storm —
        without spending a retry, within `rate_limit_wait_s` per call. A parameter the model does not take
        is fixed once and the call sent again, also without spending a retry. Everything else retryable
        spends one."""
        last, notes = "", []
        t0 = time.perf_counter()
        attempt, rate_waited = 0, 0.0
        tokens = sum(token_estimate(call.request))
        while True:
            with _FINDINGS_LOCK:
                known = dict(self.findings)  # what this request goes without (params() reads the findings)
            pause = self._pause_until - time.monotonic()
            if pause > 0:  # another call of this batch was told to come back later
                await patient_sleep(pause)
            await self.limiter.take(tokens)  # every request sent counts, retries too
            wait = None
            try:
                # a total deadline: the SDK's timeout is per read, so a reply trickling a byte at a time never ends
                # (asyncio.timeout, not wait_for: on 3.11 wait_for runs the call in a task of its own)
                async with asyncio.timeout(self.judge.timeout_s):
                    body, _ = await self._send(client, call)
            except TimeoutError:
                last = f"Timeout: no whole reply within {self.judge.timeout_s:g} s (the call's deadline)"
            except ReplyTooLarge as exc:
                last = f"protocol: {exc}"
                break  # the same request gets the same body: not retried
            except ReplyCutOff as exc:
                last = str(exc)
            except self.status_error as exc:
                status, text = exc.status_code, exc.response.text
                last = f"HTTP {status}: {text[:200]}"
                finding = self._unsupported(status, text) if status == 400 else None
                if finding and known.get(finding[0]) != finding[1]:  # sent before the fix was known
                    if self.findings.get(finding[0]) != finding[1]:
                        notes.append(self._learn(*finding))
                    else:  # another call of the batch learned it while this one was in flight
                        notes.append(_fix_note(*finding))
                    continue
                if status not in RETRY_STATUS:
                    break  # 400/401/404...: retrying will not help
                wait = retry_after_seconds(exc.response.headers.get("retry-after"))
                if wait is not None and rate_waited + wait > self.judge.rate_limit_wait_s:
                    # longer than this judge may wait: the call fails now (asked again by the next run), and
                    # neither this batch nor the fleet is paused for it (one `Retry-After: 86400` held a fleet's
                    # budget for a day)
                    last = (
                        f"HTTP {status}: the provider asks to come back in {wait:g} s, past this judge's "
                        f"rate_limit_wait_s ({self.judge.rate_limit_wait_s:g} s)"
                    )
                    break
                if status == 429 and wait is not None:
                    if self._pause_until < time.monotonic() + wait:  # a new pause: the fleet's too
                        await self.limiter.pause(wait)
                    self._pause_until = max(self._pause_until, time.monotonic() + wait)
                    rate_waited += wait
                    await patient_sleep(wait)
                    continue
            except self.connection_error as exc:
                last = _transport_name(exc)
            else:
                reply = self._parse(body, call)
                reply.latency_ms = (time.perf_counter() - t0) * 1000
                reply.notes = "; ".join(notes) or None
                if not reply.transport_failure:
                    return reply
                # a body that is no reply: retried like a 5xx
                last = reply.error.removeprefix(TRANSPORT_FAILURE)
            if attempt >= self.judge.max_retries:
                break
            backoff = min(30.0, 0.5 * 2**attempt) * random.uniform(0.5, 1.0)  # jittered exponential
            attempt += 1
            if wait is not None:  # a 5xx's Retry-After, within the allowance checked above
                rate_waited += wait
            await patient_sleep(wait if wait is not None else backoff)
        return Reply(
            error=f"{TRANSPORT_FAILURE}{last}",
            latency_ms=(time.perf_counter() - t0) * 1000,
            notes="; ".join(notes) or None,
        )


def _fix_note(param: str, fix: str) -> str:
    return f"{param} dropped" if fix == "drop" else f"{param} sent as {fix}"


class ReplyTooLarge(Exception):
    """A reply body over the judge's `max_reply_bytes`: refused before it is read whole."""


class ReplyCutOff(Exception):
    """The connection failed while the body was streaming in (dropped mid-body): retried like a connection error."""


async def read_limited(response, limit: int) -> str:
    """A streamed response's body as text, refused (ReplyTooLarge) once it passes `limit` bytes: a 50 MB reply
    never reaches memory or the cache whole."""
    chunks, size = [], 0
    try:
        async for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge(f"a reply over {limit:,} bytes (max_reply_bytes), refused unread")
            chunks.append(chunk)
    except ReplyTooLarge:
        raise
    except Exception as exc:  # noqa: BLE001 - the transport's error mid-body (the SDK wraps only what it reads)
        raise ReplyCutOff(_transport_name(exc)) from exc
    return b"".join(chunks).decode("utf-8", errors="replace")


def params_with(findings: dict[str, str], params: dict, drop_together: Callable[[str], tuple[str, ...]]):
    """`params` with what this model was found not to take dropped or renamed."""
    out = dict(params)
    for param, fix in findings.items():
        for name in drop_together(param):
            if name in out:
                value = out.pop(name)
                if fix != "drop":
                    out[fix] = value
    return out
