"""Judge invocation: the panel over every variant, one `verdicts` row per judge and unit.

`judge_variants(...)` and `judge_responses(...)` are the pure functions (coverage.py accounts for what came
back; schemas/vocabulary.py turns displayed verdicts into "the correct answer won").

A programmatic judge reads each unit directly. An LLM judge goes protocol → requests → call cache →
backend: the protocol (protocols.py) turns a unit into requests, each keyed by calls.call_key; hits come
from the cache (cache.py) and never reach the backend; misses go to the backend in small chunks (at most
`batch_size`, about four requests per concurrency slot), and each finished chunk is committed to the cache
before the next starts, so a crash loses at most one chunk and a rerun pays only for what was never
answered. Runs sharing a cache file share in-flight calls: a miss is claimed before it is called, and a key
another live run has claimed is waited for in the cache, not paid again (cache.py). The backend is created
only when there is a miss: a warm rerun neither loads a model nor opens a connection.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from judgeops.config import CostConfig, JudgeConfig, rubric_of
from judgeops.schemas.stream import Rows, TableStream, joined
from judgeops.tasks.judges.backends.base import Backend, BatchPending
from judgeops.tasks.judges.backends.factory import get_backend
from judgeops.tasks.judges.cache import CallCache, open_cache
from judgeops.tasks.judges.calls import TRANSPORT_FAILURE, Call, Reply, make_call
from judgeops.tasks.judges.cost import Budget, BudgetExceeded
from judgeops.tasks.judges.programmatic import check_response, judge_unit
from judgeops.tasks.judges.protocols import Decision, Unit, get_protocol

ProgressFn = Callable[[int, int, int, int], None]  # (calls done, calls total, errors so far, cache hits)
# what judging takes: (the judge as configured, the judge as asked (its protocol for this part), its units)
Plan = list[tuple[JudgeConfig, JudgeConfig, Sequence[Unit]]]  # a list, or a UnitList
# runs a plan, returns its verdict rows in plan order (default: _judge_units in this process)
PlanRunner = Callable[[Plan], "list[dict] | pd.DataFrame | TableStream"]  # rows, or a stream of them (shards)
RESPONSE = "response:"  # the unit id prefix of an examinee answer judged alone
# a call the backend returned no reply for (a bug in a backend): a transport failure, never cached, retried next run
UNANSWERED = f"{TRANSPORT_FAILURE}the backend returned no reply for this call"


def call_id(judge: JudgeConfig, unit_id: str) -> str:
    key = ":".join([judge.backend, judge.model, judge.protocol, judge.name, unit_id])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def select_subset(
    variants: pd.DataFrame, max_pairs: int | None, seed: str, pairs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every variant of a fixed subset of pairs, so the subset is the same in every run and its calls stay
    cached: pairs ranked by a hash of (judge name, pair_id), taken round-robin over error types where
    `pairs` gives them (each type as equally represented as the sample size allows)."""
    if max_pairs is None:
        return variants
    ids = pd.Series(variants["pair_id"].unique())
    rank = ids.map(lambda p: hashlib.sha256(f"{seed}:{p}".encode()).hexdigest())
    table = pd.DataFrame({"pair_id": ids, "rank": rank})
    types = pairs.set_index("pair_id")["error_type"] if pairs is not None else pd.Series(dtype=object)
    table["stratum"] = table["pair_id"].map(types).fillna("(none)")
    table = table.sort_values("rank")
    table["turn"] = table.groupby("stratum").cumcount()  # 0 for each type's first pair, then 1, ...
    table["published"] = table["stratum"] == "(none)"  # within a turn, judgerEva's error types first
    chosen = table.sort_values(["turn", "published", "rank"])["pair_id"].head(max_pairs)
    return variants[variants["pair_id"].isin(set(chosen))]


def units_for(variants: pd.DataFrame, question: pd.Series, reference: pd.Series) -> UnitList:
    columns = (variants["variant_id"], question, variants["text_a"], variants["text_b"], reference)
    return UnitList(tuple(c.reset_index(drop=True) for c in columns))


class UnitList(Sequence):
    """Units made from their columns as they are read, a slice at a time: the columns keep each text once (in
    Arrow, or shared Python strings), where a list of Units held every question and answer as its own Python
    string (163 MB of the judge stage at 20,000 pairs in a memray profile, growing with the pairs). A slice is a
    view. Sequence by hand: no library keeps a dataclass's fields as columns and hands out instances lazily."""

    CHUNK = 2_000  # units made at once while iterating

    def __init__(self, columns: tuple[pd.Series, ...], start: int = 0, stop: int | None = None):
        self.columns, self.start = columns, start
        self.stop = len(columns[0]) if stop is None else stop

    def __len__(self) -> int:
        return max(0, self.stop - self.start)

    def _made(self, a: int, b: int) -> list[Unit]:
        return [Unit(*fields) for fields in zip(*(c.iloc[a:b].tolist() for c in self.columns), strict=True)]

    def __getitem__(self, index):
        if isinstance(index, slice):
            a, b, step = index.indices(len(self))
            if step != 1:
                return self._made(self.start, self.stop)[index]
            return UnitList(self.columns, self.start + a, self.start + max(a, b))
        i = range(self.start, self.stop)[index]  # IndexError where a list raises it
        return self._made(i, i + 1)[0]

    def __iter__(self):
        for a in range(self.start, self.stop, self.CHUNK):
            yield from self._made(a, min(a + self.CHUNK, self.stop))


@dataclass
class JudgedUnit:
    decision: Decision
    n_samples: int
    flip_rate: float | None
    p_first_sd: float | None
    latency_ms: float
    tokens: int | None
    n_calls: int
    cache_hits: int
    tokens_in: int | None = None
    tokens_out: int | None = None
    notes: str | None = None  # request changes the backend made to be answered (unsupported parameters)


def _total(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _combine(decisions: list[Decision], replies: list[list[Reply]]) -> JudgedUnit:
    """Self-consistency: the majority verdict over samples, how often samples left it, their p spread."""
    flat = [r for rs in replies for r in rs]
    usable = [d for d in decisions if d.verdict is not None]
    if not usable:
        decision = decisions[0]
        flip, sd = None, None
    else:
        verdicts = [d.verdict for d in usable]
        top = max(sorted(set(verdicts)), key=verdicts.count)
        ps = [d.p_first for d in usable if d.p_first is not None]
        first = next(d for d in usable if d.verdict == top)
        p_first = float(np.mean(ps)) if ps else None
        decision = Decision(top, p_first, first.rationale, None)
        flip = 1 - verdicts.count(top) / len(verdicts)
        sd = float(np.std(ps)) if len(ps) > 1 else (0.0 if ps else None)
    return JudgedUnit(
        decision,
        len(decisions),
        flip if len(decisions) > 1 else None,
        sd if len(decisions) > 1 else None,
        sum(r.latency_ms for r in flat if not r.cached),
        _total([r.tokens for r in flat]),
        len(flat),
        sum(r.cached for r in flat),
        _total([r.tokens_in for r in flat]),
        _total([r.tokens_out for r in flat]),
        "; ".join(sorted({r.notes for r in flat if r.notes})) or None,
    )


def complete_cached(
    judge: JudgeConfig,
    calls: list[Call],
    cache: CallCache,
    chunk_size: int = 64,
    backend: Backend | None = None,
    on_step: Callable[[int, int, int], None] | None = None,
    budget: Budget | None = None,
) -> dict[str, Reply]:
    """Replies for calls: cache hits first, the misses through the backend in chunks, each chunk committed
    to the cache as soon as it is back. `on_step(cache hits, answered, transport failures)` after the
    lookup and after each chunk. The backend is created only if there is a miss.

    Raises JudgeBackendError when the backend gives up, BudgetExceeded before a chunk that would take the
    run past its budget; what was answered is cached first.
    """
    budget = budget or Budget()
    if backend is None:  # created here on the first miss, closed here
        created: list[Backend] = []
        try:
            lazy = _Lazy(judge, created, cache)
            return complete_cached(judge, calls, cache, chunk_size, lazy, on_step, budget)
        finally:
            for made in created:
                made.close()
    step = on_step or (lambda hits, answered, failed: None)
    replies = cache.get_many(sorted({c.key for c in calls}))
    step(sum(c.key in replies for c in calls), 0, 0)
    pending = list({c.key: c for c in calls if c.key not in replies}.values())
    while pending:  # claim what nobody is calling, call it, then wait for what other runs are calling
        mine, theirs = cache.claim([c.key for c in pending])
        landed = cache.get_many([c.key for c in pending if c.key not in mine and c.key not in theirs])
        replies.update(landed)  # answered by another run since the lookup
        if landed:
            step(len(landed), 0, 0)
        own = [c for c in pending if c.key in mine]
        if judge.batch:  # a provider batch: every miss in one (the backend splits past the provider's limit)
            chunk_size = max(len(own), 1)
        for start in range(0, len(own), chunk_size):
            chunk = own[start : start + chunk_size]
            try:
                budget.check(judge, chunk)
            except BudgetExceeded:
                cache.release([c.key for c in own])
                raise
            cache.record_sent(judge.backend, judge.model, [c.key for c in chunk])
            try:
                got = backend.complete(chunk)
            except BaseException as exc:  # a JudgeBackendError carries what was answered; anything else (an
                # interrupt, a bug) too must leave no claim for others to wait on
                cache.put_many(judge.backend, judge.model, getattr(exc, "replies", {}))
                cache.release([c.key for c in own])
                raise
            got = {
                c.key: got.get(c.key) or Reply(error=UNANSWERED) for c in chunk
            }  # never a call without a reply
            written = judge.batch and getattr(backend, "cache", None) is cache  # by the batch, as it closed
            if not written:
                cache.put_many(judge.backend, judge.model, got)
            cache.release([c.key for c in chunk])
            budget.charge(judge, got)
            replies.update(got)
            step(0, len(got), sum(r.transport_failure for r in got.values()))
        if theirs:
            shared = cache.wait_for(theirs, on_found=lambda got: step(len(got), 0, 0))
            replies.update(shared)
        pending = [c for c in pending if c.key not in replies and c.key in theirs]
    return replies


class _Lazy:
    """A judge's backend, created on the first batch it is given (a warm rerun loads no model, opens no
    connection); what it created is appended to `created`, for the caller to close."""

    def __init__(self, judge: JudgeConfig, created: list[Backend], cache: CallCache | None = None):
        self.judge, self.created, self.cache = judge, created, cache

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        if not self.created:
            self.created.append(get_backend(self.judge, self.cache))
        return self.created[0].complete(calls)

    def close(self) -> None:
        pass


def run_judge(
    judge: JudgeConfig,
    units: list[Unit],
    cache: CallCache,
    chunk_size: int = 64,
    progress: Callable[[int, int, int], None] | None = None,
    backend: Backend | None = None,
    budget: Budget | None = None,
) -> dict[str, JudgedUnit]:
    """An LLM judge over units: every protocol phase, every sample, through the cache.

    Raises JudgeBackendError when the backend gives up (circuit open); what it answered is cached first.
    `progress(calls answered, cache hits, transport failures)` after each chunk.
    """
    protocol = get_protocol(
        judge.protocol, judge.rationale, judge.decoding.max_tokens, rubric_of(judge), judge.verdict_format
    )
    state: dict[tuple[str, int], list[Reply] | None] = {
        (u.unit_id, s): None for u in units for s in range(judge.samples)
    }
    by_id = {u.unit_id: u for u in units}
    open_ = list(state)
    answered = hits = failures = 0
    while open_:
        calls: list[Call] = []
        asked: dict[tuple[str, int], list[Call]] = {}
        for unit_id, s in open_:
            requests = protocol.requests(by_id[unit_id], state[(unit_id, s)])
            if requests is None:
                continue
            asked[(unit_id, s)] = [make_call(judge, r, protocol.version, unit_id, s) for r in requests]
            calls.extend(asked[(unit_id, s)])

        def tally(hit: int, answered_now: int, failed: int) -> None:
            nonlocal hits, answered, failures
            hits, answered, failures = hits + hit, answered + answered_now, failures + failed
            if progress and answered_now:
                progress(answered, hits, failures)

        replies = complete_cached(judge, calls, cache, chunk_size, backend, tally, budget)
        for unit_key, unit_calls in asked.items():
            state[unit_key] = (state[unit_key] or []) + [replies[c.key] for c in unit_calls]
        open_ = list(asked)
    out: dict[str, JudgedUnit] = {}
    for unit in units:
        samples = [state[(unit.unit_id, s)] or [] for s in range(judge.samples)]
        decisions = [protocol.decide(unit, rs) for rs in samples]
        out[unit.unit_id] = _combine(decisions, samples)
    return out


def _row(judge: JudgeConfig, asked: JudgeConfig, run_id: str, j: JudgedUnit, variant_id, response_id) -> dict:
    """One `verdicts` row: `asked` is the judge as called (its protocol keys the call)."""
    unit_id = variant_id if variant_id is not None else f"{RESPONSE}{response_id}"
    return {
        "call_id": call_id(asked, unit_id),
        "run_id": run_id,
        "judge_id": judge.name,
        "protocol": asked.protocol,
        "variant_id": variant_id,
        "response_id": response_id,
        "verdict": j.decision.verdict,
        "p_first": j.decision.p_first,
        "rationale": j.decision.rationale,
        "latency_ms": j.latency_ms,
        "tokens": j.tokens,
        "tokens_in": j.tokens_in,
        "tokens_out": j.tokens_out,
        "cached": j.n_calls > 0 and j.cache_hits == j.n_calls and judge.backend != "programmatic",
        "error": j.decision.error,
        "n_samples": j.n_samples,
        "flip_rate": j.flip_rate,
        "p_first_sd": j.p_first_sd,
        "n_calls": j.n_calls,
        "cache_hits": j.cache_hits,
        "request_notes": j.notes,
    }


def _judge_programmatic(asked: JudgeConfig, unit: Unit) -> JudgedUnit:
    t0 = time.perf_counter()
    if asked.protocol == "response_check":
        decision = check_response(asked.model, unit)
    else:
        decision = judge_unit(asked.model, asked.protocol, unit)
    return JudgedUnit(decision, 1, None, None, (time.perf_counter() - t0) * 1000, None, 1, 0)


def _judge_units(
    plan: list[tuple[JudgeConfig, JudgeConfig, list[Unit]]],
    run_id: str,
    batch_size: int,
    progress: ProgressFn | None,
    cache_path: str | None,
    budget: Budget | None = None,
) -> list[dict]:
    """The one judging skeleton: each (judge, the judge as asked, its units) in turn, programmatic judges
    directly in batches, LLM judges through the call cache in small chunks; one `verdicts` row per unit. A
    call that fails gets a row with the error, never no row. A judge whose provider batch is still running
    (BatchPending: it waits by suspending the run) does not stop the others: each judge after it is judged
    (its calls cached, its batch created), then BatchPending names every batch the run waits for."""
    total = sum(len(units) for _, _, units in plan)
    rows: list[dict] = []
    done = errors = hits = 0
    report = progress or (lambda *_: None)
    cache = (
        open_cache(cache_path)
        if cache_path and any(j.backend != "programmatic" for j, _, _ in plan)
        else None
    )
    pending: list[dict] = []
    try:
        for judge, asked, units in plan:
            if judge.backend == "programmatic":
                judged = {}
                for start in range(0, len(units), batch_size):
                    batch = units[start : start + batch_size]
                    judged |= {unit.unit_id: _judge_programmatic(asked, unit) for unit in batch}
                    done += len(batch)
                    report(done, total, errors, hits)
            else:
                if cache is None:
                    raise ValueError("LLM judges need a call cache (cache_path)")
                base, n = (done, errors, hits), len(units)

                def tick(answered: int, cached: int, failed: int, base=base, n=n) -> None:
                    report(base[0] + min(n, answered + cached), total, base[1] + failed, base[2] + cached)

                chunk = min(batch_size, max(8, 4 * judge.max_concurrency))  # LLM calls are slow: small chunks
                try:
                    judged = run_judge(asked, units, cache, chunk_size=chunk, progress=tick, budget=budget)
                except BatchPending as waiting:
                    pending += waiting.batches
                    continue
                done += n
                hits += sum(j.cache_hits for j in judged.values())
            errors += sum(j.decision.verdict is None for j in judged.values())
            if judge.backend != "programmatic":
                report(done, total, errors, hits)
            rows += [_row(judge, asked, run_id, judged[u.unit_id], *_row_ids(u.unit_id)) for u in units]
    finally:
        if cache is not None:
            cache.close()
    if pending:
        raise BatchPending(pending)
    return rows


def _row_ids(unit_id: str) -> tuple[str | None, str | None]:
    """(variant_id, response_id) of a unit: an examinee answer's unit id is `response:<id>`."""
    return (None, unit_id.removeprefix(RESPONSE)) if unit_id.startswith(RESPONSE) else (unit_id, None)


def judge_variants(
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    items: pd.DataFrame,
    judges: list[JudgeConfig],
    run_id: str,
    batch_size: int = 500,
    progress: ProgressFn | None = None,
    external_pairs: pd.DataFrame | None = None,
    cache_path: str | None = None,
    budget: Budget | None = None,
    run_plan: PlanRunner | None = None,
) -> Rows:
    """Every judge on every variant (or on its `max_pairs` subset). `run_plan`: how the plan is run (sharded
    on a task runner: tasks/sharding.py, whose rows come back as a stream of the shards' frames); by default
    here, in order."""
    context = pairs[["pair_id", "item_id"]].merge(items[["item_id", "question", "gold"]], on="item_id")
    context = context[["pair_id", "question", "gold"]]
    if external_pairs is not None and len(external_pairs):  # published pairs: a question, no reference answer
        published = external_pairs[["pair_id", "question"]].assign(gold="")
        context = pd.concat([context, published], ignore_index=True)
    context = context.set_index("pair_id")
    plan, every = [], None  # the judges without max_pairs share one list of units (built once)
    for judge in judges:
        if judge.max_pairs is None and every is not None:
            plan.append((judge, judge, every))
            continue
        subset = select_subset(variants, judge.max_pairs, judge.name, pairs)
        pair = subset["pair_id"]
        units = units_for(subset, pair.map(context["question"]), pair.map(context["gold"]))
        every = units if judge.max_pairs is None else every
        plan.append((judge, judge, units))
    run_plan = run_plan or (lambda p: _judge_units(p, run_id, batch_size, progress, cache_path, budget))
    return _as_rows(run_plan(plan))


def _as_rows(rows) -> Rows:
    """A plan's rows as a frame with float probability columns, or (sharded) a stream of such frames."""
    if isinstance(rows, TableStream):
        return rows.map(_floats)
    return _floats(pd.DataFrame(rows))


def _floats(out: pd.DataFrame) -> pd.DataFrame:
    for col in ("p_first", "flip_rate", "p_first_sd"):
        if col in out:
            out[col] = out[col].astype(float)
    return out


def _response_sample(responses: pd.DataFrame, max_n: int | None, seed: str) -> pd.DataFrame:
    """Every response, or a fixed hash-ranked sample of `max_n` (the same in every run: its calls stay cached)."""
    if max_n is None or len(responses) <= max_n:
        return responses
    rank = responses["response_id"].map(lambda r: hashlib.sha256(f"{seed}:{r}".encode()).hexdigest())
    return responses.loc[rank.sort_values().index[:max_n]]


def judge_responses(
    responses: pd.DataFrame,
    items: pd.DataFrame,
    judges: list[JudgeConfig],
    run_id: str,
    cache_path: str | None = None,
    progress: ProgressFn | None = None,
    batch_size: int = 500,
    budget: Budget | None = None,
    run_plan: PlanRunner | None = None,
) -> Rows:
    """Every judge says whether each examinee answer is correct, the answer shown alone (protocol
    `response_check`: one yes/no; programmatic judges apply their own notion of a good answer). A judge with
    `max_pairs` judges a fixed sample of that many responses. One `verdicts` row per judge and response,
    `variant_id` empty, `verdict` "correct" / "incorrect" (None with the error when the call failed)."""
    context = items.set_index("item_id")
    question = responses["item_id"].map(context["question"]).fillna("")
    gold = responses["item_id"].map(context["gold"]).fillna("").astype(str)
    units = {
        rid: Unit(f"{RESPONSE}{rid}", q, text, "", ref)
        for rid, q, text, ref in zip(responses["response_id"], question, responses["text"], gold, strict=True)
    }
    plan = [
        (
            judge,
            judge.model_copy(update={"protocol": "response_check", "rationale": False}),
            [units[r] for r in _response_sample(responses, judge.max_pairs, judge.name)["response_id"]],
        )
        for judge in judges
    ]
    run_plan = run_plan or (lambda p: _judge_units(p, run_id, batch_size, progress, cache_path, budget))
    return _as_rows(run_plan(plan))


def judge_all(
    tables: dict[str, pd.DataFrame],
    judges: list[JudgeConfig],
    run_id: str,
    batch_size: int = 500,
    progress: Callable[[str], ProgressFn | None] = lambda what: None,
    cache_path: str | None = None,
    cost: CostConfig | None = None,
    run_plan: PlanRunner | None = None,
) -> Rows:
    """The judge stage's `verdicts`: every judge on every displayed variant (`variants`, `pairs`, `items`,
    optionally `external_pairs`), then on every examinee answer shown alone (`responses`, when given).
    `progress(what)` gives the progress callback of each part; `cost.max_cost` bounds what the new calls of
    both parts spend together (BudgetExceeded). `run_plan` runs each part's plan (default: in order, here)."""
    budget = Budget(cost)
    verdicts = judge_variants(
        tables["variants"],
        tables["pairs"],
        tables["items"],
        judges,
        run_id,
        batch_size,
        progress("judge calls"),
        external_pairs=tables.get("external_pairs"),
        cache_path=cache_path,
        budget=budget,
        run_plan=run_plan,
    )
    responses = tables.get("responses")
    if responses is not None and len(responses):
        on_responses = judge_responses(
            responses,
            tables["items"],
            judges,
            run_id,
            cache_path,
            progress("response checks"),
            budget=budget,
            run_plan=run_plan,
        )
        if isinstance(verdicts, TableStream) or isinstance(on_responses, TableStream):
            return joined(verdicts, on_responses)
        verdicts = pd.concat([verdicts, on_responses], ignore_index=True)
    return verdicts


UNIT_COLUMNS = ("unit_id", "question", "first", "second", "reference")


def units_table(units: list[Unit]) -> pd.DataFrame:
    """Units as a table (one row each, in order): how a shard's units are kept in the store."""
    return pd.DataFrame([astuple(u) for u in units], columns=list(UNIT_COLUMNS))


def units_of(table: pd.DataFrame) -> list[Unit]:
    return [Unit(*row) for row in table[list(UNIT_COLUMNS)].itertuples(index=False, name=None)]


@dataclass(frozen=True)
class Shard:
    """A piece of a plan: one judge on a block of at most `units_per_shard` of its units. `block` is the
    content hash of those units (every judge given the same units shares the block, kept once in the store);
    `key` names exactly what the shard judges (the judge as configured and as asked, the block, the judging
    code), so a shard whose verdicts were saved by any run is never judged again."""

    key: str
    judge: JudgeConfig
    asked: JudgeConfig
    block: str
    units: list[Unit]

    @property
    def plan(self) -> Plan:
        return [(self.judge, self.asked, self.units)]

    @property
    def n_units(self) -> int:
        return len(self.units)

    def order(self) -> bytes:
        """The work order any worker can read back (`from_order`, with the block's units): plain JSON."""
        judge, asked = self.judge.model_dump(mode="json"), self.asked.model_dump(mode="json")
        return json.dumps({"key": self.key, "judge": judge, "asked": asked, "block": self.block}).encode()

    @classmethod
    def from_order(cls, payload: bytes, units_of_block: Callable[[str], list[Unit]]) -> Shard:
        """The shard of a work order; `units_of_block(block)` reads the units it names."""
        data = json.loads(payload)
        judge, asked = JudgeConfig.model_validate(data["judge"]), JudgeConfig.model_validate(data["asked"])
        return cls(data["key"], judge, asked, data["block"], units_of_block(data["block"]))


def shard_plan(plan: Plan, units_per_shard: int, code: str) -> list[Shard]:
    """Split a plan into shards of at most `units_per_shard` units of one judge each, in plan order (their
    rows, concatenated in this order, are the unsharded rows). Judges given the same list of units share
    its blocks (hashed once)."""
    from judgeops.schemas.store import stable_hash

    blocks: dict[int, list[tuple[str, list[Unit]]]] = {}
    shards = []
    for judge, asked, units in plan:
        if id(units) not in blocks:
            parts = [units[i : i + units_per_shard] for i in range(0, len(units), units_per_shard)]
            blocks[id(units)] = [(stable_hash([astuple(u) for u in part]), part) for part in parts]
        described = {"judge": judge.model_dump(mode="json"), "asked": asked.model_dump(mode="json")}
        for block, part in blocks[id(units)]:
            key = stable_hash({"code": code, **described, "units": block})
            shards.append(Shard(key, judge, asked, block, part))
    return shards


def judge_shard(shard: Shard, run_id: str, batch_size: int, cache_path: str | None) -> list[dict]:
    """One shard's verdict rows, judged here (its own cache handle; no progress, no shared budget)."""
    return _judge_units(shard.plan, run_id, batch_size, None, cache_path)
