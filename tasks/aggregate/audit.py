"""A few labels, chosen well: which k tasks to audit, and the consensus refitted with their labels.

Votes alone cannot tell a consensus from its mirror image (a panel whose majority is fooled looks exactly
like one whose majority is right), and they cannot weigh a clique against an independent strong judge. A
handful of labels can. This module spends them where they inform most, and uses them twice: to fit the
semi-supervised heads, and to choose among them honestly.

propose(votes, k)
    Fits the label-free consensus (`auto` by default), scores each task's uncertainty (posterior entropy;
    the panel's disagreement, the share of the minority's votes, breaks ties), and draws the k tasks by
    stratified sampling: strata are the quartiles of uncertainty (within each condition of `by`, e.g. error
    type, so no condition goes unaudited), and each stratum gets a share of k in proportion to its size ×
    its mean uncertainty (plus a floor), so uncertain tasks — where the judges differ and a label says
    which ones to trust — are sampled more, and confident ones still some. Each audited task carries a
    weight, its stratum's size over its sample: weighted, the audit is representative of the whole panel.
    That matters: an audit of only the most uncertain tasks makes every method look worse than it is and
    trains the heads on a sample unlike the rest (measured: below the label-free consensus on most
    regimes). strategy="random" takes a simple random sample (weight n/k), the learning curve's baseline.

refit(votes, labels, weights)
    The candidates: the label-free consensus (which never saw the labels), the single judge the audit rates
    best (where one judge is far better than a correlated crowd, following it beats any vote), the
    calibrated weighted majority
    vote with the labelled audit (log-odds rule; each judge's accuracy from a Beta prior and its weighted
    agreement with the audited labels), and a sign-symmetric logistic stacking of the judges' votes (BAER's
    stacking head: no intercept, trained on {(φ, y), (−φ, −y)}, so swapping the candidates flips the
    decision), trained with the audit weights; and every other label-free method (`method:<name>`: MV,
    Dawid–Skene, CARE, CWV, ...), each fitted once on the votes alone — where a panel's structure defeats
    `auto`'s label-free checks (a clique outvoting the strong judge), a few labels still tell which method
    read it right. And the semi-supervised fits (`semi:<name>`: cwv, ds_position, dawid_skene fitted with the
    audited labels as evidence — a labelled task's latent class is its label in EM, and cwv's judge accuracies
    become Beta posteriors of their consistency-implied accuracy and their weighted audit record), which use
    what the labels say about every judge instead of only picking a head. Each labelled head is scored by
    weighted leave-one-out accuracy on the audited tasks (refitted without the task it predicts), each
    semi-supervised one by 5-fold cross-fitting over the audit (the fold's labels unseen); the label-free ones,
    which never saw the labels, by their weighted accuracy on them. The best wins if it beats the label-free
    consensus clearly — the best of a dozen heads on k labels is partly luck, and taking it on a small edge lost
    1.5 points to `auto` on independent panels at k = 10–50; a tie goes to the simpler (label-free, best judge,
    WMV, stacking, the semi-supervised fits, then the other methods). How clearly depends on what the votes
    alone say of the label-free consensus (`estimate.identifiability`):
    - where the panel is identified from the votes, the consensus is trusted until the audit shows otherwise:
      the head must win an exact one-sided sign test at `switch_alpha` (0.1) on the audited tasks where the two
      disagree (with weights, the binomial over Kish's effective number of those tasks). On ten labels that
      takes four wins and no loss; the normal approximation it replaces took two, and on panels where the
      consensus was right 90 % of the time a head that won 2–0 on ten labels by luck cost 3.4 points on average;
    - where it is not (the diagnostic's warning: a clique, a confounder, a mirror image that fits the votes as
      well), the labels are the better evidence: the head's weighted paired advantage must exceed `switch_z`
      (1.28: one-sided 90 %) standard errors. The exact test there gave back 7–11 of the points that ten labels
      win on such panels (a diagnosis run over bench/audit.py's draws; BENCHMARKS.md).
    The audited tasks keep their labels. The consensus's record on them (`audit_hits`, which the
    prediction-powered accuracy and the selective certificate read) is nested: each of `selection_folds` folds of
    the audit is scored by the head the other folds' labels choose, by the same rule, so neither the head's fit
    nor its choice saw the task it is scored on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import betainc
from sklearn.linear_model import LogisticRegression

from judgeops.tasks.aggregate._base import binary_classes, check_frame
from judgeops.tasks.aggregate.consistency import RUN_COLUMNS
from judgeops.tasks.aggregate.cwv import signed_votes
from judgeops.tasks.aggregate.registry import AGGREGATORS, USES_RUNS, default_input, get_aggregator

HEADS = ("label_free", "best_judge", "wmv_audited", "stacking")
METHOD_HEAD = "method:"  # prefix of the heads that are another label-free method
SEMI_HEAD = "semi:"  # prefix of the heads fitted with the labels as evidence (semi-supervised)
SEMI_SUPERVISED = ("cwv", "ds_position", "dawid_skene")


def _consensus(votes: pd.DataFrame, method: str):
    cols = ["task", "worker", "label"] + [c for c in RUN_COLUMNS if c in votes.columns]
    if method == "auto" and "score" in votes.columns and pd.api.types.is_numeric_dtype(votes["score"]):
        cols.append("score")  # auto reads graded scores beside the votes, as `judgeops aggregate` gives them
    return get_aggregator(method).fit(votes[cols])


def method_labels(
    votes: pd.DataFrame, methods: tuple[str, ...] | None = None, skip: str = "auto"
) -> dict[str, pd.Series]:
    """Each label-free method's consensus on the votes (never on an audit): name → task → label. Methods that
    read scores (avg, uws, care_*) run where the votes carry a numeric `score` column — evidence for the
    first class, as `judgeops aggregate` reads it; a method that cannot fit the panel is left out."""
    df = check_frame(votes, "label", "audit")
    classes = binary_classes(df["label"], None, "audit")
    has_scores = "score" in df.columns and pd.api.types.is_numeric_dtype(df["score"])
    out = {}
    for name in methods if methods is not None else tuple(AGGREGATORS):
        kind = default_input(name)
        if name == skip or (kind == "score" and not has_scores):
            continue
        runs = [c for c in (RUN_COLUMNS if name in USES_RUNS else ("run",)) if c in df.columns]
        params = {"input": "label"} if name == "baer" else {}
        try:
            est = get_aggregator(name, **params)
            if hasattr(est, "classes"):
                est.classes = classes
            out[name] = est.fit(df.dropna(subset=[kind])[["task", "worker", kind, *runs]]).labels_
        except ValueError:  # a method that cannot fit this panel is simply not a candidate
            continue
    return out


def uncertainty(votes: pd.DataFrame, method: str = "auto") -> pd.DataFrame:
    """Per task: the consensus label, its posterior, the posterior's entropy (bits) and the minority share."""
    df = check_frame(votes, "label", "audit")
    est = _consensus(df, method)
    p = est.probas_.max(axis=1).clip(1e-12, 1.0)
    q = (1 - p).clip(1e-12, 1.0)
    entropy = -(p * np.log2(p) + q * np.log2(q))
    counts = df.groupby(["task", "label"]).size().unstack(fill_value=0)
    minority = 1 - counts.max(axis=1) / counts.sum(axis=1)
    return pd.DataFrame(
        {
            "consensus": est.labels_,
            "posterior": p,
            "entropy": entropy,
            "disagreement": minority.reindex(p.index),
        }
    )


def propose(
    votes: pd.DataFrame,
    k: int,
    method: str = "auto",
    by: str | None = None,
    strategy: str = "stratified",
    seed: int = 0,
    n_strata: int = 4,
) -> pd.DataFrame:
    """The k tasks to audit: task, [by], consensus, posterior, entropy, disagreement, weight, and an empty
    `label` for the auditor to fill."""
    if strategy not in ("stratified", "random"):
        raise ValueError(f"audit: strategy must be 'stratified' or 'random', got {strategy!r}")
    if k < 1:
        raise ValueError(f"audit: k must be at least 1, got {k}")
    table = uncertainty(votes, method)
    if by is not None:
        if by not in votes.columns:
            raise ValueError(f"audit: no column {by!r} in the votes to stratify by")
        table[by] = votes.groupby("task")[by].first().reindex(table.index).astype(str)
    rng = np.random.default_rng(seed)
    k = min(k, len(table))
    if strategy == "random":
        chosen = table.iloc[rng.choice(len(table), k, replace=False)].assign(weight=len(table) / k)
    else:
        order = np.lexsort((table["disagreement"].to_numpy(), table["entropy"].to_numpy()))
        rank = np.empty(len(table))
        rank[order] = (np.arange(len(table)) + 1) / len(table)
        level = pd.Series(
            np.minimum((rank * n_strata).astype(int), n_strata - 1).astype(str), index=table.index
        )
        stratum = (table[by] + "|" + level) if by is not None else level
        sizes = stratum.value_counts()
        need = table.groupby(stratum)["entropy"].mean().reindex(sizes.index) + 0.05
        slots = _allocate(sizes * need, k, sizes)
        parts = []
        for name, n in slots.items():
            members = table.index[(stratum == name).to_numpy()]
            if n > 0:
                picked = rng.choice(len(members), int(n), replace=False)
                parts.append(table.loc[members[picked]].assign(weight=len(members) / int(n)))
        chosen = pd.concat(parts)
    out = chosen.rename_axis("task").reset_index()
    out["label"] = ""
    return out


def _allocate(priority: pd.Series, k: int, sizes: pd.Series) -> pd.Series:
    """k slots over strata in proportion to `priority`, by largest remainder; every stratum at least one
    while k allows, none more than it has."""
    slots = pd.Series(0, index=priority.index)
    if k >= len(priority):
        slots[:] = 1
    for _ in range(3):  # later passes give away what full strata could not take
        remaining = k - int(slots.sum())
        room = sizes - slots
        share = priority.where(room > 0, 0.0)
        if remaining <= 0 or share.sum() == 0:
            break
        share = share / share.sum() * remaining
        add = np.minimum(np.floor(share).astype(int), room)
        for name in (share - add).sort_values(ascending=False).index[: remaining - int(add.sum())]:
            if add[name] < room[name]:
                add[name] += 1
        slots += add
    return slots


def _features(votes: pd.DataFrame, classes: tuple) -> pd.DataFrame:
    """Tasks × judges: each judge's mean vote in [−1, 1] (+1 = the first class; 0 = no vote)."""
    return signed_votes(votes, classes, "mean").fillna(0.0)


def _stacking(x: np.ndarray, y: np.ndarray, w: np.ndarray, c: float = 1.0) -> LogisticRegression:
    """Weighted logistic regression without intercept on the sign-augmented set: odd in the votes."""
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=1000)
    return model.fit(np.vstack([x, -x]), np.concatenate([y, -y]), sample_weight=np.concatenate([w, w]))


def _wmv_scores(
    x_train: np.ndarray, y: np.ndarray, w: np.ndarray, x: np.ndarray, prior: float = 2.0
) -> np.ndarray:
    """Log-odds WMV, each judge's accuracy from a Beta(prior, prior) around ½ and its weighted agreement with
    the audit (one symmetric accuracy per judge: with few labels, FPR and FNR apart would be noise). The
    weights are rescaled to sum to the number of labels, so the prior keeps its strength."""
    w = w * len(w) / w.sum()
    agree = ((x_train * y[:, None] > 0) * w[:, None]).sum(axis=0)
    voted = ((x_train != 0) * w[:, None]).sum(axis=0)
    acc = (agree + prior) / (voted + 2 * prior)
    return x @ np.log(acc / (1 - acc))


def _best_judge_scores(x_train: np.ndarray, y: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The votes of the judge with the best weighted audit accuracy (ties to the earlier column)."""
    right = ((x_train * y[:, None] > 0) * w[:, None]).sum(axis=0)
    return x[:, int(np.argmax(right))]


def _head_scores(head: str, x_lab: np.ndarray, y: np.ndarray, w: np.ndarray, x: np.ndarray) -> np.ndarray:
    if head == "best_judge":
        return _best_judge_scores(x_lab, y, w, x)
    if head == "wmv_audited":
        return _wmv_scores(x_lab, y, w, x)
    return _stacking(x_lab, y, w).decision_function(x)


def _semi_supervised(
    name: str, df: pd.DataFrame, classes: tuple, labels: pd.Series, w: np.ndarray
) -> pd.Series | None:
    """The labels of `name` fitted with the audited labels as evidence (its `dev_labels`, with the inclusion
    weights where it takes them); None where it cannot fit the panel."""
    params = {"classes": tuple(classes)} if name != "dawid_skene" else {}
    kwargs = {"dev_labels": labels}
    if name != "dawid_skene":
        kwargs["dev_weights"] = pd.Series(w, index=labels.index)
    runs = [c for c in RUN_COLUMNS if c in df.columns] if name in USES_RUNS else []
    try:
        return get_aggregator(name, **params).fit(df[["task", "worker", "label", *runs]], **kwargs).labels_
    except ValueError:
        return None


def _cross_fitted(
    name: str, df: pd.DataFrame, classes: tuple, labels: pd.Series, w: np.ndarray, seed: int, folds: int = 5
) -> np.ndarray:
    """Per audited task, whether a semi-supervised head got it right when fitted without its label (`folds`-fold
    over the audit; NaN where a fold could not be fitted)."""
    fold = np.random.default_rng(seed).permutation(len(labels)) % min(folds, len(labels))
    hits = np.full(len(labels), np.nan)
    for f in np.unique(fold):
        seen = fold != f
        if len(np.unique(labels[seen])) < 2:
            continue
        predicted = _semi_supervised(name, df, classes, labels[seen], w[seen])
        if predicted is None:
            continue
        held = labels.index[~seen]
        hits[~seen] = (predicted.reindex(held) == labels[held]).to_numpy(dtype=float)
    return hits


def _beats(hits: np.ndarray, base: np.ndarray, w: np.ndarray, z: float) -> bool:
    """Whether a head's audit record beats the label-free consensus's on the same audited tasks by more than z
    standard errors of the weighted paired difference (Kish's effective size for the weights)."""
    ok = ~np.isnan(hits) & ~np.isnan(base)
    if not ok.any():
        return False
    d, ww = hits[ok] - base[ok], w[ok]
    mean = float(np.average(d, weights=ww))
    n_eff = ww.sum() ** 2 / (ww**2).sum()
    se = np.sqrt(float(np.average((d - mean) ** 2, weights=ww)) / max(n_eff - 1, 1))
    return mean > z * se if se > 0 else mean > 0


def _beats_exactly(hits: np.ndarray, base: np.ndarray, w: np.ndarray, alpha: float) -> bool:
    """Whether a head beats the label-free consensus in a one-sided sign test at level `alpha` on the audited
    tasks where exactly one of the two is right: P(X ≥ wins) for X ~ Binomial(n, 1/2) below alpha, with n the
    Kish effective number of those tasks and wins their weighted share of n (the binomial tail as the
    regularised incomplete beta I_½(wins, n − wins + 1), which takes a fractional count)."""
    ok = ~np.isnan(hits) & ~np.isnan(base)
    won, lost, ww = (hits > base)[ok], (hits < base)[ok], w[ok]
    split = ww[won | lost]
    if split.sum() <= 0 or not won.any():
        return False
    n = split.sum() ** 2 / (split**2).sum()
    wins = n * ww[won].sum() / split.sum()
    return bool(betainc(wins, n - wins + 1, 0.5) < alpha)


def _identified(base, method: str) -> bool:
    """Whether the votes alone identify the label-free consensus (`auto`'s identifiability diagnostic)."""
    if method != "auto":
        return False
    from judgeops.tasks.aggregate.estimate import identifiability

    try:  # the estimate only sizes the audit it would propose: not needed for the verdict
        return identifiability(base).identifiable
    except (KeyError, AttributeError, ValueError):  # a reading the diagnostic does not cover: not vouched for
        return False


def refit(
    votes: pd.DataFrame,
    labels: pd.Series,
    weights: pd.Series | None = None,
    method: str = "auto",
    min_labels: int = 4,
    candidates: dict[str, pd.Series] | None = None,
    switch_z: float = 1.2815515655446004,
    switch_alpha: float = 0.1,
    selection_folds: int = 5,
) -> dict:
    """{"labels": task → label, "head": the head taken, "scores": head → weighted accuracy on the audit
    (leave-one-out for the labelled heads), "n_labels": how many audited labels were usable}.

    `candidates`: the other label-free methods' labels (`method_labels(votes)`, computed here when None;
    pass them to reuse one fit across audits of the same panel, or {} for none)."""
    df = check_frame(votes, "label", "audit")
    classes = binary_classes(df["label"], None, "audit")
    base = _consensus(df, method)
    x_frame = _features(df, classes)
    labels = pd.Series(labels).dropna()
    labels = labels[labels.astype(str).str.strip() != ""]
    unknown = sorted(set(labels.unique()) - set(classes), key=str)
    if unknown:
        raise ValueError(f"audit labels {unknown[:5]} are not labels the votes use ({list(classes)})")
    labels = labels[labels.index.isin(x_frame.index)]
    w = np.ones(len(labels))
    if weights is not None:
        w = pd.Series(weights).reindex(labels.index).fillna(1.0).to_numpy(dtype=float)
    y = np.where(labels.to_numpy() == classes[0], 1.0, -1.0)
    x_lab, x_all = x_frame.loc[labels.index].to_numpy(), x_frame.to_numpy()
    right = (base.labels_.reindex(labels.index) == labels).to_numpy(dtype=float)
    scores = {"label_free": float(np.average(right, weights=w)) if len(labels) else np.nan}
    predictions = {"label_free": base.labels_.reindex(x_frame.index).astype(object)}
    hits_by_head = {"label_free": right}  # per audited task, as the head decides it without that label
    if len(labels) >= min_labels and len(np.unique(y)) == 2:
        for head in HEADS[1:]:
            hits = np.full(len(y), np.nan)
            for i in range(len(y)):  # leave-one-out: the head never sees the task it is scored on
                keep = np.arange(len(y)) != i
                if len(np.unique(y[keep])) == 2:
                    hits[i] = (
                        np.sign(_head_scores(head, x_lab[keep], y[keep], w[keep], x_lab[i : i + 1]))[0]
                        == y[i]
                    )
            ok = ~np.isnan(hits)
            scores[head] = float(np.average(hits[ok], weights=w[ok])) if ok.any() else np.nan
            hits_by_head[head] = hits
            s = _head_scores(head, x_lab, y, w, x_all)
            predictions[head] = pd.Series(
                np.where(s > 0, classes[0], np.where(s < 0, classes[1], "tie")),
                index=x_frame.index,
                dtype=object,
            )
    if len(labels) >= min_labels and len(np.unique(y)) == 2:
        for name in SEMI_SUPERVISED:
            head = SEMI_HEAD + name
            fitted = _semi_supervised(name, df, classes, labels, w)
            if fitted is None:
                continue
            predictions[head] = fitted.reindex(x_frame.index).astype(object)
            hits_by_head[head] = _cross_fitted(name, df, classes, labels, w, seed=0)
            ok = ~np.isnan(hits_by_head[head])
            scores[head] = float(np.average(hits_by_head[head][ok], weights=w[ok])) if ok.any() else np.nan
    if candidates is None:
        candidates = method_labels(df, skip=method)
    for name, predicted in candidates.items():
        if len(labels):
            head = METHOD_HEAD + name
            predictions[head] = predicted.reindex(x_frame.index).astype(object)
            hits_by_head[head] = (predictions[head].loc[labels.index] == labels).to_numpy(dtype=float)
            scores[head] = float(np.average(hits_by_head[head], weights=w))
    order = (
        list(HEADS)
        + [SEMI_HEAD + n for n in SEMI_SUPERVISED]
        + [h for h in predictions if h.startswith(METHOD_HEAD)]
    )
    usable = [h for h in order if h in predictions and not np.isnan(scores.get(h, np.nan))]
    identified = _identified(base, method)

    def choose(seen: np.ndarray) -> str:
        """The head the audited tasks in `seen` pick: the best record there, if it beats auto clearly."""
        record = {
            h: float(np.average(hits_by_head[h][ok], weights=w[ok]))
            if (ok := seen & ~np.isnan(hits_by_head[h])).any()
            else np.nan
            for h in usable
        }
        best = max(
            (h for h in usable if not np.isnan(record[h])),
            key=lambda h: (round(record[h], 9), -order.index(h)),
            default="label_free",
        )
        if best == "label_free":
            return best
        # the best of many heads on k labels is partly luck: it must beat auto clearly
        hits, base_hits = np.where(seen, hits_by_head[best], np.nan), np.where(seen, right, np.nan)
        clearly = (
            _beats_exactly(hits, base_hits, w, switch_alpha)
            if identified
            else _beats(hits, base_hits, w, switch_z)
        )
        return best if clearly else "label_free"

    head = choose(np.ones(len(labels), dtype=bool))
    # how the chosen consensus does on each audited task without that task's label: the head that the other
    # folds' labels choose, and its left-out or cross-fitted hit there. The chosen head's own hits would score
    # the winner of a dozen heads on the labels that made it win (a winner's curse: optimistic for the
    # prediction-powered accuracy and the selective certificate, which read these hits)
    blind_hits = np.asarray(right, dtype=float).copy()
    fold = np.random.default_rng(0).permutation(len(labels)) % max(min(selection_folds, len(labels)), 1)
    for f in np.unique(fold):
        blind_hits[fold == f] = hits_by_head[choose(fold != f)][fold == f]
    final = predictions[head].copy()
    decided = final.copy()  # the head's own decisions, before the audited labels replace them
    # ... and on an audited task, the decision the head makes without that task's label (its left-out or
    # cross-fitted hit): a head fitted with the labels decides every audited task right by construction, and a
    # confidence read off that decision would leak the label into the selective certificate (audited errors all
    # landing below the threshold: measured, 0 of 99 audited errors above it where the decided tasks erred 11 %)
    flipped = np.where(labels.to_numpy() == classes[0], classes[1], classes[0])
    blind = np.where(blind_hits == 1, labels.to_numpy(), flipped)
    known = ~np.isnan(blind_hits)
    decided.loc[labels.index[known]] = blind[known]
    final.loc[labels.index] = labels.to_numpy()
    p_first = base.probas_[classes[0]].reindex(x_frame.index).astype(float).fillna(0.5)
    return {
        "labels": final,
        "head": head,
        "scores": scores,
        "n_labels": int(len(labels)),
        # for a selective consensus (selective.py): the label-free posterior of each decision, and how the head
        # did on each audited task without its label
        "confidence": pd.Series(np.where(decided == classes[0], p_first, 1.0 - p_first), index=x_frame.index),
        "audit_hits": pd.Series(blind_hits, index=labels.index),
        # the label-free posterior of the first class on every task (audited_estimates.py: its predictions)
        "p_first": p_first,
        "audited": labels,
        "weights": pd.Series(w, index=labels.index),
        # the consensus of each method that never saw the labels (agreement.judge_vs_human): method → labels
        "label_free_labels": {
            method if h == "label_free" else h.removeprefix(METHOD_HEAD): predictions[h]
            for h in predictions
            if h == "label_free" or h.startswith(METHOD_HEAD)
        },
    }
