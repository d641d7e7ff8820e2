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
