"""How Prefect runs each stage task: its retries (on transient errors only) and its timeout, from `stages:`."""

from __future__ import annotations

from judgeops.config import StagesConfig
from judgeops.schemas.store import StoreError
from judgeops.tasks.judges import JudgeBackendError

# what a retry can fix: the network, the store, a judge backend that stopped answering (its answers so far are
# cached). Deterministic failures (a broken contract, bad input, the budget, a bug) fail at once.
TRANSIENT = (OSError, StoreError, JudgeBackendError)


def _transient(task, task_run, state) -> bool:
    """retry_condition_fn: retry only a stage that failed on a TRANSIENT error."""
    exc = state.data if isinstance(state.data, BaseException) else None
    return isinstance(exc, TRANSIENT)


def stage_options(config: StagesConfig) -> dict:
    """Prefect task options for every stage (`stage.with_options(**stage_options(config.stages))`)."""
    return {
        "retries": config.retries,
        "retry_delay_seconds": config.retry_delay_s,
        "retry_condition_fn": _transient,
        "timeout_seconds": config.timeout_s,
    }
