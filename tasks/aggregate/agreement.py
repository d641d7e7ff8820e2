"""How far judges and consensus agree with people, and people with each other, on an audit.

judge_vs_human(votes, human, weights, consensus)
    Per judge (every run's vote on an audited task counts) and per label-free consensus (which never saw the
    labels): accuracy and Cohen's κ against the people's label, each with a 90 % interval. The audit's inclusion
    weights (`audit propose`: a stratum's size over its sample) weigh every audited task, so the numbers are
    about the whole panel, not the uncertain tasks the stratified audit sampled more. Cohen's κ corrects the
    accuracy for the agreement two raters with the same label shares would reach by chance: a judge that says
    "A" on every task of a 90 %-"A" audit is 0.9 accurate with κ = 0. (κ with sample weights is scikit-learn's
    `cohen_kappa_score`; it is computed here for the sample and all bootstrap resamples in one matrix product,
    the same number, tested.) The intervals are percentile intervals of a bootstrap over audited tasks (a
    task's votes stay together; the weights ride along), `n_boot` resamples with a fixed seed.

annotators(long)
    Several people on the same tasks (`task, annotator, label`): Cohen's κ for two annotators, Krippendorff's α
    (nominal; `krippendorff_alpha` below) for any number, with a bootstrap interval over tasks; the
    conflicting tasks (people disagree); and the adjudicated label per task — the strict majority, none where
    there is none (those wait for a person to adjudicate, and are left out of the refit until one does).

When it cannot help: an audit of a few dozen tasks gives intervals a dozen points wide (they say so), and κ is
undefined where the people used one class only (NaN, with the accuracy still reported).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

CI = (5.0, 95.0)  # a 90 % percentile interval
AGREEMENT_COLUMNS = ["who", "kind", "n_tasks", "accuracy", "accuracy_low", "accuracy_high"]
AGREEMENT_COLUMNS += ["kappa", "kappa_low", "kappa_high"]


def _kappa(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score  # lazy: scikit-learn is slow to import

    if len(set(a) | set(b)) < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(cohen_kappa_score(a, b, sample_weight=w))


def _interval(stat, n_tasks: int, n_boot: int, seed: int) -> tuple[float, float]:
    """Percentile interval of `stat(task_positions)` over bootstrap resamples of the audited tasks."""
    rng = np.random.default_rng(seed)
    draws = np.asarray([stat(rng.integers(0, n_tasks, n_tasks)) for _ in range(n_boot)], dtype=float)
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0:
        return float("nan"), float("nan")
    low, high = np.percentile(draws, CI)
    return float(low), float(high)


def _weighted_rates(rw: np.ndarray, agree: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
    """(accuracy, κ) per row of row weights `rw` (resamples × votes): κ = (p_o − p_e) / (1 − p_e), p_e from the
    weighted label shares — Cohen's κ with sample weights, as scikit-learn's, for all resamples in one product
    (scikit-learn's function takes one sample per call: 1,000 calls per judge)."""
    total = rw.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = rw @ agree / total
        p_e = ((rw @ a) * (rw @ b)).sum(axis=1) / total**2
        kappa = np.where(p_e < 1 - 1e-12, (p_o - p_e) / (1 - p_e), np.nan)
    return p_o, kappa


def _rater_rows(
    who: str, kind: str, said: pd.DataFrame, human: pd.Series, weights: pd.Series, n_boot: int, seed: int
) -> dict:
    """`said`: task, label (one row per vote). The audited tasks it voted on, scored against `human`."""
    said = said[said["task"].isin(human.index)]
    tasks = pd.Index(said["task"].unique())
    row = {"who": who, "kind": kind, "n_tasks": len(tasks)}
    if not len(tasks):
        return {**row, **dict.fromkeys(AGREEMENT_COLUMNS[3:], float("nan"))}
    t = tasks.get_indexer(said["task"])
    a, b = said["label"].astype(str).to_numpy(), human[said["task"]].astype(str).to_numpy()
    classes = np.unique(np.concatenate([a, b]))
    onehot_a = (a[:, None] == classes[None, :]).astype(float)
    onehot_b = (b[:, None] == classes[None, :]).astype(float)
    w = weights[said["task"]].to_numpy(dtype=float)
    rng = np.random.default_rng(seed)
    times = rng.multinomial(len(tasks), np.full(len(tasks), 1 / len(tasks)), size=n_boot)  # resamples × tasks
    rw = np.vstack([w, times[:, t] * w])  # the sample itself first, then each resample
    accuracy, kappa = _weighted_rates(rw, (a == b).astype(float), onehot_a, onehot_b)
    if len(classes) < 2:
        kappa[:] = np.nan

    for name, values in (("accuracy", accuracy), ("kappa", kappa)):
        drawn = values[1:][np.isfinite(values[1:])]
        low, high = np.percentile(drawn, CI) if len(drawn) else (np.nan, np.nan)
        row.update({name: float(values[0]), f"{name}_low": float(low), f"{name}_high": float(high)})
    return row


def judge_vs_human(
    votes: pd.DataFrame,
    human: pd.Series,
    weights: pd.Series | None = None,
    consensus: dict[str, pd.Series] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per judge (kind "judge") and per consensus (kind "consensus"), columns AGREEMENT_COLUMNS; see the
    module docstring. `human`: task → the people's label (ties and skips left out before); `weights`: task →
    inclusion weight (1 where None); `consensus`: name → task → label of label-free methods."""
    human = human.dropna().astype(str)
    w = pd.Series(1.0, index=human.index) if weights is None else weights.reindex(human.index).fillna(1.0)
    rows = [
        _rater_rows(str(judge), "judge", own[["task", "label"]], human, w, n_boot, seed)
        for judge, own in votes.dropna(subset=["label"]).groupby("worker", sort=True)
    ]
    for name, labels in (consensus or {}).items():
        said = labels.rename("label").rename_axis("task").reset_index()
        rows.append(_rater_rows(name, "consensus", said, human, w, n_boot, seed))
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


@dataclass(frozen=True)
class AnnotatorAgreement:
    """`n_annotators`, `n_tasks` (labelled by two or more), Cohen's `kappa` (two annotators only, else None),
    Krippendorff's `alpha` (nominal) with its 90 % interval, the `conflicts` (tasks whose labels differ)."""

    n_annotators: int
    n_tasks: int
    kappa: float | None
    alpha: float
    alpha_low: float
    alpha_high: float
    conflicts: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def majority_labels(long: pd.DataFrame) -> pd.Series:
    """task → the strict majority of the people's labels (`long`: task, annotator, label), NaN where none has one."""
    long = long.dropna(subset=["label"]).drop_duplicates(["task", "annotator"], keep="last")
    counts = long.groupby(["task", "label"]).size().unstack(fill_value=0)
    top = counts.max(axis=1)
    return counts.idxmax(axis=1).where(top * 2 > counts.sum(axis=1))  # more than half: exactly one such label


def conflicting_tasks(long: pd.DataFrame) -> list[str]:
    """The tasks two or more people labelled, not all alike (`long`: task, annotator, label; a later row of a
    person replaces an earlier one): what waits for adjudication."""
    long = long.dropna(subset=["label"]).drop_duplicates(["task", "annotator"], keep="last")
    shared = long.groupby("task")["label"].agg(["nunique", "size"])
    return sorted(shared.index[(shared["size"] >= 2) & (shared["nunique"] > 1)].astype(str), key=str)


LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(data, level: str = "nominal") -> float:
    """Krippendorff's α of `data` (raters × units, NaN where a rater gave no value), at a level of measurement.

    Written here because the maintained package (`krippendorff`) is GPL-3.0, which this Apache-2.0 project may
    not depend on. Krippendorff (2011), "Computing Krippendorff's alpha-reliability": a unit's m_u ≥ 2 values
    make m_u(m_u − 1) ordered pairs, each weighted 1/(m_u − 1), so the coincidence matrix is
    o_ck = Σ_u (n_uc n_uk − [c = k] n_uc) / (m_u − 1), with n_uc the raters giving value c to unit u (units
    with fewer than two values pair nothing and drop out). With n_c = Σ_k o_ck and n = Σ_c n_c,

        α = 1 − D_o / D_e = 1 − (n − 1) Σ_ck o_ck δ²_ck / Σ_ck n_c n_k δ²_ck,

    where δ² is the level's difference: nominal [c ≠ k]; interval (c − k)²; ratio ((c − k)/(c + k))²;
    ordinal (Σ_{g from c to k} n_g − (n_c + n_k)/2)², ranks by the pooled value counts. NaN where the values
    pair nothing or show no variation (D_e = 0). Pinned on the paper's worked example (tests/test_agreement.py:
    0.743 nominal, 0.815 ordinal, 0.849 interval, 0.797 ratio)."""
    if level not in LEVELS:
        raise ValueError(f"level of measurement {level!r}: one of {', '.join(LEVELS)}")
    data = np.asarray(data, dtype=float)
    values = np.unique(data[np.isfinite(data)])
    if len(values) < 2:
        return float("nan")
    counts = np.stack([(data == v).sum(axis=0) for v in values], axis=1).astype(float)  # units × values
    pairable = counts.sum(axis=1)
    counts, pairable = counts[pairable >= 2], pairable[pairable >= 2]
    if not len(counts):
        return float("nan")
    weighted = counts / (pairable - 1)[:, None]
    coincidence = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    c, k = np.meshgrid(values, values, indexing="ij")
    if level == "nominal":
        delta = (c != k).astype(float)
    elif level == "interval":
        delta = (c - k) ** 2
    elif level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = np.nan_to_num(((c - k) / (c + k)) ** 2)  # 0/0 (both zero): no difference
    else:
        cumulative = np.cumsum(n_c)
        i, j = np.meshgrid(np.arange(len(values)), np.arange(len(values)), indexing="ij")
        low, high = np.minimum(i, j), np.maximum(i, j)
        between = cumulative[high] - cumulative[low] + n_c[low]  # Σ n_g for g from the lower to the higher
        delta = (between - (n_c[i] + n_c[j]) / 2) ** 2
    expected = n_c @ delta @ n_c
    if expected == 0:
        return float("nan")
    return float(1 - (n - 1) * (coincidence * delta).sum() / expected)


def annotators(long: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> tuple[AnnotatorAgreement, pd.Series]:
    """(the agreement between people, task → adjudicated label: the strict majority, NaN where there is none).
    `long`: task, annotator, label — one row per annotator and task (a later row replaces an earlier one)."""
    long = long.dropna(subset=["label"]).drop_duplicates(["task", "annotator"], keep="last")
    table = long.pivot(index="task", columns="annotator", values="label")
    adjudicated = majority_labels(long)
    shared = table[table.notna().sum(axis=1) >= 2]
    conflicts = conflicting_tasks(long)
    codes = {label: i for i, label in enumerate(sorted(long["label"].astype(str).unique()))}
    data = shared.apply(lambda col: col.map(codes)).to_numpy(dtype=float).T  # annotators × tasks

    def alpha(sample=None) -> float:
        d = data if sample is None else data[:, sample]
        if d.shape[1] < 2 or len(np.unique(d[np.isfinite(d)])) < 2:
            return float("nan")
        return krippendorff_alpha(d, "nominal")

    kappa = None
    if table.shape[1] == 2 and len(shared):
        a, b = shared.iloc[:, 0].astype(str).to_numpy(), shared.iloc[:, 1].astype(str).to_numpy()
        kappa = _kappa(a, b, np.ones(len(a)))
    low, high = _interval(alpha, data.shape[1], n_boot, seed) if data.shape[1] else (np.nan, np.nan)
    agreement = AnnotatorAgreement(int(table.shape[1]), len(shared), kappa, alpha(), low, high, conflicts)
    return agreement, adjudicated
