"""How fast a hosted judge may call: per process, or one budget for a whole fleet through Prefect.

A judge's own `max_concurrency`, `requests_per_minute` and `tokens_per_minute` bound this process. Its
`limit` (config: an entry of `limits:` or its own {rpm, tpm, concurrency}) is the provider account's budget
for the model, which every judge naming it shares. With a Prefect server (PREFECT_API_URL set) that budget
is Prefect global concurrency limits, so every shard, Dask worker and concurrent run draws from one budget,
shown and editable in the UI and `prefect gcl ls` (created by `judgeops deploy`, or by the first run that
needs them; a run never overwrites the server's numbers):

  <name>-rpm          a rate limit of one second's requests (the burst), decaying rpm / 60 a second; its slots
                      are hundredths of a request (SLOTS_PER_REQUEST)
  <name>-tpm          the same for tokens (the prompt's estimate plus max tokens, counted before the call)
  <name>-concurrency  slots held while a chunk of calls is in flight

Without a server (the ephemeral default) the same numbers are enforced here, in this process.

Why not one `prefect.concurrency.rate_limit` call per request: a Prefect rate limit decays by floor(rate ×
seconds since its last update), and every acquisition and every refusal is an update, so small, frequent
acquisitions lose the fractions, and a refused process sleeps a Retry-After that grows with every waiting
process's refusals. Four processes taking one slot per request got 0.63 × a 20/s limit, a quarter second's
worth at a time 0.93 × (bench/fleet_limit.py, BENCHMARKS.md). FleetBucket takes a quarter second's requests at
once, in hundredths (a lost fraction is a hundredth of a request), asks for the next chunk while spending this
one, and asks again after an eighth of a second when refused: 1.00 ×. A 429 with Retry-After pauses the fleet:
the rate limit's active slots are set past its top by the pause's worth, so no process acquires until they
have decayed — a time, since they decay at the limit's rate, and never longer than the judge's
`rate_limit_wait_s` (a longer Retry-After fails the call instead: hosted.py).

Every wait here ends. Slots are waited for at most `rate_limit_wait_s` + PATIENCE_S (a pause is the longest
legitimate wait); a Prefect server that does not answer is asked again with backoff for PATIENCE_S; past either,
FleetUnavailable (a JudgeBackendError: one line, the answered calls cached first). The concurrency slots are
Prefect's leased ones: a run that dies holding them lets them go when the lease lapses (LEASE_S).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import random
import time

from judgeops.config import EvaluateConfig, JudgeConfig, LimitConfig, limit_name
from judgeops.schemas.liveness import stop_if_signalled
from judgeops.tasks.judges.backends.base import JudgeBackendError

log = logging.getLogger("judgeops.limits")
# how long an unreachable Prefect server is waited for, and slots beyond a pause
PATIENCE_S = float(os.environ.get("JUDGEOPS_FLEET_PATIENCE_S", "120"))
LEASE_S = 60.0  # a concurrency slot's lease: renewed while held, let go this long after its holder died


class FleetUnavailable(JudgeBackendError):
    """The fleet's budget could not be reached or had no slot within its bound."""


class TokenBucket:
    """Refills `per_minute` a minute up to `burst_s` seconds' worth; `take(n)` waits until n are available."""

    def __init__(self, per_minute: float | None, burst_s: float = 60.0):
        self.rate = per_minute / 60 if per_minute else None
        self.capacity = max(1.0, per_minute * burst_s / 60) if per_minute else 0.0
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


def fleet_enabled() -> bool:
    """A Prefect server is configured (not the ephemeral one a run starts for itself)."""
    from prefect.settings import PREFECT_API_URL

    return bool(PREFECT_API_URL.value())


SLOTS_PER_REQUEST = 100  # the rpm limit counts hundredths of a request (see FleetBucket)
SLOTS_PER_UNIT = {"rpm": SLOTS_PER_REQUEST, "tpm": 1}  # a rate limit's slots per request, per token


def gcl_specs(limit: LimitConfig, name: str) -> dict[str, tuple[int, float]]:
    """The global concurrency limits of one budget: {gcl name: (slots, decay per second)}."""
    out = {}
    for suffix, per_minute in (("rpm", limit.rpm), ("tpm", limit.tpm)):
        scale = SLOTS_PER_UNIT[suffix]
        if per_minute:
            out[f"{name}-{suffix}"] = (scale * max(1, math.ceil(per_minute / 60)), scale * per_minute / 60)
    if limit.concurrency:
        out[f"{name}-concurrency"] = (limit.concurrency, 0.0)
    return out


def budgets(config: EvaluateConfig) -> dict[str, LimitConfig]:
    """Every budget of a configuration by name: the entries of `limits:` and the judges' own."""
    out = dict(config.limits)
    for judge in config.judges:
        if isinstance(judge.limit, LimitConfig):
            out.setdefault(limit_name(judge), judge.limit)
    return out


def publish_budgets(config: EvaluateConfig) -> list[str]:
    """Create or update the server's limits for every budget of `config` (`judgeops deploy --config`)."""
    return [
        line
        for name, limit in budgets(config).items()
        for line in asyncio.run(ensure_gcls(limit, name, update=True))
    ]


async def ensure_gcls(limit: LimitConfig, name: str, update: bool = False) -> list[str]:
    """Create the budget's limits on the server where missing (with `update`, set existing ones to these
    numbers: `judgeops deploy`); a run leaves numbers an operator changed as they are, and says so once.
    Returns one line per limit."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    lines = []
    async with get_client() as client:
        for gcl, (slots, decay) in gcl_specs(limit, name).items():
            try:
                found = await client.read_global_concurrency_limit_by_name(gcl)
            except ObjectNotFound:
                create = GlobalConcurrencyLimitCreate(name=gcl, limit=slots, slot_decay_per_second=decay)
                try:
                    await client.create_global_concurrency_limit(create)
                    lines.append(f"{gcl}: created ({slots} slots, decay {decay:g}/s)")
                    continue
                except ObjectAlreadyExists:  # another shard or run created it a moment ago
                    found = await client.read_global_concurrency_limit_by_name(gcl)
            same = found.limit == slots and math.isclose(found.slot_decay_per_second or 0.0, decay)
            if same:
                lines.append(f"{gcl}: unchanged")
            elif update:
                change = GlobalConcurrencyLimitUpdate(limit=slots, slot_decay_per_second=decay)
                await client.update_global_concurrency_limit(gcl, change)
                lines.append(f"{gcl}: updated to {slots} slots, decay {decay:g}/s")
            else:
                lines.append(
                    f"{gcl}: the server's {found.limit} slots, decay {found.slot_decay_per_second:g}/s kept "
                    f"(the config says {slots}, {decay:g}/s; `judgeops deploy --config` sets them)"
                )
                log.warning("limit %s", lines[-1])
    return lines


class FleetBucket:
    """`take(n)` from a Prefect rate limit of `scale` slots per unit, in chunks of a quarter second's worth
    kept in a local reserve; the next chunk is asked for while this one is spent. A denied request is asked
    again after an eighth of a second (jittered), not after Prefect's Retry-After, which grows with every
    waiting process's denials and left the budget idle between them (0.8 × the limit with 4 processes)."""

    def __init__(self, gcl: str, slots: int, per_second: float, scale: int = 1, wait_s: float = 600.0):
        self.gcl, self.scale = gcl, scale
        self.wait_s = wait_s + PATIENCE_S  # the longest a slot is waited for (a pause, then some)
        self.capacity = max(1, slots // scale)  # in units (requests or tokens)
        self.chunk = max(1, min(self.capacity, math.ceil(per_second / scale / 4)))
        self.poll_s = max(0.01, self.chunk / (per_second / scale) / 2)
        self.reserve = 0
        self.lock = asyncio.Lock()
        self.refill: asyncio.Future | None = None

    async def take(self, n: float = 1.0) -> None:
        n = min(math.ceil(n), self.capacity)
        async with self.lock:
            while self.reserve < n:
                if self.refill is None:
                    self._ask(max(n - self.reserve, self.chunk))
                await asyncio.shield(self.refill)
            self.reserve -= n
            if self.reserve < self.chunk and self.refill is None:
                self._ask(self.chunk)

    def _ask(self, units: int) -> None:
        self.refill = asyncio.ensure_future(self._acquire(min(units, self.capacity)))

    async def _acquire(self, units: int) -> None:
        import httpx
        from prefect.client.orchestration import get_client

        start, unreachable_since, backoff = time.monotonic(), None, 0.5
        try:
            async with get_client() as client:
                while True:
                    try:
                        response = await client.increment_concurrency_slots(
                            names=[self.gcl], slots=units * self.scale, mode="rate_limit"
                        )
                    except httpx.HTTPStatusError as exc:
                        if exc.response.status_code != 423:  # 423 Locked: no slots now
                            raise
                        unreachable_since = None
                        stop_if_signalled()  # SIGINT / SIGTERM: stop waiting for slots now
                        if time.monotonic() - start > self.wait_s:
                            raise FleetUnavailable(
                                f"no slot of the rate limit {self.gcl} in {self.wait_s:.0f} s (`prefect gcl "
                                f"inspect {self.gcl}`); the answered calls are cached: rerun to go on"
                            ) from None
                        await asyncio.sleep(self.poll_s * random.uniform(0.5, 1.5))
                        continue
                    except (httpx.TransportError, OSError) as exc:  # the server down or restarting
                        unreachable_since = unreachable_since or time.monotonic()
                        stop_if_signalled()
                        if time.monotonic() - unreachable_since > PATIENCE_S:
                            raise FleetUnavailable(
                                f"the Prefect server holding the rate limit {self.gcl} did not answer for "
                                f"{PATIENCE_S:.0f} s ({type(exc).__name__}); the answered calls are cached: rerun "
                                "once it is back"
                            ) from None
                        await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
                        backoff = min(backoff * 2, 10.0)
                        continue
                    if not response.json():  # the server grants anything on a limit it does not have
                        raise RuntimeError(f"the rate limit {self.gcl} is gone from the Prefect server")
                    break
            self.reserve += units
        finally:
            self.refill = None

    def cancel(self) -> None:
        if self.refill is not None:
            self.refill.cancel()


class Limiter:
    """What one judge's calls wait for, built once per backend (its buckets outlive a batch of calls)."""

    def __init__(self, judge: JudgeConfig):
        self.judge = judge
        self.own = [TokenBucket(judge.requests_per_minute), TokenBucket(judge.tokens_per_minute)]
        limit = judge.limit
        if isinstance(limit, str):
            raise ValueError(
                f"judge {judge.name}: limit {limit!r} names an entry of `limits:`, which only a whole "
                "configuration has"
            )
        self.limit, self.name = limit, limit_name(judge) if limit else None
        self.fleet = bool(limit) and fleet_enabled()
        self.in_flight = min(judge.max_concurrency, (limit.concurrency if limit else None) or 10**9)
        self._ready = False
        specs = gcl_specs(limit, self.name) if limit else {}
        if self.fleet:
            self.requests = self._fleet_bucket(specs, "rpm")
            self.tokens = self._fleet_bucket(specs, "tpm")
        else:
            self.requests = TokenBucket(limit.rpm if limit else None, burst_s=1.0)
            self.tokens = TokenBucket(limit.tpm if limit else None, burst_s=1.0)

    def _fleet_bucket(self, specs: dict[str, tuple[int, float]], suffix: str) -> FleetBucket | TokenBucket:
        gcl = f"{self.name}-{suffix}"
        if gcl not in specs:
            return TokenBucket(None)
        return FleetBucket(
            gcl, *specs[gcl], scale=SLOTS_PER_UNIT[suffix], wait_s=self.judge.rate_limit_wait_s
        )

    async def aclose(self) -> None:
        """Stop asking for slots this backend will not spend."""
        for bucket in (self.requests, self.tokens):
            if isinstance(bucket, FleetBucket):
                bucket.cancel()

    async def ready(self) -> None:
        if self.fleet and not self._ready:
            import httpx

            since, backoff = time.monotonic(), 0.5
            while True:
                try:
                    await ensure_gcls(self.limit, self.name)
                    break
                except (httpx.TransportError, OSError) as exc:
                    if time.monotonic() - since > PATIENCE_S:
                        raise FleetUnavailable(
                            f"judge {self.judge.name}: the Prefect server holding its budget {self.name} did not "
                            f"answer for {PATIENCE_S:.0f} s ({type(exc).__name__}); rerun once it is back"
                        ) from None
                    await asyncio.sleep(backoff * random.uniform(0.5, 1.0))
                    backoff = min(backoff * 2, 10.0)
            self._ready = True

    async def take(self, tokens: float) -> None:
        """Wait until one request of `tokens` tokens may go: this process's buckets, then the budget's."""
        await self.own[0].take(1)
        await self.own[1].take(tokens)
        await self.requests.take(1)
        await self.tokens.take(tokens)

    def slots(self, calls: int) -> contextlib.AbstractAsyncContextManager:
        """Hold the budget's concurrency slots for a chunk of `calls` calls run `in_flight` at a time."""
        if not (self.fleet and self.limit.concurrency):
            return contextlib.nullcontext()
        from prefect.concurrency.asyncio import concurrency

        occupy = min(self.in_flight, calls)
        return self._held(concurrency, occupy)

    @contextlib.asynccontextmanager
    async def _held(self, concurrency, occupy: int):
        gcl = f"{self.name}-concurrency"
        bound = self.judge.rate_limit_wait_s + PATIENCE_S
        from prefect.concurrency.asyncio import ConcurrencySlotAcquisitionError

        try:
            held = concurrency(gcl, occupy=occupy, strict=True, timeout_seconds=bound, lease_duration=LEASE_S)
            await held.__aenter__()
        except TimeoutError:
            raise FleetUnavailable(
                f"no slot of {gcl} in {bound:.0f} s (`prefect gcl inspect {gcl}`); rerun to go on"
            ) from None
        except ConcurrencySlotAcquisitionError as exc:  # the server unreachable, or the limit gone from it
            raise FleetUnavailable(f"the slots of {gcl} could not be taken ({exc}); rerun to go on") from None
        try:
            yield
        except BaseException as exc:
            if not await held.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await held.__aexit__(None, None, None)

    async def pause(self, seconds: float) -> None:
        """Tell the fleet to wait `seconds` (a 429's Retry-After): fill the rate limit past its top."""
        if not (self.fleet and self.limit.rpm):
            return
        from prefect.client.orchestration import get_client
        from prefect.client.schemas.actions import GlobalConcurrencyLimitUpdate

        gcl = f"{self.name}-rpm"
        slots, decay = gcl_specs(self.limit, self.name)[gcl]
        seconds = min(seconds, self.judge.rate_limit_wait_s)  # never longer than a judge would wait itself
        active = slots + math.ceil(seconds * decay)
        try:
            async with get_client() as client:
                await client.update_global_concurrency_limit(
                    gcl, GlobalConcurrencyLimitUpdate(active_slots=active)
                )
        except Exception as exc:  # noqa: BLE001 - the pause is a courtesy; this process waits anyway
            log.warning("could not pause limit %s for %.1f s: %s", gcl, seconds, type(exc).__name__)
