"""Stage reuse follows the code: editing a module a stage imports recomputes that stage and what depends on it,
and reuses the rest; `judgeops report` is the flow's own report stage.

The edits are made to temporary copies of the modules: the fingerprint is pointed at the copy
(`fingerprint.module_file`), so the installed code never changes.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
import sys

import pytest

from judgeops import api
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks import fingerprint, stages
from tests.conftest import small_config

pytestmark = pytest.mark.slow

AS_OF = dt.date(2026, 11, 16)
# each stage's first output: its manifest says whether the run computed it or adopted an earlier run's
OUTPUT = {
    "ingest": "items",
    "construct": "pairs",
    "judge": "verdicts",
    "validate": "coverage",
    "robustness": "robustness",
    "aggregate": "consensus",
    "profile": "profiles",
}


def computed(url: str, run_id: str) -> set[str]:
    store = ArtifactStore(url, run_id)
    return {stage for stage, name in OUTPUT.items() if "reused_from" not in store.manifest(name)}


def edited_copy(monkeypatch, tmp_path, module: str) -> None:
    """Point the fingerprint at a copy of `module` with one more line (a comment: the code runs unchanged)."""
    original = fingerprint.module_file(module)
    copy = tmp_path / f"{module}.py"
    shutil.copy(original, copy)
    with copy.open("a") as fh:
        fh.write("# edited in a temporary copy\n")
    real = fingerprint.module_file
    monkeypatch.setattr(fingerprint, "module_file", lambda name: copy if name == module else real(name))


def test_editing_a_module_recomputes_the_stages_that_import_it(prefect_server, tmp_path, monkeypatch):
    url = str(tmp_path / "store")
    config = small_config(url, n_items=24)
    first = evaluate(config=config, as_of=AS_OF)
    assert computed(url, first.run_id) == set(OUTPUT)
    assert computed(url, evaluate(config=config, as_of=AS_OF).run_id) == set()  # nothing changed

    # the verdict vocabulary (to_canonical, the panel's judge ids): aggregate and profile import it
    with monkeypatch.context() as m:
        edited_copy(m, tmp_path, "judgeops.schemas.vocabulary")
        assert computed(url, evaluate(config=config, as_of=AS_OF).run_id) == {"aggregate", "profile"}

    # construction's presentation rewrites: construct recomputes; its outputs are the same bytes (the code
    # did not change what it does), so every later stage finds its inputs unchanged and is reused
    with monkeypatch.context() as m:
        edited_copy(m, tmp_path, "judgeops.tasks.construct.presentation")
        run = evaluate(config=config, as_of=AS_OF)
        assert computed(url, run.run_id) == {"construct"}
        assert (
            ArtifactStore(url, run.run_id).ref("pairs").sha256
            == ArtifactStore(url, first.run_id).ref("pairs").sha256
        )

    # the contract of every artifact: every stage's outputs must meet it, so every stage recomputes
    with monkeypatch.context() as m:
        edited_copy(m, tmp_path, "judgeops.data_contracts.suites")
        assert computed(url, evaluate(config=config, as_of=AS_OF).run_id) == set(OUTPUT)


def test_a_stage_declares_its_inputs_and_reads_nothing_else():
    assert stages.PROFILE.inputs == ("verdicts", "consensus", "variants", "pairs")
    with pytest.raises(KeyError, match=r"stage profile: inputs \['consensus'\] were not produced"):
        stages.PROFILE.select({n: None for n in ("verdicts", "variants", "pairs")})
    closure = fingerprint.closure(stages.INGEST.code)
    assert "judgeops.schemas.vocabulary" not in closure and "judgeops.tasks.aggregate.panel" not in closure
    assert "judgeops.schemas.vocabulary" in fingerprint.closure(stages.PROFILE.code)


def test_fingerprinting_imports_nothing():
    """Keys are computed before a stage runs: finding the closure must not import its modules (a name like
    `contract.validate` is looked up without importing `contract`, which would load Great Expectations)."""
    code = [
        "import sys",
        "from judgeops.tasks import fingerprint, runner, stages",
        "before = set(sys.modules)",
        "keys = [s.fingerprint() for s in vars(stages).values() if isinstance(s, runner.Stage)]",
        "print(len(keys), sorted(m for m in set(sys.modules) - before if m.startswith(('judgeops', 'great'))))",
    ]
    out = subprocess.run([sys.executable, "-c", "\n".join(code)], capture_output=True, text=True, check=True)
    assert out.stdout.split(maxsplit=1) == ["7", "[]\n"]


def without_clock(html: str) -> str:
    return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "<time>", html)


def test_judgeops_report_is_the_flows_report(prefect_server, tmp_path):
    url = str(tmp_path / "store")
    config = small_config(url, n_items=24)
    evaluate(config=config, as_of=dt.date(2026, 11, 10))  # a week calibrated from its evaluation ...
    api.recalibrate(dt.date(2026, 11, 10), config, from_scratch=True)
    result = evaluate(config=config, as_of=AS_OF)  # ... weighs this run's WMV and shows in its report
    flow_report = open(result.report).read()
    assert 'id="chart-calibration"' in flow_report
    path = api.report(result.run_id, url)
    assert path == result.report
    assert without_clock(open(path).read()) == without_clock(flow_report)
