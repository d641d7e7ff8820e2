"""What every backend is: `complete(calls) -> {call key: Reply}` and `close()`, the error that stops a batch, and
what a judge that waits for a provider batch by suspending its run raises instead of waiting."""

from __future__ import annotations

from typing import Protocol

from judgeops.tasks.judges.calls import Call, Reply


class JudgeBackendError(RuntimeError):
    """The backend cannot go on (circuit open, model missing): the batch stops, finished calls are kept."""


class BatchPending(Exception):  # noqa: N818 - not an error: the flow suspends on it
    """Provider batches still running, of judges that wait by suspending the run (`batch_wait: suspend`): each
    `{"judge": name, "batch_id": id}`. The calls answered before it are cached; the evaluate flow suspends the run
    and the batch watcher (flows/batches.py) resumes it once every batch has ended."""

    def __init__(self, batches: list[dict]):
        super().__init__(batches)  # the one argument: pickled and rebuilt whole (a Dask worker raises it)
        self.batches = batches

    def __str__(self) -> str:
        return "waiting for provider batches: " + ", ".join(
            f"{b['judge']} {b['batch_id']}" for b in self.batches
        )


class Backend(Protocol):
    def complete(self, calls: list[Call]) -> dict[str, Reply]: ...

    def close(self) -> None: ...
