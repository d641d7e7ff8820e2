"""C8: does a judge's rationale name the planted edit?

Programmatic check against the edit recorded at construction (`pairs.edit_before` → `edit_after`): the
salient tokens of the edit are the words and numbers that differ between its two sides (the changed fact or
number, the reversed relation, the added overclaim, the dropped condition), without stop words and one- or
two-letter words; the rationale names the edit when it contains one of them. Numbers compare by value
("36.0" names "36"). A rationale that only says which answer is better names nothing.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+", re.UNICODE)
STOP_WORDS = frozenset(
    "the a an and or but if then so of to in on at by for with from as is are was were be been being it its "
    "this that these those there their they he she we you i yes than which who what when where how any each "
    "has have had do does did into out over under about answer".split()
)  # not: "more"/"less", "not", modals and quantifiers ("will", "must", "all"): reversals and overclaims live there


def _norm(token: str) -> str:
    t = token.lower()
    if t[0].isdigit():
        t = t.replace(",", "")
        try:
            return repr(float(t))
        except ValueError:
            return t
    return t


def tokens(text: str | None) -> set[str]:
    return {_norm(t) for t in _TOKEN.findall(text or "")}


def salient(before: str | None, after: str | None) -> set[str]:
    """The tokens that carry the edit: in one side and not the other, minus stop words and short words."""
    b, a = tokens(before), tokens(after)
    keep = {t for t in (a ^ b) if t not in STOP_WORDS and (len(t) >= 3 or t[0].isdigit())}
    return keep or {t for t in (a | b) if t not in STOP_WORDS and len(t) >= 3}


def names_edit(rationale: str | None, before: str | None, after: str | None) -> bool:
    """True when the rationale contains a salient token of the planted edit."""
    return bool(salient(before, after) & tokens(rationale))
