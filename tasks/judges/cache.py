"""The judge-call cache: one SQLite file, keyed by calls.call_key, shared by every run on the machine.

SQLite (standard library) because it is the maintained tool for exactly this: atomic commits that
survive a crash, many readers and writers across processes (WAL mode, busy timeout), one file to copy.
A hit never reaches the backend. Only replies the backend actually produced are stored — parsed or
unparsable, with the raw body; transport failures (timeouts, 5xx, refused connections) never are, so a
rerun retries exactly the calls that failed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from judgeops.tasks.judges.calls import Reply

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    text TEXT,
    probs TEXT,
    tokens INTEGER,
    latency_ms REAL,
    raw TEXT,
    error TEXT,
    created REAL NOT NULL
)
"""


def _retry_while_locked(step, seconds: float) -> None:
    """Run a one-time set-up step, retrying while another process holds the file.

    Switching to WAL and creating the table need an exclusive lock, and when several processes open
    a new file at once SQLite answers "database is locked" at once instead of calling the busy
    handler (it would deadlock), so the connect timeout alone does not cover it.
    """
    deadline = time.monotonic() + seconds
    pause = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)


class CallCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA synchronous=NORMAL")
        _retry_while_locked(self._set_up, seconds=60)

    def _set_up(self) -> None:
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_many(self, keys: list[str]) -> dict[str, Reply]:
        found: dict[str, Reply] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, text, probs, tokens, latency_ms, raw, error FROM calls WHERE key IN ({marks})",
                chunk,
            )
            for key, text, probs, tokens, latency, raw, error in rows:
                found[key] = Reply(
                    text, json.loads(probs) if probs else None, tokens, latency, raw, error, cached=True
                )
        return found

    def put_many(self, backend: str, model: str, replies: dict[str, Reply]) -> int:
        """Store the replies the backend produced (one transaction); transport failures are skipped."""
        rows = [
            (
                key,
                backend,
                model,
                r.text,
                json.dumps(r.probs) if r.probs is not None else None,
                r.tokens,
                r.latency_ms,
                r.raw,
                r.error,
                time.time(),
            )
            for key, r in replies.items()
            if not r.transport_failure
        ]
        if rows:
            with self._db:  # one transaction: a crash keeps all of the chunk or none of it
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        return len(rows)

    def stats(self) -> list[dict]:
        rows = self._db.execute(
            "SELECT backend, model, COUNT(*), SUM(error IS NOT NULL), COALESCE(SUM(tokens), 0),"
            " MIN(created), MAX(created) FROM calls GROUP BY backend, model ORDER BY backend, model"
        )
        return [
            {
                "backend": b,
                "model": m,
                "calls": n,
                "unparsable": int(bad or 0),
                "tokens": int(tok),
                "oldest": time.strftime("%Y-%m-%d %H:%M", time.gmtime(lo)),
                "newest": time.strftime("%Y-%m-%d %H:%M", time.gmtime(hi)),
            }
            for b, m, n, bad, tok, lo, hi in rows
        ]

    def prune(
        self, older_than_days: float | None = None, model: str | None = None, unparsable: bool = False
    ) -> int:
        """Delete entries (all of them when no filter is given); returns how many."""
        where, args = [], []
        if older_than_days is not None:
            where.append("created < ?")
            args.append(time.time() - older_than_days * 86400)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if unparsable:
            where.append("error IS NOT NULL")
        sql = "DELETE FROM calls" + (" WHERE " + " AND ".join(where) if where else "")
        with self._db:
            n = self._db.execute(sql, args).rowcount
        self._db.execute("VACUUM")
        return n
