"""judgerEva pairs: items → plain pairs, one planted error each.

Each item (in a seeded order) gets the error type that is furthest behind, so the types stay balanced; when the
operator does not apply or the subtlety gate rejects its output, the next type is tried (the pair is flagged
`type_fallback`), and every attempt is logged with its reason. Deterministic: the same items, config and seed
give the same tables.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from judgeops.config import ConstructionConfig, GateConfig
from judgeops.data_contracts.pair_verifier import verify_pair
from judgeops.schemas.artifacts import FINAL_CLAIM, OPTION_LETTERS, schema_for
from judgeops.tasks.construct import llm as llm_module
from judgeops.tasks.construct.operators import OPERATORS, Edit, NotApplicable, Site, closing_claim_start

TELLTALE = re.compile(r"\b(wrong|incorrect|error|mistake|actually|not true)\b", re.I)
GENERATOR = "rules-v1"
# construction_log branches: the rules (standard, hard) and the LLM generator's tries (llm: edits, llm_expand: answer A)
STANDARD, HARD, LLM, LLM_EXPAND = "standard", "hard", "llm", "llm_expand"


def _tokens(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def subtlety_gate(a: str, b: str, gate: GateConfig) -> tuple[bool, str, float]:
    """Is B close enough to A that a judge must read the content to tell them apart?

    Returns (accepted, reason, token overlap); the overlap (Jaccard of word sets) is the pair's subtlety.
    """
    ta, tb = _tokens(a), _tokens(b)
    overlap = len(ta & tb) / max(1, len(ta | tb))
    ratio = len(b) / max(1, len(a))
    if a == b:
        return False, "the edit changed nothing", overlap
    if not gate.min_length_ratio <= ratio <= gate.max_length_ratio:
        return (
            False,
            f"length ratio {ratio:.2f} outside [{gate.min_length_ratio}, {gate.max_length_ratio}]",
            overlap,
        )
    if overlap < gate.min_token_overlap:
        return False, f"token overlap {overlap:.2f} below {gate.min_token_overlap}", overlap
    new_telltales = set(m.lower() for m in TELLTALE.findall(b)) - set(m.lower() for m in TELLTALE.findall(a))
    if new_telltales:
        return False, f"tell-tale words added: {sorted(new_telltales)}", overlap
    if sum(b.count(c) for c in "*#\n`") != sum(a.count(c) for c in "*#\n`"):
        return False, "formatting differs between the answers", overlap
    return True, "accepted", overlap


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little")


MCQ_CONDITION = "This holds only if the question is read exactly as written."
SHORT_CONDITION = "This holds only if the question is read literally, as asked."


def expand_answer(item: pd.Series) -> tuple[str, list[str]]:
    """Answer A and its necessary conditions.

    From the worked solution when the source has one; for multiple choice, a templated justification
    of the gold option; for a bare short answer (TruthfulQA), a templated explanation of it. Each
    template carries a relation, a hedge and a condition, so every error type has a place to go.
    """
    steps = [str(s) for s in item["steps"]] if item["steps"] is not None else []
    conditions = [str(c) for c in item["conditions"]] if item["conditions"] is not None else []
    choices = [str(c) for c in item["choices"]] if item["choices"] is not None else []
    gold = str(item["gold"])
    if choices and gold in OPTION_LETTERS[: len(choices)]:
        text = choices[OPTION_LETTERS.index(gold)].rstrip(".")
        template = [
            f"Option {gold} says: {text}.",
            f"Option {gold} fits the question better than the other options.",
            "This reading is usually the one the question intends.",
            MCQ_CONDITION,
            f"The answer is {gold}.",
        ]
        return " ".join(template), [MCQ_CONDITION]
    # a worked solution says more than the closing claim and a restatement of the gold answer
    worked = [x for x in steps if not x.startswith(FINAL_CLAIM) and x.rstrip(".") != gold.rstrip(".")]
    if worked:
        return " ".join(steps), conditions
    claim = gold.rstrip(".")
    template = [
        f"{claim[:1].upper()}{claim[1:]}.",
        "This is better supported by the evidence than the common alternatives.",
        "Popular accounts usually get this point wrong.",
        SHORT_CONDITION,
        f"The answer is {claim}.",
    ]
    return " ".join(template), [SHORT_CONDITION]


def plant(
    item: pd.Series, answer: str, conditions: list[str], error_type: str, seed: int, subtle: bool = False
) -> Edit:
    rng = np.random.default_rng(seed)
    choices = [str(c) for c in item["choices"]] if item["choices"] is not None else []
    return OPERATORS[error_type](
        Site(answer, str(item["gold"]), str(item["question"]), conditions, rng, choices, subtle)
    )


def qc_flags(answer: str, edit: Edit, fallback: bool) -> list[str]:
    """Why a pair may be weaker than it looks, so every profile can be recomputed without it.

    type_fallback: the item's first-choice error type did not apply; final_answer_only: the edit only
    touches the closing "The answer is …" sentence, so a judge can win by checking the final claim alone.
    """
    flags = ["type_fallback"] if fallback else []
    closing = closing_claim_start(answer)
    if closing >= 0 and edit.start >= closing:
        flags.append("final_answer_only")
    return flags


def _with_choices(item: pd.Series) -> str:
    """The question as a model should see it: with its options, for multiple choice."""
    choices = [str(c) for c in item["choices"]] if item["choices"] is not None else []
    options = "".join(f"\n{OPTION_LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return str(item["question"]) + options


def _answer_a(item: pd.Series, llm_answers: dict[str, str]) -> tuple[str, list[str]]:
    """Answer A and its conditions: the LLM's text where it wrote one that passed its checks (it states no
    separate conditions), else the worked solution or template."""
    written = llm_answers.get(str(item["item_id"]))
    return (written, []) if written is not None else expand_answer(item)


def _pair_row(
    item: pd.Series,
    error_type: str,
    answer: str,
    edit: Edit,
    flawed: str,
    overlap: float,
    generator: str,
    flags: list[str],
    hard: bool,
) -> dict:
    return {
        "pair_id": f"{item['item_id']}:{error_type}" + (":hard" if hard else ""),
        "item_id": item["item_id"],
        "domain": item["domain"],
        "error_type": error_type,
        "answer_correct": answer,
        "answer_flawed": flawed,
        "edit_start": edit.start,
        "edit_end": edit.end,
        "edit_before": edit.before,
        "edit_after": edit.after,
        "edit_note": edit.note,
        "subtlety": overlap,
        "generator": generator,
        "qc_flags": flags,
    }


def _llm_attempt(
    item: pd.Series, answer: str, error_type: str, result: Edit | NotApplicable, gate: GateConfig
):
    """(status, reason, flawed, overlap) of the LLM generator's edit, through the verifier and the gate."""
    if isinstance(result, NotApplicable):
        return "skipped", f"llm: {result}", None, 0.0
    flawed = result.apply(answer)
    problems = verify_pair(
        answer, flawed, result.start, result.end, result.before, result.after, error_type, item["domain"]
    )
    if problems:
        return "rejected", f"llm: verifier: {'; '.join(problems)}", None, 0.0
    accepted, reason, overlap = subtlety_gate(answer, flawed, gate)
    return ("accepted" if accepted else "rejected"), f"llm: {reason}", flawed if accepted else None, overlap


@dataclass
class _LLMPlan:
    """The LLM generator's work for a branch: each item's assigned type, the answers A it wrote (checked), and
    its edit (or why none) per (item, type). Empty for the rules."""

    assigned: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    edits: dict = field(default_factory=dict)


def build_pairs(
    items: pd.DataFrame, config: ConstructionConfig, branch: str = STANDARD, cache_path: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One pair per item that can take an error. branch "hard": the Hard-Constructed subset, built
    independently (no judge involved) with subtler edits: smaller numeric changes inside a middle
    step, milder widenings, a caveat clause dropped instead of a sentence. With `generator: llm` (standard
    branch), the LLM's edit of each item's assigned type is tried first (see construct/llm.py)."""
    types = list(config.error_types)
    order = np.random.default_rng(config.seed).permutation(len(items))
    log: list[tuple] = []
    plan = _LLMPlan()
    if config.generator == "llm" and branch != HARD:
        if cache_path is None:
            raise ValueError("the LLM generator needs the judge-call cache (cache_path)")
        plan = _llm_plan(items, order, types, config, cache_path, log)
    pairs = []
    accepted_per_type = dict.fromkeys(types, 0)
    for rank, idx in enumerate(order):
        item = items.iloc[int(idx)]
        # the type furthest behind first (ties rotate with the item's rank), then the others: types that
        # some items cannot take (no number to fabricate in a syllogism) catch up on the items that can
        preference = sorted(types, key=lambda t: (accepted_per_type[t], (types.index(t) - rank) % len(types)))
        row = _pair_for_item(item, preference, plan, config, branch, log)
        if row is not None:
            pairs.append(row)
            accepted_per_type[row["error_type"]] += 1
    pairs_df = pd.DataFrame(pairs, columns=schema_for("pairs").schema.names)
    log_df = pd.DataFrame(log, columns=schema_for("construction_log").schema.names)
    return pairs_df.sort_values("pair_id", ignore_index=True), log_df


def _llm_plan(
    items: pd.DataFrame,
    order: np.ndarray,
    types: list[str],
    config: ConstructionConfig,
    cache_path: str,
    log: list,
) -> _LLMPlan:
    """Ask the model for every item's answer A (with `llm_expand`) and for its edit of the assigned type."""
    plan = _LLMPlan(assigned=llm_module.assigned_types(items, order, types))
    ordered = [items.iloc[int(i)] for i in order]
    if config.llm_expand:  # the model writes answer A first; what fails its checks keeps the template
        written = llm_module.llm_expansions(
            [(str(it["item_id"]), _with_choices(it), str(it["gold"])) for it in ordered],
            config.llm,
            cache_path,
        )
        for it in ordered:
            item_id = str(it["item_id"])
            text = written[item_id]
            ok = not text.startswith("rejected: ")
            reason = "llm: answer A written" if ok else f"llm: {text}"
            log.append(
                (it["item_id"], plan.assigned[item_id], LLM_EXPAND, "accepted" if ok else "rejected", reason)
            )
            if ok:
                plan.answers[item_id] = text
    tasks = [
        (
            str(it["item_id"]),
            plan.assigned[str(it["item_id"])],
            _with_choices(it),
            _answer_a(it, plan.answers)[0],
        )
        for it in ordered
    ]
    plan.edits = llm_module.llm_edits(tasks, config.llm, cache_path)
    return plan


def _pair_for_item(
    item: pd.Series, preference: list[str], plan: _LLMPlan, config: ConstructionConfig, branch: str, log: list
) -> dict | None:
    """The item's pair: the LLM's edit of its assigned type where it passes the checks, else the first type in
    `preference` whose rule-based edit applies and passes the gate (None when none does)."""
    answer, conditions = _answer_a(item, plan.answers)
    if plan.edits:
        wanted = plan.assigned[str(item["item_id"])]
        row = _llm_pair(item, answer, wanted, plan, config, log)
        if row is not None:
            return row
        preference = [wanted] + [t for t in preference if t != wanted]  # the rules fill the same type first
    return _rules_pair(
        item, answer, conditions, preference, config, branch, log, str(item["item_id"]) in plan.answers
    )


def _llm_pair(
    item: pd.Series, answer: str, wanted: str, plan: _LLMPlan, config: ConstructionConfig, log: list
) -> dict | None:
    """The pair from the LLM's edit of the assigned type, if it passes the verifier and the subtlety gate."""
    edit = plan.edits[(str(item["item_id"]), wanted)]
    status, reason, flawed, overlap = _llm_attempt(item, answer, wanted, edit, config.gate)
    log.append((item["item_id"], wanted, LLM, status, reason))
    if flawed is None:
        return None
    flags = qc_flags(answer, edit, False) + (["llm_answer"] if str(item["item_id"]) in plan.answers else [])
    return _pair_row(item, wanted, answer, edit, flawed, overlap, f"llm:{config.llm.model}", flags, False)


def _rules_pair(
    item: pd.Series,
    answer: str,
    conditions: list[str],
    preference: list[str],
    config: ConstructionConfig,
    branch: str,
    log: list,
    answer_by_llm: bool,
) -> dict | None:
    """The first error type whose rule-based operator applies and whose edit passes the subtlety gate."""
    hard = branch == HARD
    for offset, error_type in enumerate(preference):
        try:
            seed = _seed(config.seed, item["item_id"], error_type, *([branch] if hard else []))
            edit = plant(item, answer, conditions, error_type, seed, subtle=hard)
        except NotApplicable as exc:
            log.append((item["item_id"], error_type, branch, "skipped", str(exc)))
            continue
        flawed = edit.apply(answer)
        accepted, reason, overlap = subtlety_gate(answer, flawed, config.gate)
        log.append((item["item_id"], error_type, branch, "accepted" if accepted else "rejected", reason))
        if not accepted:
            continue
        flags = qc_flags(answer, edit, fallback=offset > 0) + (["hard_constructed"] if hard else [])
        flags += ["llm_answer"] if answer_by_llm else []
        generator = GENERATOR + ("-hard" if hard else "")
        return _pair_row(item, error_type, answer, edit, flawed, overlap, generator, flags, hard)
    return None
