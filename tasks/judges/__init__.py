"""Judge invocation: the panel over every variant, in batches, one `verdicts` row per call.

`judge_variants(...)` is the pure function; `coverage(...)` is the honest accounting of what came
back; `to_canonical(...)` is the one place where a displayed verdict becomes "the correct answer
won" or not.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable

import numpy as np
import pandas as pd

from judgeops.config import JudgeConfig
from judgeops.tasks.judges.programmatic import PROGRAMMATIC_JUDGES

ProgressFn = Callable[[int, int, int], None]  # (calls done, calls total, errors so far)


def call_id(judge: JudgeConfig, unit_id: str) -> str:
    key = ":".join([judge.backend, judge.model, judge.protocol, judge.name, unit_id])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def judge_variants(
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    items: pd.DataFrame,
    judges: list[JudgeConfig],
    run_id: str,
    batch_size: int = 500,
    progress: ProgressFn | None = None,
    external_pairs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every judge on every variant. A judge that fails on a call gets a row with the error, never no row."""
    context = pairs[["pair_id", "item_id"]].merge(items[["item_id", "question", "gold"]], on="item_id")
    context = context[["pair_id", "question", "gold"]]
    if external_pairs is not None and len(external_pairs):  # published pairs: a question, no reference answer
        published = external_pairs[["pair_id", "question"]].assign(gold="")
        context = pd.concat([context, published], ignore_index=True)
    context = context.set_index("pair_id")
    question = variants["pair_id"].map(context["question"])
    reference = variants["pair_id"].map(context["gold"])
    total = len(variants) * len(judges)
    rows, done, errors = [], 0, 0
    for judge in judges:
        fn = PROGRAMMATIC_JUDGES[judge.model]
        for start in range(0, len(variants), batch_size):
            stop = min(start + batch_size, len(variants))
            for i in range(start, stop):
                v = variants.iloc[i]
                t0 = time.perf_counter()
                try:
                    out = fn(question.iloc[i], v["text_a"], v["text_b"], reference.iloc[i])
                    verdict, p_first, rationale, error = out.verdict, out.p_first, out.rationale, None
                except Exception as exc:  # recorded, counted against coverage, never dropped
                    verdict, p_first, rationale, error = None, None, None, f"{type(exc).__name__}: {exc}"
                    errors += 1
                rows.append(
                    {
                        "call_id": call_id(judge, v["variant_id"]),
                        "run_id": run_id,
                        "judge_id": judge.name,
                        "protocol": judge.protocol,
                        "variant_id": v["variant_id"],
                        "response_id": None,
                        "verdict": verdict,
                        "p_first": p_first,
                        "rationale": rationale,
                        "latency_ms": (time.perf_counter() - t0) * 1000,
                        "tokens": None,
                        "cached": False,
                        "error": error,
                    }
                )
            done += stop - start
            if progress:
                progress(done, total, errors)
    return pd.DataFrame(rows)


def coverage(verdicts: pd.DataFrame, variants: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    """Per judge: calls expected (every variant), verdicts usable, ties, unparsable outputs, errors.

    A missing row counts as an error: nothing is lost silently.
    """
    rows = []
    n_expected = len(variants)
    for judge in judges:
        v = verdicts[verdicts["judge_id"] == judge]
        v = v[v["variant_id"].isin(variants["variant_id"])]
        answered = int(v["verdict"].isin(["A", "B"]).sum())
        tie = int((v["verdict"] == "tie").sum())
        unparsable = int((v["verdict"].isna() & v["error"].fillna("").str.startswith("unparsable")).sum())
        error = int((v["verdict"].isna()).sum()) - unparsable + (n_expected - v["variant_id"].nunique())
        rows.append(
            {
                "judge_id": judge,
                "n_expected": n_expected,
                "n_answered": answered,
                "n_tie": tie,
                "n_unparsable": unparsable,
                "n_error": error,
                "coverage": answered / n_expected if n_expected else 0.0,
            }
        )
    return pd.DataFrame(rows)


def to_canonical(verdicts: pd.DataFrame, variants: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Map display-frame verdicts to the canonical frame: did the correct answer win?

    Adds pair_id, error_type, presentation, order, `correct` (True only when the verdict names the
    gold position: ties, unparsable outputs and errors count as wrong) and `p_correct` (the judge's
    probability that the correct answer is better; NaN where it gave none).
    """
    meta = variants[["variant_id", "pair_id", "presentation", "order", "gold_position"]].merge(
        pairs[["pair_id", "error_type", "domain"]], on="pair_id"
    )  # inner: only the variants of these pairs (judgerEva, or one published set)
    out = verdicts.merge(meta, on="variant_id", how="inner", validate="many_to_one")
    out["correct"] = (out["verdict"] == out["gold_position"]).astype(bool)
    out["p_correct"] = np.where(out["gold_position"] == "A", out["p_first"], 1 - out["p_first"])
    return out
