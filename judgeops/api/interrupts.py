"""A run stopped by a signal: SIGINT (Ctrl-C) and SIGTERM end a command that runs a flow the same way — the
run recorded as cancelled with the signal's name, every process it started stopped, one line, and exit
128 + the signal's number.

The temporary Prefect API server a CLI run uses (Prefect's SubprocessASGIServer, started on the first client
call) is started here, in a session of its own, once the run's input is checked (`start_server_here`, called by
the API just before a flow starts: bad input is answered in seconds, not after a server's 20 s start). A terminal's Ctrl-C goes to its whole foreground process
group: a server that died with it left the flow retrying a dead API for minutes, and one that outlived a
SIGTERM was left running. Prefect has no setting for either, so its Popen gets `start_new_session` for that one
call, and the server is stopped here when the command ends (Prefect's own atexit stop stays as a backstop).
"""

from __future__ import annotations

import contextlib
import functools
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator

from judgeops.schemas.liveness import Interrupted, forget_signals, note_signal, signal_received

__all__ = [
    "Interrupted",
    "Stopped",
    "interrupted",
    "run_command",
    "signal_in",
    "signals_end_the_run",
    "start_server_here",
]
RUN_COMMANDS = ("run", "ingest", "recalibrate")  # the commands that run a flow in this process


def _raise(signum: int, frame) -> None:
    note_signal(signum)
    raise Interrupted(signum)


def _noting(handler):
    """Prefect's own SIGTERM handler (installed for the length of a flow run; it raises TerminationSignal), made
    to note the signal first, so a swallowed TerminationSignal still ends the run (schemas/liveness.py)."""

    def noting_handler(signum: int, frame) -> None:
        note_signal(signum)
        return handler(signum, frame)

    noting_handler.wrapped = handler
    return noting_handler


@contextlib.contextmanager
def _prefect_sigterm_noted() -> Iterator[None]:
    """Prefect's flow engine installs `prefect.utilities.engine._prefect_sigterm_handler` (looked up by name
    when a flow starts); for this block it is wrapped by `_noting`. Where a Prefect version has no such
    handler, nothing changes: the exit still reads the exception's chain."""
    from prefect.utilities import engine

    handler = getattr(engine, "_prefect_sigterm_handler", None)
    if handler is None or hasattr(handler, "wrapped"):
        yield
        return
    engine._prefect_sigterm_handler = _noting(handler)
    try:
        yield
    finally:
        engine._prefect_sigterm_handler = handler


class Stopped:
    """What a signals_end_the_run block was stopped by: `signum` (None while no signal was noted)."""

    signum: int | None = None


def signal_in(exc: BaseException | None, stopped: Stopped | None = None) -> int | None:
    """The signal that ended a command: the one its block noted (`stopped`), else one in the exception's chain
    (judgeops' Interrupted, a KeyboardInterrupt — SIGINT — or Prefect's TerminationSignal); None if neither."""
    if stopped is not None and stopped.signum is not None:
        return stopped.signum
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        signum = getattr(exc, "signum", None) or getattr(exc, "signal", None)
        if isinstance(signum, int) and not isinstance(signum, bool):
            return signum
        if isinstance(exc, KeyboardInterrupt):
            return signal.SIGINT
        exc = exc.__cause__ or exc.__context__
    return None


def _temporary_server():
    """Prefect's temporary API server, started in its own session; None where an API URL is configured."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_ENABLED

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    from prefect.server.api import server as module

    server = module.SubprocessASGIServer()  # the instance every Prefect client of this process then uses
    if not server.running:
        popen = module.subprocess.Popen
        module.subprocess.Popen = functools.partial(subprocess.Popen, start_new_session=True)
        try:
            server.start()
        finally:
            module.subprocess.Popen = popen
    return server


def interrupted(
    command: str, exc: BaseException | None, stopped: Stopped | None = None, late: str = ""
) -> tuple[int, str] | None:
    """(128 + the signal that stopped `command`, the one line to print) — the signal noted by the command's
    signals_end_the_run block (`stopped`) or carried by `exc` — or None when no signal stopped it. A command
    without such a block (not a run) counts only a KeyboardInterrupt: Ctrl-C."""
    if stopped is None:
        signum = getattr(exc, "signum", signal.SIGINT) if isinstance(exc, KeyboardInterrupt) else None
    else:
        signum = signal_in(exc, stopped)
    if signum is None:
        return None
    name = signal.Signals(signum).name
    return 128 + signum, f"judgeops {command}: interrupted by {name}{f' {late}' if late else ''}; stopped"


def run_command(command: str, call: Callable[[], int]) -> tuple[int, str | None]:
    """(exit code, a line to print or None) of a command: `call()`, a run command inside a signals_end_the_run
    block. A signal gives 128 + its number and one line, whatever exception carried it; any other exception
    propagates (the command line describes it)."""
    stopped = None
    try:
        if command not in RUN_COMMANDS:
            return call(), None
        with signals_end_the_run() as stopped:
            code = call()
        return interrupted(command, None, stopped, "after the run had completed") or (code, None)
    except KeyboardInterrupt as exc:
        return interrupted(command, exc, stopped) or (130, f"judgeops {command}: interrupted; stopped")
    except Exception as exc:
        found = interrupted(command, exc, stopped)  # a signal's exception, replaced on its way up
        if found is None:
            raise
        return found


# the open signals_end_the_run blocks, innermost last: the temporary server each started (None: none yet)
_BLOCKS: list = []


def start_server_here() -> None:
    """Inside a signals_end_the_run block, start the temporary server now, in its own session (the block stops
    it); elsewhere nothing (Prefect starts it on its first client call, as usual)."""
    if _BLOCKS and _BLOCKS[-1] is None:
        _BLOCKS[-1] = _temporary_server()


@contextlib.contextmanager
def signals_end_the_run() -> Iterator[Stopped]:
    """SIGINT and SIGTERM raise Interrupted in the main thread; a temporary Prefect server started in the block is
    the block's. (Outside the main thread, e.g. a notebook's worker, signals stay as they are: Python allows no
    handler there.)"""
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    _BLOCKS.append(None)
    forget_signals()
    stopped = Stopped()
    try:
        with _prefect_sigterm_noted():
            yield stopped
    finally:
        stopped.signum = signal_received()
        forget_signals()  # a later command of this process (an API caller, a test) starts clean
        for s, handler in previous.items():
            signal.signal(s, handler)
        server = _BLOCKS.pop()
        if server is not None:
            _drain_then_stop(server)


def _drain_then_stop(server) -> None:
    """Send the logs and events still queued for the API (else their workers report a dead API at exit), then
    stop the server."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        with contextlib.suppress(Exception):  # noqa: BLE001 - best effort, bounded: the run has ended
            worker.drain_all(timeout=5)
    with contextlib.suppress(Exception):  # noqa: BLE001 - Prefect's own atexit stop tries again
        server.stop()
