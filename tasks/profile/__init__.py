"""Judge profiles: every judge (and every panel method) × every CAP condition, with a bootstrap CI."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

from judgeops.config import ProfileConfig
from judgeops.tasks.judges import to_canonical
from judgeops.tasks.profile.bootstrap import bootstrap_mean_ci
from judgeops.tasks.profile.conditions import CONDITIONS

BENCHMARK = "judgereva"
HARD_BENCHMARK = "judgereva-hard"


def complete_grid(verdicts: pd.DataFrame, variants: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    """One row per judge × variant of the pairs the judge was given; a call with no row at all becomes a
    missing verdict (counted wrong).

    A judge's pairs are those it has any verdict row for: every pair, or the fixed sample of a judge
    with `max_pairs`. (A judge that lost every row of a pair is reported by the coverage stage, which
    knows the sample from the configuration.)
    """
    pair_of = variants.set_index("variant_id")["pair_id"]
    frames = []
    for judge in judges:
        judged = verdicts.loc[verdicts["judge_id"] == judge, "variant_id"].map(pair_of)
        mine = variants.loc[variants["pair_id"].isin(set(judged.dropna())), "variant_id"]
        frames.append(pd.DataFrame({"judge_id": judge, "variant_id": mine.to_numpy()}))
    grid = (
        pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["judge_id", "variant_id"])
    )
    cols = ["judge_id", "variant_id", "verdict", "p_first"]
    return grid.merge(verdicts[cols], on=["judge_id", "variant_id"], how="left")


def profile(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    benchmark: str = BENCHMARK,
) -> pd.DataFrame:
    """`profiles` rows for every judge in `verdicts` and every condition with at least one pair of `pairs`.

    `pairs` needs pair_id, error_type and domain; a published set has no error types, so only the
    order conditions (overall PA, order_AB, order_BA, C7) get cells for it."""
    judges = sorted(verdicts["judge_id"].unique())
    variants = variants[variants["pair_id"].isin(pairs["pair_id"])]
    canonical = to_canonical(complete_grid(verdicts, variants, judges), variants, pairs)
    rows = []
    for judge in judges:
        mine = canonical[canonical["judge_id"] == judge]
        for condition in CONDITIONS:
            scores = condition.pair_scores(mine).to_numpy(dtype=float)
            if scores.size == 0:
                continue
            # seeded per cell by name, so adding a judge leaves the other judges' CIs unchanged
            rng = np.random.default_rng([config.seed, zlib.crc32(f"{judge}|{condition.name}".encode())])
            estimate, low, high = bootstrap_mean_ci(scores, config.n_bootstrap, config.confidence, rng)
            rows.append(
                {
                    "judge_id": judge,
                    "benchmark": benchmark,
                    "condition": condition.name,
                    "n": int(scores.size),
                    "estimate": estimate,
                    "ci_low": low,
                    "ci_high": high,
                    "corrected": np.nan,
                    "evidence": "direct",
                }
            )
    return pd.DataFrame(rows)


def profile_external(
    verdicts: pd.DataFrame, variants: pd.DataFrame, external_pairs: pd.DataFrame, config: ProfileConfig
) -> pd.DataFrame:
    """Profiles on each published pairwise set (benchmark = its source: llmbar, judgebench, hh_rlhf)."""
    frames = []
    for source, group in external_pairs.groupby("source", sort=True):
        pairs = group[["pair_id"]].assign(error_type=None, domain=None)
        frames.append(profile(verdicts, variants, pairs, config, benchmark=source))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def profile_all(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    external_pairs: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Every benchmark of a run: judgerEva, its Hard-Constructed subset (kept out of the main profile),
    and each published pairwise set."""
    hard = pairs["qc_flags"].map(lambda flags: "hard_constructed" in list(flags))
    frames = [profile(verdicts, variants, pairs[~hard], config)]
    if hard.any():
        frames.append(profile(verdicts, variants, pairs[hard], config, benchmark=HARD_BENCHMARK))
    if external_pairs is not None and len(external_pairs):
        frames.append(profile_external(verdicts, variants, external_pairs, config))
    return pd.concat(frames, ignore_index=True)
