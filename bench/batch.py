"""A batch judge (`batch: true`) against one by one: the same panel's calls through each provider's batch API and
through its one-by-one API, both served by the test servers (tests/openai_batch_server.py, tests/openai_server.py:
the same deterministic judge behind both). Reports the batches created, the HTTP requests the provider saw
one by one, whether the verdicts agree, and the cost at the standard and batch prices; then a run killed
while its batch runs, rerun: the batches created (1: paid once).

    taskset -c 0,1 .venv/bin/python bench/batch.py [--items 60] [--write]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks_md import section  # noqa: E402

from judgeops.config import BankSource, ConstructionConfig, JudgeConfig, Price  # noqa: E402
from judgeops.tasks.construct import construct  # noqa: E402
from judgeops.tasks.ingest import ingest_items  # noqa: E402
from judgeops.tasks.judges import judge_variants  # noqa: E402
from judgeops.tasks.judges.coverage import coverage  # noqa: E402
from tests.openai_batch_server import BatchServerProcess  # noqa: E402
from tests.openai_server import ServerProcess  # noqa: E402

MODEL = {"openai": "gpt-test", "anthropic": "claude-test"}
PRICE = Price(input_per_1m=2.5, output_per_1m=10.0)


def judge(provider: str, url: str, batch: bool) -> JudgeConfig:
    base = url.removesuffix("/v1") if provider == "anthropic" else url
    return JudgeConfig(
        name=f"{provider}-{'batch' if batch else 'calls'}",
        backend=provider,
        model=MODEL[provider],
        base_url=base,
        batch=batch,
        batch_poll_s=0.5,
        max_concurrency=8,
    )


def run(built, j: JudgeConfig, folder: Path):
    items, b = built
    t0 = time.perf_counter()
    verdicts = judge_variants(
        b["variants"], b["pairs"], items, [j], "r", 500, cache_path=str(folder / "c.sqlite")
    )
    seconds = time.perf_counter() - t0
    row = coverage(verdicts, b["variants"], [j], prices={j.model: PRICE}).iloc[0]
    return verdicts, row, seconds


def killed_and_rerun(provider: str, items: int, folder: Path) -> int:
    """A process judging through a batch killed once the batch exists, then rerun: the batches created."""
    server = BatchServerProcess(folder / "killed.jsonl", "--batch-s", "5")
    try:
        script = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(ROOT / 'bench')!r});"
            "from batch import built_bank, judge, run; from pathlib import Path;"
            f"run(built_bank({items}), judge({provider!r}, {server.url!r}, True), Path({str(folder)!r}))"
        )
        proc = subprocess.Popen([sys.executable, "-c", script])
        while not server.batches_created():
            time.sleep(0.2)
        time.sleep(0.5)
        proc.kill()
        proc.wait()
        run(built_bank(items), judge(provider, server.url, True), folder)
        return len(server.batches_created())
    finally:
        server.stop()


def built_bank(n_items: int):
    items = ingest_items([BankSource(n_items=n_items, seed=3)]).items
    return items, construct(items, ConstructionConfig())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench")  # the test servers check none; the SDKs want one
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-ant-bench")
    built = built_bank(args.items)
    import judgeops.tasks.judges.backends.batches  # noqa: F401 - both SDKs imported before anything is timed

    with section("bench/batch.py", args.write):
        print(
            f"{len(built[1]['variants'])} variants ({args.items} bank items) judged by one judge, pairwise; the test servers "
            "answer at once, a batch ends 2 s after it is created (polled every 0.5 s).\n"
        )
        print("| provider | how | batches created | requests one by one | verdicts equal | cost | seconds |")
        print("|---|---|---|---|---|---|---|")
        for provider in ("openai", "anthropic"):
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                batch_server = BatchServerProcess(folder / "batches.jsonl", "--batch-s", "2")
                calls_server = ServerProcess(folder / "calls.jsonl")
                try:
                    (folder / "b").mkdir()
                    (folder / "c").mkdir()
                    batched, b_row, b_s = run(built, judge(provider, batch_server.url, True), folder / "b")
                    singly, c_row, c_s = run(built, judge(provider, calls_server.url, False), folder / "c")
                    equal = (
                        batched.sort_values("variant_id")["verdict"].tolist()
                        == singly.sort_values("variant_id")["verdict"].tolist()
                    )
                    n_batches, n_requests = len(batch_server.batches_created()), len(calls_server.entries())
                finally:
                    batch_server.stop()
                    calls_server.stop()
                print(
                    f"| {provider} | batch | {n_batches} | 0 | {'yes' if equal else 'NO'} | "
                    f"${b_row['cost_usd']:.4f} | {b_s:.1f} |"
                )
                print(
                    f"| {provider} | one by one | 0 | {n_requests} | | ${c_row['cost_usd']:.4f} | {c_s:.1f} |"
                )
                print(f"| {provider} | ratio | | | | {b_row['cost_usd'] / c_row['cost_usd']:.2f} | |")
        print()
        for provider in ("openai", "anthropic"):
            with tempfile.TemporaryDirectory() as tmp:
                n = killed_and_rerun(provider, args.items, Path(tmp))
            print(f"- {provider}: a run killed while its batch ran, rerun: {n} batch created (paid once).")


if __name__ == "__main__":
    main()
