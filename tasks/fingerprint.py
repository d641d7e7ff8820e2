"""The code a stage's outputs depend on: a module and every project module it imports, transitively.

A stage's reuse key hashes these files, so editing any of them (the verdict vocabulary, a contract, the
config model) recomputes exactly the stages that import it. Found by reading the sources (ast), not by
importing them: a run whose stages are all reused never imports Great Expectations or the judges.
(No maintained library gives a package-internal import closure without importing the modules.)
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from pathlib import Path

PROJECT = "judgeops"


@cache
def _spec(name: str) -> importlib.machinery.ModuleSpec | None:
    """A module's spec without importing anything: `importlib.util.find_spec("a.b.c")` imports `a.b` first
    (for an attribute name, `a.b` itself, which could pull in Great Expectations), so ask the import system's
    finders directly with the parent package's search path, as the import statement would."""
    parent, _, _ = name.rpartition(".")
    if not parent:
        return importlib.util.find_spec(name)
    parent_spec = _spec(parent)
    if parent_spec is None or parent_spec.submodule_search_locations is None:
        return None  # the parent is a module, so `name` is an attribute
    for finder in sys.meta_path:
        if (spec := finder.find_spec(name, list(parent_spec.submodule_search_locations))) is not None:
            return spec
    return None


@cache
def module_file(name: str) -> Path | None:
    """The source file of a project module, or None for a name that is not a module (an attribute)."""
    spec = _spec(name)
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def _parents(name: str) -> list[str]:
    """A module's packages: importing `judgeops.tasks.judges.runner` runs each package's __init__ too."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


@lru_cache(maxsize=1024)
def imports_of(name: str, source: str) -> frozenset[str]:
    """Project modules named by the import statements of module `name` (at any depth: a function-level
    import is a dependency too). Cached on the source text: each stage's closure shares most modules, and
    parsing them once per process instead of once per stage is most of a run's fingerprinting time."""
    out: set[str] = set()
    package = (
        name if module_file(name) and module_file(name).name == "__init__.py" else name.rpartition(".")[0]
    )
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == PROJECT}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # a relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != PROJECT:
                continue
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names if module_file(f"{base}.{a.name}")}
    return frozenset(m for m in out if module_file(m))


def closure(roots: Iterable[str], read: Callable[[Path], str] = Path.read_text) -> dict[str, Path]:
    """Every project module the roots import, transitively: name → file. The packages above a module are
    included but not followed: their `__init__` only re-exports (tests/test_layering.py holds them to it), so
    importing `judges.runner` depends on runner's imports, not on every module its package face names."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or (path := module_file(name)) is None:
            continue
        seen[name] = path
        for parent in _parents(name):
            if (parent_path := module_file(parent)) is not None:
                seen.setdefault(parent, parent_path)
        todo += [dep for dep in imports_of(name, read(path)) if dep not in seen]
    return dict(sorted(seen.items()))


def code_fingerprint(roots: Iterable[str], read: Callable[[Path], bytes] = Path.read_bytes) -> str:
    """sha256 over the module names and sources of `closure(roots)`."""
    h = hashlib.sha256()
    for name, path in closure(roots, lambda p: read(p).decode("utf-8")).items():
        h.update(name.encode() + b"\0" + read(path) + b"\0")
    return h.hexdigest()
