"""Judge invocation: the panel over every variant (runner.py), and the honest accounting of what came
back (coverage.py). Backends, protocols, prompts and the call cache are modules of their own."""

from judgeops.tasks.judges.backends import JudgeBackendError, get_backend
from judgeops.tasks.judges.coverage import FAILURE_CAUSES, coverage, failure_cause, transport_failures
from judgeops.tasks.judges.runner import (
    complete_cached,
    judge_responses,
    judge_variants,
    run_judge,
    select_subset,
    units_for,
)

__all__ = [
    "FAILURE_CAUSES",
    "JudgeBackendError",
    "complete_cached",
    "coverage",
    "failure_cause",
    "get_backend",
    "judge_responses",
    "judge_variants",
    "run_judge",
    "select_subset",
    "transport_failures",
    "units_for",
]
