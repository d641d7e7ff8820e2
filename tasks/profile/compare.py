"""What compares profiles: stress degradation, rank stability, profile distance → the `profile_stats` table.

- stress degradation δ = acc(standard) − acc(stress) per judge and condition (CAP Table 6): judgerEva vs
  its Hard-Constructed and Hard-Empirical pairs; the CI is the percentile interval of the difference of the
  two benchmarks' bootstrap draws (independent resamples of different pairs).
- rank stability: Spearman ρ between the judges' rankings on one condition in two benchmarks (Tables 13–14),
  and between two conditions in one benchmark; the CI from the same bootstrap draws where both come from one
  resampling (across conditions), none where the benchmarks were resampled apart.
- profile distance: mean |difference| of two judges' C1–C8 estimates on the conditions both have (L1 over
  the profile, normalised by the number of conditions), and its mean within vs across judge families.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import rankdata, spearmanr

from judgeops.schemas.artifacts import schema_for
from judgeops.schemas.vocabulary import is_panel
from judgeops.tasks.profile.bias import leniency
from judgeops.tasks.profile.conditions import CAP
from judgeops.tasks.profile.profiles import BENCHMARK, HARD_BENCHMARK, HARD_EMPIRICAL, Profile

STATS_COLUMNS = schema_for("profile_stats").schema.names


def _row(**kw) -> dict:
    return {c: kw.get(c) for c in STATS_COLUMNS}


def stress_degradation(profiles: dict[str, Profile], confidence: float) -> list[dict]:
    base = profiles.get(BENCHMARK)
    if base is None or base.draws.empty:
        return []
    alpha = (1 - confidence) / 2
    out = []
    for stress in (HARD_BENCHMARK, HARD_EMPIRICAL):
        other = profiles.get(stress)
        if other is None:
            continue
        est = base.rows.set_index(["judge_id", "condition"])["estimate"]
        for row in other.rows.itertuples(index=False):
            key = (row.judge_id, row.condition)
            if row.condition not in CAP + ["overall"] or key not in est.index:
                continue
            delta = float(est[key] - row.estimate)
            low = high = np.nan
            if key in base.draws and not other.draws.empty and key in other.draws:
                diff = base.draws[key].to_numpy() - other.draws[key].to_numpy()
                low, high = np.nanquantile(diff, [alpha, 1 - alpha])
            out.append(
                _row(
                    kind="stress_degradation",
                    benchmark=stress,
                    other=BENCHMARK,
                    judge_id=row.judge_id,
                    condition=row.condition,
                    n=int(row.n),
                    estimate=delta,
                    ci_low=low,
                    ci_high=high,
                )
            )
    return out


def _spearman_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair of two (draws × judges) matrices, vectorised."""
    ra, rb = rankdata(a, axis=1), rankdata(b, axis=1)
    ra -= ra.mean(axis=1, keepdims=True)
    rb -= rb.mean(axis=1, keepdims=True)
    denom = np.sqrt((ra**2).sum(axis=1) * (rb**2).sum(axis=1))
    return np.divide((ra * rb).sum(axis=1), denom, out=np.full(len(ra), np.nan), where=denom > 0)


def rank_stability(profiles: dict[str, Profile], confidence: float, min_judges: int = 3) -> list[dict]:
    out = []
    alpha = (1 - confidence) / 2
    tables = {
        name: p.rows[~is_panel(p.rows["judge_id"])].pivot_table(
            index="judge_id", columns="condition", values="estimate"
        )
        for name, p in profiles.items()
        if len(p.rows) and name != HARD_EMPIRICAL  # a different pair set per judge: not one benchmark
    }
    for (b1, t1), (b2, t2) in combinations(sorted(tables.items()), 2):
        for cond in sorted(set(t1.columns) & set(t2.columns)):
            both = pd.concat([t1[cond], t2[cond]], axis=1, keys=["a", "b"]).dropna()
            if len(both) < min_judges or both.nunique().min() < 2:
                continue  # a ranking needs three judges and no benchmark on which all of them tie
            rho = spearmanr(both["a"], both["b"]).statistic
            out.append(
                _row(
                    kind="rank_stability_benchmarks",
                    benchmark=b1,
                    other=b2,
                    condition=cond,
                    n=len(both),
                    estimate=float(rho),
                )
            )
    for name, p in profiles.items():
        if name not in tables or p.draws.empty:
            continue
        judges = [j for j in tables[name].index]
        for c1, c2 in combinations([c for c in CAP if c in tables[name].columns], 2):
            pair = tables[name][[c1, c2]].dropna()
            if len(pair) < min_judges or pair.nunique().min() < 2:
                continue
            rho = spearmanr(pair[c1], pair[c2]).statistic
            keys1 = [(j, c1) for j in pair.index if (j, c1) in p.draws]
            keys2 = [(j, c2) for j in pair.index if (j, c2) in p.draws]
            low = high = np.nan
            if len(keys1) == len(keys2) == len(pair) and len(judges) >= min_judges:
                draws = _spearman_rows(p.draws[keys1].to_numpy(), p.draws[keys2].to_numpy())
                low, high = np.nanquantile(draws, [alpha, 1 - alpha])
            out.append(
                _row(
                    kind="rank_stability_conditions",
                    benchmark=name,
                    condition=f"{c1}~{c2}",
                    n=len(pair),
                    estimate=float(rho),
                    ci_low=low,
                    ci_high=high,
                )
            )
    return out


def profile_distance(profiles: dict[str, Profile], families: dict[str, str] | None) -> list[dict]:
    base = profiles.get(BENCHMARK)
    if base is None or not len(base.rows):
        return []
    table = base.rows[base.rows["condition"].isin(CAP)].pivot_table(
        index="judge_id", columns="condition", values="estimate"
    )
    out, by_kind = [], {"within_family": [], "across_family": []}
    for j1, j2 in combinations(table.index, 2):
        shared = table.loc[[j1, j2]].dropna(axis=1)
        if shared.shape[1] == 0:
            continue
        dist = float((shared.loc[j1] - shared.loc[j2]).abs().mean())
        out.append(
            _row(
                kind="profile_distance",
                benchmark=BENCHMARK,
                judge_id=j1,
                other_judge=j2,
                condition="C1-C8",
                n=shared.shape[1],
                estimate=dist,
            )
        )
        if families and j1 in families and j2 in families:
            by_kind["within_family" if families[j1] == families[j2] else "across_family"].append(dist)
    for kind, values in by_kind.items():
        if values:
            out.append(
                _row(
                    kind="family_distance",
                    benchmark=BENCHMARK,
                    condition=kind,
                    n=len(values),
                    estimate=float(np.mean(values)),
                )
            )
    return out


def profile_stats(
    profiles: dict[str, Profile],
    confidence: float = 0.95,
    families: dict[str, str] | None = None,
    bias: pd.DataFrame | None = None,
) -> pd.DataFrame:
    rows = stress_degradation(profiles, confidence) + rank_stability(profiles, confidence)
    rows += profile_distance(profiles, families)
    rows += [_row(**r) for r in leniency(bias)] if bias is not None and len(bias) else []
    table = pd.DataFrame(rows, columns=STATS_COLUMNS)
    text = ["kind", "benchmark", "other", "judge_id", "other_judge", "condition"]
    table[text] = table[text].fillna("")  # "" = not applicable, so the key columns are never null
    return table.astype({"n": "int64", "estimate": float, "ci_low": float, "ci_high": float})
