"""Ingest throughput and peak memory on a generated 1,000,000-row jsonl.

    python bench/ingest.py [--rows 1000000] [--with-store]

Each measurement runs in a fresh child process so its peak RSS is its own. The baseline is the least
work any jsonl reader does: `json.loads` of every line; the ratio to it is what this machine's noise
does not change much.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks_md import section

BASELINE = """
import json, sys, time
t = time.perf_counter(); n = 0
with open(sys.argv[1], "rb") as fh:
    for line in fh:
        json.loads(line); n += 1
print(n, time.perf_counter() - t)
"""

INGEST = """
import sys, time
from judgeops.config import FileSource
from judgeops.tasks.ingest import ingest_items
t = time.perf_counter()
result = ingest_items([FileSource(path=sys.argv[1])])
elapsed = time.perf_counter() - t
if sys.argv[2] == "store":
    from judgeops.schemas.store import ArtifactStore
    store = ArtifactStore(sys.argv[3], "bench")
    t2 = time.perf_counter()
    store.write("items", result.items, quarantine=result.quarantine)
    elapsed = time.perf_counter() - t
print(len(result.items) + len(result.quarantine), elapsed)
"""


def make_file(path: Path, rows: int) -> None:
    rng = random.Random(0)
    words = ["apples", "trains", "litres", "dose", "permit", "river", "voltage", "tenant", "speed", "seeds"]
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(rows):
            q = f"Question {i}: how many {rng.choice(words)} are there if {rng.randint(1, 999)} {rng.choice(words)} arrive?"
            fh.write(json.dumps({"question": q, "answer": str(rng.randint(1, 10_000))}) + "\n")


def child(code: str, *args: str) -> tuple[int, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    n, seconds = out.stdout.split()
    return int(n), float(seconds), peak_mb if peak_mb > before / 1024 else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument(
        "--with-store", action="store_true", help="also write items through the store (schema + contract)"
    )
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        t = time.perf_counter()
        make_file(path, args.rows)
        size_mb = path.stat().st_size / 1e6
        print(
            f"generated {args.rows:,} rows ({size_mb:.0f} MB) in {time.perf_counter() - t:.1f}s",
            file=sys.stderr,
        )
        rows = [("json.loads per line (baseline)", *child(BASELINE, str(path)))]
        rows.append(("ingest_items (parse, normalise, ids, dedupe)", *child(INGEST, str(path), "pure", "")))
        if args.with_store:
            rows.append(
                (
                    "ingest_items + store.write (schema, GX contract, Parquet)",
                    *child(INGEST, str(path), "store", str(Path(tmp) / "store")),
                )
            )
    with section("bench/ingest.py", args.write, prefix=""):
        print(
            f"A generated {args.rows:,}-row jsonl ({size_mb:.0f} MB); each step in a fresh child process.\n"
        )
        table_of(rows)


def table_of(rows) -> None:
    base = rows[0][1] / rows[0][2]
    print("| step | rows | seconds | rows/s | vs baseline | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for name, n, seconds, peak in rows:
        print(
            f"| {name} | {n:,} | {seconds:.1f} | {n / seconds:,.0f} | {n / seconds / base:.2f} | {peak:.0f} |"
        )
    _, n, seconds, peak = rows[1]
    worst = max(r[3] for r in rows)
    print(
        f"\nTargets (> 100,000 rows/s and < 1 GB peak for ingestion): {n / seconds:,.0f} rows/s, "
        f"{peak:.0f} MB; the largest peak of any step {worst:.0f} MB."
    )


if __name__ == "__main__":
    main()
