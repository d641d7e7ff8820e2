"""A team's own rubric: a Jinja template file for the judge's prompt, and the parser that reads its verdict.

The template's variables depend on the judge's protocol, and are checked when the config loads: a variable the
template uses but the protocol does not give, or one the protocol needs but the template leaves out, is an error
naming both lists. The candidate texts arrive already fenced (prompts.fence), so a rubric keeps the rule that an
answer is data, never an instruction. Templates render in Jinja's sandbox with StrictUndefined.

| protocol          | variables                          | what the parser reads                          |
|-------------------|------------------------------------|------------------------------------------------|
| pairwise          | question, answer_a, answer_b       | the better answer: A or B                      |
| pointwise         | question, answer                   | is the answer correct: yes or no               |
| score_then_choose | question, answer_a, answer_b       | a score for each: score_a, score_b             |

Parsers: `letter` (the built-in reading, tasks/judges/reading.py: the A/B or yes/no the reply opens with or states
— never a sentence's article —, and the choice tokens' probabilities where
the backend gives them; "A: 7, B: 3" for scores), `regex` (a pattern with a named group `verdict`, or
`score_a` and `score_b`), `json` (the reply is a JSON object checked against the rubric's JSON schema, with a
field `verdict`, or `score_a` and `score_b`; an OpenAI-protocol backend is sent the schema as structured output).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
from jinja2 import StrictUndefined, TemplateSyntaxError, meta
from jinja2.sandbox import SandboxedEnvironment

VARIABLES = {
    "pairwise": ("question", "answer_a", "answer_b"),
    "pointwise": ("question", "answer"),
    "score_then_choose": ("question", "answer_a", "answer_b"),
}
VERDICTS = {"pairwise": ("A", "B"), "pointwise": ("yes", "no")}
_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


class RubricError(ValueError):
    """A rubric that cannot work: the message names the template and what is wrong."""


@dataclass(frozen=True)
class Rubric:
    protocol: str
    path: str
    source: str
    parser: str = "letter"
    pattern: str | None = None
    json_schema: dict | None = None
    structured_output: bool = True

    @property
    def digest(self) -> str:
        """The template's and parser's identity: part of the judge stage's key and of every call's key."""
        spec = [self.source, self.parser, self.pattern, self.json_schema]
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def response_format(self) -> str | None:
        """The JSON schema to send as structured output (JSON text, so a Request stays hashable)."""
        if self.parser != "json" or not self.structured_output:
            return None
        return json.dumps(self.json_schema, sort_keys=True)

    def render(self, **variables: str) -> str:
        return _ENV.from_string(self.source).render(**variables).strip()

    def read(self, text: str | None) -> tuple[str | tuple[float, float] | None, str | None]:
        """(verdict, rationale) from a reply: "A"/"B", "yes"/"no", or (score_a, score_b); None if unreadable."""
        fields = self._fields(text or "")
        if fields is None:
            return None, None
        rationale = fields.get("rationale")
        if self.protocol == "score_then_choose":
            try:
                return (float(fields["score_a"]), float(fields["score_b"])), rationale
            except (KeyError, TypeError, ValueError):
                return None, None
        verdict = str(fields.get("verdict", "")).strip().lower()
        for choice in VERDICTS[self.protocol]:
            if verdict == choice.lower():
                return choice, rationale
        return None, None

    def _fields(self, text: str) -> dict | None:
        if self.parser == "regex":
            match = re.search(self.pattern, text, flags=re.I | re.S)
            return match.groupdict() if match else None
        start, end = text.find("{"), text.rfind("}")  # a JSON object, perhaps inside a code fence
        try:
            data = json.loads(text[start : end + 1]) if start >= 0 else None
            jsonschema.validate(data, self.json_schema)
        except (ValueError, jsonschema.ValidationError):
            return None
        return data if isinstance(data, dict) else None


def load_rubric(
    path: str | Path,
    protocol: str,
    parser: str = "letter",
    pattern: str | None = None,
    json_schema: dict | None = None,
    structured_output: bool = True,
) -> Rubric:
    """Read and check a rubric; every problem is a RubricError naming the file."""
    path = Path(path)
    if protocol not in VARIABLES:
        raise RubricError(
            f"rubric {path}: protocol {protocol!r} takes no rubric (one of {', '.join(VARIABLES)})"
        )
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RubricError(f"rubric {path}: cannot read the template ({exc.strerror or exc})") from None
    try:
        used = meta.find_undeclared_variables(_ENV.parse(source))
    except TemplateSyntaxError as exc:
        raise RubricError(f"rubric {path}: line {exc.lineno}: {exc.message}") from None
    given = set(VARIABLES[protocol])
    unknown, missing = sorted(used - given), sorted(given - used)
    if unknown or missing:
        problems = [
            f"unknown variable(s) {', '.join(unknown)}" if unknown else "",
            f"missing {', '.join(missing)}" if missing else "",
        ]
        raise RubricError(
            f"rubric {path}: {'; '.join(p for p in problems if p)} (a {protocol} template uses exactly "
            f"{', '.join(VARIABLES[protocol])})"
        )
    _check_parser(path, protocol, parser, pattern, json_schema)
    return Rubric(protocol, str(path), source, parser, pattern, json_schema, structured_output)


def _check_parser(path: Path, protocol: str, parser: str, pattern: str | None, schema: dict | None) -> None:
    wanted = {"score_a", "score_b"} if protocol == "score_then_choose" else {"verdict"}
    if parser == "regex":
        if not pattern:
            raise RubricError(f"rubric {path}: parser regex needs `pattern`")
        try:
            groups = set(re.compile(pattern).groupindex)
        except re.error as exc:
            raise RubricError(f"rubric {path}: pattern is not a regular expression ({exc})") from None
        if not wanted <= groups:
            raise RubricError(f"rubric {path}: pattern needs the named group(s) {', '.join(sorted(wanted))}")
    elif parser == "json":
        if not schema:
            raise RubricError(f"rubric {path}: parser json needs `json_schema`")
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise RubricError(f"rubric {path}: json_schema is not a JSON schema ({exc.message})") from None
        if not wanted <= set(schema.get("properties") or {}):
            raise RubricError(f"rubric {path}: json_schema needs the properties {', '.join(sorted(wanted))}")
    elif pattern or schema:
        raise RubricError(f"rubric {path}: `pattern` and `json_schema` go with parser regex or json")
