"""Plugins by entry point: the registries list the built-ins as they list a plugin's, and a tiny plugin package
(tests/plugin_example) installed from tests/ runs in a pipeline: its source format, its judge backend and its
aggregator, named in judgeops.yaml like the built-ins."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from judgeops import plugins
from judgeops.config import ConfigError, parse_config
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.aggregate.mv import MajorityVote
from judgeops.tasks.aggregate.registry import estimator_class
from tests.conftest import ROOT

UV = Path(sys.executable).parent / "uv"


def test_the_built_ins_are_entries_of_the_same_registries():
    assert {"openai", "anthropic", "local"} <= set(plugins.names("judges"))
    assert {"mv", "dawid_skene", "auto"} <= set(plugins.names("aggregators"))
    assert {"gsm8k", "mmlu", "truthfulqa", "medqa"} <= set(plugins.names("sources"))
    assert estimator_class("mv") is MajorityVote


def test_an_unknown_name_lists_what_is_installed():
    with pytest.raises(
        ConfigError, match=r"judges\[0\]\.backend: Value error, 'vllm-direct' is not installed"
    ):
        parse_config({"judges": [{"name": "x", "backend": "vllm-direct", "model": "m"}]})
    with pytest.raises(plugins.PluginError, match="available auto, avg, baer"):
        estimator_class("magic")


@pytest.mark.slow
def test_a_plugin_package_runs_in_a_pipeline(tmp_path):
    site, package = tmp_path / "site", tmp_path / "plugin_example"
    shutil.copytree(ROOT / "tests" / "plugin_example", package)  # building it leaves files beside its sources
    installed = subprocess.run(
        [str(UV), "pip", "install", "-q", "--no-deps", "--target", str(site), str(package)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    lines = [f"What is {a} plus {b}? ||| {a + b}" for a in range(2, 8) for b in range(3, 7)]
    (tmp_path / "qa.txt").write_text("\n".join([*lines, "a line without an answer"]) + "\n")
    (tmp_path / "judgeops.yaml").write_text(
        """
sources: [{kind: file, format: qa_lines, path: qa.txt, domain: math}]
judges:
  - {name: shorter, backend: shorter_answer, model: length-v1, family: plugin}
  - {name: reference_match, model: reference_match, family: programmatic}
  - {name: numeric_consistency, model: numeric_consistency, family: programmatic}
aggregation: {methods: [mv, unanimous]}
robustness: {injection: false}
"""
    )
    env = {**os.environ, "PYTHONPATH": str(site), "PREFECT_HOME": str(tmp_path / "prefect-home")}
    run = subprocess.run(
        [str(Path(sys.executable).parent / "judgeops"), "run", "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    store = ArtifactStore(str(tmp_path / ".judgeops" / "store"))
    (record,) = store.list_runs()
    run_id = record["run_id"]
    items = store.read_pandas("items", run_id)
    assert len(items) == 24 and set(items["domain"]) == {"math"}
    quarantine = store.read_pandas("items__quarantine", run_id)
    assert quarantine["quarantine_reason"].str.contains("qa_lines reader gave a str").any()
    verdicts = store.read_pandas("verdicts", run_id)
    mine = verdicts[verdicts["judge_id"] == "shorter"]
    assert len(mine) and mine["verdict"].isin(["A", "B"]).all() and mine["error"].isna().all()
    consensus = store.read_pandas("consensus", run_id)
    assert set(consensus["method"]) == {"mv", "unanimous"}
    assert consensus.loc[consensus["method"] == "unanimous", "label"].isin(["A", "B", "tie"]).all()
