"""Judge protocols: which requests a unit needs, and how the replies become one display-frame verdict.

| protocol          | requests per unit                          | verdict and p_first                               |
|-------------------|--------------------------------------------|---------------------------------------------------|
| pairwise          | 1: both answers, "A or B"                  | the letter; p_first = P(A) / (P(A) + P(B))        |
| pointwise         | 2: each answer alone, "yes or no"          | the answer more likely correct; see `_two_alone`  |
| score_then_choose | 1: both answers, "A: <1-10>, B: <1-10>"    | the higher score; p_first = logistic(sA − sB)     |
| blind_reference   | 1 + 2: solve blind, then check each answer | as pointwise, each check against the own solution |
|                   | alone against that solution (ALGORITHMS §7)|                                                   |

Probabilities come from the backend's next-token probabilities of the choice tokens where it gives
them (for a one-token read they also decide the verdict, even when another token was the most likely:
a constrained choice); otherwise from the parsed text (1 or 0). Output that names no choice is `unparsable`: recorded,
counted as an error for accuracy and against coverage. Pointwise and blind checks see one answer at
a time, so they are symmetric in the candidates by construction; pairwise and score-then-choose are
not, which is exactly what C7 measures.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from judgeops.rubrics import Rubric
from judgeops.tasks.judges import prompts
from judgeops.tasks.judges.calls import Reply, Request
from judgeops.tasks.judges.reading import opening_letter, read_letter, read_structured_verdict, read_yes_no


@dataclass(frozen=True)
class Unit:
    """One thing to judge, in the display frame: `first` is shown as A, `second` as B."""

    unit_id: str
    question: str
    first: str
    second: str
    reference: str = ""  # the gold answer: only reference-guided programmatic judges read it


@dataclass(frozen=True)
class Decision:
    verdict: str | None  # "A", "B", "tie"; None when the call failed or the output was unparsable
    p_first: float | None
    rationale: str | None = None
    error: str | None = None


_SCORES = re.compile(r"A\W{0,3}[:=]\s*(\d+(?:\.\d+)?).{0,40}?B\W{0,3}[:=]\s*(\d+(?:\.\d+)?)", re.I | re.S)


def _unparsable(text: str | None) -> Decision:
    return Decision(None, None, None, f"unparsable: {(text or '')[:80]!r}")


def _failed(replies: list[Reply]) -> Decision | None:
    for reply in replies:
        if reply.error:
            return Decision(None, None, None, reply.error)
    return None


def _share(probs: dict[str, float] | None, yes: str, no: str) -> float | None:
    if not probs:
        return None
    p, q = probs.get(yes, 0.0), probs.get(no, 0.0)
    return p / (p + q) if p + q > 0 else None


def _by_p(p_first: float) -> str:
    return "A" if p_first > 0.5 else "B" if p_first < 0.5 else "tie"


class _Rubricked:
    """A protocol that may take a team's rubric (judgeops/rubrics.py): its template writes the prompt, and unless its
    parser is `letter` (the built-in reading, choice-token probabilities included) the parser reads the reply."""

    name = version = ""
    rubric: Rubric | None = None
    free_text = False  # the rubric's parser reads the reply's text (regex, json)
    text_tokens = 256  # a regex or JSON reply takes more than one token

    def _use(self, rubric: Rubric | None, max_tokens: int | None) -> None:
        self.rubric = rubric
        if rubric is not None:
            self.version = f"{self.version}+rubric-{rubric.digest}"  # part of every call's key
            self.free_text = rubric.parser != "letter"
            self.text_tokens = max_tokens or self.text_tokens

    def _request(
        self,
        tokens: int,
        choices: tuple[str, ...],
        builtin: Callable[[], str],
        variables: Callable[[], dict[str, str]],
    ) -> Request:
        """The built-in prompt, or the rubric's rendered from the fenced `variables`: only the one used is built."""
        if self.rubric is None:
            return Request(builtin(), tokens, choices)
        prompt = self.rubric.render(**variables())
        if self.free_text:
            return Request(prompt, self.text_tokens, (), self.rubric.response_format)
        return Request(prompt, tokens, choices)

    def _read(self, reply: Reply) -> Decision | None:
        """The rubric parser's decision, or None when the built-in reading applies."""
        if not self.free_text:
            return None
        verdict, rationale = self.rubric.read(reply.text)
        if verdict is None:
            return _unparsable(reply.text)
        if isinstance(verdict, tuple):
            return _from_scores(*verdict)
        return Decision(verdict, float(verdict in ("A", "yes")), rationale)


def _fenced_pair(unit: Unit) -> dict[str, str]:
    return {
        "question": prompts.question_block(unit.question),
        "answer_a": prompts.fence("ANSWER_A", unit.first),
        "answer_b": prompts.fence("ANSWER_B", unit.second),
    }


class Pairwise(_Rubricked):
    name, version = "pairwise", "pairwise-1"

    def __init__(
        self,
        rationale: bool = False,
        max_tokens: int | None = None,
        rubric: Rubric | None = None,
        verdict_format: str = "text",
    ):
        self.rationale = rationale
        # a JSON verdict (with its rationale) where asked and no rubric writes the prompt
        self.json = verdict_format == "json" and rationale and rubric is None
        self.max_tokens = max_tokens or (120 if self.json else 60 if rationale else 1)
        if self.json:
            self.version = f"{self.version}+json"
        self._use(rubric, max_tokens)

    def requests(self, unit: Unit, previous: list[Reply] | None) -> list[Request] | None:
        if previous is not None:
            return None
        if self.json:  # no choice tokens: the first token is "{"
            prompt = prompts.pairwise_json(unit.question, unit.first, unit.second)
            return [Request(prompt, self.max_tokens, (), prompts.VERDICT_SCHEMA)]
        builtin = lambda: prompts.pairwise(unit.question, unit.first, unit.second, self.rationale)  # noqa: E731
        return [self._request(self.max_tokens, ("A", "B"), builtin, lambda: _fenced_pair(unit))]

    def decide(self, unit: Unit, replies: list[Reply]) -> Decision:
        if failed := _failed(replies):
            return failed
        if (read := self._read(replies[0])) is not None:
            return read
        reply = replies[0]
        if self.json and (found := read_structured_verdict(reply.text)) is not None:  # structure first
            verdict, rationale = found
            return Decision(verdict, float(verdict == "A"), rationale)
        p_first = _share(reply.probs, "A", "B")
        letter = read_letter(reply.text)  # what the reply opens with or states (tasks/judges/reading.py)
        if p_first is not None and not self.rationale:
            verdict = _by_p(p_first)  # a one-token read: the choice tokens decide, whatever token won
        elif letter:
            verdict = letter[0]
            if p_first is None or opening_letter(reply.text) != verdict:  # the first token is not the verdict
                p_first = float(verdict == "A")
        elif p_first is not None:
            verdict = _by_p(p_first)
        else:
            return _unparsable(reply.text)
        rationale = None
        if self.rationale and reply.text:
            rationale = letter[1].strip(" .:\n") if letter else reply.text.strip()
        return Decision(verdict, p_first, rationale or None)


def _p_yes(reply: Reply) -> float | None:
    p = _share(reply.probs, "yes", "no")
    if p is not None:
        return p
    said = read_yes_no(reply.text)
    return None if said is None else float(said)


def _two_alone(first: Reply, second: Reply) -> Decision:
    """Each answer judged alone (a yes/no reply each): P(first correct and second not | exactly one
    correct) as p_first; unparsable when either reply names neither yes nor no."""
    p_a, p_b = _p_yes(first), _p_yes(second)
    if p_a is None or p_b is None:
        return _unparsable((first if p_a is None else second).text)
    num, den = p_a * (1 - p_b), p_a * (1 - p_b) + p_b * (1 - p_a)
    p_first = num / den if den > 0 else 0.5
    return Decision(_by_p(p_first), p_first, f"P(correct): A {p_a:.3f}, B {p_b:.3f}")


class Pointwise(_Rubricked):
    name, version = "pointwise", "pointwise-1"

    def __init__(self, rubric: Rubric | None = None, max_tokens: int | None = None):
        self._use(rubric, max_tokens)

    def requests(self, unit: Unit, previous: list[Reply] | None) -> list[Request] | None:
        if previous is not None:
            return None
        return [
            self._request(
                1,
                ("yes", "no"),
                lambda text=text: prompts.pointwise(unit.question, text),
                lambda text=text: {
                    "question": prompts.question_block(unit.question),
                    "answer": prompts.fence("ANSWER", text),
                },
            )
            for text in (unit.first, unit.second)
        ]

    def decide(self, unit: Unit, replies: list[Reply]) -> Decision:
        if failed := _failed(replies):
            return failed
        if self.free_text:  # each answer's yes/no as the rubric's parser reads it
            reads = [self.rubric.read(r.text)[0] for r in replies]
            if None in reads:
                return _unparsable(replies[reads.index(None)].text)
            replies = [Reply(text=verdict) for verdict in reads]
        return _two_alone(replies[0], replies[1])


def _from_scores(s_a: float, s_b: float) -> Decision:
    p_first = 1 / (1 + math.exp(-(s_a - s_b)))
    return Decision(_by_p(p_first), p_first, f"scores: A {s_a:g}, B {s_b:g}")


class ScoreThenChoose(_Rubricked):
    name, version = "score_then_choose", "score_then_choose-1"

    def __init__(self, rubric: Rubric | None = None, max_tokens: int | None = None):
        self._use(rubric, max_tokens)

    def requests(self, unit: Unit, previous: list[Reply] | None) -> list[Request] | None:
        if previous is not None:
            return None
        builtin = lambda: prompts.score_both(unit.question, unit.first, unit.second)  # noqa: E731
        return [self._request(16, (), builtin, lambda: _fenced_pair(unit))]

    def decide(self, unit: Unit, replies: list[Reply]) -> Decision:
        if failed := _failed(replies):
            return failed
        if (read := self._read(replies[0])) is not None:
            return read
        scores = _SCORES.search(replies[0].text or "")
        if not scores:
            return _unparsable(replies[0].text)
        return _from_scores(float(scores.group(1)), float(scores.group(2)))


class BlindReference:
    """Solve the question without seeing the candidates, then check each candidate alone against it."""

    name, version = "blind_reference", "blind_reference-1"

    def __init__(self, max_tokens: int | None = None):
        self.solve_tokens = max_tokens or 96

    def requests(self, unit: Unit, previous: list[Reply] | None) -> list[Request] | None:
        if previous is None:
            return [Request(prompts.solve(unit.question), self.solve_tokens)]
        if len(previous) > 1 or previous[0].error:
            return None
        own = (previous[0].text or "").strip()
        return [
            Request(prompts.pointwise(unit.question, text, own_solution=own), 1, ("yes", "no"))
            for text in (unit.first, unit.second)
        ]

    def decide(self, unit: Unit, replies: list[Reply]) -> Decision:
        if failed := _failed(replies):
            return failed
        decision = _two_alone(replies[1], replies[2])
        if decision.verdict is None:
            return decision
        solution = (replies[0].text or "").strip().replace("\n", " ")[:160]
        return Decision(decision.verdict, decision.p_first, f"own solution: {solution}; {decision.rationale}")


class ResponseCheck:
    """An examinee's answer judged alone (pointwise bias): "correct" or "incorrect", p_first = P(yes)."""

    name, version = "response_check", "response_check-1"

    def requests(self, unit: Unit, previous: list[Reply] | None) -> list[Request] | None:
        if previous is not None:
            return None
        return [Request(prompts.pointwise(unit.question, unit.first), 1, ("yes", "no"))]

    def decide(self, unit: Unit, replies: list[Reply]) -> Decision:
        if failed := _failed(replies):
            return failed
        p_yes = _p_yes(replies[0])
        if p_yes is None:
            return _unparsable(replies[0].text)
        verdict = "correct" if p_yes > 0.5 else "incorrect" if p_yes < 0.5 else "tie"
        return Decision(verdict, p_yes, None)


def get_protocol(
    name: str,
    rationale: bool = False,
    max_tokens: int | None = None,
    rubric: Rubric | None = None,
    verdict_format: str = "text",
):
    """The protocol, with the judge's rubric where it has one (the config allows a rubric on the first three)."""
    if name == "response_check":
        return ResponseCheck()
    if name == "pairwise":
        return Pairwise(rationale, max_tokens, rubric, verdict_format)
    if name == "pointwise":
        return Pointwise(rubric, max_tokens)
    if name == "score_then_choose":
        return ScoreThenChoose(rubric, max_tokens)
    if name == "blind_reference":
        return BlindReference(max_tokens)
    raise ValueError(f"unknown protocol {name!r}")
