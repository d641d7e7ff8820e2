"""A throwaway PostgreSQL server on loopback for the tests: Debian's postgresql package (`.ci/run` installs it),
a cluster in a temp folder (initdb, trust authentication, no fsync), started and stopped with pg_ctl.

PostgreSQL refuses to run as root; as root the cluster belongs to the package's `postgres` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "judgeops"


def bin_dir() -> Path | None:
    """The folder of pg_ctl and initdb (Debian keeps them out of PATH), or None when not installed."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(versions[-1]).parent if versions else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bin = bin_dir()
        if self.bin is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.folder = Path(tempfile.mkdtemp(prefix="judgeops-pg-"))
        self.data, self.port = self.folder / "data", free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:  # initdb and postgres refuse root
            shutil.chown(self.folder, "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "--no-sync", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start"
        )

    def halt(self) -> None:
        """Stop the server, keeping its data (start() brings it back): every connection is dropped."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run([*self.as_user, str(self.bin / program), *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def url(self, database: str = "postgres", driver: str = "postgresql") -> str:
        return f"{driver}://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new empty database: its postgresql:// URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def password_user(self, name: str, password: str, database: str) -> str:
        """A role that must give `password` over TCP (scram-sha-256; every other role is trusted), owning a new
        database: its URL without the password."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(name), password))
            db.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(database), sql.Identifier(name))
            )
        hba = self.data / "pg_hba.conf"  # rewritten in place: its owner stays the server's
        hba.write_text(f"host all {name} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        self._run("pg_ctl", "-D", str(self.data), "reload")
        return f"postgresql://{name}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
