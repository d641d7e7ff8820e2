"""Programmatic judges: deterministic, offline, cheap, and each with a known bias.

They really read the texts (numbers, relations, hedges, lengths), which makes them useful panel
members and honest test subjects for the profiles: each is good at some conditions and blind to
others, and where the texts give it nothing to go on it falls back to a documented default.

| judge               | reads                                   | blind spot / bias                          |
|---------------------|-----------------------------------------|--------------------------------------------|
| reference_match     | final claim vs the gold answer          | reference-guided (sees gold); when both or |
|                     |                                         | neither claim matches, picks the first     |
|                     |                                         | shown answer (position bias)               |
| numeric_consistency | arithmetic (a × b = c) and numeric      | says "tie" when neither answer has a       |
|                     | comparisons (x is more than y)          | checkable error (hedges, omissions)        |
| length_preference   | length                                  | verbosity bias: prefers the longer answer, |
|                     |                                         | the first shown when lengths are equal     |
| hedge_preference    | hedges vs absolute words                | prefers cautious wording; first shown on   |
|                     |                                         | a tie                                      |

Under the pointwise protocol each answer is scored alone (`SCORES`) and the higher score wins; equal
scores are a tie (no first-shown default: an answer judged alone has no position).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from judgeops.tasks.judges.protocols import Decision


@dataclass(frozen=True)
class PairwiseVerdict:
    verdict: str  # "A", "B" or "tie"
    p_first: float  # the judge's probability that the first shown answer (A) is better
    rationale: str


JudgeFn = Callable[[str, str, str, str], PairwiseVerdict]

_NUM = r"(\d+(?:\.\d+)?)"
_UNIT = r"(?:[A-Za-zΩ°³/]+\s*)?"
_ARITHMETIC = re.compile(rf"\$?{_NUM}\s*{_UNIT}([×÷+−])\s*\$?{_NUM}\s*{_UNIT}=\s*\$?{_NUM}")
_COMPARISON = re.compile(
    rf"{_NUM}[^\d.]{{0,25}}?\bis (more than|less than|above|below)\b[^\d]{{0,30}}?{_NUM}"
)
_MEETS = re.compile(rf"{_NUM}[^\d.]{{0,40}}?\b(does not meet|meets)\b[^\d.]{{0,30}}?{_NUM}")
_FINAL_CLAIM = re.compile(r"answer is\s+(.+?)(?:\.(?!\d)|\*|\n|$)", re.I)
_ABSOLUTES = re.compile(r"\b(always|never|every|exactly|will|certain|certainly|guaranteed|must|all)\b", re.I)
_HEDGES = re.compile(
    r"\b(usually|typically|generally|often|about|roughly|can|may|might|likely|sometimes)\b", re.I
)

_OPS = {"×": lambda a, b: a * b, "÷": lambda a, b: a / b, "+": lambda a, b: a + b, "−": lambda a, b: a - b}
_RELATIONS = {
    "more than": lambda a, b: a > b,
    "above": lambda a, b: a > b,
    "less than": lambda a, b: a < b,
    "below": lambda a, b: a < b,
    "meets": lambda a, b: a >= b,
    "does not meet": lambda a, b: a < b,
}


def _pick(
    score_a: float, score_b: float, reason_a: str, reason_b: str, confidence: float = 0.9
) -> PairwiseVerdict:
    """Higher score wins; equal scores are a tie."""
    if score_a > score_b:
        return PairwiseVerdict("A", confidence, reason_a)
    if score_b > score_a:
        return PairwiseVerdict("B", 1 - confidence, reason_b)
    return PairwiseVerdict("tie", 0.5, "no difference found")


def final_claim(text: str) -> str | None:
    claims = _FINAL_CLAIM.findall(text)
    return claims[-1].strip() if claims else None


def _normal(claim: str) -> str:
    return re.sub(r"^(the|a|an)\s+|[$,]", "", claim.strip().lower()).strip()


def claim_matches(claim: str | None, reference: str) -> bool:
    if claim is None or not reference:
        return False
    c, r = _normal(claim), _normal(reference)
    cn, rn = re.match(_NUM, c), re.match(_NUM, r)
    if cn and rn:
        return math.isclose(float(cn.group(1)), float(rn.group(1)), rel_tol=1e-9)
    return c == r or re.search(rf"\b{re.escape(r)}\b", c) is not None


def reference_match(question: str, text_a: str, text_b: str, reference: str) -> PairwiseVerdict:
    ok_a, ok_b = claim_matches(final_claim(text_a), reference), claim_matches(final_claim(text_b), reference)
    if ok_a != ok_b:
        winner = "A" if ok_a else "B"
        return PairwiseVerdict(
            winner,
            0.95 if ok_a else 0.05,
            f"only answer {winner}'s final claim matches the reference {reference!r}",
        )
    both = "both" if ok_a else "neither"
    return PairwiseVerdict(
        "A", 0.6, f"{both} final claims match the reference; defaulting to the first answer"
    )


def consistency_errors(text: str) -> list[str]:
    """Arithmetic and numeric comparisons in the text that do not hold."""
    errors = []
    for a, op, b, c in _ARITHMETIC.findall(text):
        value = _OPS[op](float(a), float(b))
        if not math.isclose(value, float(c), rel_tol=1e-6, abs_tol=0.051):
            errors.append(f"{a} {op} {b} = {c} is wrong (it is {value:g})")
    for pattern in (_COMPARISON, _MEETS):
        for a, relation, b in pattern.findall(text):
            if not _RELATIONS[relation](float(a), float(b)):
                errors.append(f"'{a} {relation} {b}' is false")
    return errors


def numeric_consistency(question: str, text_a: str, text_b: str, reference: str) -> PairwiseVerdict:
    errors_a, errors_b = consistency_errors(text_a), consistency_errors(text_b)
    return _pick(
        -len(errors_a), -len(errors_b), f"answer B: {'; '.join(errors_b)}", f"answer A: {'; '.join(errors_a)}"
    )


def length_preference(question: str, text_a: str, text_b: str, reference: str) -> PairwiseVerdict:
    la, lb = len(text_a), len(text_b)
    p = 1 / (1 + math.exp(-(la - lb) / max(1.0, 0.05 * (la + lb) / 2)))
    p = min(max(p, 0.05), 0.95)
    if la == lb:
        return PairwiseVerdict("A", 0.55, "equal length; defaulting to the first answer")
    winner = "A" if la > lb else "B"
    return PairwiseVerdict(
        winner, p, f"answer {winner} is longer ({max(la, lb)} vs {min(la, lb)} characters)"
    )


def _caution(text: str) -> int:
    return len(_HEDGES.findall(text)) - len(_ABSOLUTES.findall(text))


def hedge_preference(question: str, text_a: str, text_b: str, reference: str) -> PairwiseVerdict:
    ca, cb = _caution(text_a), _caution(text_b)
    if ca == cb:
        return PairwiseVerdict("A", 0.55, "equally cautious; defaulting to the first answer")
    return _pick(
        ca, cb, "answer B claims more than it can support", "answer A claims more than it can support", 0.8
    )


PROGRAMMATIC_JUDGES: dict[str, JudgeFn] = {
    "reference_match": reference_match,
    "numeric_consistency": numeric_consistency,
    "length_preference": length_preference,
    "hedge_preference": hedge_preference,
}


ScoreFn = Callable[[str, str, str], float]
SCORES: dict[str, ScoreFn] = {  # (question, answer, reference) -> how good the answer looks alone
    "reference_match": lambda q, text, ref: float(claim_matches(final_claim(text), ref)),
    "numeric_consistency": lambda q, text, ref: -float(len(consistency_errors(text))),
    "length_preference": lambda q, text, ref: float(len(text)),
    "hedge_preference": lambda q, text, ref: float(_caution(text)),
}


# Saying "correct" about one answer alone (pointwise bias, issue 7): each heuristic's own notion of a good
# answer, as a yes/no. (question, answer, reference) -> (says correct, why)
CHECKS: dict[str, Callable[[str, str, str], tuple[bool, str]]] = {
    "reference_match": lambda q, text, ref: (
        claim_matches(final_claim(text), ref),
        f"final claim {'matches' if claim_matches(final_claim(text), ref) else 'does not match'} the reference {ref!r}",
    ),
    "numeric_consistency": lambda q, text, ref: (
        not consistency_errors(text),
        "; ".join(consistency_errors(text)) or "no arithmetic or comparison fails",
    ),
    "length_preference": lambda q, text, ref: (len(text) >= 150, f"{len(text)} characters (thorough: ≥ 150)"),
    "hedge_preference": lambda q, text, ref: (
        _caution(text) >= 0,
        f"caution score {_caution(text)} (≥ 0: no overclaim)",
    ),
}


def check_response(model: str, unit) -> Decision:
    """A programmatic judge's yes/no on one examinee answer (unit.first)."""
    try:
        ok, why = CHECKS[model](unit.question, unit.first, unit.reference)
    except Exception as exc:  # recorded, counted against coverage
        return Decision(None, None, None, f"{type(exc).__name__}: {exc}")
    return Decision("correct" if ok else "incorrect", 0.9 if ok else 0.1, why)


def judge_unit(model: str, protocol: str, unit) -> Decision:
    """A programmatic judge's decision on one protocols.Unit; an exception becomes an error, never a gap."""
    try:
        if protocol == "pointwise":
            score = SCORES[model]
            s_a, s_b = (
                score(unit.question, unit.first, unit.reference),
                score(unit.question, unit.second, unit.reference),
            )
            out = _pick(
                s_a,
                s_b,
                f"answer A scores {s_a:g} alone, B {s_b:g}",
                f"answer B scores {s_b:g} alone, A {s_a:g}",
            )
        else:
            out = PROGRAMMATIC_JUDGES[model](unit.question, unit.first, unit.second, unit.reference)
    except Exception as exc:  # recorded, counted against coverage
        return Decision(None, None, None, f"{type(exc).__name__}: {exc}")
    return Decision(out.verdict, out.p_first, out.rationale)
