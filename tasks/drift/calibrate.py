"""One week of recalibration: each judge's FPR/FNR from the previous week's state and this week's verdicts.

"Positive" is what a judge can be lenient about: for examinee answers judged alone, "correct"; for displayed
pairs, "the first shown answer wins" (so FPR − FNR is a lean towards the first position). The week's units are
the answers (when the run judged examinee outputs) or else the displayed variants, with their true labels and
a task bin (the answer's item domain, or the pair's error type).

State: per judge, estimator and bin, the counts FP, TN, FN, TP behind the estimate, carried in the
`calibration` artifact so week w starts from week w − 1:
- bayesian: a seeded audit sample of `n_audit` labelled units a week, all weeks pooled, Beta(α0, β0) prior;
- stratified: the same counts per bin, combined with this week's mix of bins;
- disagreement: no labels; proxy counts against the leave-one-out majority of the other judges, last week's
  counts carried with weight `decay`.
Drift: a judge is flagged when its agreement with the other judges drops by more than `agreement_drop` (and
more than `z` standard errors of the week's sample), or
its FPR or FNR on this week's units alone (disagreement proxy) lies more than `z` standard errors from last
week's estimate (see flag_drift for the week a judge leaves the consensus).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgeops.schemas.artifacts import schema_for
from judgeops.tasks.aggregate.wmv import error_counts, loo_majority

CALIBRATION_COLUMNS = schema_for("calibration").schema.names


@dataclass(frozen=True)
class WeekUnits:
    votes: pd.DataFrame  # units × judges: 1 = positive, 0 = negative, NaN = no usable verdict
    truth: pd.Series  # unit → +1 / −1 (NaN: unknown)
    strata: pd.Series  # unit → bin
    kind: str  # "responses" or "variants"


def week_units(
    verdicts: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    responses: pd.DataFrame | None = None,
    items: pd.DataFrame | None = None,
) -> WeekUnits:
    on_answers = (
        verdicts[verdicts["response_id"].notna()] if "response_id" in verdicts else verdicts.iloc[0:0]
    )
    if responses is not None and len(responses) and len(on_answers):
        usable = on_answers[on_answers["verdict"].isin(["correct", "incorrect"])]
        votes = usable.assign(v=(usable["verdict"] == "correct").astype(float)).pivot_table(
            index="response_id", columns="judge_id", values="v", aggfunc="mean"
        )
        r = responses.set_index("response_id").reindex(votes.index)
        truth = r["is_correct"].map({True: 1.0, False: -1.0})
        domain = items.set_index("item_id")["domain"] if items is not None else pd.Series(dtype=str)
        strata = r["item_id"].map(domain).fillna("unknown")
        return WeekUnits(votes, truth.astype(float), strata, "responses")
    on_pairs = verdicts[verdicts["variant_id"].isin(variants["variant_id"])]
    usable = on_pairs[on_pairs["verdict"].isin(["A", "B"])]
    votes = usable.assign(v=(usable["verdict"] == "A").astype(float)).pivot_table(
        index="variant_id", columns="judge_id", values="v", aggfunc="mean"
    )
    v = variants.set_index("variant_id").reindex(votes.index)
    truth = (v["gold_position"] == "A").map({True: 1.0, False: -1.0})
    strata = v["pair_id"].map(pairs.set_index("pair_id")["error_type"]).fillna("unknown")
    return WeekUnits(votes, truth.astype(float), strata, "variants")


def beta_rates(counts: np.ndarray, prior: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of an error rate from [errors, non-errors] counts."""
    a = prior[0] + counts[..., 0]
    b = prior[1] + counts[..., 1]
    return a / (a + b), np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


def proxy_counts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disagreement counts against the other judges' majority (missing votes and ties skipped), and each
    judge's agreement with that majority."""
    proxy = loo_majority(x)
    compared = ~np.isnan(x) & ~np.isnan(proxy)
    agree = np.where(compared, (2 * x - 1) == proxy, False).sum(axis=0)
    n = compared.sum(axis=0)
    return error_counts(x, proxy), np.divide(agree, n, out=np.full(x.shape[1], np.nan), where=n > 0)


def recalibrate_week(
    week: pd.Timestamp | str,
    units: WeekUnits,
    previous: pd.DataFrame | None,
    n_audit: int = 8,
    prior: tuple[float, float] = (1.0, 9.0),
    decay: float = 0.5,
    z: float = 3.0,
    agreement_drop: float = 0.15,
    seed: int = 0,
) -> pd.DataFrame:
    """This week's `calibration` rows (see the module docstring); `previous` = last week's rows or None."""
    judges = list(units.votes.columns)
    x = units.votes.to_numpy(dtype=float)
    truth = units.truth.to_numpy(dtype=float)
    strata = units.strata.to_numpy()
    rng = np.random.default_rng([seed, pd.Timestamp(week).toordinal()])
    labelled = np.flatnonzero(~np.isnan(truth))
    audit = rng.choice(labelled, size=min(n_audit, len(labelled)), replace=False)

    def carried(estimator: str, stratum: str) -> np.ndarray:
        out = np.zeros((len(judges), 2, 2))
        if previous is None or previous.empty:
            return out
        prev = previous[(previous["estimator"] == estimator) & (previous["stratum"] == stratum)]
        prev = prev.set_index("judge_id").reindex(judges).fillna(0.0)
        return np.stack([prev[["fp", "tn"]].to_numpy(), prev[["fn", "tp"]].to_numpy()], axis=1)

    rows: list[dict] = []

    def emit(estimator: str, stratum: str, counts: np.ndarray, rate_prior, n: int, extra=None, rates=None):
        (fpr, fnr), (fpr_sd, fnr_sd) = zip(
            *[beta_rates(counts[:, k], rate_prior) for k in (0, 1)], strict=True
        )
        if rates is not None:
            fpr, fnr = rates
        for j, judge in enumerate(judges):
            rows.append(
                {
                    "week": pd.Timestamp(week).date(),
                    "judge_id": judge,
                    "estimator": estimator,
                    "stratum": stratum,
                    "fp": counts[j, 0, 0],
                    "tn": counts[j, 0, 1],
                    "fn": counts[j, 1, 0],
                    "tp": counts[j, 1, 1],
                    "fpr": float(fpr[j]),
                    "fnr": float(fnr[j]),
                    "fpr_sd": float(fpr_sd[j]),
                    "fnr_sd": float(fnr_sd[j]),
                    "n": n,
                    "agreement": (extra or {}).get(judge, np.nan),
                    "drift": False,
                    "drift_changes": [],
                }
            )

    pooled = carried("bayesian", "") + error_counts(x[audit], truth[audit])
    emit("bayesian", "", pooled, prior, len(audit))
    bins = sorted(set(strata))
    mix = {b: float(np.mean(strata == b)) for b in bins}
    combined = [np.zeros(len(judges)), np.zeros(len(judges))]
    for b in bins:
        idx = audit[strata[audit] == b]
        counts = carried("stratified", b) + error_counts(x[idx], truth[idx])
        emit("stratified", b, counts, prior, len(idx))
        for k in (0, 1):
            combined[k] += mix[b] * beta_rates(counts[:, k], prior)[0]
    emit("stratified", "", np.zeros((len(judges), 2, 2)), prior, len(audit), rates=combined)
    week_proxy, agreement = proxy_counts(x)
    proxy = decay * carried("disagreement", "") + week_proxy
    emit("disagreement", "", proxy, (1.0, 1.0), len(x), dict(zip(judges, agreement, strict=True)))
    table = pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
    return flag_drift(table, week_proxy, judges, previous, z, agreement_drop)


def flag_drift(table, week_proxy, judges, previous, z, agreement_drop) -> pd.DataFrame:
    """Mark drifting judges on the disagreement rows. First the judges whose agreement with the others fell;
    then the rate checks on this week's proxy counts. When some judge left the consensus, the proxy truth of
    every other judge moved with it, so only the judges that left are rate-checked that week (the others'
    rates are still estimated, not flagged). A judge that switches without leaving the consensus (say, it now
    copies another judge) is caught by its rates, and in a small panel the judges whose proxy truth it moved
    can be flagged with it: a flag says "look here", not "this judge alone changed"."""
    if previous is None or previous.empty:
        return table
    prev = previous[(previous["estimator"] == "disagreement") & (previous["stratum"] == "")].set_index(
        "judge_id"
    )
    mine = (table["estimator"] == "disagreement") & (table["stratum"] == "")
    now_agree = table[mine].set_index("judge_id")["agreement"]
    compared = week_proxy.sum(axis=(1, 2))  # units on which each judge met a proxy this week
    reasons: dict[str, list] = {j: [] for j in judges}
    for i, judge in enumerate(judges):
        if judge not in prev.index or not np.isfinite(now_agree[judge]):
            continue
        before, now = float(prev.loc[judge, "agreement"]), float(now_agree[judge])
        se = np.sqrt(2 * before * (1 - before) / max(compared[i], 1))  # both weeks' sampling noise
        if before - now > max(agreement_drop, z * se):
            reasons[judge].append(("agreement", before, now))
    dropped = {i for i, j in enumerate(judges) if reasons[j]}
    now_rates = {k: beta_rates(week_proxy[:, i], (1.0, 1.0)) for i, k in enumerate(("fpr", "fnr"))}
    for j, judge in enumerate(judges):
        if judge not in prev.index or (dropped and j not in dropped):
            continue  # a judge that left the panel's consensus moves everyone's proxy truth: not assessed
        for metric in ("fpr", "fnr"):
            rate, sd = now_rates[metric][0][j], now_rates[metric][1][j]
            before, before_sd = prev.loc[judge, metric], prev.loc[judge, f"{metric}_sd"]
            if abs(rate - before) > z * np.hypot(sd, before_sd):
                reasons[judge].append((metric, float(before), float(rate)))
    for judge, found in reasons.items():
        if found:
            row = mine & (table["judge_id"] == judge)
            changes = [{"metric": m, "before": a, "after": b} for m, a, b in found]
            table.loc[row, "drift"] = True
            table.loc[row, "drift_changes"] = pd.Series([changes] * int(row.sum()), index=table.index[row])
    return table


def drift_events(table: pd.DataFrame) -> list[dict]:
    """One event payload per drifting judge and metric (judge, metric, before, after, week)."""
    out = []
    for row in table[table["drift"]].itertuples():
        for change in row.drift_changes:
            out.append({"judge": row.judge_id, **change, "week": str(row.week)})
    return out


def carry_forward(previous: pd.DataFrame, week: pd.Timestamp | str) -> pd.DataFrame:
    """The calibration of a week without an evaluation: the previous week's rates and counts, unchanged, dated
    `week`, with no units of its own (n = 0, agreement unknown) and no drift flag (nothing was observed)."""
    table = previous.copy()
    table["week"] = pd.Timestamp(week).date()
    table["n"] = 0
    table["agreement"] = np.nan
    table["drift"] = False
    table["drift_changes"] = [[] for _ in range(len(table))]
    return table[CALIBRATION_COLUMNS]
