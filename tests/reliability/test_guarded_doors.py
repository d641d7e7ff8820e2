"""The doors into a run: names that become paths (run ids, artifact names) are refused before any file opens,
store reads never leave the store's root, and the API's names stay what they are."""

from __future__ import annotations

import datetime as dt

import pytest

from judgeops.cli import main
from judgeops.schemas.names import NameRefused, check_artifact_name, check_component, check_run_id
from judgeops.schemas.store import ArtifactStore, new_run_id

HOSTILE = [
    "../../etc",
    "../../../outside/x",
    "/abs/path",
    "s3://bucket/run",
    "a/b",
    "a\x00b",
    "..",
    "",
    "x" * 300,
]


@pytest.fixture
def planted(tmp_path):
    """A store, and beside it a copy of a run record that a traversal would read (`outside/x/run.json`)."""
    store = tmp_path / "work" / ".judgeops" / "store"
    (store / "runs").mkdir(parents=True)
    outside = tmp_path / "outside" / "x"
    outside.mkdir(parents=True)
    (outside / "run.json").write_text('{"run_id": "x", "status": "completed", "as_of": "2026-01-01"}')
    return store


def test_new_run_ids_are_run_ids_and_hostile_names_are_refused():
    assert check_run_id(new_run_id(dt.date(2026, 12, 3))).startswith("2026-12-03_")
    for value in [*HOSTILE, "run-a", 7, None]:
        with pytest.raises(NameRefused, match="^--run: "):
            check_run_id(value)
    for value in [*HOSTILE, 7]:
        with pytest.raises(NameRefused, match="^stage key: "):
            check_component(value, "stage key")
    assert check_artifact_name("verdicts__quarantine") and check_artifact_name("report.html")
    with pytest.raises(NameRefused, match="'../items' is not an artifact"):
        check_artifact_name("../items")


@pytest.mark.parametrize(
    "command", [["store", "ls", "--run"], ["report", "--run"], ["store", "show", "items", "--run"]]
)
@pytest.mark.parametrize("value", ["../../etc", "../../../outside/x", "/abs/path"])
def test_a_run_id_that_is_a_path_is_one_line_exit_2(planted, capsys, command, value):
    assert main(["--store", str(planted), *command, value]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"--run: {value!r} is not a run id" in captured.err
    assert captured.out == ""  # the planted record beside the store was never listed
    assert not list(planted.parent.parent.parent.glob("outside/x/*.html"))  # nor a report written into it


def test_an_unknown_run_names_the_run_and_the_store(planted, capsys):
    run_id = "2026-01-01_20260101T000000_abcdef"
    assert main(["--store", str(planted), "store", "ls", "--run", run_id]) == 1
    assert f"no run {run_id} in store {planted}" in capsys.readouterr().err
    assert main(["--store", str(planted), "report", "--run", run_id]) == 1
    assert f"no run {run_id} in store {planted}" in capsys.readouterr().err


def test_store_show_refuses_a_name_that_is_not_an_artifact(planted, capsys):
    assert main(["--store", str(planted), "store", "show", "../../outside/x/run"]) == 2
    assert "is not an artifact (expected one of aggregation_notes" in capsys.readouterr().err


def test_the_store_never_resolves_a_path_outside_its_root(planted):
    store = ArtifactStore(str(planted), "run-a")
    for rel in ["../outside", "runs/../../x", "/etc/passwd", "runs/a/../../../x", "s3://b/k"]:
        with pytest.raises(NameRefused):
            store.get_blob(rel)
    for run_id in HOSTILE[:6]:
        with pytest.raises(NameRefused):
            store.run_record(run_id)
        with pytest.raises(NameRefused):
            store.list_artifacts(run_id)
    with pytest.raises(NameRefused):
        store.find_stage_outputs("judge", "../../outside")


def test_api_runs_is_callable_every_time(tmp_path):
    from judgeops import api

    url = str(tmp_path / "store")
    assert (
        api.runs(url) == [] and api.runs(url) == []
    )  # a submodule of the same name shadowed it once imported
    import pkgutil

    import judgeops.api as package

    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    assert not modules & set(package.__all__), "a module named like an API function shadows it once imported"


# -- sources ------------------------------------------------------------------------------------------------


def _ingest(*sources):
    from judgeops.config import FileSource
    from judgeops.tasks.ingest import ingest_items

    return ingest_items([FileSource(**s) for s in sources])


def test_a_folder_reads_only_the_files_of_its_format(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "a.jsonl").write_text('{"question": "What is 1 + 1?", "answer": "2"}\n')
    (tmp_path / "b.jsonl.gz").write_bytes(
        __import__("gzip").compress(b'{"question": "What is 2 + 2?", "answer": "4"}\n')
    )
    (tmp_path / "uv-setuptools-1.lock").write_text("")  # what a /tmp holds: never opened
    (tmp_path / "notes.txt").write_text("not a source")
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    result = _ingest({"path": str(tmp_path), "format": "jsonl"})
    assert len(result.items) == 2 and len(result.quarantine) == 0
    assert not [f for f in opened if f.endswith((".lock", ".txt"))]


def test_a_folder_without_files_of_its_format_is_refused_by_name(tmp_path):
    from judgeops.tasks.ingest import IngestError

    (tmp_path / "x.lock").write_text("")
    with pytest.raises(IngestError, match=f"{tmp_path}: a folder with no \\*.jsonl or \\*.jsonl.gz file"):
        _ingest({"path": str(tmp_path), "format": "jsonl"})


def test_a_fifo_is_refused_before_anything_reads_it(tmp_path):
    import os

    from judgeops.tasks.ingest import IngestError

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes
    with pytest.raises(IngestError, match="pipe.jsonl: not a regular file"):
        _ingest({"path": str(fifo)})


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_byte_order_mark_loses_no_record(tmp_path, fmt):
    path = tmp_path / f"qa.{fmt}"
    body = (
        '{"question": "What is 1 + 1?", "answer": "2"}\n{"question": "What is 2 + 2?", "answer": "4"}\n'
        if fmt == "jsonl"
        else 'question,answer\n"What is 1 + 1?",2\n"What is 2 + 2?",4\n'
    )
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    result = _ingest({"path": str(path), "format": fmt})
    assert len(result.items) == 2 and len(result.quarantine) == 0


def test_an_escaped_nul_in_a_question_is_quarantined(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text(
        '{"question": "What is 1\\u0000 + 1?", "answer": "2"}\n{"question": "Ok?", "answer": "3"}\n'
    )
    result = _ingest({"path": str(path)})
    assert len(result.items) == 1
    assert result.quarantine.iloc[0]["quarantine_reason"].endswith(
        "field 'question': contains a NUL character (U+0000)"
    )


def test_a_gzip_file_is_read_whatever_its_name(tmp_path):
    import gzip

    path = tmp_path / "qa.jsonl"  # gzip inside, no .gz suffix
    path.write_bytes(gzip.compress(b'{"question": "What is 1 + 1?", "answer": "2"}\n'))
    result = _ingest({"path": str(path)})
    assert len(result.items) == 1 and len(result.quarantine) == 0


def test_an_unterminated_csv_quote_is_quarantined_not_merged_into_the_next_record(tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text('question,answer\n"What is 1 + 1?,2\n"What is 2 + 2?",4\n"What is 3 + 3?",6\n')
    result = _ingest({"path": str(path), "format": "csv"})
    assert result.items["question"].tolist() == ["What is 2 + 2?", "What is 3 + 3?"]  # read again from line 3
    (reason,) = result.quarantine["quarantine_reason"]
    assert reason.startswith(f"{path}, line 2: malformed CSV") and "the record runs to line 3" in reason


def test_one_id_in_two_sources_quarantines_the_second_and_keeps_the_run(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"id": "x1", "question": "What is 1 + 1?", "answer": "2"}\n')
    (tmp_path / "b.jsonl").write_text(
        '{"id": "x1", "question": "What is 2 + 2?", "answer": "4"}\n{"id": "x2", "question": "Ok?", "answer": "5"}\n'
    )
    result = _ingest(
        {"path": str(tmp_path / "a.jsonl"), "id_field": "id"},
        {"path": str(tmp_path / "b.jsonl"), "id_field": "id"},
    )
    assert result.items["item_id"].tolist() == ["x1", "x2"]
    (row,) = result.quarantine.to_dict("records")
    assert row["quarantine_rule"] == "ingest:item_id" and row["quarantine_row"] == 1
    assert "id 'x1' is already used by another question" in row["quarantine_reason"]


def test_judgeops_config_names_a_missing_or_unreadable_source_path(tmp_path, capsys):
    (tmp_path / "x.lock").write_text("")
    config = tmp_path / "judgeops.yaml"
    config.write_text(
        f"sources:\n  - {{kind: file, path: {tmp_path}/absent.jsonl}}\n  - {{kind: file, path: {tmp_path}}}\n"
    )
    assert main(["--config", str(config), "config"]) == 2
    err = capsys.readouterr().err
    assert f"sources[0].path: {tmp_path}/absent.jsonl: source file not found" in err
    assert f"sources[1].path: {tmp_path}: a folder with no *.jsonl" in err and "Traceback" not in err


# -- failed judge calls ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_passing_provider_fault_is_never_made_permanent(server_factory, tmp_path, prefect_server, figure):
    """HTTP 200 with a body that is no completion: counted as protocol errors, never cached, the judge stage
    not reused; the rerun (the fault gone) asks exactly the failed calls again and completes."""
    from judgeops.flows.evaluate import evaluate
    from tests.conftest import http_judge, small_config

    broken = server_factory("--malformed-marker", "Question", "--empty-marker", "Question")  # every prompt
    config = small_config(str(tmp_path / "store"), n_items=24)
    judge = http_judge(broken.url, max_pairs=4, max_retries=0, breaker_failures=10_000)
    config = config.model_copy(update={"judges": [*config.judges, judge]})
    config.robustness.injection = False  # only the judge stage's 24 calls
    first = evaluate(config=config, as_of=dt.date(2026, 11, 16))
    cov = (
        ArtifactStore(config.store.url, first.run_id)
        .read_pandas("coverage")
        .set_index("judge_id")
        .loc["http"]
    )
    assert (
        cov["coverage"] == 0 and cov["n_protocol_error"] == cov["n_error"] == 24 and cov["n_unparsable"] == 0
    )
    assert len(broken.entries()) == 24
    healthy = server_factory()
    fixed = config.model_copy(
        update={"judges": [*config.judges[:-1], judge.model_copy(update={"base_url": healthy.url})]}
    )
    second = evaluate(config=fixed, as_of=dt.date(2026, 11, 16))
    store = ArtifactStore(config.store.url, second.run_id)
    cov = store.read_pandas("coverage").set_index("judge_id").loc["http"]
    resent = len(healthy.entries()) - 24  # the servers share one request log
    assert cov["coverage"] == 1.0 and resent == 24  # exactly the 24 failed calls, once each
    assert store.manifest("verdicts").get("reused_from") is None
    figure(
        "judge server answering HTTP 200 with invalid JSON / empty choices (24 calls), then healthy",
        "failures never cached; the rerun retries exactly the failed calls",
        f"first run: 24 protocol errors, 0 cached; rerun sent {resent} calls, coverage {cov['coverage']:.2f}",
    )


def test_a_store_that_cannot_be_reached_or_is_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    import fsspec.config
    from s3fs import S3FileSystem

    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "FSSPEC_S3_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    # and no S3-compatible server an earlier test of this process configured (conftest's `s3` fixture)
    monkeypatch.setitem(fsspec.config.conf, "s3", {})
    S3FileSystem.clear_instance_cache()
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    (tmp_path / "afile").write_text("x")
    for url, says in [
        (str(tmp_path / "afile"), "is a file, not a store's folder"),
        ("s3://no-bucket/x", "cannot be reached"),
    ]:
        assert main(["--store", url, "store", "ls"]) == 1
        err = capsys.readouterr().err
        assert f"judgeops store: store {url}: {says}" in err and err.count("\n") == 1


def test_the_sweep_stops_the_server_a_failed_or_cancelled_run_left(tmp_path):
    import subprocess
    import sys

    import psutil

    from judgeops.schemas import liveness

    # stands in for a temporary Prefect server: the sweep stops only a process whose command line says it is one
    fake = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)", liveness.PREFECT_SERVER_APP]
    )
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    try:
        store = ArtifactStore(str(tmp_path / "store"), "2026-01-01_20260101T000000_abcdef")
        server = {"pid": fake.pid, "pid_started": liveness.process_started(fake.pid)}
        owner = {"host": liveness.owner()["host"], "pid": dead.pid, "pid_started": 1.0}
        store.write_run_record(
            {
                "status": "cancelled",
                "error": "interrupted by SIGINT",
                "owner": owner,
                "prefect": {"temporary_server": server},
            }
        )
        store.sweep_crashed()
        fake.wait(timeout=10)
        assert not psutil.pid_exists(fake.pid) or psutil.Process(fake.pid).status() == psutil.STATUS_ZOMBIE
        assert store.run_record()["server_stopped_at"] and store.run_record()["status"] == "cancelled"
    finally:
        fake.kill()
