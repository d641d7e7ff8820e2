"""Planted-error operators: each turns a correct answer A into B = A with exactly one recorded edit.

An edit is one contiguous span of A replaced by new text (`Edit.apply(A) == B`). An operator that
cannot plant its error type cleanly in an answer raises NotApplicable with the reason, and the
construction stage tries the next type for that item.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from judgeops.schemas.artifacts import FINAL_CLAIM, OPTION_LETTERS
from judgeops.schemas.edits import NUMBER_RE, OVERCLAIMS, REVERSALS, SUBTLE_OVERCLAIMS


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    before: str
    after: str
    note: str

    def apply(self, text: str) -> str:
        assert text[self.start : self.end] == self.before, "edit does not match the text it was planted in"
        return text[: self.start] + self.after + text[self.end :]


@dataclass(frozen=True)
class Site:
    """Where an error is planted: answer A, the gold answer, the question, A's necessary conditions, a seeded
    rng, the options of a multiple-choice item, and whether to plant subtly (the Hard-Constructed branch)."""

    answer: str
    gold: str
    question: str
    conditions: Sequence[str]
    rng: np.random.Generator
    choices: Sequence[str] = ()
    subtle: bool = False


class NotApplicable(Exception):
    """This answer offers no clean place for this error type."""


_REVERSAL_RE = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, REVERSALS), key=len, reverse=True)) + r")\b"
)

_OVERCLAIM_RE = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, OVERCLAIMS), key=len, reverse=True)) + r")\b", re.I
)

_CONDITION_MARKERS = re.compile(
    r"\b(only if|only because|assum\w*|provided that|as long as|relies on|must hold|requires|unless)\b", re.I
)


def closing_claim_start(answer: str) -> int:
    """Where the closing "The answer is …" sentence starts (-1 when there is none)."""
    return answer.rfind(FINAL_CLAIM)


def _match_case(template: str, word: str) -> str:
    return word[:1].upper() + word[1:] if template[:1].isupper() else word


def _choose(matches: Sequence, rng: np.random.Generator):
    return matches[int(rng.integers(len(matches)))]


def _nearby_number(value: str, rng: np.random.Generator, low: float = 0.05, high: float = 0.25) -> str:
    """A plausible wrong value of the same kind: same number of decimals, low-high away, never equal, > 0."""
    decimals = len(value.split(".")[1]) if "." in value else 0
    x = float(value)
    step = 10**-decimals
    delta = max(step, round(abs(x) * float(rng.uniform(low, high)), decimals))
    sign = -1 if (rng.random() < 0.5 and x - delta > 0) else 1
    new = round(x + sign * delta, decimals)
    return f"{new:.{decimals}f}"


def plant_factual_fabrication(site: Site) -> Edit:
    """Change one number (when it is the final answer, every later mention changes with it), or for
    multiple choice claim a distractor: its letter and its text replace the gold option's, consistently."""
    answer, gold, rng = site.answer, site.gold, site.rng
    if site.choices and gold in OPTION_LETTERS[: len(site.choices)]:
        return _fabricate_option(answer, gold, list(site.choices), rng)
    numbers = list(NUMBER_RE.finditer(answer))
    if not numbers:
        raise NotApplicable("no number, date or quantity in the answer to fabricate")
    if site.subtle:  # one number inside a middle step, 2-5% off, the rest left as it was
        closing = closing_claim_start(answer)
        middle = [
            m for m in numbers if m.start() > answer.find(". ") and (closing < 0 or m.start() < closing)
        ]
        if middle:
            target = _choose(middle, rng)
            value, new = target.group(1), _nearby_number(target.group(1), rng, 0.02, 0.05)
            return Edit(
                target.start(), target.end(), value, new, f"a middle step's {value} was changed to {new}"
            )
    gold_numbers = NUMBER_RE.findall(gold.replace(",", ""))
    final = [m for m in numbers if gold_numbers and m.group(1) == gold_numbers[-1]]
    question_numbers = set(NUMBER_RE.findall(site.question))
    facts = [m for m in numbers if m.group(1) not in question_numbers]
    target = final[0] if final else _choose(facts or numbers, rng)
    value = target.group(1)
    new = _nearby_number(value, rng)
    same = [m for m in numbers if m.group(1) == value and m.start() >= target.start()]
    start, end = target.start(), same[-1].end()
    before = answer[start:end]
    after = NUMBER_RE.sub(lambda m: new if m.group(1) == value else m.group(0), before)
    what = "the final answer" if final else "a stated fact"
    return Edit(start, end, before, after, f"{what} {value} was replaced by the wrong value {new}")


def _swap_one_phrase(
    answer: str,
    pattern: re.Pattern,
    replacement: Callable[[str], str],
    rng,
    missing: str,
    note: str,
    subtle: bool = False,
) -> Edit:
    """Replace one (seeded) match of `pattern` by its counterpart; the shared core of reversal and overclaim.

    subtle: prefer a match inside a middle step over one in the closing claim."""
    matches = list(pattern.finditer(answer))
    if not matches:
        raise NotApplicable(missing)
    closing = closing_claim_start(answer)
    inner = [m for m in matches if closing < 0 or m.start() < closing]
    m = _choose(inner if subtle and inner else matches, rng)
    before = m.group(1)
    after = replacement(before)
    return Edit(m.start(), m.end(), before, after, note.format(before=before, after=after))


def _fabricate_option(answer: str, gold: str, choices: list[str], rng) -> Edit:
    gold_text = choices[OPTION_LETTERS.index(gold)].rstrip(".")
    others = [i for i, c in enumerate(choices) if c.strip() and c.rstrip(".") != gold_text]
    mention = re.compile(rf"(Option |answer is ){gold}\b")
    mentions = list(mention.finditer(answer))
    if not others or not mentions:
        raise NotApplicable("no distractor option to claim instead of the gold one")
    wrong = others[int(rng.integers(len(others)))]
    letter, text = OPTION_LETTERS[wrong], choices[wrong].rstrip(".")
    start, end = mentions[0].start(), mentions[-1].end()
    before = answer[start:end]
    # the quoted option text only (a short option such as "the" must not change other words)
    after = mention.sub(lambda m: m.group(1) + letter, before).replace(
        f"says: {gold_text}.", f"says: {text}.", 1
    )
    return Edit(start, end, before, after, f"the answer claims option {letter} ({text!r}) instead of {gold}")


def plant_logical_reversal(site: Site) -> Edit:
    """Swap one relation for its opposite (more/less, above/below, follows/does not follow, yes/no)."""
    return _swap_one_phrase(
        site.answer,
        _REVERSAL_RE,
        REVERSALS.__getitem__,
        site.rng,
        "no relation, inequality or conclusion with a known opposite in the answer",
        "'{before}' was reversed to '{after}'",
        site.subtle,
    )


def plant_overclaim(site: Site) -> Edit:
    """Widen a hedged claim: 'usually' → 'always', 'about' → 'exactly', 'can' → 'will'."""
    return _swap_one_phrase(
        site.answer,
        _OVERCLAIM_RE,
        lambda hedge: _match_case(hedge, (SUBTLE_OVERCLAIMS if site.subtle else OVERCLAIMS)[hedge.lower()]),
        site.rng,
        "no hedge or scoped claim in the answer to widen",
        "the hedge '{before}' was widened to '{after}'",
        site.subtle,
    )


def plant_critical_omission(site: Site) -> Edit:
    """Remove a necessary condition or caveat (a whole sentence), so the answer no longer holds as stated."""
    answer, rng = site.answer, site.rng
    candidates = [c for c in site.conditions if c and c in answer]
    if not candidates:
        candidates = [s for s in re.split(r"(?<=[.!?])\s+", answer) if _CONDITION_MARKERS.search(s)]
    if not candidates:
        raise NotApplicable("no necessary condition or caveat in the answer to omit")
    sentence = _choose(candidates, rng)
    clause = re.search(r"(;|, so|, which|, as)\s[^;]*?(?=\.$)", sentence) if site.subtle else None
    if clause:  # drop only the caveat clause: "… function; weak kidneys need a lower dose." → "… function."
        start = answer.index(sentence) + clause.start()
        return Edit(
            start,
            start + len(clause.group(0)),
            clause.group(0),
            "",
            f"the caveat '{clause.group(0).lstrip(';, ')}' was removed",
        )
    start = answer.index(sentence)
    end = start + len(sentence)
    if end < len(answer) and answer[end] == " ":
        end += 1
    elif start > 0 and answer[start - 1] == " ":
        start -= 1
    before = answer[start:end]
    if before.strip() == answer.strip():
        raise NotApplicable("the condition is the whole answer; omitting it leaves nothing")
    return Edit(start, end, before, "", f"the necessary condition '{sentence}' was removed")


Operator = Callable[[Site], Edit]
OPERATORS: dict[str, Operator] = {
    "factual_fabrication": plant_factual_fabrication,
    "logical_reversal": plant_logical_reversal,
    "overclaim": plant_overclaim,
    "critical_omission": plant_critical_omission,
}
