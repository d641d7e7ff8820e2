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
from judgeops.schemas.stream import Rows, frames, unite_codes
from judgeops.schemas.vocabulary import is_panel
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


# the canonical frame's repeated labels as categories: at 100k pairs × 12 judges and 12 consensus methods it has
# 12M rows, and one Arrow string column of them costs ~0.5 GB where its category codes cost 12 MB
FROM_VARIANTS = ("presentation", "order", "gold_position")
FROM_PAIRS = ("error_type", "domain")
EDITS = ("edit_before", "edit_after")  # one value per pair, repeated on each of its rows


def _codes(values: pd.Series, at: np.ndarray) -> pd.Categorical:
    """A per-variant (or per-pair) column repeated onto rows by position: a categorical, never a copy of
    its strings."""
    c = pd.Categorical(values)
    return pd.Categorical.from_codes(c.codes[at], c.categories)


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ranges starts[k] .. starts[k] + counts[k] − 1, vectorised."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(np.cumsum(counts) - counts, counts)
    return np.repeat(starts, counts) + np.arange(total) - offsets


def canonical_frame(verdicts: Rows, variants: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Every judge's verdicts on these pairs, canonical: `correct` (the verdict names the gold position:
    ties, unparsable outputs and errors count as wrong), `valid` (A or B), with the variant's presentation
    and order, the pair's error type, domain and recorded edit; labels as categories.

    The grid is complete: a judge's pairs are those it has any verdict row for (every pair, or the fixed
    sample of a judge with `max_pairs`), and a variant of them without a row becomes a missing verdict
    (counted wrong; the coverage stage reports a judge that lost every row of a pair). Rows: the verdicts in
    their order, then the grid's missing cells (every condition is a mean per pair, so the order does not
    change a score; a cell's repeated verdicts keep theirs). `verdicts` may be a stream of row groups
    (schemas/stream.py): each is reduced to positions and codes as it is read."""
    variants = variants[variants["pair_id"].isin(pairs["pair_id"])].reset_index(drop=True)
    pair_at = pd.Index(pairs["pair_id"]).get_indexer(variants["pair_id"])  # each variant's pair, by position
    known = pd.Index(variants["variant_id"])
    judge_parts, verdict_parts, at_parts, rationale_parts = [], [], [], []
    for frame in frames(verdicts):
        at = known.get_indexer(frame["variant_id"])
        mine = at >= 0
        at_parts.append(at[mine])
        judge_parts.append(frame["judge_id"][mine])
        verdict_parts.append(frame["verdict"][mine])
        rationale = frame["rationale"] if "rationale" in frame else pd.Series(None, index=frame.index)
        rationale_parts.append(rationale[mine].astype("str"))
    at = np.concatenate(at_parts).astype(np.int64) if at_parts else np.zeros(0, dtype=np.int64)
    j, judges = unite_codes(judge_parts, sort=True)
    v, verdict_names = unite_codes(verdict_parts)
    rationale = (
        pd.concat(rationale_parts, ignore_index=True) if rationale_parts else pd.Series([], dtype="str")
    )
    # the grid: every variant of each (judge, pair) with a row; its cells without one are appended, missing
    n_variants, n_pairs = len(variants), len(pairs)
    by_pair = np.argsort(pair_at, kind="stable")
    first = np.searchsorted(pair_at[by_pair], np.arange(n_pairs))
    per_pair = np.bincount(pair_at, minlength=n_pairs)
    judged = np.unique(j * n_pairs + pair_at[at])
    grid_j = np.repeat(judged // n_pairs, per_pair[judged % n_pairs])
    grid_at = by_pair[_expand(first[judged % n_pairs], per_pair[judged % n_pairs])]
    missing = ~np.isin(grid_j * n_variants + grid_at, j * n_variants + at)
    n_missing = int(missing.sum())
    rows_j = np.concatenate([j, grid_j[missing]]).astype(np.int32)
    rows_at = np.concatenate([at, grid_at[missing]]).astype(np.int32)
    v_codes = np.concatenate([v, np.full(n_missing, -1)]).astype(np.int32)
    del grid_j, grid_at, missing, j, v
    row_pair = pair_at[rows_at]
    canonical = pd.DataFrame(
        {
            "judge_id": pd.Categorical.from_codes(rows_j, judges),
            "verdict": pd.Categorical.from_codes(v_codes, verdict_names),
            "rationale": pd.concat(
                [rationale, pd.Series(np.nan, index=range(n_missing), dtype="str")], ignore_index=True
            ),
            "pair_id": variants["pair_id"].take(rows_at).reset_index(drop=True),
            **{c: _codes(variants[c], rows_at) for c in FROM_VARIANTS},
            **{c: _codes(pairs[c], row_pair) for c in FROM_PAIRS},
        }
    )
    # correct: the verdict names the gold position, looked up on the two columns' codes (−1, missing: the
    # table's last row or column, never a match)
    gold = pd.Categorical(canonical["gold_position"])
    same = np.zeros((len(verdict_names) + 1, len(gold.categories) + 1), dtype=bool)
    verdict_values = np.asarray(verdict_names, dtype=object)
    same[:-1, :-1] = np.equal.outer(verdict_values, np.asarray(gold.categories, dtype=object))
    canonical["correct"] = same[v_codes, gold.codes]
    canonical["valid"] = canonical["verdict"].isin(["A", "B"])
    for column in (c for c in EDITS if c in pairs.columns):
        canonical[column] = _codes(pairs[column], row_pair)
    return canonical


def profile(
    verdicts: Rows,
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
    # a mask: subsets are taken by blocks of judges
    here = canonical["pair_id"].isin(pairs["pair_id"]).to_numpy()
    units = pd.Index(sorted(pairs["pair_id"].unique()), name="pair_id")
    scored: dict[tuple[str, str], np.ndarray] = {}  # (judge, condition): its scores over `units` (NaN: none)
    groups = canonical.groupby("judge_id", observed=True).indices
    mine = {judge: rows[here[rows]] for judge, rows in groups.items()}
    for block in _judge_blocks({j: len(r) for j, r in mine.items() if len(r)}, BLOCK_ROWS):
        rows = canonical.take(np.sort(np.concatenate([mine[j] for j in block])))
        for condition in CONDITIONS:  # one pass per condition over the block's judges
            scores = condition.pair_scores(rows)
            if not len(scores):
                continue
            for judge, own in scores.groupby(level="judge_id", observed=True):
                scored[judge, condition.name] = own.droplevel("judge_id").reindex(units).to_numpy(dtype=float)
    columns = [(j, c.name) for j in sorted(mine) for c in CONDITIONS if (j, c.name) in scored]
    cells = [scored.pop(column) for column in columns]
    if not cells:
        return Profile(pd.DataFrame(columns=PROFILE_COLUMNS))
    matrix = pd.DataFrame(np.column_stack(cells), index=units, columns=pd.MultiIndex.from_tuples(columns))
    del cells
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


BLOCK_ROWS = 1_000_000  # canonical rows scored at once: many small judges in one pass, a large panel in a few


def _judge_blocks(sizes: dict[str, int], max_rows: int) -> list[list[str]]:
    """The judges (sorted) in consecutive blocks of at most `max_rows` rows each (a larger judge alone)."""
    blocks: list[list[str]] = []
    rows = max_rows
    for judge in sorted(sizes):
        if rows + sizes[judge] > max_rows:
            blocks.append([])
            rows = 0
        blocks[-1].append(judge)
        rows += sizes[judge]
    return blocks


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
    return hard_empirical_by_judge(canonical, [judge], threshold)[judge]


def hard_empirical_by_judge(
    canonical: pd.DataFrame, judges: list[str], threshold: float = 0.5
) -> dict[str, set[str]]:
    """hard_empirical_pairs of every judge in `judges`, from one pass: per pair, the others' mean is
    (all judges' right verdicts − the judge's) / (all judges' plain verdicts − the judge's)."""
    plain = canonical.loc[canonical["presentation"] == "plain", ["pair_id", "judge_id", "correct"]]
    per = plain.groupby(["pair_id", "judge_id"], observed=True, sort=False)["correct"].agg(["sum", "count"])
    total = per.groupby(level="pair_id", sort=False).sum()
    out = {}
    for judge in judges:
        mine = per.xs(judge, level="judge_id") if judge in per.index.get_level_values("judge_id") else None
        right, n = total["sum"], total["count"]
        if mine is not None:
            right = right - mine["sum"].reindex(total.index, fill_value=0)
            n = n - mine["count"].reindex(total.index, fill_value=0)
        mean = right[n > 0] / n[n > 0]
        out[judge] = set(mean.index[mean <= threshold])
    return out


def profile_all(
    verdicts: Rows,
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
    # leave-one-out on the judgerEva pairs, among the judges (not the panel's consensus, which is built from
    # them)
    among = (
        canonical["pair_id"].isin(main["pair_id"]).to_numpy() & ~is_panel(canonical["judge_id"]).to_numpy()
    )
    base = canonical.loc[among, ["pair_id", "judge_id", "presentation", "correct"]]
    judges = sorted(base["judge_id"].unique())
    chosen = hard_empirical_by_judge(base, judges)
    del base
    per_judge = []
    for judge in judges:
        if chosen[judge]:
            sub = main[main["pair_id"].isin(chosen[judge])]
            mine = canonical[canonical["judge_id"] == judge]
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
