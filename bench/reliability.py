"""Run the reliability suite (tests/reliability/) and write its figures into RELIABILITY.md.

    python bench/reliability.py [--out RELIABILITY.md] [--beside "N CPU hogs"] [-- extra pytest arguments]
    python bench/reliability.py --figures FILE --command "..." [--loads FILE] [--beside "..."]

`--beside` names other work run beside the suite on purpose (a busy machine: the promises hold under load, not
only on an idle machine); it is written into the header with the load averages seen during the run.

Each test asserts its promise and reports one measured figure through the `figure` fixture; this script
collects them (JUDGEOPS_FIGURES), and writes one table row per figure: the fault, the promise, the figure and
the command that reproduces it. A test that fails or is skipped is listed under the table with its reason,
never silently dropped.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEADER = """# Reliability: what judgeops promises when things break, measured

Every row is one fault injected by a test in `tests/reliability/`, the promise that test asserts, and the
figure it measured on this run. The suite runs in `.ci/run` (it is part of the README's test command);
`python bench/reliability.py` reruns it and rewrites this file. Faults are real where the machine allows:
real processes killed with SIGKILL, a real HTTP server (tests/openai_server.py) misbehaving on the wire, a
real tmpfs filled up or remounted read-only, real concurrent processes on one store and one SQLite cache.

Generated {date} by {command} on {machine}{beside}.

| fault | promise | figure | reproduce |
|---|---|---|---|
"""


# one row from outside tests/reliability: two workers on the default server need its deployments' fixture
TWO_WORKERS = "tests/test_deploy_e2e.py::test_backfill_runs_each_week_in_order_then_skips_them"


def run_suite(extra: list[str]) -> tuple[list[dict], list[str], list[float], int]:
    """Run the reliability tests: (their figures, the tests not passing with why, the load averages seen once a
    minute, pytest's exit code)."""
    with tempfile.TemporaryDirectory() as tmp:
        figures, junit = Path(tmp) / "figures.jsonl", Path(tmp) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/reliability",
            TWO_WORKERS,
            f"--junitxml={junit}",
            *extra,
        ]
        suite = subprocess.Popen(command, cwd=ROOT, env={**os.environ, "JUDGEOPS_FIGURES": str(figures)})
        loads = []  # the 1-minute load average, once a minute: how busy the machine was
        while True:
            try:
                suite.wait(timeout=60)
                break
            except subprocess.TimeoutExpired:
                loads.append(os.getloadavg()[0])
        rows = [json.loads(line) for line in figures.read_text().splitlines()] if figures.exists() else []
        problems = []
        if junit.exists():
            for case in ET.parse(junit).getroot().iter("testcase"):
                for kind in ("failure", "error", "skipped"):
                    node = case.find(kind)
                    if node is not None:
                        name = f"{case.get('classname')}.{case.get('name')}"
                        problems.append(
                            f"- {kind}: `{name}`: {(node.get('message') or '').splitlines()[0][:200]}"
                        )
    return rows, problems, loads, suite.returncode


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=str(ROOT / "RELIABILITY.md"))
    parser.add_argument("--beside", help="other work run beside the suite on purpose (named in the header)")
    parser.add_argument(
        "--figures",
        help="build the table from figures a run already recorded (JUDGEOPS_FIGURES=FILE .ci/run, every test "
        "passing) instead of running the suite; --command names that run, --loads a file of its load averages",
    )
    parser.add_argument("--command", help="with --figures: the command that recorded them")
    parser.add_argument("--loads", help="with --figures: a file of load averages, one per line")
    args, extra = parser.parse_known_args()
    extra = [a for a in extra if a != "--"]
    if args.figures:
        rows = [json.loads(line) for line in Path(args.figures).read_text().splitlines()]
        rows = [r for r in rows if r["test"].startswith("tests/reliability/") or r["test"] == TWO_WORKERS]
        loads = [float(x) for x in Path(args.loads).read_text().split()] if args.loads else []
        problems, returncode = [], 0
        source = f"`{args.command}`" if args.command else args.figures
        command_line = f"`python bench/reliability.py --figures` from the figures recorded by {source}"
    else:
        rows, problems, loads, returncode = run_suite(extra)
        command_line = "python bench/reliability.py" + (f' --beside "{args.beside}"' if args.beside else "")
        command_line += " -- " + " ".join(extra) if extra else ""
        command_line = f"`{command_line}`"
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    beside = ""
    if args.beside:
        median = sorted(loads)[len(loads) // 2] if loads else 0.0
        seen = f", load average {min(loads):.1f}–{max(loads):.1f} (median {median:.1f})" if loads else ""
        beside = f", beside {args.beside}{seen}"
    text = HEADER.format(
        date=dt.date.today().isoformat(), command=command_line, machine=machine, beside=beside
    )
    for r in sorted(rows, key=lambda r: r["test"]):  # by test file: the order the workers finished is noise
        test = r["test"].replace("|", "\\|")
        text += f'| {r["fault"]} | {r["promise"]} | {r["figure"]} | `python -m pytest "{test}"` |\n'
    if problems:
        text += "\nNot measured on this run (the suite says why):\n\n" + "\n".join(problems) + "\n"
    Path(args.out).write_text(text + FOOTER)
    print(f"{len(rows)} figures, {len(problems)} tests not passing → {args.out}")
    return returncode


FOOTER = """
## What the figures rest on

- **Crash and resume.** Each run record names its owner process (host, pid, start time) and carries a
  heartbeat; every flow start and `judgeops store ls` sweep runs whose owner is gone: status `crashed`, temp
  files removed, the temporary Prefect server stopped, the Prefect flow run set Crashed
  (`schemas/liveness.py`, `ArtifactStore.sweep_crashed`). Judge calls are committed to the call cache one
  chunk at a time, so a rerun repays at most the chunk in flight.
- **Writes.** Every artifact is written to a temp name and renamed; a failed write removes its temp file and
  raises one line naming the artifact and the path (`StoreWriteError`); manifests are written last, so a
  reader never sees an artifact without its data, and every read checks the data's sha256.
- **Reuse.** A stage reuses an earlier run's outputs only if every one of them is present, matches its hash
  (index and manifest) and has the current schema version; otherwise that stage is computed again and the
  stages after it reuse whatever did not change.
- **Judge calls.** Retries with jittered exponential backoff on 5xx, timeouts and dropped connections; a 429
  with Retry-After pauses the whole batch for that long and does not spend a retry (`rate_limit_wait_s`); a
  circuit breaker stops a batch after `breaker_failures` calls fail in a row. `coverage` counts every
  expected call as answered, tie, unparsable, or an error of one named cause (its contract checks the sum).
- **Concurrency.** Runs sharing a call cache claim the keys they miss before calling; a key another live run
  holds is waited for in the cache. A dead claimant's keys are taken over (same host: its pid is gone;
  another host: not refreshed for 10 minutes).
- **Inputs.** Every row read is an item or a quarantine row with file, line, field and reason.
- **Secrets.** Keys come only from an environment variable or a Prefect Secret block, go only into the
  Authorization header, and are redacted from anything a server echoes; the config refuses inline keys
  without printing them.
- **Signals.** SIGINT and SIGTERM end a run command as cancelled, with one line and exit 128 + the signal;
  the temporary Prefect server is started in its own session and stopped. Each signal is also noted
  (`schemas/liveness.py`): an engine that swallows or replaces the exception a signal raises (Prefect's task
  engine interrupted while it sets up a task run answers "Task run is not set") cannot make the run go on —
  no artifact is written after a signal, and the exit reads the note.
- **The doors.** The fuzz rows (`fuzz: …`) feed every command and option that takes a name, a path, a number or
  a file, the config loader and the readers with generated hostile values (hypothesis, derandomized; the count
  per entry point is the row's figure, `JUDGEOPS_FUZZ_CASES=N` for more): exit 1 or 2 with one message and no
  traceback, never 0 on garbage, nothing read under a planted folder beside the working tree and nothing
  written in it (`tests/reliability/test_fuzz_entry_points.py`).
"""


if __name__ == "__main__":
    sys.exit(main())
