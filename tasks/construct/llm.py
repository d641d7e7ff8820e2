"""The optional LLM-backed generator: a model plants the error, as the CAP paper did with GPT-4o.

`construction.generator: llm` with `construction.llm:` a model declared like a judge (an `openai` endpoint
or a `local` GGUF). With `llm_expand: true` the model first writes answer A itself (an explanation of the
gold answer, checked by `check_expansion`; the worked solution or template is used when it fails). Each item is assigned an error type (round-robin over the seeded item order, so the
types stay balanced) and the model is asked for ONE edit of answer A as JSON:

    {"before": "<an exact span of the answer>", "after": "<its replacement>", "note": "<what is now wrong>"}

We locate `before` in A ourselves and apply the edit, so the recorded edit is exact by construction; the
pair then goes through the same verifier and subtlety gate as the rule-based operators. An output that
fails (no JSON, a span not in A, a check of its type, the gate) is logged in `construction_log` (branch
`llm`, with the reason) and the rule-based operators take the item instead, so a weak model costs pairs
from the LLM, never pairs. Requests go through the judges' call cache: a rerun pays for nothing twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TypeVar

import pandas as pd

from judgeops.config import JudgeConfig
from judgeops.schemas.artifacts import FINAL_CLAIM
from judgeops.tasks.construct.operators import Edit, NotApplicable
from judgeops.tasks.judges import complete_cached
from judgeops.tasks.judges.cache import open_cache
from judgeops.tasks.judges.calls import Request, make_call
from judgeops.tasks.judges.programmatic import consistency_errors
from judgeops.tasks.judges.prompts import fence

VERSION = "llm-generator-1"
T = TypeVar("T")

DEFINITIONS = {
    "factual_fabrication": "replace one number, name, date, unit or quantity with a plausible wrong one of the "
    "same kind and similar size (in a calculation, change the final answer consistently)",
    "logical_reversal": "reverse one relation, inequality, negation or conclusion (e.g. 'is more than' → "
    "'is less than', 'follows' → 'does not follow', 'meets' → 'does not meet')",
    "overclaim": "widen one claim beyond what holds: add 'always', 'every', 'all', 'never', 'certainly' or "
    "'guaranteed', or replace a hedge such as 'usually', 'often', 'about' with an absolute word",
    "critical_omission": "delete one necessary condition, caveat or step (the replacement is empty)",
}


def edit_prompt(question: str, answer: str, error_type: str) -> str:
    return (
        f"Question:\n{fence('QUESTION', question)}\n\nA correct answer:\n{fence('ANSWER', answer)}\n\n"
        f"Plant exactly ONE subtle error of this kind: {DEFINITIONS[error_type]}. Keep everything else "
        "identical; do not add words that announce the error. Reply with JSON only, in exactly this form:\n"
        '{"before": "<an exact span copied from the answer>", "after": "<its replacement>", '
        '"note": "<one sentence: what is now wrong>"}'
    )


_JSON = re.compile(r"\{.*\}", re.S)


def parse_edit(text: str | None, answer: str) -> Edit:
    """The model's reply as an Edit of `answer`; NotApplicable with the reason when it is not one."""
    found = _JSON.search(text or "")
    if not found:
        raise NotApplicable(f"no JSON object in the reply: {(text or '')[:60]!r}")
    try:
        data = json.loads(found.group(0))
        before, after, note = str(data["before"]), str(data.get("after", "")), str(data.get("note", ""))
    except (ValueError, KeyError, TypeError) as exc:
        raise NotApplicable(f"unreadable JSON ({type(exc).__name__}): {found.group(0)[:60]!r}") from None
    if not before.strip():
        raise NotApplicable("empty 'before' span")
    start = answer.find(before)
    if start < 0:
        raise NotApplicable(f"'before' is not a span of the answer: {before[:60]!r}")
    return Edit(start, start + len(before), before, after, note or "planted by the LLM generator")


def _ask(
    model: JudgeConfig,
    prompts: dict,
    parse: Callable[[object, str | None], T],
    cache_path: str,
    max_tokens: int,
) -> dict[object, T | NotApplicable]:
    """One request per key through the judges' cache and backend; each reply parsed by `parse(key, text)`,
    or a NotApplicable saying why it could not be (a failed call, or what `parse` raised)."""
    calls = {
        key: make_call(model, Request(prompt, max_tokens), VERSION, str(key))
        for key, prompt in prompts.items()
    }
    with open_cache(cache_path) as cache:
        replies = complete_cached(
            model, list(calls.values()), cache, chunk_size=max(8, 4 * model.max_concurrency)
        )
    out: dict[object, T | NotApplicable] = {}
    for key, call in calls.items():
        reply = replies[call.key]
        try:
            if reply.error:
                raise NotApplicable(f"generator call failed: {reply.error}")
            out[key] = parse(key, reply.text)
        except NotApplicable as exc:
            out[key] = exc
    return out


def llm_edits(
    tasks: list[tuple[str, str, str, str]], model: JudgeConfig, cache_path: str, max_tokens: int = 200
) -> dict[tuple[str, str], Edit | NotApplicable]:
    """For each (item_id, error_type, question, answer): the model's Edit, or why there is none."""
    answers = {(item_id, error_type): answer for item_id, error_type, _, answer in tasks}
    prompts = {(item_id, t): edit_prompt(question, answer, t) for item_id, t, question, answer in tasks}
    return _ask(model, prompts, lambda task, text: parse_edit(text, answers[task]), cache_path, max_tokens)


def expansion_prompt(question: str, gold: str) -> str:
    return (
        f"Question:\n{fence('QUESTION', question)}\n\nThe correct answer is: {gold}\n\n"
        "Explain in three to five short sentences why this answer is correct, showing any calculation step by "
        f"step. End with exactly this sentence: {FINAL_CLAIM} {gold}."
    )


def check_expansion(text: str | None, gold: str) -> str:
    """The model's answer A, or NotApplicable with why it cannot be used.

    What can be checked without a reference solution is checked: it ends with the gold final claim, its
    arithmetic and numeric comparisons hold (the numeric_consistency judge's checks), it is a plain
    paragraph of sensible length. A wrong step that states no checkable number cannot be caught, which is
    why an LLM-written A is opt-in (`llm_expand`)."""
    text = " ".join((text or "").split())
    closing = f"{FINAL_CLAIM} {gold.rstrip('.')}."
    if not text.endswith(closing):
        raise NotApplicable(f"does not end with {closing!r}: {text[-60:]!r}")
    if not 80 <= len(text) <= 1200:
        raise NotApplicable(f"length {len(text)} outside [80, 1200] characters")
    if re.search(r"<<<|>>>|[*#`]", text):
        raise NotApplicable("formatting or fence markers in the explanation")
    errors = consistency_errors(text)
    if errors:
        raise NotApplicable(f"its own arithmetic does not hold: {errors[0]}")
    return text


def llm_expansions(
    items: list[tuple[str, str, str]], model: JudgeConfig, cache_path: str, max_tokens: int = 220
) -> dict[str, str]:
    """For each (item_id, question, gold): the model's answer A, or why it is not used ("rejected: ...")."""
    prompts = {item_id: expansion_prompt(question, gold) for item_id, question, gold in items}
    golds = {item_id: gold for item_id, _, gold in items}
    written = _ask(
        model, prompts, lambda item_id, text: check_expansion(text, golds[item_id]), cache_path, max_tokens
    )
    return {
        item_id: f"rejected: {r}" if isinstance(r, NotApplicable) else r for item_id, r in written.items()
    }


def assigned_types(items: pd.DataFrame, order, types: list[str]) -> dict[str, str]:
    """Round-robin over the seeded item order: balanced by construction."""
    return {str(items.iloc[int(idx)]["item_id"]): types[rank % len(types)] for rank, idx in enumerate(order)}
