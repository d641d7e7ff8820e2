"""Components found through entry points — judge backends, aggregators and item sources — the built-ins included.

A package adds one by naming it under the group in its own pyproject.toml, and `pip install` makes it usable by
that name in judgeops.yaml (`backend:`, `aggregation.methods`, a file source's `format:`):

    [project.entry-points."judgeops.judges"]        # a class: Backend(JudgeConfig) with complete(calls), close()
    my-server = "my_pkg.judge:MyBackend"
    [project.entry-points."judgeops.aggregators"]   # an estimator class: fit(df) → probas_ (see tasks/aggregate)
    unanimous = "my_pkg.agg:Unanimous"
    [project.entry-points."judgeops.sources"]       # a function (path, source) → records (dicts)
    qa_lines = "my_pkg.read:read_qa_lines"

judgeops registers its own the same way (pyproject.toml), so `plugins.names("aggregators")` lists every method.
Programmatic judges are not backends (they read units, not prompts) and stay `backend: programmatic`.
"""

from __future__ import annotations

import functools
from importlib.metadata import EntryPoint, entry_points

GROUPS = {"judges": "judgeops.judges", "aggregators": "judgeops.aggregators", "sources": "judgeops.sources"}


class PluginError(ValueError):
    """A name no installed package registers, or an entry point that does not load: the message says which."""


@functools.cache
def registered(kind: str) -> dict[str, EntryPoint]:
    """Name → entry point, over every installed distribution (read once per process)."""
    return {ep.name: ep for ep in entry_points(group=GROUPS[kind])}


def names(kind: str) -> list[str]:
    return sorted(registered(kind))


def load(kind: str, name: str):
    """The registered object (class or function) of that name; a PluginError names the alternatives."""
    found = registered(kind).get(name)
    if found is None:
        raise PluginError(
            f"no {kind[:-1]} {name!r} is installed: available {', '.join(names(kind))} (entry points of "
            f"group {GROUPS[kind]!r}; a plugin package registers its own)"
        )
    try:
        return found.load()
    except Exception as exc:  # an ImportError or anything the plugin's module raises on import
        raise PluginError(f"{GROUPS[kind]} {name!r} ({found.value}) failed to load: {exc}") from exc
