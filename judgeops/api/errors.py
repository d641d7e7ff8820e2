"""Which errors end a command with a message for the user (no traceback), and with which exit code."""

from __future__ import annotations

import logging

import prefect.main  # noqa: F401 - sets up Prefect's logging, whose console handler gets the filter below
from prefect.logging.handlers import PrefectConsoleHandler

from judgeops.api.gates import GateError
from judgeops.api.operations import OperationError
from judgeops.config import ConfigError
from judgeops.data_contracts import ContractViolation
from judgeops.flows.backfill import BackfillError
from judgeops.flows.recalibrate import RecalibrationError
from judgeops.schemas.names import NameRefused
from judgeops.schemas.store import StoreError
from judgeops.tasks.aggregate.scoring import InputError
from judgeops.tasks.ingest import IngestError
from judgeops.tasks.judges.backends.base import JudgeBackendError
from judgeops.tasks.judges.cost import BudgetExceeded

# a run stopped on purpose: a broken contract, an unreadable source, a full store, a judge that gave up, the
# budget, a backfilled week that did not complete
STOPPING = (ContractViolation, IngestError, StoreError, JudgeBackendError, BudgetExceeded, BackfillError)
# a command on a votes file: the file or the method's parameters are wrong
BAD_VOTES = (InputError, ValueError, TypeError)


def describe(exc: BaseException, command: str) -> tuple[int, str] | None:
    """(exit code, one-line message) for an error meant for the user; None for a bug (shown with traceback)."""
    if isinstance(exc, ConfigError | GateError):
        return 2, str(exc)
    if isinstance(exc, NameRefused):  # a run id, artifact or other name that would leave the store
        return 2, f"judgeops {command}: {exc}"
    if isinstance(exc, STOPPING) and command in ("run", "ingest", "recalibrate", "backfill"):
        return 1, f"judgeops {command} stopped: {exc}"
    if isinstance(exc, StoreError | OperationError):
        return 1, f"judgeops {command}: {exc}"
    if isinstance(exc, RecalibrationError):
        return 2, f"judgeops recalibrate: {exc}"
    if isinstance(exc, BAD_VOTES) and command in ("aggregate", "audit", "cache"):
        return 2, f"judgeops {command}: {exc}"
    return None


class _OneLineErrors(logging.Filter):
    """A console-handler filter: the errors that stop a run with a message meant for the user are logged
    without their traceback on the terminal. Prefect's API handler runs first (it sits on the flow- and
    task-run loggers), so the Prefect UI keeps the traceback; `--debug` keeps it on the terminal too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], (*STOPPING, ConfigError)):
            record.exc_info, record.exc_text = None, None
        return True


def quiet_tracebacks() -> None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
            isinstance(f, _OneLineErrors) for f in handler.filters
        ):
            handler.addFilter(_OneLineErrors())
