"""The reliability suite: one test per fault, each asserting its promise and reporting its figure with the
`figure` fixture (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.test_label_page import audit_files  # noqa: F401 - the fixture, for the label page's doors


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
