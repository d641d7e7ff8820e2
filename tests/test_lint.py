"""ruff lint and format, as part of the test run (the house style is enforced, not hoped for)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

RUFF = Path(sys.executable).parent / "ruff"


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is not installed (pip install -e '.[test]')")
@pytest.mark.parametrize("args", [["check", "."], ["format", "--check", "."]])
def test_ruff(args):
    out = subprocess.run([str(RUFF), *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
