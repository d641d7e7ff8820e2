"""Fault helpers shared by the reliability tests."""

from __future__ import annotations

import os
import subprocess
import sys

from judgeops.config import EvaluateConfig, JudgeConfig


def fill(disk, leave_bytes: int = 0) -> None:
    """Fill the filesystem at `disk` but `leave_bytes` (a file named filler)."""
    import os

    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(disk / "filler", "wb") as fh:
        fh.truncate(0)
        chunk = b"\0" * (1 << 20)
        left = max(0, free - leave_bytes)
        try:
            while left > 0:
                n = fh.write(chunk[: min(len(chunk), left)])
                left -= n
        except OSError:
            pass


def judgeops_process(*args: str, cwd, quiet: bool = False) -> subprocess.Popen:
    """`python -m judgeops.cli ARGS` as its own process (it can be killed, or run beside another), output
    merged; `quiet`: Prefect's log at WARNING."""
    env = {**os.environ, "PREFECT_LOGGING_LEVEL": "WARNING"} if quiet else None
    return subprocess.Popen(
        [sys.executable, "-m", "judgeops.cli", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def with_http_judge(config: EvaluateConfig, url: str, **judge) -> EvaluateConfig:
    """The config with one more judge: an OpenAI-protocol server at `url` (tests/openai_server.py), on a fixed
    sample of 8 pairs, two calls at a time unless `judge` says otherwise."""
    spec = {"name": "http-judge", "backend": "openai", "model": "m", "base_url": url, "max_concurrency": 2}
    config.judges = [*config.judges, JudgeConfig(**{**spec, "max_pairs": 8, **judge})]
    return config


# How long a reliability test waits for an event in a process that is still running (a stage reached, a chunk
# started): generous on purpose — on a busy machine (load 5-17) the local judge took minutes to start, and a fixed
# deadline of 300 s failed a test whose run was healthy. A process that exits first fails the wait at once.
EVENT_BOUND_S = 1800.0


def wait_while_running(proc: subprocess.Popen, happened, what: str, every_s: float = 0.2) -> None:
    """Wait until `happened()` is true, while `proc` runs: fails with its output as soon as it exits first, and
    only past EVENT_BOUND_S otherwise."""
    import time

    deadline = time.monotonic() + EVENT_BOUND_S
    while not happened():
        assert proc.poll() is None, f"{what}: the process exited first:\n{proc.stdout.read()}"
        assert time.monotonic() < deadline, f"{what}: not within {EVENT_BOUND_S:.0f} s"
        time.sleep(every_s)
