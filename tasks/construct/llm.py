"""The optional LLM-backed generator: a model plants the error, as the CAP paper did with GPT-4o.

`construction.generator: llm` with `construction.llm:` a model declared like a judge (an `openai` endpoint
or a `local` GGUF). Each item is assigned an error type (round-robin over the seeded item order, so the
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

import pandas as pd

from judgeops.config import JudgeConfig
from judgeops.tasks.construct.operators import Edit, NotApplicable
from judgeops.tasks.judges import complete_cached
from judgeops.tasks.judges.cache import CallCache
from judgeops.tasks.judges.calls import Call, Request, call_key
from judgeops.tasks.judges.prompts import fence

VERSION = "llm-generator-1"

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


def llm_edits(
    tasks: list[tuple[str, str, str, str]], model: JudgeConfig, cache_path: str, max_tokens: int = 200
) -> dict[tuple[str, str], Edit | str]:
    """For each (item_id, error_type, question, answer): the model's Edit, or why there is none."""
    calls, keys = [], {}
    for item_id, error_type, question, answer in tasks:
        request = Request(edit_prompt(question, answer, error_type), max_tokens)
        call = Call(call_key(model, request, VERSION, 0), item_id, 0, request, model.decoding.seed)
        calls.append(call)
        keys[(item_id, error_type)] = (call.key, answer)
    with CallCache(cache_path) as cache:
        replies = complete_cached(model, calls, cache, chunk_size=max(8, 4 * model.max_concurrency))
    out: dict[tuple[str, str], Edit | str] = {}
    for task, (key, answer) in keys.items():
        reply = replies[key]
        if reply.error:
            out[task] = f"generator call failed: {reply.error}"
            continue
        try:
            out[task] = parse_edit(reply.text, answer)
        except NotApplicable as exc:
            out[task] = str(exc)
    return out


def assigned_types(items: pd.DataFrame, order, types: list[str]) -> dict[str, str]:
    """Round-robin over the seeded item order: balanced by construction."""
    return {str(items.iloc[int(idx)]["item_id"]): types[rank % len(types)] for rank, idx in enumerate(order)}
