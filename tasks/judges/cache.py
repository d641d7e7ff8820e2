"""The judge-call cache: one SQLite file, keyed by calls.call_key, shared by every run on the machine.

SQLite (standard library) because it is the maintained tool for exactly this: atomic commits that
survive a crash, many readers and writers across processes (WAL mode, busy timeout), one file to copy.
A hit never reaches the backend. Only replies the backend actually produced are stored — parsed or
unparsable, with the raw body; transport failures (timeouts, 5xx, refused connections) never are, so a
rerun retries exactly the calls that failed.

Concurrent runs share in-flight calls: before calling the backend a caller claims the keys it misses (one
transaction; the `claims` table), calls only those it won, and waits on the cache for the keys another live
caller holds — one pays, the others read its answers. A claim whose owner died (same host: its process is
gone; another host: not refreshed for CLAIM_TTL_S) is taken over, so a crash never blocks anyone for long.

Beside the cache, `<cache>.ledger.jsonl` gets one line per call sent to a backend (time, backend, model, key,
caller), written before the call goes out: the bill, to reconcile with a provider's invoice, and the record
of which calls a crashed run had in flight.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from judgeops.schemas.liveness import process_alive
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
    created REAL NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER
)
"""
# columns added since the first version, with their types: a cache file written before them gains them
_ADDED = {"tokens_in": "INTEGER", "tokens_out": "INTEGER"}
_COLUMNS = "key, backend, model, text, probs, tokens, latency_ms, raw, error, created, tokens_in, tokens_out"


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


_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    claimed REAL NOT NULL
)
"""
CLAIM_TTL_S = 600.0  # a claim from another host not refreshed this long is taken for dead


def _in_chunks(keys: list[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """Keys in chunks small enough for one `IN (...)` (SQLite caps bound parameters), with their marks."""
    for start in range(0, len(keys), size):
        chunk = keys[start : start + size]
        yield chunk, ",".join("?" * len(chunk))


class CallCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA synchronous=NORMAL")
        _retry_while_locked(self._set_up, seconds=60)
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self.ledger = self.path.with_name(self.path.name + ".ledger.jsonl")

    def _set_up(self) -> None:
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        for name, kind in _ADDED.items():
            if name not in have:
                self._db.execute(f"ALTER TABLE calls ADD COLUMN {name} {kind}")
        self._db.execute(_CLAIMS)

    def close(self) -> None:
        """Close the file; claims this handle still holds are dropped (its calls are no longer in flight)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
        self._db.close()

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_many(self, keys: list[str]) -> dict[str, Reply]:
        found: dict[str, Reply] = {}
        for chunk, marks in _in_chunks(keys):
            rows = self._db.execute(
                "SELECT key, text, probs, tokens, latency_ms, raw, error, tokens_in, tokens_out FROM calls "
                f"WHERE key IN ({marks})",
                chunk,
            )
            for key, text, probs, tokens, latency, raw, error, tokens_in, tokens_out in rows:
                found[key] = Reply(
                    text,
                    json.loads(probs) if probs else None,
                    tokens,
                    latency,
                    raw,
                    error,
                    cached=True,
                    tokens_in=tokens_in,
                    tokens_out=tokens_out,
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
                r.tokens_in,
                r.tokens_out,
            )
            for key, r in replies.items()
            if not r.transport_failure
        ]
        if rows:
            with self._db:  # one transaction: a crash keeps all of the chunk or none of it
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    f"INSERT OR IGNORE INTO calls ({_COLUMNS}) VALUES ({', '.join('?' * 12)})", rows
                )
        return len(rows)

    def size_bytes(self) -> int:
        """The cache file with its write-ahead log."""
        return sum(f.stat().st_size for f in self.path.parent.glob(self.path.name + "*"))

    STATS_COLUMNS = ["backend", "model", "calls", "unparsable", "tokens", "oldest", "newest"]

    def stats(self) -> list[dict]:
        """Per backend and model (STATS_COLUMNS): cached calls, unparsable ones, tokens, oldest and newest."""
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

    # -- in-flight calls shared across runs -----------------------------------------------------
    def claim(self, keys: list[str]) -> tuple[set[str], set[str]]:
        """(the keys this handle now owns and must call, the keys a live other caller is calling). Keys
        already answered are in neither; dead owners' claims are taken over."""
        now, mine, theirs = time.time(), set(), set()
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            for chunk, marks in _in_chunks(keys):
                done = {
                    k for (k,) in self._db.execute(f"SELECT key FROM calls WHERE key IN ({marks})", chunk)
                }
                held = self._db.execute(
                    f"SELECT key, owner, host, pid, claimed FROM claims WHERE key IN ({marks})", chunk
                )
                dead = [
                    k
                    for k, owner, host, pid, claimed in held
                    if owner != self.owner and self._dead(host, pid, claimed, now)
                ]
                self._db.executemany("DELETE FROM claims WHERE key = ?", [(k,) for k in dead])
                free = [k for k in chunk if k not in done]
                self._db.executemany(
                    "INSERT OR IGNORE INTO claims VALUES (?,?,?,?,?)",
                    [(k, self.owner, self.host, self.pid, now) for k in free],
                )
                for key, owner in self._db.execute(
                    f"SELECT key, owner FROM claims WHERE key IN ({marks})", chunk
                ):
                    (mine if owner == self.owner else theirs).add(key)
        return mine, theirs - mine

    def _dead(self, host: str, pid: int, claimed: float, now: float) -> bool:
        if host == self.host:
            return not process_alive(pid, None)
        return now - claimed > CLAIM_TTL_S

    def record_sent(self, backend: str, model: str, keys: list[str]) -> None:
        """Append the calls about to be sent to the ledger (one JSON line each)."""
        now = time.time()
        lines = "".join(
            json.dumps({"t": now, "backend": backend, "model": model, "key": k, "caller": self.owner}) + "\n"
            for k in keys
        )
        with open(self.ledger, "a", encoding="utf-8") as fh:
            fh.write(lines)

    def release(self, keys: list[str]) -> None:
        """Drop this handle's claims on `keys` (answered or failed: a failed call may be retried by anyone),
        and refresh the rest of its claims (they are still being worked on)."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(
                "DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in keys]
            )
            self._db.execute("UPDATE claims SET claimed = ? WHERE owner = ?", (time.time(), self.owner))

    def wait_for(
        self,
        keys: set[str],
        poll_s: float = 0.2,
        give_up_s: float = 3600.0,
        on_found: Callable[[dict[str, Reply]], None] | None = None,
    ) -> dict[str, Reply]:
        """Replies for keys other callers are calling, as they land in the cache. Returns when every key is
        answered or no longer claimed by a live caller (its call failed, or its owner died): the caller
        claims those again."""
        found: dict[str, Reply] = {}
        waiting, deadline = set(keys), time.monotonic() + give_up_s
        while waiting and time.monotonic() < deadline:
            got = self.get_many(sorted(waiting))
            if got:
                found.update(got)
                waiting -= set(got)
                if on_found:
                    on_found(got)
            if not waiting:
                break
            if not self._held_by_others(sorted(waiting)):
                break
            time.sleep(poll_s)
        return found

    def _held_by_others(self, keys: list[str]) -> set[str]:
        now, theirs = time.time(), set()
        for chunk, marks in _in_chunks(keys):
            for key, owner, host, pid, claimed in self._db.execute(
                f"SELECT key, owner, host, pid, claimed FROM claims WHERE key IN ({marks})", chunk
            ):
                if owner != self.owner and not self._dead(host, pid, claimed, now):
                    theirs.add(key)
        return theirs
