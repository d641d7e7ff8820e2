"""Wall time of the README's main command, cold (fresh Prefect home, empty store) then warm (rerun).

    python bench/pipeline.py [--items N]

Runs `judgeops run` twice as subprocesses in a temporary directory and prints a markdown table.
The warm run should reuse every stage; its time is mostly Prefect's ephemeral API start-up.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    rows = re.search(r"wrote verdicts \((\d+) rows\)", log_cold)
    print("| run | wall s | stages reused | stages computed |")
    print("|---|---|---|---|")
    print(f"| cold (fresh PREFECT_HOME, empty store) | {cold:.1f} | 0 | 6 |")
    print(f"| warm (same command again) | {warm:.1f} | {reused} | {computed} |")
    print(f"\nwarm / cold = {warm / cold:.2f}; verdicts written: {rows.group(1) if rows else '?'}\n")
    cells = profiles.set_index(["judge_id", "condition"])
    conditions = [
        "overall",
        "C1_factual",
        "C2_logical",
        "C3_overclaim",
        "C4_omission",
        "order_AB",
        "order_BA",
        "C7_position",
    ]
    print("| judge | " + " | ".join(conditions) + " |")
    print("|---" * (len(conditions) + 1) + "|")
    for judge in (
        cells.loc[(slice(None), "overall"), "estimate"].sort_values(ascending=False).index.get_level_values(0)
    ):
        row = [
            f"{cells.loc[(judge, c), 'estimate']:.3f}" if (judge, c) in cells.index else "–"
            for c in conditions
        ]
        print(f"| {judge} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
