"""The reliability suite: one test per fault, each asserting its promise and reporting its figure.

`figure(fault, promise, measured)` prints the figure on one line and, when JUDGEOPS_FIGURES names a file
(bench/reliability.py sets it), appends it there as JSON: RELIABILITY.md is built from those lines.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.test_label_page import audit_files  # noqa: F401 - the fixture, for the label page's doors


@pytest.fixture
def figure(request):
    def record(fault: str, promise: str, measured: str) -> None:
        line = {"test": request.node.nodeid, "fault": fault, "promise": promise, "figure": measured}
        print(f"\nFIGURE {fault}: {measured}")
        out = os.environ.get("JUDGEOPS_FIGURES")
        if out:
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")

    return record


@pytest.fixture
def small_disk(tmp_path):
    """A real filesystem of its own, small and remountable: a 64 MiB tmpfs at tmp_path/disk. Needs the
    right to mount (root in CI's container); skipped with the reason where it is missing."""
    import subprocess

    where = tmp_path / "disk"
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)
