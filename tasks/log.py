"""The run logger: Prefect's inside a flow or task run (shown in the UI and on the CLI), else `judgeops`."""

from __future__ import annotations

import logging

from prefect.exceptions import MissingContextError
from prefect.logging import get_run_logger


def logger() -> logging.Logger | logging.LoggerAdapter:
    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger("judgeops")
