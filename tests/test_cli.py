"""The `judgeops` command line: `run` as a subprocess (as a user runs it), the rest in-process."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from judgeops.cli import main
from judgeops.config import dump_config
from tests.conftest import SHARED_DATA, small_config


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "judgeops.yaml"
    path.write_text(dump_config(small_config(str(tmp_path / "store"), n_items=24)))
    return path


def test_config_prints_the_embedded_default(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["sources"][0]["kind"] == "builtin_bank" and len(printed["judges"]) == 5


def test_a_bad_config_exits_2_naming_file_and_key(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("aggregation:\n  methods: [mv, magic]\n")
    assert main(["--config", str(bad), "config"]) == 2
    err = capsys.readouterr().err
    assert (
        "bad.yaml: aggregation.methods[1]: Value error, 'magic' is not installed (available: auto, avg,"
        in err
        and "(got 'magic')" in err
    )


def judgeops(*args: str, cwd) -> subprocess.CompletedProcess:
    """The installed console script, as a user runs it (its own ephemeral Prefect API)."""
    env = {**os.environ, "PREFECT_HOME": str(cwd / "prefect-home")}
    return subprocess.run(
        [str(Path(sys.executable).parent / "judgeops"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_run_report_and_store_commands(config_file, capsys, tmp_path, prefect_server):
    run = judgeops("--config", str(config_file), "run", "--as-of", "2026-11-16", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "stage construct: computing" in run.stdout + run.stderr
    report = run.stdout.split("report: ")[-1].strip()
    assert report.endswith("report.html") and "Accuracy by error type" in open(report).read()

    assert main(["--config", str(config_file), "store", "ls"]) == 0
    out = capsys.readouterr().out
    run_id = re.search(r"^run (\S+)$", run.stdout, flags=re.M).group(1)
    assert "2026-11-16" in out and "completed" in out and run_id in out  # whole, at 80 columns
    assert "evaluate runs in" in out  # the evaluations, apart from the calibrations

    assert main(["--config", str(config_file), "store", "ls", "--all"]) == 0
    out = capsys.readouterr().out
    assert "verdicts" in out and "profiles" in out

    assert main(["--config", str(config_file), "store", "show", "profiles", "--rows", "3"]) == 0
    out = capsys.readouterr().out
    assert '"schema_version": 2' in out and "estimate" in out

    assert main(["--config", str(config_file), "report"]) == 0
    assert capsys.readouterr().out.strip() == f"report: {report}"

    # CI gating on the same store (every stage reused): one JSON object on stdout, and the gates' exit code
    def run_json(*options: str) -> subprocess.CompletedProcess:
        return judgeops("--config", str(config_file), "run", "--as-of", "2026-11-16", *options, cwd=tmp_path)

    gated = run_json("--json", "--fail-under", "auto=0.0", "--fail-under", "reference_match=0.99")
    assert gated.returncode == 2, gated.stderr[-3000:]
    summary = json.loads(gated.stdout)
    assert {g["name"]: g["passed"] for g in summary["gates"]} == {"auto": True, "reference_match": False}
    assert summary["exit_code"] == 2 and summary["run_id"] != run_id
    assert (
        0 <= summary["consensus"]["auto"]["accuracy"] <= 1
        and summary["judges"]["reference_match"]["coverage"] == 1
    )

    # the other gates in-process, on the session's Prefect server (each subprocess above pays ~20 s of imports
    # and an ephemeral server before its first stage)
    def gate(*options: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(["--config", str(config_file), "run", "--as-of", "2026-11-16", *options])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = gate("--json", "--fail-on", "coverage", "--fail-under", "auto=0.0")
    assert code == 3 and json.loads(out)["partial_coverage"]  # numeric_consistency's ties
    code, out, _ = gate("--fail-under", "auto=0.0")
    assert code == 0 and "gate auto ≥ 0.0:" in out and "passed" in out
    code, _, err = gate("--fail-under", "nosuch=0.5")
    assert code == 2 and "no judge or consensus method of this run has that name" in err
    code, _, err = gate("--fail-under", "auto")
    assert code == 2 and "expected JUDGE_OR_METHOD=ACCURACY" in err


def test_store_show_of_a_missing_artifact_is_a_clear_error(capsys, tmp_path):
    from judgeops.schemas.store import ArtifactStore

    run_id = "2026-01-01_20260101T000000_00c0ff"
    store = ArtifactStore(str(tmp_path / "s"), run_id)
    store.write_run_record({"status": "completed", "started_at": "2026-01-01"})
    assert main(["--store", str(tmp_path / "s"), "store", "show", "verdicts", "--run", run_id]) == 1
    assert f"artifact 'verdicts' not found in run {run_id}" in capsys.readouterr().err
    assert (
        main(["--store", str(tmp_path / "s"), "store", "show", "verdicts"]) == 1
    )  # the latest run that has it
    assert "no completed run with artifact 'verdicts' in store" in capsys.readouterr().err


def test_run_with_a_missing_source_file_stops_before_it_starts_naming_the_field(tmp_path):
    config = tmp_path / "judgeops.yaml"
    config.write_text(
        f"sources:\n  - {{kind: file, path: {tmp_path}/absent.jsonl}}\nstore: {{url: {tmp_path}/store}}\n"
    )
    run = judgeops("--config", str(config), "run", cwd=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert f"sources[0].path: {tmp_path}/absent.jsonl: source file not found" in run.stderr
    assert not (tmp_path / "store").exists()  # no run was started


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data is absent (public data sets)")
def test_ingest_reads_real_sources_and_prints_the_summary(tmp_path):
    data = SHARED_DATA
    run = judgeops(
        "--store",
        str(tmp_path / "store"),
        "ingest",
        "--source",
        f"gsm8k:{data / 'gsm8k' / 'test.jsonl'}",
        "--source",
        f"mmlu:{data / 'mmlu' / 'logical_fallacies_test.csv'}",
        str(data / "mmlu" / "college_physics_test.csv"),
        "--source",
        f"truthfulqa:{data / 'truthfulqa' / 'TruthfulQA.csv'}",
        "--source",
        f"llmbar:{data / 'llmbar' / 'natural.json'}",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    for needle in ("gsm8k", "mmlu:logical_fallacies", "mmlu:college_physics", "truthfulqa", "quarantined"):
        assert needle in out
    rows = dict(line.split(": ", 1) for line in out.splitlines() if " rows at " in line)
    items = int(rows["items"].split()[0])
    set_aside = int(rows.get("items__quarantine", "0").split()[0])
    assert items + set_aside == 1319 + 163 + 102 + 817  # every record of the four files accounted for
    assert rows["external_pairs"].startswith("100 rows")


def test_an_unknown_source_format_is_a_clear_error(capsys):
    assert main(["ingest", "--source", "xlsx:data.xlsx"]) == 2
    assert (
        "--source 'xlsx:data.xlsx': expected FORMAT:PATH with FORMAT one of jsonl, csv, parquet, gsm8k"
        in capsys.readouterr().err
    )


def test_cache_stats_and_prune(tmp_path, capsys):
    from judgeops.tasks.judges.cache import CallCache
    from judgeops.tasks.judges.calls import Reply

    path = tmp_path / "calls.sqlite"
    with CallCache(path) as cache:
        cache.put_many("openai", "m1", {"a": Reply(text="A", tokens=10), "b": Reply(error="unparsable: ?")})
        cache.put_many("local", "m2", {"c": Reply(text="B", tokens=5)})
    assert main(["cache", "stats", "--path", str(path)]) == 0
    out = capsys.readouterr().out
    assert "openai" in out and "m1" in out and "local" in out
    assert main(["cache", "prune", "--path", str(path)]) == 2  # says what to delete first
    assert main(["cache", "prune", "--path", str(path), "--unparsable"]) == 0
    assert "deleted 1 cached calls" in capsys.readouterr().out
    assert main(["cache", "prune", "--path", str(path), "--model", "m2"]) == 0
    with CallCache(path) as cache:
        assert set(cache.get_many(["a", "b", "c"])) == {"a"}
    assert main(["cache", "stats", "--path", str(tmp_path / "missing.sqlite")]) == 1
    assert "judgeops cache: no judge-call cache at" in capsys.readouterr().err


def test_aggregate_reads_long_votes_and_scores_against_truth(tmp_path, capsys):
    from tests.test_aggregate import TOY_TRUTH, toy_votes

    votes, truth = tmp_path / "votes.csv", tmp_path / "truth.parquet"
    toy_votes().to_csv(votes, index=False)
    pd.DataFrame({"task": list(TOY_TRUTH), "label": list(TOY_TRUTH.values())}).to_parquet(truth)
    out = tmp_path / "pred.parquet"
    assert (
        main(["aggregate", str(votes), "--method", "dawid_skene", "--truth", str(truth), "--out", str(out)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "accuracy: 1.0000" in printed and "coverage: 1.0000 (5 of 5 tasks decided; ties: 0)" in printed
    pred = pd.read_parquet(out)
    assert (
        pred.set_index("task")["label"].to_dict() == TOY_TRUTH and pred["probability"].between(0.5, 1).all()
    )
    assert main(["aggregate", str(votes), "--method", "mv", "--truth", str(truth)]) == 0
    printed = capsys.readouterr().out
    assert "t1,tie," in printed  # a 2-2 split stays a tie: counted wrong and not covered
    assert "accuracy: 0.8000" in printed and "coverage: 0.8000 (4 of 5 tasks decided; ties: 1)" in printed
    assert main(["aggregate", str(votes), "--method", "avg"]) == 2
    assert "expected columns task, worker, score; missing ['score']" in capsys.readouterr().err
    assert main(["aggregate", str(votes), "--method", "baer"]) == 2


def test_global_options_go_before_or_after_the_command(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("aggregation:\n  methods: [magic]\n")
    assert main(["config", "--config", str(bad)]) == 2  # after the command, as `judgeops run --config FILE`
    assert "bad.yaml: aggregation.methods[0]" in capsys.readouterr().err
    from judgeops.schemas.store import ArtifactStore

    for name in ("s1", "s2"):
        ArtifactStore(str(tmp_path / name), f"run-in-{name}").write_run_record({"status": "completed"})
    assert main(["--store", str(tmp_path / "s1"), "store", "ls"]) == 0
    assert "run-in-s1" in capsys.readouterr().out
    assert main(["store", "ls", "--store", str(tmp_path / "s2")]) == 0
    assert "run-in-s2" in capsys.readouterr().out
    # an option given before the command is not reset by the command's own copy of it
    assert main(["--store", str(tmp_path / "s3"), "report"]) == 1
    assert f"no completed evaluate run in store {tmp_path / 's3'}" in capsys.readouterr().err


def test_version():
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
