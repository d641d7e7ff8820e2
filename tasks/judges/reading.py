"""Reading a verdict out of a judge's text: the letter (A/B) or the word (yes/no) the protocol asked for.

A reply names its verdict in one of two ways, and only those count:

1. It opens with it: the letter or word alone, or followed by punctuation, a line break or "is": `B`, `(A)`,
   `**B**.`, `A: the first answer…`, `Yes, it is correct`, `Answer: B`, `Verdict - A`.
2. It states it: `B is correct`, `the better answer is A`, `I choose B`, `Final answer: (A)`,
   `the answer is not correct` (no). Where a reply states more than one, the last one is its conclusion
   ("A looks plausible, but B is correct" is B).

A capital letter that opens a sentence ("A careful reading shows that B is correct.") or a word that opens one
("No doubt it is right") is not a verdict; a reply that names none is unparsable (counted, never guessed).
Letters are read as capitals only: a lower-case "a" is an article.
"""

from __future__ import annotations

import re

_LABEL = r"(?i:(?:final\s+|my\s+)?(?:answer|verdict|choice|decision|judg(?:e)?ment|output|response|option))"
_NOUN = r"(?i:(?:answer|response|output|option|candidate)\s*)?"
_GOOD = r"(?i:better|best|correct|right|preferred|stronger|more\s+(?:accurate|correct|helpful))"
_AFTER = r"(?=\s*[^\w\s]|\s*$|\s*\n|\s+(?i:is|wins)\b)"  # what may follow an opening verdict

_OPENING_LETTER = re.compile(rf"^\W*(?:{_LABEL}\W*)?\(?\**([AB])\**\)?{_AFTER}")
_STATED_LETTER = [
    re.compile(rf"{_LABEL}\s*(?i:is|:|=|-)\s*\(?\**{_NOUN}\(?\**([AB])\b"),  # "Final answer: (A)"
    re.compile(
        rf"\b{_NOUN}\(?\**([AB])\**\)?\s+(?i:is|was|seems|appears)\s+(?i:the\s+)?{_GOOD}"
    ),  # "B is correct"
    re.compile(rf"{_GOOD}\s+(?i:answer|response|one|option)\s+(?i:is)\s+\(?\**{_NOUN}\(?\**([AB])\b"),
    re.compile(rf"\b(?i:choose|pick|prefer|select|go\s+with)\s+\(?\**{_NOUN}\(?\**([AB])\b"),  # "I choose B"
]
_OPENING_WORD = re.compile(rf"^\W*(?:{_LABEL}\W*)?\**(?i:(yes|no))\**(?=[^\w\s]|\s*$|\s*\n)")
_STATED_WORD = [
    re.compile(rf"{_LABEL}\s*(?i:is|:|=|-)\s*\**(?i:(yes|no))\b"),
    re.compile(r"(?i:\b(?:the\s+)?(?:answer|response)\s+is\s+(not\s+|in)?correct\b)"),
]


def _last(patterns: list[re.Pattern], text: str) -> re.Match | None:
    found = [m for p in patterns for m in p.finditer(text)]
    return max(found, key=lambda m: m.start()) if found else None


def read_letter(text: str | None) -> tuple[str, str] | None:
    """(the verdict letter, the rest of the reply: what follows an opening verdict, else the whole text) or None
    when the reply names none."""
    if not text:
        return None
    opening = _OPENING_LETTER.match(text)
    if opening:
        return opening.group(1), text[opening.end() :]
    stated = _last(_STATED_LETTER, text)
    return (stated.group(1), text) if stated else None


def read_yes_no(text: str | None) -> bool | None:
    """True for yes, False for no, None when the reply says neither."""
    if not text:
        return None
    opening = _OPENING_WORD.match(text)
    if opening:
        return opening.group(1).lower() == "yes"
    stated = _last(_STATED_WORD, text)
    if stated is None:
        return None
    if stated.re is _STATED_WORD[0]:
        return stated.group(1).lower() == "yes"
    return stated.group(1) is None  # "is correct" → yes; "is not correct" / "is incorrect" → no
