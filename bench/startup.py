"""Start-up of the command line: `judgeops --help`, and `judgeops aggregate` against a plain pandas script doing the
same majority vote on the same file (5,000 tasks × 12 judges), each as a fresh process, interleaved.

    python bench/startup.py [--repeats 7] [--write]

Prints a markdown table (with `--write`, also into BENCHMARKS.md). The two majority votes are checked to agree.
"""

from __future__ import annotations

import argparse
import io
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from benchmarks_md import write_section

JUDGEOPS = str(Path(sys.executable).parent / "judgeops")
PANDAS_MV = """
import sys
import pandas as pd
votes = pd.read_csv(sys.argv[1])
counts = votes.groupby(["task", "label"]).size().unstack(fill_value=0)
label = counts.idxmax(axis=1).where(counts.max(axis=1) * 2 != counts.sum(axis=1), "tie")
sys.stdout.write(label.rename("label").rename_axis("task").reset_index().to_csv(index=False))
"""


def votes_file(folder: Path, tasks: int = 5000, judges: int = 12) -> Path:
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 2, tasks)
    right = rng.random((tasks, judges)) < rng.uniform(0.55, 0.9, judges)
    label = np.where(right, truth[:, None], 1 - truth[:, None])
    path = folder / "votes.csv"
    pd.DataFrame(
        {
            "task": np.repeat(np.arange(tasks), judges),
            "worker": np.tile([f"j{i}" for i in range(judges)], tasks),
            "label": np.where(label.ravel() == 1, "A", "B"),
        }
    ).to_csv(path, index=False)
    return path


def timed(args: list[str], cwd: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    commands = {
        "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
        "pandas script: majority vote": [sys.executable, "-c", PANDAS_MV, "votes.csv"],
        "judgeops aggregate votes.csv --method mv": [JUDGEOPS, "aggregate", "votes.csv", "--method", "mv"],
        "judgeops --help": [JUDGEOPS, "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        votes_file(cwd)
        outputs = {}
        for _ in range(args.repeats):  # interleaved, so a noisy moment hits every command alike
            for name, cmd in commands.items():
                elapsed, outputs[name] = timed(cmd, cwd)
                times[name].append(elapsed)
    ours = pd.read_csv(io.StringIO(outputs["judgeops aggregate votes.csv --method mv"]))
    theirs = pd.read_csv(io.StringIO(outputs["pandas script: majority vote"]))
    agree = (
        ours.set_index("task")["label"].sort_index().equals(theirs.set_index("task")["label"].sort_index())
    )
    median = {name: statistics.median(t) for name, t in times.items()}
    ratio = median["judgeops aggregate votes.csv --method mv"] / median["pandas script: majority vote"]
    lines = [
        f"`python bench/startup.py --repeats {args.repeats}`: each command as a fresh process, interleaved, median "
        f"of {args.repeats} (5,000 tasks × 12 judges, 60,000 votes).",
        "",
        "| command | median s | min s |",
        "|---|---|---|",
        *[f"| {name} | {median[name]:.2f} | {min(times[name]):.2f} |" for name in commands],
        "",
        f"`judgeops aggregate` / pandas script = {ratio:.2f} (target ≤ 1.5); `judgeops --help` "
        f"{median['judgeops --help']:.2f} s (target < 0.5); the two majority votes agree on every task: {agree}.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("bench/startup.py", text)


if __name__ == "__main__":
    main()
