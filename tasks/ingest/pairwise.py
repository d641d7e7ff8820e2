"""Published pairwise sets → the `external_pairs` artifact (pair_id, question, answer_1, answer_2, gold).

gold is "1" when answer_1 is the better answer and "2" otherwise, whatever the source's convention.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from judgeops.config import PairwiseSource
from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.ingest.adapters import (
    IngestError,
    Reject,
    expand_paths,
    iter_json_records,
    normalize_text,
    records_with,
)

LICENSES = {"llmbar": "MIT", "judgebench": "MIT", "hh_rlhf": "MIT"}
COLUMNS = schema_for("external_pairs").schema.names


def _row(fmt: str, path: Path, line: int, question, a1, a2, gold: str, subset: str | None = None) -> dict:
    q, x, y = normalize_text(question), str(a1).strip(), str(a2).strip()
    digest = hashlib.sha256(json.dumps([q, x, y]).encode()).hexdigest()[:16]
    return {
        "pair_id": f"{fmt}-{digest}",
        "source": fmt,
        "subset": subset,
        "question": q,
        "answer_1": x,
        "answer_2": y,
        "gold": gold,
        "license": LICENSES[fmt],
        "provenance": f"{path}:line {line}",
    }


def read_llmbar(path: Path) -> Iterator[dict | Reject]:
    """A JSON list of {input, output_1, output_2, label}; label 1/2 (int or string) names the better output."""
    try:
        records = json.loads(path.read_text(encoding="utf-8-sig"))  # -sig: a byte-order mark is not JSON
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(f"{path}: not a readable JSON list ({exc})") from None
    if not isinstance(records, list):
        raise IngestError(f"{path}: expected a JSON list of pairs, got {type(records).__name__}")

    def labelled(index: int, rec: dict) -> Reject | None:
        label = str(rec.get("label")) if isinstance(rec, dict) else None
        return (
            None
            if label in ("1", "2")
            else Reject(str(path), index, "label", f"expected 1 or 2, got {label!r} (record {index})")
        )

    for got in records_with(enumerate(records, start=1), ("input", "output_1", "output_2"), path, labelled):
        if isinstance(got, Reject):
            yield got
            continue
        index, rec, fields = got
        yield _row("llmbar", path, index, *fields, str(rec["label"]))


def read_judgebench(path: Path) -> Iterator[dict | Reject]:
    """jsonl of {question, response_A, response_B, label "A>B" | "B>A"}; its `source` (mmlu-pro-biology,
    livebench-reasoning, …) is kept as the subset that CAP's C1/C2 proxies read."""

    def labelled(line: int, rec: dict) -> Reject | None:
        label = rec.get("label")
        return (
            None
            if label in ("A>B", "B>A")
            else Reject(str(path), line, "label", f"expected 'A>B' or 'B>A', got {label!r}")
        )

    for got in records_with(
        iter_json_records(path), ("question", "response_A", "response_B"), path, labelled
    ):
        if isinstance(got, Reject):
            yield got
            continue
        line, rec, fields = got
        label = rec["label"]
        subset = rec.get("source") or rec.get("category")  # JudgeBench: mmlu-pro-*, livebench-reasoning, …
        yield _row("judgebench", path, line, *fields, "1" if label == "A>B" else "2", subset and str(subset))


def split_dialogue(text: str) -> tuple[str, str]:
    """HH-RLHF: the shared prompt (every turn before the last assistant turn) and that last turn."""
    marker = "\n\nAssistant:"
    cut = text.rfind(marker)
    if cut < 0:
        raise ValueError("no assistant turn")
    return text[:cut].strip(), text[cut + len(marker) :].strip()


def read_hh_rlhf(path: Path) -> Iterator[dict | Reject]:
    """jsonl(.gz) of {chosen, rejected} dialogues sharing a prompt; the chosen reply is answer_1 or 2 by a hash."""
    for line, rec in iter_json_records(path):
        if isinstance(rec, Reject):
            yield rec
            continue
        try:
            prompt_c, chosen = split_dialogue(rec.get("chosen") or "")
            prompt_r, rejected = split_dialogue(rec.get("rejected") or "")
        except ValueError:
            yield Reject(str(path), line, "chosen", "no final 'Assistant:' turn in chosen or rejected")
            continue
        if prompt_c != prompt_r:
            yield Reject(str(path), line, "rejected", "chosen and rejected do not share the same prompt")
            continue
        if not chosen or not rejected or chosen == rejected:
            yield Reject(str(path), line, "chosen", "empty or identical final replies")
            continue
        # the better reply must not always sit in position 1: place it by a hash of the prompt (stable)
        first = hashlib.sha256(prompt_c.encode()).digest()[0] % 2 == 0
        a1, a2 = (chosen, rejected) if first else (rejected, chosen)
        yield _row("hh_rlhf", path, line, prompt_c, a1, a2, "1" if first else "2")


READERS = {"llmbar": read_llmbar, "judgebench": read_judgebench, "hh_rlhf": read_hh_rlhf}


def ingest_pairwise(sources: list[PairwiseSource]) -> tuple[pd.DataFrame, list[Reject]]:
    rows, rejects = [], []
    for source in sources:
        for path in expand_paths(source.path, source.format):
            n = 0
            for record in READERS[source.format](path):
                (rejects if isinstance(record, Reject) else rows).append(record)
                n += 1
                if source.limit and n >= source.limit:
                    break
    return pd.DataFrame(rows, columns=COLUMNS).drop_duplicates("pair_id", ignore_index=True), rejects
