"""Perturbation consistency: label-free evidence of which judges read the content (ALGORITHMS.md §8).

Votes alone have a mirror symmetry: flipping the truth and every judge's confusion matrix leaves their
distribution unchanged, so when most judges are below chance every vote-only method takes the wrong side.
judgeops sees more than votes: every pair in both display orders and in three presentations. A judge that
decides on the content gives the same canonical verdict under those perturbations; a judge swayed by
position or by surface features does not.

Input: the aggregators' long frame `task, worker, label` in the canonical frame (a task's candidates have
fixed names whatever order they were shown in), with optional columns
- `run`: which showing of the task a row is (a display order, or a repeat); several rows per
  (task, worker) are that judge's runs of the task;
- `shown_first`: the label of the candidate shown first in that run. Without it, runs named by the two
  labels in display order ("AB"/"BA" for labels A/B, "12"/"21" for 1/2) say it themselves;
- `item`: tasks that share an item are presentations of one pair (plain / polished / padded), with the same
  true label.

Signals per judge (`consistency_signals`, also per judge × condition with `by=`):
- order_consistency: P(same label in two runs of one task), over every pair of runs of a task;
- presentation_consistency: P(same label on two presentations of one item in the same run);
- position_bias: the share of "shown first" among the judge's decisive votes (0.5 = none);
- agreement: both kinds of pairs pooled, and the per-run accuracy it implies (`implied_accuracy`) under
  the model below, with its log-odds `weight`.

The model behind the weight: each run's verdict is right with probability q_j, independently across the
runs of one item. Two runs then agree with probability c = q² + (1 − q)², so q = ½(1 + √(2c − 1)), taking
the root above ½ — the one assumption that breaks the mirror: *a judge is better than chance when it is
consistent*. It helps where judges err because of position or surface (their errors change with the
perturbation). It cannot help where a judge is wrong for a stable reason (stable-but-wrong, CAP's Δ): such
a judge looks reliable; nor where position bias is independent of accuracy (synthetic regime v).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import binary_classes, check_frame

SIGNALS = [
    "n_tasks",
    "order_pairs",
    "order_consistency",
    "presentation_pairs",
    "presentation_consistency",
    "n_decisive",
    "position_bias",
    "agreement",
    "implied_accuracy",
    "weight",
]
RUN_COLUMNS = ("run", "shown_first", "item")  # the optional columns the consistency-aware methods read
MAX_IMPLIED_ACCURACY = 0.99  # a judge consistent on every pair is not taken as infallible


def shown_first(df: pd.DataFrame, classes: tuple[str, str]) -> pd.Series | None:
    """The label shown first in each row's run: the `shown_first` column, or parsed from a `run` named by
    the labels in display order; None when neither says it."""
    if "shown_first" in df.columns:
        return df["shown_first"].astype(object)
    if "run" not in df.columns:
        return None
    names = {f"{classes[0]}{classes[1]}": classes[0], f"{classes[1]}{classes[0]}": classes[1]}
    run = df["run"].astype(str)
    if not run.isin(list(names)).all():
        return None
    return run.map(names)


def pairwise_agreement(n: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(agreeing pairs, pairs) among n votes of which k name the first class: C(k,2) + C(n−k,2) of C(n,2)."""
    n, k = np.asarray(n, dtype=float), np.asarray(k, dtype=float)
    return k * (k - 1) / 2 + (n - k) * (n - k - 1) / 2, n * (n - 1) / 2


def implied_accuracy(agreement: np.ndarray | float) -> np.ndarray:
    """q with q² + (1 − q)² = agreement, the root above ½ (½ where agreement ≤ ½)."""
    c = np.asarray(agreement, dtype=float)
    q = 0.5 * (1 + np.sqrt(np.clip(2 * c - 1, 0.0, 1.0)))
    return np.where(np.isnan(c), np.nan, np.minimum(q, MAX_IMPLIED_ACCURACY))


def _agreement(groups: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per worker: agreeing pairs and pairs of votes within each group of `keys`."""
    g = groups.groupby(keys, sort=False)["is_first_class"].agg(["size", "sum"])
    agree, pairs = pairwise_agreement(g["size"].to_numpy(), g["sum"].to_numpy())
    out = pd.DataFrame({"agree": agree, "pairs": pairs}, index=g.index)
    return out.groupby(level="worker").sum()


def consistency_signals(
    df: pd.DataFrame, classes: tuple[str, str] | None = None, by: str | None = None
) -> pd.DataFrame:
    """One row per judge (per judge × `by` when given): the signals above, with the numbers of pairs.

    Columns: worker, [by], n_tasks, order_pairs, order_consistency, presentation_pairs,
    presentation_consistency, n_decisive, position_bias, agreement, implied_accuracy, weight.
    A signal with no pairs to measure it is NaN."""
    df = check_frame(df, "label", "consistency_signals")
    classes = binary_classes(df["label"], classes, "consistency_signals")
    df = df[df["label"].isin(classes)]
    first = shown_first(df, classes)
    column = lambda s: s.reset_index(drop=True)  # noqa: E731 (each column as it is: no copy of its strings)
    frame = pd.DataFrame(
        {
            "task": column(df["task"]),
            "worker": column(df["worker"]),
            "run": column(df["run"].astype(str)) if "run" in df.columns else "",
            "item": column(df["item"] if "item" in df.columns else df["task"]),
            "is_first_class": (df["label"] == classes[0]).to_numpy(),
            "first_shown": (df["label"].to_numpy() == first.to_numpy()) if first is not None else np.nan,
        }
    )
    if by is not None:
        frame[by] = column(df[by])
    keys = [by] if by is not None else []
    parts = []
    for key, sub in frame.groupby(keys, sort=True) if keys else [((), frame)]:
        # the judge's label per (task, run): several rows of one run (repeats) count as their majority
        order = _agreement(sub, ["worker", "task"])
        per_run = sub.groupby(["worker", "item", "task", "run"], sort=False)["is_first_class"].mean()
        per_run = (per_run > 0.5).astype(float).where(per_run != 0.5).dropna().rename("is_first_class")
        presentation = _agreement(per_run.reset_index(), ["worker", "item", "run"])
        workers = pd.Index(sorted(sub["worker"].unique()), name="worker")
        out = pd.DataFrame(index=workers)
        out["n_tasks"] = sub.groupby("worker")["task"].nunique()
        out["order_pairs"] = order["pairs"].reindex(workers).fillna(0)
        out["order_consistency"] = order["agree"] / order["pairs"].where(order["pairs"] > 0)
        out["presentation_pairs"] = presentation["pairs"].reindex(workers).fillna(0)
        out["presentation_consistency"] = presentation["agree"] / presentation["pairs"].where(
            presentation["pairs"] > 0
        )
        out["n_decisive"] = sub.groupby("worker").size()
        out["position_bias"] = sub.groupby("worker")["first_shown"].mean() if first is not None else np.nan
        agree = order["agree"].reindex(workers).fillna(0) + presentation["agree"].reindex(workers).fillna(0)
        pairs = out["order_pairs"] + out["presentation_pairs"]
        out["agreement"] = agree / pairs.where(pairs > 0)
        out["implied_accuracy"] = implied_accuracy(out["agreement"].to_numpy())
        q = out["implied_accuracy"].to_numpy()
        out["weight"] = np.log(q / (1 - q))
        if by is not None:
            out.insert(0, by, key[0] if isinstance(key, tuple) else key)
        parts.append(out.reset_index())
    return pd.concat(parts, ignore_index=True)


def anchor_invariant(
    signals: pd.DataFrame,
    df: pd.DataFrame,
    classes: tuple[str, str],
    min_pairs: int = 50,
    min_anchor: float = 0.6,
    tolerance: float = 0.1,
) -> pd.DataFrame:
    """`signals` (indexed by worker) with the accuracy of each order-invariant judge taken from the judges whose
    consistency does vouch for theirs, in place of its own; column `anchored_on` names them ("" where unchanged).

    A judge whose verdict never changed with the display order over `min_pairs` or more pairs of runs (a reward
    model scoring each answer on its own, say) is consistent by construction: its order pairs all agree whatever
    its accuracy, so the implied accuracy above says nothing about it (synthetic.py's order_invariant_clique: 0.85
    implied where 0.55–0.70 is true, and the invariant judges outweigh the order-sensitive one that is best).
    An order-sensitive judge j measured on `min_pairs` pairs with implied accuracy q_j ≥ `min_anchor` is an anchor:
    if j's runs are right with probability q_j independently of judge k's errors, their ±1 votes on the same run
    have E[x_j·x_k] = (2q_j − 1)(2a_k − 1), so a_k = ½(1 + E[x_j·x_k] / (2q_j − 1)). The anchors' estimates are
    pooled with weights n_jk·(2q_j − 1)² (the inverse of each one's sampling variance, up to a constant), and
    a_k is kept in [½, MAX_IMPLIED_ACCURACY]: a judge anchored at chance or below weighs nothing (a negative
    weight would bet on the anchors being right where they are least sure).

    The anchors are checked against each other first: two anchors erring independently have E[x_j·x_l] =
    (2q_j − 1)(2q_l − 1), and where some pair misses that by more than `tolerance` their implied accuracies do not
    describe them (deterministic judges consistent because they are deterministic: the default panel's
    programmatic specialists imply 0.84–0.95 and are right on 0.59–0.72, and their pairs agree 0.18–0.48 where
    0.51–0.66 is implied); nothing is anchored then. A single anchor cannot be checked. Where it cannot help: no
    anchor (every judge invariant, or none above `min_anchor`), anchors that fail the check, or a lone anchor that
    errs together with the invariant judges (a shared surface preference): then a_k is too high, as before."""
    signals = signals.copy()
    signals["anchored_on"] = ""
    measured = signals["order_pairs"] >= min_pairs
    invariant = order_invariant(signals, min_pairs)
    q = signals["implied_accuracy"]
    anchors = signals.index[measured & (signals["order_consistency"] < 1.0) & (q >= min_anchor)]
    if not len(invariant) or not len(anchors):
        return signals
    run = df["run"].astype(str) if "run" in df.columns else pd.Series("", index=df.index)  # repeats: one mean
    sign = pd.Series(np.where(df["label"] == classes[0], 1.0, -1.0), index=df.index)
    x = sign.groupby([df["task"], run, df["worker"]], sort=False).mean().unstack("worker")
    a = x.reindex(columns=anchors).to_numpy(dtype=float)
    strength = 2 * q[anchors].to_numpy(dtype=float) - 1
    # two anchors erring independently: E[x_j·x_l] = (2q_j − 1)(2q_l − 1), wherever measured together
    moment, n = _co_moments(a, a)
    pair = (n >= min_pairs) & ~np.eye(len(anchors), dtype=bool)
    if (np.abs(moment - np.outer(strength, strength))[pair] > tolerance).any():
        return signals
    moment, n = _co_moments(a, x.reindex(columns=invariant).to_numpy(dtype=float))
    for col, k in enumerate(invariant):
        ok = n[:, col] >= min_pairs
        if not ok.any():
            continue
        weight = n[ok, col] * strength[ok] ** 2
        acc = float(np.sum(weight * 0.5 * (1 + moment[ok, col] / strength[ok])) / weight.sum())
        acc = float(np.clip(acc, 0.5, MAX_IMPLIED_ACCURACY))
        signals.loc[k, ["implied_accuracy", "weight"]] = acc, float(np.log(acc / (1 - acc)))
        signals.loc[k, "anchored_on"] = ", ".join(map(str, anchors[ok]))
    return signals


def order_invariant(signals: pd.DataFrame, min_pairs: int = 50) -> pd.Index:
    """The judges (of `signals`, indexed by worker) whose verdict never changed with the display order over
    `min_pairs` or more pairs of runs: consistent by construction (anchor_invariant)."""
    return signals.index[(signals["order_pairs"] >= min_pairs) & (signals["order_consistency"] >= 1.0)]


def _co_moments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean of a_j·b_k over the rows where both are measured, how many rows) for every column j of `a` and k of
    `b` (±1 votes per run, NaN: none)."""
    seen_a, seen_b = ~np.isnan(a), ~np.isnan(b)
    n = seen_a.T.astype(float) @ seen_b.astype(float)
    total = np.nan_to_num(a).T @ np.nan_to_num(b)
    return np.divide(total, n, out=np.zeros_like(total), where=n > 0), n


def has_perturbations(df: pd.DataFrame) -> bool:
    """Whether any judge saw a task more than once, or an item in more than one presentation."""
    if "item" in df.columns and (df.groupby("item")["task"].nunique() > 1).any():
        return True
    return bool(df.groupby(["task", "worker"]).size().max() > 1) if len(df) else False
