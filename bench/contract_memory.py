"""Memory of the referential row check (`variant_id references variants.variant_id`) on a verdicts-sized
table: the rule as it was (a message or "" for every row) against the rule now (the failing rows only), each
in a fresh child process, measured as peak resident memory above the process before the check (psutil,
sampled every 5 ms).

    python bench/contract_memory.py [--rows 4812000] [--variants 600000] [--write]

The default size is bench/scale.py's 100,000 pairs: 4,812,000 verdicts on 600,000 variants, the check the
judge stage's parent runs on `verdicts` before writing it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(rule: str, rows: int, n_variants: int) -> tuple[int, int]:
    """(peak MB above the process before the check, failing rows found), in this process."""
    import numpy as np
    import pandas as pd
    import psutil

    from judgeops.data_contracts.suites import _references

    variant = pd.Series([f"v{i % n_variants:07d}" for i in range(rows)], dtype="str")
    verdicts = pd.DataFrame({"variant_id": variant})
    variants = pd.DataFrame({"variant_id": variant.iloc[: n_variants - 1].unique()})  # one id unknown
    (check,) = _references("variant_id", "variants", "variant_id", {"variants": variants})
    values = pd.Index(variants["variant_id"])

    def before(df: pd.DataFrame) -> pd.Series:  # the rule until 2026-12-03
        known = df["variant_id"].isna() | df["variant_id"].isin(values)
        return pd.Series(np.where(known, "", "variant_id not in variants.variant_id"), index=df.index)

    problems = before if rule == "before" else check.problems
    proc, peak = psutil.Process(), [0]
    base = proc.memory_info().rss

    def watch() -> None:
        while True:
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.005)

    threading.Thread(target=watch, daemon=True).start()
    found = problems(verdicts)
    failing = found[found != ""]  # as data_contracts/contract.py reads it
    time.sleep(0.05)
    return (peak[0] - base) >> 20, len(failing)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=4_812_000)
    parser.add_argument("--variants", type=int, default=600_000)
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--child", choices=("before", "now"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(*measure(args.child, args.rows, args.variants))
        return
    sys.path.insert(0, str(ROOT / "bench"))
    from benchmarks_md import section

    out = {}
    for rule in ("before", "now"):
        cmd = [
            sys.executable,
            __file__,
            "--child",
            rule,
            "--rows",
            str(args.rows),
            "--variants",
            str(args.variants),
        ]
        mb, failing = map(int, subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split())
        out[rule] = (mb, failing)
    with section("bench/contract_memory.py", args.write, prefix=""):
        print(f"{args.rows:,} verdict rows on {args.variants:,} variants (one unknown).\n")
        print("| the referential rule | peak MB above the table | failing rows found |")
        print("|---|---|---|")
        print(f'| before: a message or "" per row | {out["before"][0]:,} | {out["before"][1]:,} |')
        print(f"| now: the failing rows only | {out['now'][0]:,} | {out['now'][1]:,} |")
        print(f"\nnow / before: {out['now'][0] / max(out['before'][0], 1):.2f}")


if __name__ == "__main__":
    main()
