"""Which errors end a command with a message for the user (no traceback), and with which exit code.

The errors of bad input (a config, a name) are told apart without loading the pipeline: a refused input answers
in the time Python starts, not after Prefect's import (~8 s on 2 cores).
"""

from __future__ import annotations

import functools
import logging

from judgeops.config import ConfigError
from judgeops.schemas.names import NameRefused

LOCAL = ("run", "ingest", "recalibrate", "backfill")  # the commands that run a flow


@functools.cache
def stopping() -> tuple[type[BaseException], ...]:
    """A run stopped on purpose: a broken contract, an unreadable source, a full store, a judge that gave up, a
    call cache out of reach, the budget, a backfilled week that did not complete."""
    from judgeops.data_contracts import ContractViolation
    from judgeops.flows.backfill import BackfillError
    from judgeops.schemas.store import StoreError
    from judgeops.tasks.ingest import IngestError
    from judgeops.tasks.judges.backends.base import JudgeBackendError
    from judgeops.tasks.judges.cache import CacheUnavailable
    from judgeops.tasks.judges.cost import BudgetExceeded

    return (
        ContractViolation,
        IngestError,
        StoreError,
        JudgeBackendError,
        CacheUnavailable,
        BudgetExceeded,
        BackfillError,
    )


def describe(exc: BaseException, command: str) -> tuple[int, str] | None:
    """(exit code, one-line message) for an error meant for the user; None for a bug (shown with traceback)."""
    if isinstance(exc, ConfigError):
        return 2, str(exc)
    if isinstance(exc, NameRefused):  # a run id, artifact or other name that would leave the store
        return 2, f"judgeops {command}: {exc}"
    from judgeops.schemas.store import StoreError

    if isinstance(exc, StoreError) and command not in LOCAL:
        return 1, f"judgeops {command}: {exc}"
    # a command on a votes file (or the cache): the file or the method's parameters are wrong (an InputError
    # is a ValueError)
    if isinstance(exc, ValueError | TypeError) and command in ("aggregate", "audit", "cache"):
        return 2, f"judgeops {command}: {exc}"
    # the errors of the commands that run the pipeline: their classes load Prefect
    from judgeops.api.gates import GateError
    from judgeops.api.operations import OperationError
    from judgeops.flows.recalibrate import RecalibrationError

    if isinstance(exc, GateError):
        return 2, str(exc)
    if isinstance(exc, stopping()) and command in LOCAL:
        return 1, f"judgeops {command} stopped: {exc}"
    if isinstance(exc, StoreError | OperationError):
        return 1, f"judgeops {command}: {exc}"
    if isinstance(exc, RecalibrationError):
        return 2, f"judgeops recalibrate: {exc}"
    return None


class _OneLineErrors(logging.Filter):
    """A console-handler filter: the errors that stop a run with a message meant for the user are logged
    without their traceback on the terminal. Prefect's API handler runs first (it sits on the flow- and
    task-run loggers), so the Prefect UI keeps the traceback; `--debug` keeps it on the terminal too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and (
            isinstance(record.exc_info[1], (*stopping(), ConfigError))
            or _raised_by_a_stop(record.exc_info[1])
        ):
            record.exc_info, record.exc_text = None, None
        return True


def _raised_by_a_stop(exc: BaseException | None) -> bool:
    """An error raised while a stop signal was being handled is that stop (the run's last line says which):
    Prefect 3.9's task engine, signalled while it sets a task run up, raises `ValueError: Task run is not set`
    from its crash handler, with the TerminationSignal as its context (a SIGTERM test saw its traceback)."""
    from prefect.exceptions import TerminationSignal

    seen = 0
    while exc is not None and seen < 20:  # the context chain, not followed forever
        if isinstance(exc, TerminationSignal | KeyboardInterrupt):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def quiet_tracebacks() -> None:
    import prefect.main  # noqa: F401 - sets up Prefect's logging, whose console handler gets the filter
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
            isinstance(f, _OneLineErrors) for f in handler.filters
        ):
            handler.addFilter(_OneLineErrors())
