"""The store's disk fills up, or turns read-only, in the middle of `judgeops run`: one clear line naming the
artifact and the path, no partial artifact visible to readers, no run left "running", and the next run after
the space (or write access) returns completes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import time

import pytest

from judgeops.config import CacheConfig, dump_config
from judgeops.schemas.store import ArtifactStore
from tests.conftest import small_config
from tests.openai_server import ServerProcess
from tests.reliability.faults import fill, judgeops_process, with_http_judge

pytestmark = pytest.mark.slow


def _readers_see_only_whole_artifacts(root) -> int:
    """Every manifest's data file exists and has the recorded hash; no temp file is left. Returns how many
    artifacts a reader sees."""
    assert not [p for p in root.rglob("*") if ".tmp-" in p.name]
    seen = 0
    for manifest in root.rglob("*.manifest.json"):
        m = json.loads(manifest.read_text())
        data = root / m["path"]
        assert data.exists() and hashlib.sha256(data.read_bytes()).hexdigest() == m["sha256"], manifest
        seen += 1
    return seen


@pytest.mark.parametrize("fault", ["disk full", "read-only"])
def test_a_store_that_stops_taking_writes_mid_run(tmp_path, small_disk, fault, figure):
    server = ServerProcess(tmp_path / "requests.jsonl", "--delay", "0.2")
    store_url = str(small_disk / "store")
    try:
        config = small_config(store_url, n_items=24)
        config.cache = CacheConfig(path=str(tmp_path / "calls.sqlite"))  # the cache is not on the small disk
        with_http_judge(config, server.url)
        config.stages.retry_delay_s = (
            1.0  # the store error is retried once (transient): the same outcome, sooner
        )
        (tmp_path / "judgeops.yaml").write_text(dump_config(config))
        run = judgeops_process("run", cwd=tmp_path)
        while len(server.entries()) < 4:  # the judge stage has started: earlier artifacts are written
            assert run.poll() is None, run.stdout.read()
            time.sleep(0.1)
        if fault == "disk full":
            fill(small_disk)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
        out = run.communicate(timeout=300)[0]
        assert run.returncode == 1, out
        stopped = [line for line in out.splitlines() if line.startswith("judgeops run stopped:")]
        reason = "No space left on device" if fault == "disk full" else "Read-only file system"
        assert len(stopped) == 1 and reason in stopped[0] and f"to {small_disk}/store/runs/" in stopped[0], (
            out
        )
        assert "cannot write '" in stopped[0] and "Traceback" not in out, out
        seen = _readers_see_only_whole_artifacts(small_disk / "store")

        if fault == "disk full":
            (small_disk / "filler").unlink()
        else:
            subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
        store = ArtifactStore(store_url)
        ls = judgeops_process("store", "ls", cwd=tmp_path)
        ls.communicate(timeout=120)
        (first,) = store.list_runs()
        assert first["status"] in ("failed", "crashed"), first["status"]  # never "running" forever
        rerun = judgeops_process("run", cwd=tmp_path)
        out2 = rerun.communicate(timeout=600)[0]
        assert rerun.returncode == 0, out2
        _readers_see_only_whole_artifacts(small_disk / "store")
        if fault == "read-only":  # `judgeops report` writes too: the same one line, no traceback
            subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
            report = judgeops_process("report", cwd=tmp_path)
            out3 = report.communicate(timeout=300)[0]
            subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
            assert report.returncode == 1 and "Traceback" not in out3, out3
            # its first write is the per-sample viewer, written before the report that lists it
            assert "cannot write 'samples' to " in out3 and "Read-only file system" in out3, out3
    finally:
        server.stop()
    figure(
        f"store {fault} during `judgeops run` (judge stage)",
        "one line naming the artifact and path; no partial artifact; rerun completes",
        f"`{stopped[0].split(': ', 1)[1].replace(str(small_disk), '…')}`; {seen} whole artifacts readable, "
        "0 partial; "
        f"first run {first['status']}; rerun exit 0",
    )
