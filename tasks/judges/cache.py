"""The judge-call cache, keyed by calls.call_key: one SQLite file shared by every run on the machine, or a
PostgreSQL database shared by a fleet of workers (`cache.path: postgresql://…`, `open_cache`).

SQLite (standard library) because it is the maintained tool for exactly this: atomic commits that
survive a crash, many readers and writers across processes (WAL mode, busy timeout), one file to copy.
PostgreSQL (psycopg, the `postgres` extra) for many machines: the same tables and statements, its own
placeholders, upserts and transactions (`PostgresCallCache`).
A hit never reaches the backend. Only replies the backend actually produced are stored — parsed or
unparsable, with the raw body; transport failures (timeouts, 5xx, refused connections) never are, so a
rerun retries exactly the calls that failed.

Concurrent runs share in-flight calls: before calling the backend a caller claims the keys it misses (one
transaction; the `claims` table), calls only those it won, and waits on the cache for the keys another live
caller holds — one pays, the others read its answers. A claim whose owner died (same host: its process is
gone; another host: not refreshed for CLAIM_TTL_S) is taken over, so a crash never blocks anyone for long.

Beside the SQLite cache, `<cache>.ledger.jsonl` (in PostgreSQL: the `ledger` table) gets one line per call sent to a backend (time, backend, model, key,
caller), written before the call goes out: the bill, to reconcile with a provider's invoice, and the record
of which calls a crashed run had in flight.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from judgeops.config import redact_url
from judgeops.schemas.liveness import process_alive
from judgeops.tasks.judges.calls import TRANSPORT_FAILURE, Reply

# errors that mean no reply came back: never stored, and never served where an older version stored them (it
# recorded a body that was no completion as "unparsable: not a ...")
NOT_A_REPLY = (TRANSPORT_FAILURE, "unparsable: not a chat completion", "unparsable: not a message")

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
# provider batches (OpenAI's Batch API, Anthropic's Message Batches) in flight: recorded the moment one is created, under the digest of the
# call keys it answers, so a run that crashed or was cancelled while it waited resumes polling the same batch
# instead of paying for the calls again
_BATCHES = """
CREATE TABLE IF NOT EXISTS batches (
    digest TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    n_calls INTEGER NOT NULL,
    created REAL NOT NULL
)
"""
# each open batch's call keys, with the account (provider, endpoint, key's name) that can read it: a judge whose
# misses another judge's batch already asks (the same model, another sample of pairs) waits for that batch instead of
# paying for them again
_BATCH_CALLS = """
CREATE TABLE IF NOT EXISTS batch_calls (
    key TEXT NOT NULL,
    digest TEXT NOT NULL,
    account TEXT NOT NULL,
    PRIMARY KEY (key, digest)
)
"""
CLAIM_TTL_S = 600.0  # a claim from another host not refreshed this long is taken for dead
_OPEN_OWNERS: set[str] = (
    set()
)  # the claim owners of this process's open handles (a closed one's claims are dead)


def _in_chunks(keys: list[str], size: int = 500) -> Iterator[tuple[list[str], str]]:
    """Keys in chunks small enough for one `IN (...)` (SQLite caps bound parameters), with their marks."""
    for start in range(0, len(keys), size):
        chunk = keys[start : start + size]
        yield chunk, ",".join("?" * len(chunk))


def is_database_url(path: str | Path) -> bool:
    return str(path).startswith(("postgresql://", "postgres://"))


def open_cache(path: str | Path) -> CallCache:
    """The cache at `path`: a PostgreSQL URL (postgresql://user:password@host:port/db), else a SQLite file."""
    return PostgresCallCache(str(path)) if is_database_url(path) else CallCache(path)


class CallCache:
    """The SQLite cache (a file path). Subclasses swap the dialect: `_sql`, `_insert_ignore`, `_write`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA synchronous=NORMAL")
        _retry_while_locked(self._set_up, seconds=60)
        self._identify()
        self.ledger = self.path.with_name(self.path.name + ".ledger.jsonl")

    def _identify(self) -> None:
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        _OPEN_OWNERS.add(self.owner)

    # -- the dialect ---------------------------------------------------------------------------
    def _sql(self, statement: str) -> str:
        """A statement written with `?` placeholders, in this database's placeholder style."""
        return statement

    def _insert_ignore(self, table: str, columns: str, n: int) -> str:
        """INSERT that skips rows whose key is already there."""
        return f"INSERT OR IGNORE INTO {table} ({columns}) VALUES ({', '.join('?' * n)})"

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction that holds the write lock from its start (so read-then-write is atomic)."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            yield

    def _rows(self, statement: str, args=()) -> list[tuple]:
        return list(self._db.execute(self._sql(statement), args))

    def _many(self, statement: str, rows: list[tuple]) -> None:
        if rows:
            self._db.executemany(self._sql(statement), rows)

    def _set_up(self) -> None:
        if self._db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        for name, kind in _ADDED.items():
            if name not in have:
                self._db.execute(f"ALTER TABLE calls ADD COLUMN {name} {kind}")
        self._db.execute(_CLAIMS)
        self._db.execute(_BATCHES)
        self._db.execute(_BATCH_CALLS)

    def close(self) -> None:
        """Close the file; claims this handle still holds are dropped (its calls are no longer in flight)."""
        _OPEN_OWNERS.discard(self.owner)
        with contextlib.suppress(sqlite3.Error):
            self._db.execute("DELETE FROM claims WHERE owner = ?", (self.owner,))
        self._db.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r})"

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get_many(self, keys: list[str]) -> dict[str, Reply]:
        found: dict[str, Reply] = {}
        for chunk, marks in _in_chunks(keys):
            rows = self._rows(
                "SELECT key, text, probs, tokens, latency_ms, raw, error, tokens_in, tokens_out FROM calls "
                f"WHERE key IN ({marks})",
                chunk,
            )
            for key, text, probs, tokens, latency, raw, error, tokens_in, tokens_out in rows:
                if error is not None and error.startswith(NOT_A_REPLY):
                    continue  # a failure a cache written by an older version kept: asked again, never served
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
        """Store the replies the backend produced (one transaction); failures (no reply came back, or a body
        that is no reply) are never stored."""
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
            with self._write():  # one transaction: a crash keeps all of the chunk or none of it
                self._many(self._insert_ignore("calls", _COLUMNS, 12), rows)
        return len(rows)

    def size_bytes(self) -> int:
        """The cache file with its write-ahead log."""
        return sum(f.stat().st_size for f in self.path.parent.glob(self.path.name + "*"))

    STATS_COLUMNS = ["backend", "model", "calls", "unparsable", "tokens", "oldest", "newest"]

    def stats(self) -> list[dict]:
        """Per backend and model (STATS_COLUMNS): cached calls, unparsable ones, tokens, oldest and newest."""
        rows = self._rows(
            "SELECT backend, model, COUNT(*), SUM(CASE WHEN error IS NULL THEN 0 ELSE 1 END),"
            " COALESCE(SUM(tokens), 0), MIN(created), MAX(created) FROM calls GROUP BY backend, model"
            " ORDER BY backend, model"
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
        with self._write():
            n = self._db.execute(self._sql(sql), args).rowcount
        self._db.execute("VACUUM")
        return n

    # -- in-flight calls shared across runs -----------------------------------------------------
    def claim(self, keys: list[str]) -> tuple[set[str], set[str]]:
        """(the keys this handle now owns and must call, the keys a live other caller is calling). Keys
        already answered are in neither; dead owners' claims are taken over."""
        now, mine, theirs = time.time(), set(), set()
        keys = sorted(
            set(keys)
        )  # one order for every caller: concurrent claims never wait on each other in a cycle
        with self._write():
            for chunk, marks in _in_chunks(keys):
                done = {k for (k,) in self._rows(f"SELECT key FROM calls WHERE key IN ({marks})", chunk)}
                held = self._rows(
                    f"SELECT key, owner, host, pid, claimed FROM claims WHERE key IN ({marks})", chunk
                )
                dead = [
                    (k, owner)
                    for k, owner, host, pid, claimed in held
                    if owner != self.owner and self._dead(owner, host, pid, claimed, now)
                ]
                # the dead owner's claim only: another caller may have taken the key over meanwhile
                self._many("DELETE FROM claims WHERE key = ? AND owner = ?", dead)
                free = [k for k in chunk if k not in done]
                self._many(
                    self._insert_ignore("claims", "key, owner, host, pid, claimed", 5),
                    [(k, self.owner, self.host, self.pid, now) for k in free],
                )
                won = set()
                for key, owner in self._rows(f"SELECT key, owner FROM claims WHERE key IN ({marks})", chunk):
                    (won if owner == self.owner else theirs).add(key)
                # a key answered since the first look (its caller stored the reply, then released the claim:
                # possible where writers do not exclude each other, as in PostgreSQL) is not called again
                late = {
                    k for (k,) in self._rows(f"SELECT key FROM calls WHERE key IN ({marks})", chunk)
                } - done
                self._many(
                    "DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in won & late]
                )
                mine |= won - late
        return mine, theirs - mine

    def _dead(self, owner: str, host: str, pid: int, claimed: float, now: float) -> bool:
        # this process's claims are alive while their handle is open: a stage retried in the same process must
        # not wait on the handle that failed
        if host == self.host and pid == self.pid:
            return owner not in _OPEN_OWNERS
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

    # -- provider batches in flight -----------------------------------------------------------------
    def open_batch(self, digest: str) -> str | None:
        """The id of the provider batch created for these calls and not yet collected, if any."""
        rows = self._rows("SELECT batch_id FROM batches WHERE digest = ?", (digest,))
        return rows[0][0] if rows else None

    def record_batch(
        self, digest: str, backend: str, model: str, batch_id: str, keys: list[str], account: str
    ) -> None:
        """A batch just created for the calls `keys`, readable by `account` (one transaction)."""
        with self._write():
            self._many("DELETE FROM batches WHERE digest = ?", [(digest,)])
            self._many("DELETE FROM batch_calls WHERE digest = ?", [(digest,)])
            self._many(
                "INSERT INTO batches (digest, backend, model, batch_id, n_calls, created) VALUES (?, ?, ?, ?, ?, ?)",
                [(digest, backend, model, batch_id, len(keys), time.time())],
            )
            self._many(
                self._insert_ignore("batch_calls", "key, digest, account", 3),
                [(k, digest, account) for k in keys],
            )

    def batches_holding(self, keys: list[str], account: str) -> dict[str, tuple[str, set[str]]]:
        """The open batches of `account` that ask for some of `keys`: digest → (batch id, every key it asks)."""
        digests: set[str] = set()
        for chunk, marks in _in_chunks(sorted(set(keys))):
            rows = self._rows(
                f"SELECT DISTINCT digest FROM batch_calls WHERE account = ? AND key IN ({marks})",
                (account, *chunk),
            )
            digests |= {r[0] for r in rows}
        found = {}
        for digest in sorted(digests):
            batch_id = self.open_batch(digest)
            if batch_id is not None:
                asked = self._rows("SELECT key FROM batch_calls WHERE digest = ?", (digest,))
                found[digest] = (batch_id, {r[0] for r in asked})
        return found

    def close_batch(self, digest: str) -> None:
        """The batch's replies are in the cache (or it ended without them): nothing left to resume."""
        with self._write():
            self._many("DELETE FROM batches WHERE digest = ?", [(digest,)])
            self._many("DELETE FROM batch_calls WHERE digest = ?", [(digest,)])

    def release(self, keys: list[str]) -> None:
        """Drop this handle's claims on `keys` (answered or failed: a failed call may be retried by anyone),
        and refresh the rest of its claims (they are still being worked on)."""
        with self._write():
            self._many("DELETE FROM claims WHERE key = ? AND owner = ?", [(k, self.owner) for k in keys])
            self._db.execute(
                self._sql("UPDATE claims SET claimed = ? WHERE owner = ?"), (time.time(), self.owner)
            )

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
                last = self.get_many(sorted(waiting))  # answered between the two looks: not to claim again
                found.update(last)
                if last and on_found:
                    on_found(last)
                break
            time.sleep(poll_s)
        return found

    def _held_by_others(self, keys: list[str]) -> set[str]:
        now, theirs = time.time(), set()
        for chunk, marks in _in_chunks(keys):
            for key, owner, host, pid, claimed in self._rows(
                f"SELECT key, owner, host, pid, claimed FROM claims WHERE key IN ({marks})", chunk
            ):
                if owner != self.owner and not self._dead(owner, host, pid, claimed, now):
                    theirs.add(key)
        return theirs


_LEDGER = """
CREATE TABLE IF NOT EXISTS ledger (
    t DOUBLE PRECISION NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    caller TEXT NOT NULL
)
"""


redact = redact_url  # the URL without its password: what a message or a log may show
# how long a PostgreSQL cache whose connection dropped is reconnected to before the run stops
RECONNECT_S = 60.0


class CacheUnavailable(ConnectionError):
    """The call cache cannot be reached (at open, or after RECONNECT_S of reconnecting): one line, no password."""


def _reconnecting(method):
    """A PostgreSQL cache operation, done again on a fresh connection when the server dropped the last one
    (restarted, stopped a while, connections terminated): each operation is one transaction that is safe to
    repeat (inserts ignore what is there; a claim of this handle's own is its own), retried with backoff for
    RECONNECT_S, then CacheUnavailable."""

    @functools.wraps(method)
    def again(self, *args, **kwargs):
        import psycopg

        since, backoff = None, 0.25
        while True:
            try:
                return method(self, *args, **kwargs)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if not self._db.closed and not self._db.broken:
                    raise  # the statement's own error on a live connection: not ours to retry
                since = since or time.monotonic()
                while True:
                    if time.monotonic() - since > RECONNECT_S:
                        raise CacheUnavailable(
                            f"call cache {self.path}: the connection dropped and could not be made again in "
                            f"{RECONNECT_S:.0f} s ({type(exc).__name__}); the calls answered so far are cached: "
                            "rerun once the database is back"
                        ) from None
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 5.0)
                    try:
                        self._reconnect()
                        break
                    except psycopg.OperationalError:
                        continue

    return again


_FROM_ENVIRONMENT = re.compile(r"\$\{(\w+)\}")
_FROM_SECRET_BLOCK = re.compile(r"\{\{\s*prefect\.blocks\.secret\.([\w-]+)\s*\}\}")  # Prefect's own template


def with_environment(url: str) -> str:
    """The URL with each `${VAR}` read from the environment and each `{{ prefect.blocks.secret.NAME }}` from that
    Prefect Secret block (a password kept out of the config), percent-encoded so any character is safe in a URL;
    one that is not there is named in the error (the URL redacted)."""
    missing = [name for name in _FROM_ENVIRONMENT.findall(url) if name not in os.environ]
    if missing:
        raise ConnectionError(f"call cache {redact(url)}: environment variable {missing[0]} is not set")
    url = _FROM_ENVIRONMENT.sub(lambda m: quote(os.environ[m.group(1)], safe=""), url)
    return _FROM_SECRET_BLOCK.sub(lambda m: quote(_secret_block(m.group(1), url), safe=""), url)


def _secret_block(name: str, url: str) -> str:
    from judgeops.tasks.judges.backends.hosted import secret_value  # Prefect is imported there (the layering)

    try:
        return secret_value(name)
    except ValueError as exc:  # Prefect's "Unable to find block document named ..."
        raise ConnectionError(
            f"call cache {redact(url)}: Prefect Secret block {name!r} not found on the Prefect server ({exc})"
        ) from None
    except Exception as exc:  # the Prefect API unreachable, ...: one line, the block named, no value
        raise ConnectionError(
            f"call cache {redact(url)}: Prefect Secret block {name!r} could not be read ({type(exc).__name__})"
        ) from None


class PostgresCallCache(CallCache):
    """The cache in a PostgreSQL database, for workers on many machines: the same tables (REAL columns as
    DOUBLE PRECISION) and statements. Writes are transactions at READ COMMITTED: an INSERT that meets a key
    another transaction is inserting waits for it, so two callers never both win a claim; the ledger is a
    table. `path` is the URL without its password."""

    def __init__(self, url: str):
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - the message is the point
            raise ImportError(
                "a postgresql:// call cache needs psycopg: pip install 'judgeops[postgres]'"
            ) from exc
        self.path = redact(url)
        self._url = with_environment(url)  # kept to reconnect with; never shown
        try:
            self._db = psycopg.connect(self._url, autocommit=True, connect_timeout=30)
        except psycopg.OperationalError as exc:  # its message may quote the URL: never the password
            raise CacheUnavailable(f"call cache {self.path}: {redact(str(exc)).strip()}") from None
        with self._db.transaction():
            self._db.execute(
                "SELECT pg_advisory_xact_lock(7283)"
            )  # concurrent CREATE TABLE IF NOT EXISTS race
            self._db.execute(_SCHEMA.replace("REAL", "DOUBLE PRECISION"))
            for name, kind in _ADDED.items():
                self._db.execute(f"ALTER TABLE calls ADD COLUMN IF NOT EXISTS {name} {kind}")
            self._db.execute(_CLAIMS.replace("REAL", "DOUBLE PRECISION"))
            self._db.execute(_LEDGER)
            self._db.execute(_BATCHES.replace("REAL", "DOUBLE PRECISION"))
            self._db.execute(_BATCH_CALLS)
        self._identify()
        self.ledger = None

    def _reconnect(self) -> None:
        import psycopg

        with contextlib.suppress(Exception):
            self._db.close()
        self._db = psycopg.connect(self._url, autocommit=True, connect_timeout=10)

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def _insert_ignore(self, table: str, columns: str, n: int) -> str:
        return f"INSERT INTO {table} ({columns}) VALUES ({', '.join('?' * n)}) ON CONFLICT DO NOTHING"

    @contextlib.contextmanager
    def _write(self) -> Iterator[None]:
        with self._db.transaction():
            yield

    def _many(self, statement: str, rows: list[tuple]) -> None:
        if rows:
            with self._db.cursor() as cursor:
                cursor.executemany(self._sql(statement), rows)

    def close(self) -> None:
        _OPEN_OWNERS.discard(self.owner)
        with contextlib.suppress(Exception):
            self._db.execute("DELETE FROM claims WHERE owner = %s", (self.owner,))
        self._db.close()

    def claim(self, keys: list[str]) -> tuple[set[str], set[str]]:
        """As CallCache.claim; a transaction PostgreSQL chose as a deadlock victim (claims are taken in key order,
        so only against other statements) is rolled back whole and tried again."""
        from psycopg.errors import DeadlockDetected

        for attempt in range(5):
            try:
                return super().claim(keys)
            except DeadlockDetected:
                time.sleep(0.05 * (attempt + 1))
        return super().claim(keys)

    def size_bytes(self) -> int:
        (size,) = self._rows("SELECT pg_total_relation_size('calls') + pg_total_relation_size('claims')")[0]
        return int(size)

    def record_sent(self, backend: str, model: str, keys: list[str]) -> None:
        now = time.time()
        with self._write():
            self._many(
                "INSERT INTO ledger (t, backend, model, key, caller) VALUES (?, ?, ?, ?, ?)",
                [(now, backend, model, k, self.owner) for k in keys],
            )

    def ledger_keys(self) -> list[str]:
        """The keys of every call sent, in the order they were recorded."""
        return [k for (k,) in self._rows("SELECT key FROM ledger ORDER BY t, key")]


# every operation of the PostgreSQL cache survives a dropped connection (see _reconnecting)
for _name in (
    "get_many",
    "put_many",
    "size_bytes",
    "stats",
    "prune",
    "claim",
    "record_sent",
    "open_batch",
    "record_batch",
    "batches_holding",
    "close_batch",
    "release",
    "ledger_keys",
    "_held_by_others",
):
    setattr(PostgresCallCache, _name, _reconnecting(getattr(PostgresCallCache, _name)))
