"""Is a run's process still alive? The owner and heartbeat a run record carries, and the sweep.

A run record says "running" from the moment a flow starts until it writes its outcome. A process killed
with SIGKILL (or a machine that loses power) never writes one, so the record alone would say "running"
forever. Each record therefore names its owner — host, pid and the process's start time (a pid alone may
be reused) — and a heartbeat thread refreshes `heartbeat_at` while the flow runs. A reader decides:

- same host: the owner process is alive (pid exists and started when recorded) ⇔ the run is alive;
- another host (a shared S3 store): alive while the heartbeat is younger than STALE_AFTER_S.

psutil (already installed with accelerate) answers the process questions portably; the rest is a few lines
no library covers: this is judgeops' own record format.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import threading
from collections.abc import Callable

import psutil


class Interrupted(KeyboardInterrupt):
    """The command was sent SIGINT or SIGTERM (a KeyboardInterrupt, so Prefect and the store treat both alike)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


# The signals this process has been sent while a command's signals_end_the_run block ran (judgeops.api.interrupts
# notes them, and forgets them when the block ends), oldest first.
# The exception a signal raises can be swallowed on its way up: Prefect's task engine, interrupted while it sets
# up a task run, answers with "ValueError: Task run is not set" (seen 1 in 20 Ctrl-Cs under load), and its flow
# engine drops a BaseException that arrives once the flow's state is final. So the signal is also recorded here,
# and every artifact write (`raise_if_signalled`) and the command's exit read the record: no artifact is written
# after a signal, and the run ends as interrupted whatever exception carried the news.
_SIGNALS: list[int] = []


def note_signal(signum: int) -> None:
    _SIGNALS.append(signum)


def signal_received() -> int | None:
    """The first signal noted since `forget_signals`, or None."""
    return _SIGNALS[0] if _SIGNALS else None


def forget_signals() -> None:
    _SIGNALS.clear()


def raise_if_signalled() -> None:
    """Raise Interrupted if a signal was noted (the first one)."""
    if _SIGNALS:
        raise Interrupted(_SIGNALS[0])


class SignalNoted(RuntimeError):
    """A signal noted while a backend's event loop waits (a Retry-After, fleet slots): raised there as a plain
    error, since a KeyboardInterrupt inside a task would stop the loop itself; the main thread raises Interrupted."""


def stop_if_signalled() -> None:
    """Raise SignalNoted if a signal was noted: for waits inside an event loop."""
    if _SIGNALS:
        raise SignalNoted(f"interrupted by {signal.Signals(_SIGNALS[0]).name}")


HEARTBEAT_S = 30.0
STALE_AFTER_S = 10 * HEARTBEAT_S  # a remote owner silent this long is taken for dead
# the temporary Prefect API server a CLI run starts (prefect.server.api.server.SubprocessASGIServer)
PREFECT_SERVER_APP = "prefect.server.api.server:create_app"


def process_started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def owner() -> dict:
    """This process as a run's owner: host, pid and the process's start time."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "pid_started": process_started(os.getpid())}


def process_alive(pid: int, started: float | None) -> bool:
    """The process `pid` exists and is the one that started at `started` (not a later reuse of the pid);
    with `started` None, that it exists. A process we may not inspect (another user's) exists."""
    try:
        now = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True
    return started is None or abs(now - started) < 1.0


def _age_s(stamp: str | None) -> float:
    if not stamp:
        return float("inf")
    then = dt.datetime.fromisoformat(stamp)
    if then.tzinfo is None:
        then = then.replace(tzinfo=dt.UTC)
    return (dt.datetime.now(dt.UTC) - then).total_seconds()


def run_alive(record: dict) -> bool | None:
    """Whether a "running" record's owner is alive: True / False, or None for a record with no owner
    (written before owners were recorded: nothing can be said)."""
    who = record.get("owner")
    if not who:
        return None
    if who.get("host") == socket.gethostname():
        return process_alive(int(who["pid"]), who.get("pid_started"))
    return _age_s(record.get("heartbeat_at") or record.get("updated_at")) < STALE_AFTER_S


def stop_orphan_server(server: dict | None) -> bool:
    """Stop a temporary Prefect server left behind by a dead run (only if it is still that very process,
    and it is a Prefect server). True if one was stopped."""
    if not server or not process_alive(int(server["pid"]), server.get("pid_started")):
        return False
    try:
        proc = psutil.Process(int(server["pid"]))
        if PREFECT_SERVER_APP not in " ".join(proc.cmdline()):
            return False
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except psutil.TimeoutExpired:
            proc.kill()
        return True
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


class Heartbeat:
    """Calls `beat()` every `every_s` seconds on a daemon thread until stopped (a context manager)."""

    def __init__(self, beat: Callable[[], None], every_s: float = HEARTBEAT_S):
        self.beat, self.every_s = beat, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="judgeops-heartbeat", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.beat()
            except OSError:  # a full or read-only disk: the flow itself will report it
                pass

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
