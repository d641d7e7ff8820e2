"""Scale-out, measured: N pairs (6 displayed variants each) × a 12-judge panel through
judge → validate → aggregate → profile, each stage in its own process; the judge stage on the thread pool and
on Dask with 1 and 2 workers.

    python bench/scale.py [--pairs 100000] [--stub-pairs 500] [--latency-ms 50] [--stub-concurrency 8]
                          [--runners threads,dask1,dask2] [--work DIR] [--write]

The panel: 8 programmatic judges (4 built-in checks × pairwise/pointwise) on every variant, and 4
OpenAI-protocol judges served by the test stub (tests/openai_server.py) with a fixed latency and a bounded
concurrency (`--max-concurrency`: its ceiling is concurrency / latency calls per second), each on a fixed
sample of `--stub-pairs` pairs (`max_pairs`; on 2 cores, the OpenAI SDK's ~4 ms of CPU per call makes
600,000 calls per judge a matter of hours). Items: a procedural GSM8K-format file written here (three
templates of multi-step arithmetic with a condition, a relation and a hedge, so every error type applies).

Measured per stage: wall time; peak resident memory of the stage's own process, of its largest child (Dask
worker, Prefect's ephemeral server) and of the whole process tree (psutil, sampled every 0.2 s); store
bytes. Per runner: the judge stage's wall and its per-shard costs (from the shards' log lines), and the
stub judges' throughput against the stub's ceiling. From those, a linear projection to 10 and 100 workers.
Last, aggregate and profile once more in one process, one after the other, as `judgeops run` runs them: the
peak memory the 4 GB target is about.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the OpenAI-protocol stub the backend tests use

AS_OF = dt.date(2026, 11, 30)
STAGES = ("ingest", "construct", "judge", "validate", "aggregate", "profile")
BOTH = "aggregate+profile"  # a child that computes the two stages in one process
PROGRAMMATIC = ("reference_match", "numeric_consistency", "length_preference", "hedge_preference")

# --- the items -----------------------------------------------------------------------------------------------
NAMES = ("Ava", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Kemal", "Lena")
THINGS = (
    ("apples", "box"),
    ("pencils", "pack"),
    ("stickers", "sheet"),
    ("cookies", "tray"),
    ("marbles", "bag"),
)


def _item(rng: random.Random) -> dict:
    name, (thing, unit) = rng.choice(NAMES), rng.choice(THINGS)
    a, b, c = rng.randint(5, 90), rng.randint(2, 12), rng.randint(3, 25)
    d, kind = rng.randint(1, min(20, b * c - 1)), rng.randrange(3)
    if kind == 0:
        q = (
            f"{name} has {a} {thing}. {name} buys {b} {unit}s with {c} {thing} in each {unit}, then gives "
            f"away {d}. How many {thing} does {name} have now?"
        )
        steps = [
            f"{name} buys {b} * {c} = <<{b}*{c}={b * c}>>{b * c} {thing}.",
            f"With the {a} already there that is {a} + {b * c} = <<{a}+{b * c}={a + b * c}>>{a + b * c} {thing}.",
            f"After giving away {d}, {name} has {a + b * c} - {d} = <<{a + b * c}-{d}={a + b * c - d}>>"
            f"{a + b * c - d} {thing}.",
        ]
        final = a + b * c - d
    elif kind == 1:
        q = (
            f"A {unit} holds {c} {thing}. {name} fills {b} of them and has {d} {thing} left over. How many "
            f"{thing} did {name} start with?"
        )
        steps = [
            f"The full {unit}s hold {b} * {c} = <<{b}*{c}={b * c}>>{b * c} {thing}.",
            f"Adding the {d} left over gives {b * c} + {d} = <<{b * c}+{d}={b * c + d}>>{b * c + d} {thing}.",
        ]
        final = b * c + d
    else:
        p = rng.randint(2, 9)
        q = (
            f"{name} sells {thing} for ${p} each. On Monday {name} sells {a} and on Tuesday {c} more than on "
            f"Monday. How many dollars does {name} make over the two days?"
        )
        steps = [
            f"On Tuesday {name} sells {a} + {c} = <<{a}+{c}={a + c}>>{a + c} {thing}.",
            f"Over both days that is {a} + {a + c} = <<{a}+{a + c}={2 * a + c}>>{2 * a + c} {thing}.",
            f"At ${p} each, {name} makes {2 * a + c} * {p} = <<{2 * a + c}*{p}={(2 * a + c) * p}>>"
            f"{(2 * a + c) * p} dollars.",
        ]
        final = (2 * a + c) * p
    notes = [
        f"This assumes every {unit} is counted once.",
        f"The total is more than the {b} {unit}s alone.",
        f"{name} can check it by counting again.",
    ]
    rng.shuffle(notes)
    return {"question": q, "answer": "\n".join(steps) + "\n" + " ".join(notes) + f"\n#### {final}"}


def write_items(path: Path, n: int, seed: int = 0) -> None:
    """n distinct procedural GSM8K-format items (question, answer with '#### final')."""
    rng, seen = random.Random(seed), set()
    with path.open("w") as f:
        while len(seen) < n:
            item = _item(rng)
            if item["question"] not in seen:
                seen.add(item["question"])
                f.write(json.dumps(item) + "\n")


# --- the configuration -------------------------------------------------------------------------------------------
def config_for(args, work: Path, stub_url: str) -> dict:
    judges = [
        {"name": f"{model}-{protocol}", "model": model, "protocol": protocol}
        for protocol in ("pairwise", "pointwise")
        for model in PROGRAMMATIC
    ]
    judges += [
        {
            "name": f"stub-{i}",
            "backend": "openai",
            "model": f"stub-{i}",
            "base_url": stub_url,
            "api_key_env": "JUDGEOPS_BENCH_STUB_KEY",
            "max_concurrency": args.judge_concurrency or args.stub_concurrency,
            "max_pairs": args.stub_pairs,
        }
        for i in range(1, 5)
    ]
    return {
        "sources": [{"kind": "file", "path": str(work / "items.jsonl"), "format": "gsm8k"}],
        "judges": judges,
        "store": {"url": str(work / "store")},
        "cache": {"path": str(work / "cache.sqlite")},
    }


RUNNERS = {
    "inline": {"runner": "inline"},
    "threads": {"runner": "threads", "max_workers": 4},
    "dask1": {"runner": "dask", "dask_workers": 1},
    "dask2": {"runner": "dask", "dask_workers": 2},
}


# --- one stage in this process (the child) ---------------------------------------------------------------------
def run_stage_here(
    work: Path, name: str, runner: str, cache: str | None, fresh: bool, stub_only: bool
) -> None:
    """Stages before `name` are reused from the store (computed by earlier children); `name` is computed
    (`fresh`) or reused too. `name` may join stages with "+": each is computed, one after the other, and the
    wall is theirs together. `stub_only`: the panel's OpenAI-protocol judges alone."""
    from judgeops.config import EvaluateConfig
    from judgeops.schemas.store import ArtifactStore, new_run_id
    from judgeops.tasks import stages as s

    raw = json.loads((work / "config.json").read_text())
    raw["sharding"] = RUNNERS[runner]
    if cache:
        raw["cache"] = {"path": cache}
    if stub_only:
        raw["judges"] = [j for j in raw["judges"] if j.get("backend") == "openai"]
    config = EvaluateConfig.model_validate(raw)
    store = ArtifactStore(config.store.url, new_run_id(AS_OF))
    cache_path = config.cache.path

    names = name.split("+")

    def reuse(stage: str) -> bool:
        return not (fresh and stage in names)

    steps = {
        "ingest": lambda a: s.ingest_stage.fn(store, config, AS_OF, reuse("ingest")),
        "construct": lambda a: s.construct_stage.fn(
            store, a, config.construction, reuse("construct"), cache_path
        ),
        "judge": lambda a: s.judge_stage.fn(
            store,
            a,
            config.judges,
            config.batch_size,
            reuse("judge"),
            cache_path,
            config.cost,
            config.sharding,
            config.stages,
        ),
        "validate": lambda a: s.validate_stage.fn(store, a, config.judges, reuse("validate")),
        "aggregate": lambda a: s.aggregate_stage.fn(store, a, config.aggregation, reuse("aggregate")),
        "profile": lambda a: s.profile_stage.fn(store, a, config.profile, config.judges, reuse("profile")),
    }
    artifacts: dict = {}
    for stage in STAGES:
        if stage == names[0]:
            t0 = time.perf_counter()
        artifacts |= steps[stage](artifacts)
        if stage == names[-1]:
            rows = {n: r.rows for n, r in artifacts.items()}
            print("RESULT " + json.dumps({"wall_s": time.perf_counter() - t0, "rows": rows}), flush=True)
            return


# --- the parent: children, watched ------------------------------------------------------------------------------
class TreeMemory:
    """Peak resident memory of a process and of each of its descendants, sampled every 0.2 s (psutil)."""

    def __init__(self, pid: int):
        import psutil

        self.root, self.peaks, self.tree_peak, self.kinds = psutil.Process(pid), {}, 0, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        import psutil

        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            total = 0
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    if p.pid not in self.kinds:
                        self.kinds[p.pid] = _kind(p, self.root)
                except psutil.Error:
                    continue
                self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), rss)
                total += rss
            self.tree_peak = max(self.tree_peak, total)
            self._stop.wait(0.2)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        mb = 1 / 2**20
        own = self.peaks.get(self.root.pid, 0)
        by_kind: dict[str, int] = {}
        for pid, peak in self.peaks.items():
            if pid != self.root.pid:
                kind = self.kinds.get(pid, "other")
                by_kind[kind] = max(by_kind.get(kind, 0), peak)
        return {"stage_mb": own * mb, "tree_mb": self.tree_peak * mb} | {
            f"{k}_mb": v * mb for k, v in by_kind.items()
        }


def _kind(p, root) -> str:
    cmd = " ".join(p.cmdline())
    if "prefect" in cmd and "server" in cmd:
        return "prefect_server"
    if "multiprocessing" in cmd or "distributed" in cmd:
        return "worker"
    return "other"


def child(
    work: Path, name: str, env: dict, runner="inline", cache=None, fresh=False, stub_only=False
) -> dict:
    """Run stage `name` in a child process (see run_stage_here), watching its memory."""
    cmd = [sys.executable, __file__, "--child", name, "--work", str(work), "--runner", runner]
    cmd += (["--cache", cache] if cache else []) + (["--fresh"] if fresh else [])
    cmd += ["--stub-only"] if stub_only else []
    log = work / f"{name}-{runner}{'-stub' if stub_only else ''}.log"
    t0 = time.perf_counter()
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        memory = TreeMemory(proc.pid)
        out, _ = proc.communicate()
    peaks = memory.stop()
    if proc.returncode != 0:
        raise SystemExit(f"stage {name} failed; its log: {log}\n" + log.read_text()[-4000:])
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
    shards = [
        (int(m[1]), float(m[2]), float(m[3]))
        for m in re.finditer(
            r"judge shard \w+: (\d+) units of \S+ judged in ([\d.]+) s, saved in ([\d.]+) s", log.read_text()
        )
    ]
    return result | peaks | {"process_s": time.perf_counter() - t0, "shards": shards}


def store_bytes(store: Path) -> dict[str, int]:
    """Bytes in the store by artifact name (every run's copy), and in all."""
    sizes: dict[str, int] = {}
    for f in store.rglob("*"):
        if f.is_file():
            key = f.name.split(".")[0] if f.suffix == ".parquet" else "other"
            sizes[key] = sizes.get(key, 0) + f.stat().st_size
    sizes["total"] = sum(sizes.values())
    return sizes


def stub_throughput(stub_log: Path, since: float) -> tuple[int, float]:
    """(calls answered since `since`, their sustained rate: calls over the span from first to last)."""
    times = sorted(
        e["t"]
        for e in map(json.loads, stub_log.read_text().splitlines())
        if e["t"] >= since and e["status"] == 200
    )
    if len(times) < 2:
        return len(times), float("nan")
    return len(times), (len(times) - 1) / (times[-1] - times[0])


def bare_client_rate(url: str, calls: int, in_flight: int, stub_log: Path) -> float:
    """The stub's attainable rate: `calls` small chat completions from a bare asyncio httpx client keeping
    `in_flight` requests open (no SDK, no parsing beyond the status), measured from the stub's log as the judges'
    rate is. The stub's own per-request work inside a slot makes this a little below concurrency / latency."""
    import asyncio

    import httpx

    body = {"model": "bare", "messages": [{"role": "user", "content": "Answer A or B."}], "max_tokens": 1}

    async def run() -> None:
        gate = asyncio.Semaphore(in_flight)
        limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

            async def one() -> None:
                async with gate:
                    (await client.post("/chat/completions", json=body)).raise_for_status()

            await asyncio.gather(*(one() for _ in range(calls)))

    since = time.time()
    asyncio.run(run())
    return stub_throughput(stub_log, since)[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument(
        "--stub-pairs", type=int, default=500, help="pairs each stub judge judges (max_pairs)"
    )
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--stub-concurrency", type=int, default=8, help="requests the stub answers at once")
    parser.add_argument(
        "--judge-concurrency",
        type=int,
        default=None,
        help="each stub judge's max_concurrency (default: the stub's)",
    )
    parser.add_argument(
        "--stub-http",
        choices=("1.0", "1.1"),
        default="1.1",
        help="1.1: the stub keeps connections open between requests, as the providers do; 1.0: one per request",
    )
    parser.add_argument(
        "--throughput-only",
        action="store_true",
        help="the stub judges' throughput alone: no whole panel, no later stages",
    )
    parser.add_argument("--runners", default="threads,dask1,dask2")
    parser.add_argument("--work", type=Path, default=None, help="keep the store and logs here")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--child", choices=(*STAGES, BOTH), help=argparse.SUPPRESS)
    parser.add_argument("--runner", default="inline", help=argparse.SUPPRESS)
    parser.add_argument("--cache", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stub-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_stage_here(args.work, args.child, args.runner, args.cache, args.fresh, args.stub_only)
    work = args.work or Path(tempfile.mkdtemp(prefix="judgeops-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    measure(args, work)


def measure(args, work: Path) -> None:
    from benchmarks_md import section
    from openai_server import ServerProcess

    runners = args.runners.split(",")
    env = {
        **os.environ,
        "PREFECT_HOME": str(work / "prefect-home"),
        "JUDGEOPS_BENCH_STUB_KEY": "sk-bench-stub",
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "GX_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    say = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731 (progress on stderr)
    stub_log = work / "stub.log"
    server = ServerProcess(
        stub_log,
        "--delay",
        str(args.latency_ms / 1000),
        "--max-concurrency",
        str(args.stub_concurrency),
        *(["--keep-alive"] if args.stub_http == "1.1" else []),
    )
    try:
        results: dict[str, dict] = {}
        bare = bare_client_rate(server.url, 1200, 4 * args.stub_concurrency, stub_log)
        say(f"bare client: {bare:.0f} calls/s")
        t0 = time.perf_counter()
        write_items(work / "items.jsonl", args.pairs)
        say(f"items: {args.pairs} in {time.perf_counter() - t0:.1f} s")
        (work / "config.json").write_text(json.dumps(config_for(args, work, server.url)))
        for name in ("ingest", "construct"):
            results[name] = child(work, name, env)
            say(name, _brief(results[name]))
        judge: dict[str, dict] = {}
        stub: dict[str, dict] = {}
        for runner in runners:  # the stub judges alone: their throughput against the stub's ceiling
            since = time.time()
            cache = str(work / f"cache-stub-{runner}.sqlite")
            stub[runner] = child(work, "judge", env, runner, cache, fresh=True, stub_only=True)
            stub[runner]["stub_calls"], stub[runner]["stub_rate"] = stub_throughput(stub_log, since)
            say(f"stub judges on {runner}", _brief(stub[runner]), f"{stub[runner]['stub_rate']:.0f} calls/s")
        if args.throughput_only:
            ceiling = args.stub_concurrency / (args.latency_ms / 1000)
            for runner, r in stub.items():
                print(
                    f"{runner}: {r['stub_calls']} calls, {r['stub_rate']:.1f} calls/s, {r['stub_rate'] / ceiling:.3f} "
                    f"of the ceiling, {r['stub_rate'] / bare:.3f} of the bare client ({bare:.1f} calls/s)"
                )
            return
        for runner in runners:  # the whole panel
            judge[runner] = child(
                work, "judge", env, runner, str(work / f"cache-{runner}.sqlite"), fresh=True
            )
            say(f"judge on {runner}", _brief(judge[runner]))
        results["judge"] = judge[runners[-1]]
        for name in ("validate", "aggregate", "profile"):
            results[name] = child(work, name, env)
            say(name, _brief(results[name]))
        results[BOTH] = child(work, BOTH, env, fresh=True)  # as `judgeops run` runs them
        say(BOTH, "in one process:", _brief(results[BOTH]))
        sizes = store_bytes(work / "store")
    finally:
        server.stop()
    key = "bench/scale.py" if len(runners) > 1 else f"bench/scale.py on {runners[0]}"
    with section("bench/scale.py", args.write, prefix="", key=key):
        report(args, results, judge, stub, sizes, bare)


def _brief(r: dict) -> str:
    return f"{r['wall_s']:.1f} s, stage process {r['stage_mb']:.0f} MB, tree {r['tree_mb']:.0f} MB"


def report(args, results: dict, judge: dict, stub: dict, sizes: dict, bare: float) -> None:
    ceiling = args.stub_concurrency / (args.latency_ms / 1000)
    rows = results["judge"]["rows"]
    print(
        f"{args.pairs:,} pairs → {rows.get('variants', 0):,} displayed variants; panel of 12: 8 programmatic "
        f"judges on every variant and 4 OpenAI-protocol stub judges on {args.stub_pairs} pairs each "
        f"(latency {args.latency_ms:g} ms, stub concurrency {args.stub_concurrency}: ceiling {ceiling:.0f} "
        f"calls/s; each stub judge's max_concurrency {args.judge_concurrency or args.stub_concurrency}); "
        f"{rows.get('verdicts', 0):,} verdicts.\n"
    )
    print("| stage | wall s | peak MB, stage process | peak MB, largest child | peak MB, process tree |")
    print("|---|---|---|---|---|")
    labels = {"judge": f"judge ({list(judge)[-1]})", BOTH: "aggregate + profile, one process"}
    for name in (*STAGES, BOTH):
        r = results[name]
        kids = max([v for k, v in r.items() if k.endswith("_mb") and k not in ("stage_mb", "tree_mb")] or [0])
        label = labels.get(name, name)
        print(f"| {label} | {r['wall_s']:.1f} | {r['stage_mb']:.0f} | {kids:.0f} | {r['tree_mb']:.0f} |")
    both = results[BOTH]
    print(
        f"\nPeak memory of aggregate + profile, computed one after the other in one process as `judgeops run` "
        f"computes them: {both['tree_mb']:,.0f} MB (target < 4,096)."
    )
    print(
        f"Store: {sizes['total'] / 2**20:,.0f} MiB in all, of which verdicts {sizes.get('verdicts', 0) / 2**20:,.0f} "
        f"MiB (one copy per judge-stage run above: {len(judge) + len(stub)})."
    )
    print("\nThe judge stage per task runner (shards of at most 2,000 units of one judge):\n")
    print(
        "| judge stage on | panel | wall s | shards | mean s per shard | stub calls | stub calls/s | ÷ ceiling "
        "| ÷ bare client |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for panel, table in (("12 judges", judge), ("4 stub judges", stub)):
        for runner, r in table.items():
            times = [t for _, t, _ in r["shards"]]
            mean = sum(times) / len(times) if times else float("nan")
            calls = r.get("stub_calls")
            rate = (
                f"{r['stub_rate']:.0f} | {r['stub_rate'] / ceiling:.2f} | {r['stub_rate'] / bare:.2f}"
                if calls
                else "– | – | –"
            )
            print(
                f"| {runner} | {panel} | {r['wall_s']:.1f} | {len(r['shards'])} | {mean:.2f} | "
                f"{calls if calls else '–'} | {rate} |"
            )
    print(
        "\nstub calls/s: answered calls over the span from the first to the last (the rate while the stage is "
        "calling; the stage's wall also holds its start-up and the write of `verdicts`). The bare client: "
        f"1,200 small completions from an asyncio httpx client keeping {4 * args.stub_concurrency} open, in the "
        f"same run: {bare:.0f} calls/s ({bare / ceiling:.2f} of the ceiling), what the stub serves a client "
        "that costs nothing."
    )
    project(args, results, judge, stub, ceiling)


def project(args, results: dict, judge: dict, stub: dict, ceiling: float) -> None:
    """wall(W) = F + S·c/W on Dask, with F (start-up, planning, the parent's concat and write) and c (one
    shard's cost on a worker, its task-run overhead included) solved from the 1- and 2-worker runs; the stub
    judges cannot go faster than the provider's ceiling; the other stages run on one node."""
    if not {"dask1", "dask2"} <= judge.keys():
        return
    w1, w2, n = judge["dask1"]["wall_s"], judge["dask2"]["wall_s"], len(judge["dask2"]["shards"])
    work = 2 * (w1 - w2)  # S·c
    fixed = w1 - work
    calls = stub["dask2"]["stub_calls"] if "dask2" in stub else 0
    stub_floor = calls / ceiling
    single = sum(results[s]["wall_s"] for s in ("ingest", "construct", "validate", "aggregate", "profile"))
    print(
        f"\nProjection (Dask): judge wall(W) = F + S·c/W, solved from the 1- and 2-worker runs: F = {fixed:.0f} s "
        f"(cluster and flow start-up, planning, reading the shards back and writing `verdicts`), S·c = "
        f"{work:.0f} s over {n} shards (c = {work / n:.2f} s per shard, task-run overhead included); the stub "
        f"judges' {calls} calls take at least {stub_floor:.0f} s at the provider's ceiling; "
        f"the other stages run on one node: {single:.0f} s.\n"
    )
    print("| workers | judge stage s | whole run s | judge share |")
    print("|---|---|---|---|")
    for w in (1, 2, 10, 100):
        j = max(fixed + work / w, stub_floor)
        print(f"| {w} | {j:.0f} | {j + single:.0f} | {j / (j + single):.0%} |")


if __name__ == "__main__":
    main()
