"""A 12-week real-data drift run: weekly bank batches whose domain mix drifts, judged by the built-in
programmatic judges, then the calibration chain over the same weeks.

    python bench/drift_run.py [--weeks 12] [--items 60] [--store /tmp/drift-store]

Each week: `evaluate` on a fresh batch (math-heavy at first, legal/medical-heavy at the end: the programmatic
judges' error rates differ by domain), then `recalibrate` continuing the previous week (the first week starts
the chain). Prints per week the mix, each judge's disagreement FPR/FNR and the drift flags, and the wall time.
The flows run in this process (an ephemeral Prefect API), not through the deployment: the deployment path is
exercised by tests/test_deploy_e2e.py on two weeks.
"""

from __future__ import annotations

import argparse
import datetime as dt
import time

from benchmarks_md import section

from judgeops.config import BankDrift, BankSource, EvaluateConfig, StoreConfig
from judgeops.flows.evaluate import evaluate
from judgeops.flows.recalibrate import recalibrate
from judgeops.schemas.store import ArtifactStore

START = dt.date(2026, 11, 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--weeks", type=int, default=12)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--store", default="/tmp/judgeops-drift-store")
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    drift = BankDrift(
        start=START,
        weeks=args.weeks,
        from_mix={"math": 0.7, "legal": 0.15, "medical": 0.15},
        to_mix={"math": 0.1, "legal": 0.45, "medical": 0.45},
    )
    base = EvaluateConfig()
    config = EvaluateConfig(
        sources=[BankSource(n_items=args.items, seed=7, drift=drift)],
        judges=[j for j in base.judges if j.backend == "programmatic"],
        store=StoreConfig(url=args.store),
    )
    rows, t0 = [], time.perf_counter()
    for k in range(args.weeks):
        monday = START + dt.timedelta(weeks=k)
        evaluate(config=config, as_of=monday + dt.timedelta(days=1))
        result = recalibrate(week=monday, config=config, from_scratch=k == 0)
        table = ArtifactStore(args.store, result.run_id).read_pandas("calibration")
        table = table[(table["estimator"] == "disagreement") & (table["stratum"] == "")]
        rows.append((monday, table, result.drifted))
    seconds = time.perf_counter() - t0
    judges = sorted(rows[0][1]["judge_id"])
    with section("bench/drift_run.py", args.write, prefix=""):
        print(f"{args.weeks} weeks in {seconds:.0f} s.\n")
        table_of(rows, judges)


def table_of(rows, judges) -> None:
    print("| week | " + " | ".join(f"{j} FPR / FNR" for j in judges) + " | drift flags |")
    print("|---" * (len(judges) + 2) + "|")
    for monday, table, drifted in rows:
        t = table.set_index("judge_id")
        cells = " | ".join(f"{t.loc[j, 'fpr']:.2f} / {t.loc[j, 'fnr']:.2f}" for j in judges)
        flags = "; ".join(f"{e['judge']} {e['metric']} {e['before']:.2f}→{e['after']:.2f}" for e in drifted)
        print(f"| {monday} | {cells} | {flags or '–'} |")


if __name__ == "__main__":
    main()
