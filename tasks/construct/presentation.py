"""Presentation variants, applied identically to both answers of a pair: they change form, never content.

- plain: the answer as constructed.
- polished: markdown (a heading, one bullet per sentence, the final claim in bold) and a confident
  opening line; every sentence of the answer is kept verbatim.
- padded: about twice the length, with content-neutral sentences before and after the answer; both
  answers of a pair get the same padding, so length alone gives neither an advantage.
"""

from __future__ import annotations

import re

import numpy as np

POLISHED_OPENING = "Here is a clear, step-by-step solution."

NEUTRAL_SENTENCES = [
    "Let us work through this carefully, one step at a time.",
    "It helps to set out each part of the reasoning explicitly.",
    "The steps below build on one another in order.",
    "Each statement is written out in full so that it can be checked.",
    "Reading the question closely is the first part of any good answer.",
    "Nothing beyond the information given is needed for what follows.",
    "A short summary of the reasoning is given at the end.",
    "It is worth keeping the original question in mind throughout.",
    "Clear reasoning makes an answer easier to verify.",
    "The same approach works for many questions of this kind.",
    "Writing each step down reduces the chance of a slip.",
    "That completes the reasoning for this question.",
]


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]


def polished(text: str) -> str:
    parts = sentences(text)
    body = [f"- {s}" for s in parts[:-1]]
    return "\n".join(["**Solution**", "", POLISHED_OPENING, "", *body, "", f"**{parts[-1]}**"])


def padding_for(reference_length: int, seed: int) -> tuple[str, str]:
    """Neutral text (prefix, suffix) adding about `reference_length` characters; chosen by the pair's seed."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(NEUTRAL_SENTENCES))
    chosen, total = [], 0
    for i in order:
        if total >= reference_length:
            break
        chosen.append(NEUTRAL_SENTENCES[i])
        total += len(NEUTRAL_SENTENCES[i]) + 1
    half = (len(chosen) + 1) // 2
    return " ".join(chosen[:half]), " ".join(chosen[half:])


def padded(text: str, prefix: str, suffix: str) -> str:
    return " ".join(p for p in (prefix, text, suffix) if p)
