"""One rate limit for a fleet (issue 31), on a real Prefect server (a temporary one, SQLite) and the OpenAI-protocol
test server enforcing requests per minute (429 + Retry-After beyond; tests/openai_server.py --rpm).

1. How slots are taken from a Prefect rate limit. Four processes take slots as fast as they are given for
   `--seconds`: one slot per request through `prefect.concurrency.asyncio.rate_limit` (Prefect's retry on its
   Retry-After), a quarter second's worth at a time through it, and judgeops' FleetBucket (chunks, hundredths of a
   request per slot, its own polling). Reported: requests granted per second / the limit's rate.
2. Four workers judging against one provider limit. Four processes each judge the same bank's 144 displayed
   variants with one OpenAI-protocol judge against one server allowing `--rpm`: each with its own per-process
   limit of `--rpm` (what a fleet had before: every worker takes the whole budget), and with one shared budget
   (`limit: {rpm}`, Prefect global concurrency limits). Reported: 429s / requests, and the served rate while all
   four were calling / the limit.

    taskset -c 0,1 .venv/bin/python bench/fleet_limit.py [--write]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
START, END = "<!-- bench/fleet_limit.py: start -->", "<!-- bench/fleet_limit.py: end -->"
PROCS = 4


async def take_slots(how: str, gcl: str, per_second: float, seconds: float) -> int:
    """Requests granted in `seconds` by one way of taking slots."""
    from prefect.concurrency.asyncio import rate_limit

    from judgeops.tasks.judges.backends.limits import SLOTS_PER_REQUEST, FleetBucket

    n, t0 = 0, time.monotonic()
    chunk = max(1, math.ceil(per_second / 4))
    scale = SLOTS_PER_REQUEST
    bucket = FleetBucket(gcl, scale * math.ceil(per_second), scale * per_second, scale=scale)
    while time.monotonic() - t0 < seconds:
        if how == "fleet":
            await bucket.take(1)
            n += 1
        else:
            occupy = 1 if how == "one" else chunk
            await rate_limit(gcl, occupy=occupy, strict=True)
            n += occupy
    bucket.cancel()
    return n


async def make_gcl(name: str, slots: int, decay: float) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate

    async with get_client() as client:
        await client.create_global_concurrency_limit(
            GlobalConcurrencyLimitCreate(name=name, limit=slots, slot_decay_per_second=decay)
        )


def judge_worker(name: str, url: str, rpm: float, shared: bool, folder: str) -> None:
    """One worker: the bank's variants through one OpenAI-protocol judge (its own call cache)."""
    from judgeops.config import BankSource, ConstructionConfig, JudgeConfig, LimitConfig
    from judgeops.tasks.construct import construct
    from judgeops.tasks.ingest import ingest_items
    from judgeops.tasks.judges import judge_variants

    items = ingest_items([BankSource(n_items=24, seed=3)]).items
    built = construct(items, ConstructionConfig())
    budget = {"limit": LimitConfig(name="bench-acct", rpm=rpm)} if shared else {"requests_per_minute": rpm}
    judge = JudgeConfig(
        name="h",
        backend="openai",
        model="m",
        base_url=url,
        max_concurrency=8,
        extra_headers={"x-judgeops-worker": name},
        **budget,
    )
    judge_variants(
        built["variants"], built["pairs"], items, [judge], "r", 500, cache_path=f"{folder}/{name}.sqlite"
    )


def workers(rpm: float, shared: bool, env: dict) -> dict:
    from tests import openai_server

    folder = tempfile.mkdtemp(prefix="judgeops-fleet-")
    server = openai_server.ServerProcess(Path(folder) / "log.jsonl", "--rpm", str(rpm), "--burst-s", "2")
    code = "import sys; from bench.fleet_limit import judge_worker as w; w(*sys.argv[1:3], float(sys.argv[3]), sys.argv[4] == '1', sys.argv[5])"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, f"w{i}", server.url, str(rpm), "1" if shared else "0", folder],
            env=env,
            cwd=ROOT,
        )
        for i in range(PROCS)
    ]
    for p in procs:
        assert p.wait() == 0
    entries = server.entries()
    server.stop()
    ok = [e for e in entries if e["status"] == 200]
    by = {}
    for e in ok:
        by.setdefault(e["headers"]["x-judgeops-worker"], []).append(e["t"])
    start, end = max(min(t) for t in by.values()), min(max(t) for t in by.values())
    together = sum(start <= e["t"] <= end for e in ok)
    return {
        "requests": len(entries),
        "refused": len(entries) - len(ok),
        "rate": (together - 1) / (end - start) * 60 / rpm if end > start else float("nan"),
        "window": end - start,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--per-second", type=float, default=20.0, help="part 1: the rate limit's requests a second"
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="part 1: how long each way takes slots")
    parser.add_argument("--rpm", type=float, default=1200.0, help="part 2: the provider's requests a minute")
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    from prefect.settings import PREFECT_API_URL
    from prefect.testing.utilities import prefect_test_harness

    from judgeops.tasks.judges.backends.limits import SLOTS_PER_REQUEST

    rows1, rows2 = [], []
    with prefect_test_harness(server_startup_timeout=120):
        env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(ROOT)}
        for how, label in (
            ("one", "`rate_limit`, one slot per request"),
            ("chunk", "`rate_limit`, a quarter second's requests at once"),
            ("fleet", "judgeops FleetBucket (chunks, 1/100-request slots, own polling)"),
        ):
            gcl = f"bench-{how}"
            scale = SLOTS_PER_REQUEST if how == "fleet" else 1
            asyncio.run(make_gcl(gcl, scale * math.ceil(args.per_second), scale * args.per_second))
            code = (
                "import asyncio, sys; from bench.fleet_limit import take_slots as t; "
                "print(asyncio.run(t(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))))"
            )
            cmd = [sys.executable, "-c", code, how, gcl, str(args.per_second), str(args.seconds)]
            procs = [
                subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
                for _ in range(PROCS)
            ]
            granted = sum(int(p.communicate()[0].split()[-1]) for p in procs)
            burst = math.ceil(args.per_second)
            ratio = (granted - burst) / args.seconds / args.per_second
            rows1.append((label, granted, ratio))
            print(f"{label}: {granted} granted, {ratio:.2f} × the limit", file=sys.stderr, flush=True)
        for shared, label in (
            (False, "each worker its own limit of the rpm"),
            (True, "one shared budget (`limit`)"),
        ):
            got = workers(args.rpm, shared, env)
            rows2.append((label, got))
            print(f"{label}: {json.dumps(got)}", file=sys.stderr, flush=True)
    lines = [
        START,
        f"Command: `taskset -c 0,1 python bench/fleet_limit.py` ({dt.date.today().isoformat()}; a temporary Prefect "
        "server on SQLite, 2 cores).",
        "",
        f"Taking slots from one Prefect rate limit of {args.per_second:g} requests a second, {PROCS} processes for "
        f"{args.seconds:g} s each:",
        "",
        "| how | requests granted | granted rate / limit (first second's burst excluded) |",
        "|---|---|---|",
        *[f"| {label} | {n} | {r:.2f} |" for label, n, r in rows1],
        "",
        f"{PROCS} workers each judging 144 variants against one server allowing {args.rpm:g} requests a minute "
        "(2 seconds' burst; 429 + Retry-After beyond):",
        "",
        "| budget | requests sent | 429s | served rate while all called / limit |",
        "|---|---|---|---|",
        *[
            f"| {label} | {g['requests']} | {g['refused']} ({g['refused'] / g['requests']:.1%}) | {g['rate']:.2f} |"
            for label, g in rows2
        ],
        END,
    ]
    print("\n".join(lines))
    if args.write:
        from benchmarks_md import write_section  # beside this script

        write_section("bench/fleet_limit.py", "\n".join(lines[1:-1]))


if __name__ == "__main__":
    main()
