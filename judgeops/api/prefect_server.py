"""`prefect server start`, with one fix to Prefect's SQLite transactions applied first.

Prefect 3.9's server records a worker's heartbeat from its websocket channel in a deferred transaction that reads
the work pool, then writes the worker row. On SQLite, when another connection commits between that read and that
write (a second worker's heartbeat, a flow run's state), the write fails at once with "database is locked": no
busy timeout applies to a read transaction that must become a write one. The server logs an ERROR with its
traceback and drops the worker's channel (the worker falls back to REST and reconnects). Prefect's own rule for
SQLite (prefect/server/AGENTS.md: "transactions that read then write must pass `with_for_update=True`") is
what this applies: the heartbeat's transaction begins IMMEDIATE, so it waits its turn for the write lock instead.
Nothing else changes; on PostgreSQL the mode is ignored. Where Prefect no longer has that function, nothing is
patched.

Run as `python -m judgeops.api.prefect_server start --host H --port P` (the arguments of `prefect server`).
"""

from __future__ import annotations

import functools
import sys


def immediate_heartbeats() -> bool:
    """Make the worker-channel heartbeat's transaction BEGIN IMMEDIATE on SQLite; False where Prefect has no such
    function to wrap (another version), True once it is wrapped (idempotent)."""
    try:
        from prefect.server.database.configurations import SQLITE_BEGIN_MODE
        from prefect.server.utilities import worker_channel
    except ImportError:
        return False
    original = getattr(worker_channel, "_persist_worker_channel_heartbeat", None)
    if original is None:
        return False
    if getattr(original, "__judgeops_immediate__", False):
        return True

    @functools.wraps(original)
    async def persist(*args, **kwargs):
        # the session's transaction is begun, but SQLAlchemy emits its BEGIN with the first statement (below),
        # and Prefect's `begin` listener reads the mode from this context variable then
        token = SQLITE_BEGIN_MODE.set("IMMEDIATE")
        try:
            return await original(*args, **kwargs)
        finally:
            SQLITE_BEGIN_MODE.reset(token)

    persist.__judgeops_immediate__ = True
    worker_channel._persist_worker_channel_heartbeat = persist
    return True


def main(argv: list[str] | None = None) -> int:
    immediate_heartbeats()
    from prefect.cli import app

    sys.argv = ["prefect", "server", *(sys.argv[1:] if argv is None else argv)]
    return app()


if __name__ == "__main__":
    sys.exit(main())
