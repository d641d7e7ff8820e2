"""The README, run as a new user runs it: every offline command of its bash blocks, in order, in a fresh folder
(the store and call cache the commands create), and its Python example; and the example config, copied as
told, is the default configuration. So the documentation cannot drift from the code unnoticed.

Not run here: the set-up (`.ci/run` does it), the test command itself, the commands that need a Prefect
server (`server`, `deploy`, `backfill`: tests/test_deploy_e2e.py runs those against a real one), and the
annotation page's, shown in a text block (it serves until stopped: tests/test_label_page.py runs it). The votes,
truth and development-label files the aggregation examples name are the user's own: the test writes them.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgeops.config import EvaluateConfig, dump_config, load_config
from tests.conftest import ROOT, SHARED_DATA

README = (ROOT / "README.md").read_text()
JUDGEOPS = str(Path(sys.executable).parent / "judgeops")
NEEDS_SERVER = ("judgeops server", "judgeops deploy", "judgeops backfill", "export PREFECT_API_URL")
NEEDS_A_RUN = ("judgeops run", "judgeops store", "judgeops report", "judgeops recalibrate", "judgeops ingest")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def commands() -> list[str]:
    """Every judgeops command of the README's bash blocks, in order (continuation lines joined, comments cut)."""
    out = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if "pip install" in line:  # the set-up line: its last step is the command a user runs
                line = line.split("&&")[-1].strip()
            if line.startswith(".venv/bin/judgeops") and not any(s in line for s in NEEDS_SERVER):
                out.append(line.removeprefix(".venv/bin/"))
    return out


def test_the_readme_lists_the_commands_this_test_runs():
    found = commands()
    assert found[0] == "judgeops run"  # the main command of the first lines
    for needle in (
        "store ls",
        "report",
        "aggregate votes.csv",
        "audit propose",
        "recalibrate",
        "simulate-drift",
    ):
        assert any(needle in c for c in found), needle


def user_files(cwd: Path) -> None:
    """votes.csv, scores.csv, truth.csv and dev.csv: a panel of six judges on 200 tasks with known truth."""
    rng = np.random.default_rng(0)
    truth = pd.Series(rng.choice(["A", "B"], 200), index=[f"t{i}" for i in range(200)])
    accuracy = np.array([0.9, 0.8, 0.75, 0.7, 0.65, 0.6])
    rows = []
    for task, label in truth.items():
        for j, acc in enumerate(accuracy):
            for run in ("AB", "BA"):
                right = rng.random() < acc
                rows.append((task, f"j{j}", label if right else {"A": "B", "B": "A"}[label], run))
    votes = pd.DataFrame(rows, columns=["task", "worker", "label", "run"])
    votes["score"] = np.where(votes["label"] == "A", 0.8, 0.2)
    votes.to_csv(cwd / "votes.csv", index=False)
    scored = votes.assign(
        score=votes["score"] + rng.normal(0, 0.1, len(votes))
    )  # a rating per judge and task
    scored.groupby(["task", "worker"], as_index=False)["score"].mean().to_csv(cwd / "scores.csv", index=False)
    truth.rename_axis("task").rename("label").reset_index().to_csv(cwd / "truth.csv", index=False)
    truth.iloc[:40].rename_axis("task").rename("label").reset_index().to_csv(cwd / "dev.csv", index=False)


def run_command(command: str, cwd: Path, env: dict) -> str:
    args = shlex.split(command.replace("../shared/data", str(SHARED_DATA)))
    done = subprocess.run([JUDGEOPS, *args[1:]], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"`{command}` failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    if args[1:3] == ["audit", "propose"]:  # the auditor fills the label column
        audit = pd.read_csv(cwd / "audit.csv")
        truth = pd.read_csv(cwd / "truth.csv").set_index("task")["label"]
        audit.assign(label=audit["task"].map(truth)).to_csv(cwd / "audit.csv", index=False)
    return done.stdout


@pytest.fixture
def user(tmp_path) -> tuple[Path, dict]:
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    env.pop("PREFECT_API_URL", None)
    user_files(tmp_path)
    return tmp_path, env


def on_users_own_files(command: str) -> bool:
    """The aggregation and audit examples: they need no run (the next test runs the others, not these again)."""
    return not any(command.startswith(s) for s in NEEDS_A_RUN) and "simulate-drift" not in command


def test_the_commands_on_a_users_own_files(user):
    """The aggregation and audit examples (no run needed): fast."""
    cwd, env = user
    for command in filter(on_users_own_files, commands()):
        run_command(command, cwd, env)
    assert (
        (cwd / "pred.parquet").exists()
        and (cwd / "consensus.csv").exists()
        and (cwd / "decided.csv").exists()
    )


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent (the ingest example reads it)")
def test_every_offline_command_and_the_python_example(user):
    """The whole README in order: the main run, inspection, real data, recalibration, the Python example (the
    commands on the user's own files are the test above's)."""
    cwd, env = user
    run_id = None
    for command in itertools.filterfalse(on_users_own_files, commands()):
        if "RUN_ID" in command:
            command = command.replace("RUN_ID", run_id)
        out = run_command(command, cwd, env)
        if command == "judgeops run":
            run_id = re.search(r"^run (\S+)", out, flags=re.M).group(1)
    (python,) = blocks("python")
    done = subprocess.run([sys.executable, "-c", python], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "panel:auto" in done.stdout and done.stdout.strip().endswith("report.html")


def test_the_example_config_copied_as_told_is_the_default(tmp_path):
    example = load_config(ROOT / "judgeops" / "judgeops.example.yaml")
    assert dump_config(example) == dump_config(EvaluateConfig())
