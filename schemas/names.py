"""The names that become path or URL components (run ids, artifact names, stage and shard keys, audit ids),
checked before any file is opened: one validator for the store, the API and the command line.

A run id is what `store.new_run_id` makes (`2026-12-03_20261203T131054_a1b2c3`). Other names are one safe path
component: letters, digits, `.`, `_`, `-`, starting with a letter or digit, at most 200 characters, no `..`.
Anything else (a traversal, an absolute path, a URL, a NUL byte, a separator) is refused with one line that
names the argument.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

RUN_ID = re.compile(r"\d{4}-\d{2}-\d{2}_\d{8}T\d{6}_[0-9a-f]{6}")
RUN_ID_FORM = "YYYY-MM-DD_YYYYMMDDTHHMMSS_xxxxxx"
_COMPONENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class NameRefused(ValueError):
    """A name that would become a path or URL component is not one: the message names the argument."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}…"


def check_component(value: object, argument: str) -> str:
    """`value` as one safe path component, or NameRefused naming `argument`."""
    if not isinstance(value, str) or not _COMPONENT.fullmatch(value) or ".." in value:
        raise NameRefused(
            f"{argument}: {_shown(value)} is not a valid name (letters, digits, '.', '_', '-'; no path separators)"
        )
    return value


def check_run_id(value: object, argument: str = "--run") -> str:
    """A run id as `new_run_id` makes them, or NameRefused naming `argument`."""
    if not isinstance(value, str) or not RUN_ID.fullmatch(value):
        raise NameRefused(
            f"{argument}: {_shown(value)} is not a run id (expected {RUN_ID_FORM}, as `judgeops store ls` lists them)"
        )
    return value


def check_artifact_name(value: object, argument: str = "artifact") -> str:
    """One of the schema registry's artifact names (or its quarantine), or NameRefused naming `argument`."""
    # the registry is the one list of names
    from judgeops.schemas.artifacts import ARTIFACTS, FILE_ARTIFACTS, QUARANTINE_SUFFIX

    known = (*sorted(ARTIFACTS), *FILE_ARTIFACTS)
    if not isinstance(value, str) or (
        value.removesuffix(QUARANTINE_SUFFIX) not in ARTIFACTS and value not in known
    ):
        raise NameRefused(
            f"{argument}: {_shown(value)} is not an artifact (expected one of {', '.join(known)}, "
            f"or NAME{QUARANTINE_SUFFIX})"
        )
    return value


def check_relative(rel: str, argument: str = "path") -> str:
    """A store-relative path made of safe components: normalised, it stays under the root."""
    if not isinstance(rel, str) or "\x00" in rel or rel.startswith("/") or "://" in rel:
        raise NameRefused(f"{argument}: {_shown(rel)} is not a path inside the store")
    normal = posixpath.normpath(rel) if rel else ""
    if normal == ".." or normal.startswith("../") or normal != rel.rstrip("/"):
        raise NameRefused(f"{argument}: {_shown(rel)} is not a path inside the store")
    return rel


def file_kind(path: str | Path) -> str:
    """What a local input path names, without opening it: "file" (a regular file), "missing", "other" (a folder,
    a FIFO — reading it would wait for a writer —, a device) or "unusable" (a NUL byte, a name too long)."""
    try:
        found = Path(path)
        return "file" if found.is_file() else "other" if found.exists() else "missing"
    except (OSError, ValueError):
        return "unusable"
