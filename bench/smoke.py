"""`judgeops run --limit 10`, the README's smoke run: how long it takes warm, with the fixed samples scaled down with
the items (config.scaled_to_limit: SmolLM2's pairs and the injection probe at most limit // 5) against the same run
with them at their configured size (8 pairs each), in one process, one after the other, on fresh stores and call
caches (every judge call paid). The SmolLM2 weights are loaded once before either is timed ("warm").

    taskset -c 0,1 .venv/bin/python bench/smoke.py [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

from benchmarks_md import write_section

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- bench/smoke.py: start -->", "<!-- bench/smoke.py: end -->"


def run(limit: int, scaled: bool) -> tuple[float, dict]:
    """Seconds of `api.evaluate(limit=...)` on a fresh store and cache; the calls each judge made."""
    import judgeops.flows.evaluate as flow
    from judgeops import api
    from judgeops.config import EvaluateConfig, scaled_to_limit

    flow.scaled_to_limit = scaled_to_limit if scaled else (lambda config: config)
    folder = Path(tempfile.mkdtemp(prefix="judgeops-smoke-"))
    config = EvaluateConfig()
    config.store.url, config.cache.path = str(folder / "store"), str(folder / "calls.sqlite")
    t0 = time.perf_counter()
    done = api.evaluate(config, as_of=dt.date(2026, 11, 30), limit=limit)
    seconds = time.perf_counter() - t0
    coverage = done.load("coverage").set_index("judge_id")["n_expected"].to_dict()
    return seconds, coverage


def command(limit: int, repeats: int = 3) -> tuple[float, list[float]]:
    """Wall seconds of the command itself, `judgeops run --limit N`, each in a fresh folder: imports, Prefect's
    temporary server and its shutdown included, after one run that sets up the shared PREFECT_HOME (warm). The
    median of `repeats` runs, and every run's (this machine is shared: one run can be off by seconds)."""
    import os
    import statistics
    import subprocess

    home = Path(tempfile.mkdtemp(prefix="judgeops-smoke-home-"))
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "DO_NOT_TRACK": "1",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    env.pop("PREFECT_API_URL", None)
    times = []
    for _ in range(1 + repeats):
        folder = Path(tempfile.mkdtemp(prefix="judgeops-smoke-cli-"))
        t0 = time.perf_counter()
        done = subprocess.run(
            [str(Path(sys.executable).with_name("judgeops")), "run", "--limit", str(limit)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr[-2000:]
    return statistics.median(times[1:]), times[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    from judgeops.config import LOCAL_DEFAULT_MODEL
    from judgeops.tasks.judges.backends.local import load
    from judgeops.tasks.judges.precision import local_precision

    load(
        LOCAL_DEFAULT_MODEL, local_precision("auto")
    )  # warm: the weights converted and loaded once, outside the timings
    run(args.limit, scaled=True)  # and Prefect's first start in this process
    rows = []
    for label, scaled in (
        ("fixed samples at their configured size (8 pairs)", False),
        ("scaled with the items", True),
    ):
        seconds, calls = run(args.limit, scaled)
        slow = {j: n for j, n in calls.items() if "smollm" in j.lower()}
        rows.append((label, seconds, slow))
        print(f"{label}: {seconds:.1f} s, SmolLM2 calls {slow}", file=sys.stderr, flush=True)
    before, after = rows[0][1], rows[1][1]
    cli, each = command(args.limit)
    print(f"the command: {cli:.1f} s ({each})", file=sys.stderr, flush=True)
    lines = [
        START,
        f"Command: `taskset -c 0,1 python bench/smoke.py --limit {args.limit}` ({dt.date.today().isoformat()}).",
        "",
        f"| `judgeops run --limit {args.limit}`, warm | seconds | SmolLM2 calls expected |",
        "|---|---|---|",
        *[
            f"| {label} | {s:.1f} | {', '.join(f'{k} {v}' for k, v in calls.items())} |"
            for label, s, calls in rows
        ],
        f"| ratio | {before / after:.2f}× faster | |",
        "",
        f"The command itself, `judgeops run --limit {args.limit}` in a fresh folder (scaled; Python's imports, Prefect's",
        "temporary server and its shutdown included; after a run that sets up their shared PREFECT_HOME): median",
        f"{cli:.1f} s of 3 runs ({', '.join(f'{t:.1f}' for t in each)} s).",
        END,
    ]
    print("\n".join(lines))
    if args.write:
        write_section("bench/smoke.py", "\n".join(lines[1:-1]))


if __name__ == "__main__":
    main()
