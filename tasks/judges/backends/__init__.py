"""Backends answer Requests. Each takes a list of Calls and returns one Reply per call key.

`openai` (any OpenAI-compatible chat-completions endpoint) and `local` (a GGUF model run in-process
with transformers) share this one method; programmatic judges read the units directly and never
come here (see tasks/judges/programmatic.py).
"""

from __future__ import annotations

from typing import Protocol

from judgeops.config import JudgeConfig
from judgeops.tasks.judges.calls import Call, Reply


class JudgeBackendError(RuntimeError):
    """The backend cannot go on (circuit open, model missing): the batch stops, finished calls are kept."""


class Backend(Protocol):
    def complete(self, calls: list[Call]) -> dict[str, Reply]: ...

    def close(self) -> None: ...


def get_backend(judge: JudgeConfig) -> Backend:
    if judge.backend == "openai":
        from judgeops.tasks.judges.backends.openai import OpenAIBackend

        return OpenAIBackend(judge)
    if judge.backend == "local":
        from judgeops.tasks.judges.backends.local import LocalBackend

        return LocalBackend(judge)
    raise ValueError(f"judge {judge.name}: backend {judge.backend!r} takes no requests")
