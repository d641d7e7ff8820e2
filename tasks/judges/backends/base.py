"""What every backend is: `complete(calls) -> {call key: Reply}` and `close()`, and the error that stops a batch."""

from __future__ import annotations

from typing import Protocol

from judgeops.tasks.judges.calls import Call, Reply


class JudgeBackendError(RuntimeError):
    """The backend cannot go on (circuit open, model missing): the batch stops, finished calls are kept."""


class Backend(Protocol):
    def complete(self, calls: list[Call]) -> dict[str, Reply]: ...

    def close(self) -> None: ...
