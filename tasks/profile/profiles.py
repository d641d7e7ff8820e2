"""Judge profiles: every judge (and every panel method) × every CAP condition, with a bootstrap CI.

One benchmark at a time: each condition turns a judge's canonical verdicts into one score per pair
(conditions.py); the scores of every (judge, condition) cell form a pairs × cells matrix, and ONE seeded
resampling of the pairs gives every cell's CI (bootstrap.bootstrap_cells). The resampled means are kept
(`Profile.draws`) for what is computed from several cells: label-noise correction (Rogan–Gladen, joint with
draws of the construction's specificity/sensitivity), stress degradation between benchmarks, rank stability
(compare.py).

Benchmarks of a run: judgerEva; its Hard-Constructed pairs; its Hard-Empirical pairs (those most of the
OTHER judges get wrong: leave-one-out, so a judge does not select its own failures); judgerEva without the
pairs a QC flag marks as weaker (QC sensitivity); each published pairwise set (LLMBar, JudgeBench, …), where
only the order conditions are direct: C5/C6 come from generated polished/padded variants (augmented), C1/C2
from subsets that approximate an error type (approx), marked in each cell's `evidence`.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from judgeops.config import ProfileConfig
from judgeops.schemas.artifacts import schema_for
from judgeops.schemas.vocabulary import is_panel, to_canonical
from judgeops.tasks.profile.bootstrap import MapBlocks, bootstrap_cells
from judgeops.tasks.profile.conditions import CONDITIONS, CONTENT_CONDITIONS

BENCHMARK = "judgereva"
HARD_BENCHMARK = "judgereva-hard"
HARD_EMPIRICAL = "judgereva-hard-empirical"
QC_CLEAN = "judgereva-qc-clean"
WEAK_FLAGS = ("type_fallback", "final_answer_only", "llm_answer")  # QC flags that mark a weaker pair
PROFILE_COLUMNS = schema_for("profiles").schema.names


@dataclass
class Profile:
    """One benchmark's profile rows, and the resampled means behind them (n_boot × cells)."""

    rows: pd.DataFrame
    draws: pd.DataFrame = field(default_factory=pd.DataFrame)  # columns: (judge_id, condition)


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
    cols = [c for c in ["judge_id", "variant_id", "verdict", "p_first", "rationale"] if c in verdicts.columns]
    return grid.merge(verdicts[cols], on=["judge_id", "variant_id"], how="left")


def canonical_frame(verdicts: pd.DataFrame, variants: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every judge's verdicts on these pairs, canonical (`correct`), with `valid` and the recorded edit."""
    judges = sorted(verdicts["judge_id"].unique())
    variants = variants[variants["pair_id"].isin(pairs["pair_id"])]
    canonical = to_canonical(complete_grid(verdicts, variants, judges), variants, pairs)
    canonical["valid"] = canonical["verdict"].isin(["A", "B"])
    edits = [c for c in ("edit_before", "edit_after") if c in pairs.columns]
    if edits:
        canonical = canonical.merge(pairs[["pair_id", *edits]], on="pair_id", how="left")
    return canonical


def profile(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    benchmark: str = BENCHMARK,
    evidence: dict[str, str] | None = None,
    canonical: pd.DataFrame | None = None,
    map_blocks: MapBlocks | None = None,
) -> Profile:
    """The profile of every judge in `verdicts` on every condition with at least one pair of `pairs`.

    `pairs` needs pair_id, error_type and domain; a published set has no error types, so only the order
    conditions (overall PA, order_AB, order_BA, C7 and its consistency) get cells for it. `evidence` names
    a condition's evidence when it is not "direct" (approximate: a task-subset proxy; augmented: generated
    variants)."""
    if canonical is None:
        canonical = canonical_frame(verdicts, variants, pairs)
    else:
        canonical = canonical[canonical["pair_id"].isin(pairs["pair_id"])]
    units = pd.Index(sorted(pairs["pair_id"].unique()), name="pair_id")
    cells: dict[tuple[str, str], pd.Series] = {}
    for judge, mine in canonical.groupby("judge_id", sort=True):
        for condition in CONDITIONS:
            scores = condition.pair_scores(mine)
            if len(scores):
                cells[(judge, condition.name)] = scores
    if not cells:
        return Profile(pd.DataFrame(columns=PROFILE_COLUMNS))
    matrix = pd.DataFrame(cells).reindex(units)
    # seeded per benchmark: the resampling depends on the pairs only, so adding a judge or a condition
    # leaves every other cell's CI unchanged
    rng = np.random.default_rng([config.seed, zlib.crc32(benchmark.encode())])
    stats = bootstrap_cells(
        matrix.to_numpy(dtype=float), config.n_bootstrap, config.confidence, rng, map_blocks
    )
    operators = {c.name: c.operator for c in CONDITIONS}
    rows = pd.DataFrame(
        {
            "judge_id": [j for j, _ in matrix.columns],
            "benchmark": benchmark,
            "condition": [c for _, c in matrix.columns],
            "operator": [operators[c] for _, c in matrix.columns],
            "n": stats["n"].astype(int),
            "estimate": stats["estimate"],
            "ci_low": stats["low"],
            "ci_high": stats["high"],
            "evidence": [(evidence or {}).get(c, "direct") for _, c in matrix.columns],
        }
    )
    draws = pd.DataFrame(stats["draws"], columns=matrix.columns)
    rows = _rogan_gladen(rows, draws, config, rng)
    return Profile(rows[PROFILE_COLUMNS], draws)


def _rogan_gladen(rows: pd.DataFrame, draws: pd.DataFrame, config: ProfileConfig, rng) -> pd.DataFrame:
    """corrected = (raw + q0 − 1)/(q0 + q1 − 1) on content conditions, q0/q1 the construction's specificity
    and sensitivity measured on a validated sample (config.label_validity); the CI comes from a joint
    bootstrap: each resample of the pairs is paired with a draw of (q0, q1) from their Beta posteriors.
    Corrected values above 1 are flagged `saturated` (and clipped): the construction's measured validity
    cannot explain that much accuracy."""
    rows = rows.assign(corrected=np.nan, corrected_low=np.nan, corrected_high=np.nan, saturated=False)
    validity = config.label_validity
    if validity is None:
        return rows
    spec, sens = validity.specificity, validity.sensitivity
    q0, q1 = spec.hits / spec.n, sens.hits / sens.n
    b = len(draws)
    q0_draws = rng.beta(spec.hits + 1, spec.n - spec.hits + 1, size=b)
    q1_draws = rng.beta(sens.hits + 1, sens.n - sens.hits + 1, size=b)
    alpha = (1 - config.confidence) / 2
    for i, row in rows.iterrows():
        if row["condition"] not in CONTENT_CONDITIONS:
            continue
        raw = draws[(row["judge_id"], row["condition"])].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            corrected = (raw + q0_draws - 1) / (q0_draws + q1_draws - 1)
            point = (row["estimate"] + q0 - 1) / (q0 + q1 - 1)
        low, high = np.nanquantile(corrected, [alpha, 1 - alpha])
        rows.loc[i, ["corrected", "corrected_low", "corrected_high"]] = [
            float(np.clip(point, 0, 1)),
            float(np.clip(low, 0, 1)),
            float(np.clip(high, 0, 1)),
        ]
        rows.loc[i, "saturated"] = bool(point > 1)
    return rows


def hard_empirical_pairs(canonical: pd.DataFrame, judge: str, threshold: float = 0.5) -> set[str]:
    """Pairs on which the OTHER judges' mean position-averaged accuracy (plain) is at most `threshold`."""
    plain = canonical[(canonical["presentation"] == "plain") & (canonical["judge_id"] != judge)]
    if plain.empty:
        return set()
    per_pair = plain.groupby("pair_id")["correct"].mean()
    return set(per_pair.index[per_pair <= threshold])


def profile_all(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    external_pairs: pd.DataFrame | None = None,
    map_blocks: MapBlocks | None = None,
) -> dict[str, Profile]:
    """Every benchmark of a run, by name (see the module docstring). `map_blocks`: where the bootstrap's
    blocks of resamples are computed (bootstrap.py)."""
    flags = pairs["qc_flags"].map(lambda f: [str(x) for x in (f if f is not None else [])])
    hard = flags.map(lambda f: "hard_constructed" in f)
    weak = flags.map(lambda f: any(x in WEAK_FLAGS for x in f))
    main = pairs[~hard]
    canonical = canonical_frame(verdicts, variants, pairs)
    out = {BENCHMARK: profile(verdicts, variants, main, config, canonical=canonical, map_blocks=map_blocks)}
    if hard.any():
        out[HARD_BENCHMARK] = profile(
            verdicts,
            variants,
            pairs[hard],
            config,
            HARD_BENCHMARK,
            canonical=canonical,
            map_blocks=map_blocks,
        )
    if weak[~hard].any() and (~weak[~hard]).any():
        out[QC_CLEAN] = profile(
            verdicts,
            variants,
            main[~weak[~hard]],
            config,
            QC_CLEAN,
            canonical=canonical,
            map_blocks=map_blocks,
        )
    base = canonical[canonical["pair_id"].isin(main["pair_id"])]
    per_judge = []
    for judge in sorted(base["judge_id"].unique()):
        if is_panel(pd.Series([judge])).iloc[0]:
            continue  # a panel's consensus is built from the judges: leave-one-out does not apply
        chosen = hard_empirical_pairs(base[~is_panel(base["judge_id"])], judge)
        if chosen:
            sub = main[main["pair_id"].isin(chosen)]
            mine = base[base["judge_id"] == judge]
            per_judge.append(profile(verdicts, variants, sub, config, HARD_EMPIRICAL, canonical=mine).rows)
    if per_judge:
        out[HARD_EMPIRICAL] = Profile(pd.concat(per_judge, ignore_index=True))
    if external_pairs is not None and len(external_pairs):
        for source, group in external_pairs.groupby("source", sort=True):
            subset = group["subset"] if "subset" in group else pd.Series(None, index=group.index)
            ext = group[["pair_id"]].assign(error_type=subset.map(proxy_error_type), domain=None)
            out[str(source)] = profile(verdicts, variants, ext, config, str(source), EXTERNAL_EVIDENCE)
    return out


# A published set has no planted edit. Its order contrast is direct evidence; its polished/padded variants are
# generated (construct.external_variants): augmented; a subset that stands in for an error type: approximate.
PROXIES = {
    "factual_fabrication": ("mmlu", "knowledge", "stem", "humanities", "trivia", "fact"),
    "logical_reversal": ("reasoning", "math", "logic"),
}
EXTERNAL_EVIDENCE = {
    **{c: "approx" for c in ("C1_factual", "C2_logical")},
    **{f"{c}{suffix}": "augmented" for c in ("C5", "C6") for suffix in ("_consistency", "_stable_wrong")},
    "C5_style": "augmented",
    "C6_length": "augmented",
}


def proxy_error_type(subset: str | None) -> str | None:
    """The CAP error type a published set's subset approximates (JudgeBench's mmlu-pro-* → factual,
    livebench-reasoning / -math → logical), or None."""
    if not isinstance(subset, str):
        return None
    name = subset.lower()
    for error_type, keys in PROXIES.items():
        if any(k in name for k in keys):
            return error_type
    return None


def profile_rows(profiles: dict[str, Profile]) -> pd.DataFrame:
    frames = [p.rows for p in profiles.values() if len(p.rows)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PROFILE_COLUMNS)
