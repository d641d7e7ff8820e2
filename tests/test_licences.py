"""No GPL or AGPL code in judgeops or any of its extras: every distribution the core and each extra pull in,
followed through their own requirements as installed here, is read from its metadata (License-Expression,
License, the licence classifiers). A distribution fails when every licence it names is GPL or AGPL; LGPL (a
linked library) passes, and so does a dual licence with a permissive choice (text-unidecode: Artistic or GPL).
`krippendorff` (GPL-3.0) was a core dependency until α was written in tasks/aggregate/agreement.py."""

from __future__ import annotations

import re
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

STRONG_COPYLEFT = re.compile(r"\bA?GPL|Affero|GNU General Public")
WEAK = re.compile(r"LGPL|Lesser|Library")


def licences(dist: metadata.Distribution) -> list[str]:
    """The licences a distribution names: its SPDX expression's alternatives, a short License field, and the
    classifiers' names."""
    meta = dist.metadata
    names = re.split(r"\s+OR\s+", meta.get("License-Expression") or "")
    field = (meta.get("License") or "").strip()
    if field and len(field) < 100 and "\n" not in field:  # not a whole licence text pasted in
        names.append(field)
    names += [c.split("::")[-1] for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return [n.strip(" ()") for n in names if n.strip(" ()") and n.strip() != "OSI Approved"]


def copyleft_only(names: list[str]) -> bool:
    strong = [n for n in names if STRONG_COPYLEFT.search(n) and not WEAK.search(n)]
    return bool(strong) and len(strong) == len(names)


def pulled_in(extras: set[str]) -> dict[str, metadata.Distribution | None]:
    """Every distribution judgeops with `extras` requires, transitively, as installed (None: not installed)."""
    found: dict[str, metadata.Distribution | None] = {}
    todo, done = [("judgeops", frozenset(extras))], set()
    while todo:
        name, wanted = todo.pop()
        if (canonicalize_name(name), wanted) in done:
            continue
        done.add((canonicalize_name(name), wanted))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            found.setdefault(canonicalize_name(name), None)
            continue
        found[canonicalize_name(name)] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (wanted or {""})):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return found


def test_no_gpl_or_agpl_in_the_core_or_any_extra():
    extras = set(metadata.metadata("judgeops").get_all("Provides-Extra") or [])
    core, everything = pulled_in(set()), pulled_in(extras)
    assert all(core.values()), [n for n, d in core.items() if d is None]  # the core is installed whole
    checked = {n: d for n, d in everything.items() if d is not None and n != "judgeops"}
    offending = {n: licences(d) for n, d in checked.items() if copyleft_only(licences(d))}
    assert offending == {}
    assert len(checked) > 100 and "great-expectations" in checked and "psycopg" in checked  # LGPL: linked


def test_the_licence_rule_reads_metadata_as_meant():
    assert copyleft_only(["GPL-3.0-or-later", "GNU General Public License v3 (GPLv3)"])
    assert copyleft_only(["AGPL-3.0-only"])
    assert not copyleft_only(["LGPL-3.0-only"])
    assert not copyleft_only(["Artistic License", "GNU General Public License v2 or later (GPLv2+)"])
    assert not copyleft_only(["MIT"]) and not copyleft_only([])
