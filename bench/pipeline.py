"""Wall time of the README's main command, cold (fresh Prefect home, empty store) then warm (rerun).

    python bench/pipeline.py [--items N] [--write]

Runs `judgeops run` twice as subprocesses in a temporary directory and prints markdown tables (with `--write`,
also into BENCHMARKS.md): the wall times, and the default run's position-averaged accuracy per judge.
The warm run should reuse every stage; its time is mostly Prefect's ephemeral API start-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks_md import write_section

from judgeops.schemas.store import ArtifactStore

JUDGEOPS = str(Path(sys.executable).parent / "judgeops")


def timed_run(cwd: Path, env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [JUDGEOPS, "run", "--as-of", "2026-11-23"], cwd=cwd, env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(out.stdout[-3000:] + out.stderr[-3000:])
    return elapsed, out.stdout + out.stderr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=None, help="bank items (default: the embedded default)")
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        env = {**os.environ, "PREFECT_HOME": str(cwd / "prefect-home")}
        env.pop("PREFECT_API_URL", None)
        if args.items:
            (cwd / "judgeops.yaml").write_text(
                f"sources:\n  - kind: builtin_bank\n    n_items: {args.items}\n"
            )
        cold, log_cold = timed_run(cwd, env)
        warm, log_warm = timed_run(cwd, env)
        store = ArtifactStore(str(cwd / ".judgeops" / "store"))
        profiles = store.read_pandas("profiles", store.latest_run_id())
    reused = len(re.findall(r"stage \w+: reused", log_warm))
    computed = len(re.findall(r"stage \w+: computing", log_warm))
    stages = len(re.findall(r"stage \w+: computing", log_cold))
    rows = re.search(r"wrote verdicts \((\d+) rows\)", log_cold)
    out = [
        f"`python bench/pipeline.py{f' --items {args.items}' if args.items else ''}`, measured {dt.date.today()}:",
        "",
        "| run | wall s | stages reused | stages computed |",
        "|---|---|---|---|",
        f"| cold (fresh PREFECT_HOME, empty store and call cache) | {cold:.1f} | 0 | {stages} |",
        f"| warm (same command again) | {warm:.1f} | {reused} | {computed} |",
        "",
        f"warm / cold = {warm / cold:.2f}; verdicts written: {rows.group(1) if rows else '?'}.",
        "",
        "Position-averaged accuracy on the default run (judgerEva; deterministic for the default seeds).",
        "`panel:*` are the label-free aggregates of the five judges (SmolLM2 votes only on its 8 pairs):",
        "",
    ]
    judgereva = profiles[profiles["benchmark"] == "judgereva"]
    cells = judgereva.set_index(["judge_id", "condition"])["estimate"]
    conditions = [
        "overall",
        "C1_factual",
        "C2_logical",
        "C3_overclaim",
        "C4_omission",
        "order_AB",
        "order_BA",
    ]
    conditions.append("C7_position")
    out += ["| judge | " + " | ".join(conditions) + " |", "|---" * (len(conditions) + 1) + "|"]
    for judge in cells.xs("overall", level="condition").sort_values(ascending=False).index:
        row = [f"{cells[(judge, c)]:.3f}" if (judge, c) in cells.index else "–" for c in conditions]
        out.append(f"| {judge} | " + " | ".join(row) + " |")
    text = "\n".join(out)
    print(text)
    if args.write:
        write_section("bench/pipeline.py", text)


if __name__ == "__main__":
    main()
