"""The `judgeops` command line, in-process against the session's Prefect server."""

import pytest
import yaml

from judgeops.cli import main
from judgeops.config import dump_config
from tests.conftest import small_config


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "judgeops.yaml"
    path.write_text(dump_config(small_config(str(tmp_path / "store"), n_items=24)))
    return path


def test_config_prints_the_embedded_default(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["sources"][0]["kind"] == "builtin_bank" and len(printed["judges"]) == 4


def test_a_bad_config_exits_2_naming_file_and_key(capsys, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("aggregation:\n  methods: [mv, magic]\n")
    assert main(["--config", str(bad), "config"]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: aggregation.methods[1]: Input should be 'mv' or 'avg' (got 'magic')" in err


@pytest.mark.slow
def test_run_report_and_store_commands(prefect_server, config_file, capsys, tmp_path):
    assert main(["--config", str(config_file), "run", "--as-of", "2026-11-16"]) == 0
    out = capsys.readouterr().out
    report = out.split("report: ")[-1].strip()
    assert report.endswith("report.html") and "Accuracy by error type" in open(report).read()

    assert main(["--config", str(config_file), "store", "ls"]) == 0
    out = capsys.readouterr().out
    assert "2026-11-16" in out and "completed" in out

    assert main(["--config", str(config_file), "store", "ls", "--all"]) == 0
    out = capsys.readouterr().out
    assert "verdicts" in out and "profiles" in out

    assert main(["--config", str(config_file), "store", "show", "profiles", "--rows", "3"]) == 0
    out = capsys.readouterr().out
    assert '"schema_version": 1' in out and "estimate" in out

    assert main(["--config", str(config_file), "report"]) == 0
    assert capsys.readouterr().out.strip() == f"report: {report}"


def test_store_show_of_a_missing_artifact_is_a_clear_error(capsys, tmp_path):
    from judgeops.schemas.store import ArtifactStore

    store = ArtifactStore(str(tmp_path / "s"), "r1")
    store.write_run_record({"status": "completed", "started_at": "2026-01-01"})
    assert main(["--store", str(tmp_path / "s"), "store", "show", "verdicts"]) == 1
    assert "artifact 'verdicts' not found in run r1" in capsys.readouterr().err
