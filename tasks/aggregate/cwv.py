"""Consistency-weighted vote: each judge's runs weighted by the accuracy its perturbation consistency implies.

Model (ALGORITHMS.md §8; derivation in consistency.py): every run of judge j is right with probability
q_j, independently across runs, and two runs of one item agree with probability q_j² + (1 − q_j)², so the
judge's measured agreement gives q_j = ½(1 + √(2c_j − 1)). Under that model the naive-Bayes posterior of a
task is

    log P(first class) / P(second class) = Σ_runs w_j · (+1 if the run votes the first class else −1),
    w_j = log(q_j / (1 − q_j)),

so a judge whose verdicts flip with the display order or the presentation (c_j ≈ ½) weighs nothing, and a
judge consistent across every perturbation weighs most. No labels, no class balance.

Correlated judges (`dependence=True`, the default): judges that share a bias (a clique) would each count
as independent evidence. After the first weighted vote, each judge's votes are centred on their mean within
each consensus class (what the consensus does not explain), and the correlations of those residuals between
judges give every judge an effective multiplicity m_j = Σ_k max(0, ρ_jk) (ρ_jj = 1): a clique of m judges
with residual correlation ρ counts about 1 + (m − 1)ρ times, so each member's weight is divided by that. The
vote is recomputed and the correction repeated (`n_rounds`). Independent judges have m_j ≈ 1 and keep their
weights. This is the design-effect correction of survey sampling applied to judges; it assumes the first
consensus is right more often than the clique.

Order-invariant judges (`anchor=True`, the default): a judge whose verdict never changed with the display order
(a reward model scoring each answer on its own) is consistent by construction, and the weight above would make
it the most reliable judge of the panel whatever its accuracy. Its accuracy is read instead off its agreement
with the order-sensitive judges, whose consistency does measure theirs (consistency.anchor_invariant);
`signals_["anchored_on"]` names them. Such a judge's runs of a task are one verdict shown twice, not independent
views: each counts as 1/runs of a vote, so the judge weighs once per task (summed, its evidence counted twice and
the posterior was over-confident: a mean confidence of 0.99 where 0.95 of the tasks were right, and +0.043 in
the accuracy estimate.py reads off it on synthetic.py's order_invariant_clique).

pool_items=True: the presentations of one item share the true label, so every run of the item is evidence
for each of its tasks; the vote is taken per item and given to each of its tasks.

When it helps: judges err because of position or surface features (their errors change with the
perturbation), e.g. an adversarial set where most judges follow the better-looking answer and swap sides
when the order or presentation changes (synthetic regime vi). When it cannot: a judge wrong for a stable
reason looks as reliable as a right one (it would need labels), and a panel shown each task once has no
perturbation at all: then every judge weighs 1 and this is majority vote (`fallback_` says so).

>>> votes = pd.DataFrame({"task": [1, 1, 1, 1], "worker": ["a", "a", "b", "b"],
...                       "run": ["AB", "BA", "AB", "BA"], "label": ["A", "A", "A", "B"]})
>>> ConsistencyWeightedVote(min_pairs=1).fit(votes).weights_.round(2).to_dict()
{'a': 4.6, 'b': 0.0}
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import BinaryAggregator, binary_classes, check_frame, dev_series
from judgeops.tasks.aggregate.consistency import (
    anchor_invariant,
    consistency_signals,
    has_perturbations,
    order_invariant,
)


def signed_votes(
    df: pd.DataFrame, classes: tuple[str, str], aggfunc: str = "sum", weight: np.ndarray | None = None
) -> pd.DataFrame:
    """Tasks × judges over each judge's runs of a task, +1 a vote for the first class and −1 for the second:
    their sum (runs for minus runs against; each run times its `weight` where given) or, with aggfunc="mean",
    their mean in [−1, 1]; NaN: no vote."""
    sign = np.where(df["label"] == classes[0], 1.0, -1.0)
    if weight is not None:
        sign = sign * weight
    return df.assign(sign=sign).pivot_table(
        index="task", columns="worker", values="sign", aggfunc=aggfunc, sort=True
    )


class ConsistencyWeightedVote(BinaryAggregator):
    """Fitted: `signals_` (consistency_signals per judge), `consistency_weights_` (worker: log-odds weight
    from consistency), `multiplicity_` (worker: effective multiplicity from residual correlation; 1 without
    the dependence correction), `weights_` (the weights used: their ratio), `residual_correlation_` (judges × judges),
    `most_correlated_pair_` ((judge, judge, ρ): the pair that errs together most), `fallback_` (None, or why some
    or all judges got a default weight), `scores_` (the weighted sum), `probas_`, `labels_` (a task whose
    weighted sum is exactly 0 is a tie).

    min_pairs: a judge measured on fewer pairs of runs takes the median weight of the measured judges."""

    def __init__(
        self,
        classes: tuple[str, str] | None = None,
        min_pairs: int = 10,
        dependence: bool = True,
        n_rounds: int = 3,
        pool_items: bool = False,
        label_prior: float = 10.0,
        anchor: bool = True,
    ):
        self.classes, self.min_pairs, self.dependence = classes, min_pairs, dependence
        self.n_rounds, self.pool_items, self.label_prior = n_rounds, pool_items, label_prior
        self.anchor = anchor

    def fit(
        self, df: pd.DataFrame, dev_labels: pd.Series | None = None, dev_weights: pd.Series | None = None
    ) -> ConsistencyWeightedVote:
        """`dev_labels` (task → label, e.g. an audit) with `dev_weights` (their inclusion weights): each judge's
        accuracy becomes a Beta posterior — the consistency-implied accuracy as a prior worth `label_prior`
        votes, updated by its weighted right and wrong votes on the labelled tasks — and a labelled task's
        decision is its label."""
        df = check_frame(df, "label", "ConsistencyWeightedVote")
        classes = binary_classes(df["label"], self.classes, "ConsistencyWeightedVote")
        df = df[df["label"].isin(classes)]
        unit = "item" if self.pool_items and "item" in df.columns else "task"
        by_unit = df.assign(task=df[unit])
        self.fallback_ = None
        once, perturbed = np.ones(len(df)), has_perturbations(df)
        if perturbed:
            self.signals_ = consistency_signals(df, classes).set_index("worker")
            if self.anchor:
                self.signals_ = anchor_invariant(
                    self.signals_, df, classes, min_pairs=max(self.min_pairs, 50)
                )
            # a judge whose verdict never changes with the order gives one view of a task, however often shown
            invariant = df["worker"].isin(order_invariant(self.signals_, max(self.min_pairs, 50))).to_numpy()
            runs = df.groupby(["task", "worker"])["label"].transform("size").to_numpy()
            once = np.where(invariant, 1.0 / runs, 1.0)
            pairs = self.signals_["order_pairs"] + self.signals_["presentation_pairs"]
            weight = self.signals_["weight"].where(pairs >= self.min_pairs)
            if weight.isna().all():
                weight[:] = 1.0
                self.fallback_ = f"no judge has {self.min_pairs} pairs of runs: every judge weighs 1"
            elif weight.isna().any():
                missing = sorted(weight.index[weight.isna()])
                weight = weight.fillna(float(weight.median()))
                self.fallback_ = f"{missing} measured on < {self.min_pairs} pairs: the median weight"
        votes = signed_votes(by_unit, classes, weight=once)
        if not perturbed:
            self.signals_ = pd.DataFrame(index=votes.columns)
            weight = pd.Series(1.0, index=votes.columns)
            self.fallback_ = "no task was shown twice: every judge weighs 1 (majority vote)"
        base = weight.reindex(votes.columns).to_numpy(dtype=float)
        known = dev_series(dev_labels, classes, votes.index) if dev_labels is not None else None
        if known is not None:
            base = self._audited_weights(base, votes.columns, by_unit, known, dev_weights, classes)
        x = votes.to_numpy()
        share = signed_votes(by_unit, classes, "mean").to_numpy()
        multiplicity, rho = np.ones(len(base)), np.eye(len(base))
        if self.dependence and x.shape[1] > 2:
            for _ in range(self.n_rounds):
                rho = residual_correlation(share, np.nansum(x * base / multiplicity, axis=1))
                multiplicity = np.clip(rho, 0.0, None).sum(axis=1)
        self.residual_correlation_ = pd.DataFrame(rho, index=votes.columns, columns=votes.columns)
        off = np.where(np.eye(len(base), dtype=bool), -np.inf, rho)
        j, k = np.unravel_index(int(np.argmax(off)), off.shape) if len(base) > 1 else (0, 0)
        self.most_correlated_pair_ = (str(votes.columns[j]), str(votes.columns[k]), float(rho[j, k]))
        self.consistency_weights_ = pd.Series(base, index=votes.columns, name="weight")
        self.multiplicity_ = pd.Series(multiplicity, index=votes.columns, name="multiplicity")
        self.weights_ = (self.consistency_weights_ / self.multiplicity_).rename("weight")
        score = np.nansum(x * self.weights_.to_numpy(), axis=1)
        p = 0.5 * (1 + np.tanh(np.clip(score / 2, -350, 350)))  # sigmoid(score), exactly .5 at 0
        if known is not None:  # a labelled task is decided by its label
            rows = known.notna().to_numpy()
            p = np.where(rows, (known.to_numpy() > 0).astype(float), p)
        if unit == "item":  # every task of an item takes the item's vote
            item_of = df.groupby("task")["item"].first()
            score = pd.Series(score, index=votes.index).reindex(item_of.to_numpy()).to_numpy()
            p = pd.Series(p, index=votes.index).reindex(item_of.to_numpy()).to_numpy()
            index = item_of.index
        else:
            index = votes.index
        self.scores_ = pd.Series(score, index=index, name="score")
        return self._finish(p, index, classes)

    def _audited_weights(
        self,
        base: np.ndarray,
        workers: pd.Index,
        df: pd.DataFrame,
        known: pd.Series,
        dev_weights: pd.Series | None,
        classes: tuple[str, str],
    ) -> np.ndarray:
        """Log-odds weights from Beta(s·q, s·(1 − q)) posteriors: q the accuracy the consistency weight implies,
        s = `label_prior`, updated by each judge's weighted right and wrong runs on the labelled tasks (the
        weights rescaled to sum to the number of labels, so the prior keeps its strength)."""
        labelled = known.dropna()
        w = pd.Series(1.0, index=labelled.index)
        if dev_weights is not None:
            w = pd.Series(dev_weights).reindex(labelled.index).fillna(1.0)
        w = w * len(w) / w.sum() if w.sum() > 0 else w
        rows = df[df["task"].isin(labelled.index)]
        truth = rows["task"].map(labelled).to_numpy()  # +1: the first class
        vote = np.where(rows["label"].to_numpy() == classes[0], 1.0, -1.0)
        weight = rows["task"].map(w).to_numpy()
        right = pd.Series(weight * (vote == truth), index=rows.index).groupby(rows["worker"]).sum()
        wrong = pd.Series(weight * (vote != truth), index=rows.index).groupby(rows["worker"]).sum()
        q = 1.0 / (1.0 + np.exp(-base))  # the accuracy each weight stands for
        a = self.label_prior * q + right.reindex(workers).fillna(0.0).to_numpy()
        b = self.label_prior * (1 - q) + wrong.reindex(workers).fillna(0.0).to_numpy()
        return np.log(a / b)


def residual_correlation(share: np.ndarray, consensus: np.ndarray) -> np.ndarray:
    """Judges × judges: the correlation of the judges' residuals after removing each judge's mean vote within
    each consensus class (tasks where the consensus is 0 are left out); 0 where fewer than 10 tasks pair two
    judges, 1 on the diagonal.

    share: tasks × judges, the judge's mean vote in [−1, 1] (NaN: no vote); consensus: tasks, a signed score."""
    sign = np.sign(consensus)
    resid = np.full(share.shape, np.nan)
    for cls in (-1.0, 1.0):
        rows = sign == cls
        if rows.sum() > 1:
            with warnings.catch_warnings():  # a judge with no vote in this class: NaN residuals, no evidence
                warnings.simplefilter("ignore", RuntimeWarning)
                resid[rows] = share[rows] - np.nanmean(share[rows], axis=0)
    rho = pd.DataFrame(resid).corr(min_periods=10).to_numpy()
    rho = np.where(np.isfinite(rho), rho, 0.0)
    np.fill_diagonal(rho, 1.0)
    return rho


def agreeing_beyond(
    share: pd.DataFrame, posterior: np.ndarray, residual_z: float = 4.0
) -> tuple[str, str, float] | None:
    """The pair of judges that agree with each other most beyond a consensus: their residual correlation given
    the consensus labels (`residual_correlation`) exceeds how far each is from chance under them (|2â − 1| for a
    judge right with probability â: its own correlation with the labels) and is clearly not noise (≥
    `residual_z`/√n). (judge, judge, ρ), or None. Such a pair carries a second signal the consensus does not
    follow: either it or the consensus follows something other than the truth (estimate.identifiability).

    share: tasks × judges as in `residual_correlation`; posterior: tasks, P(first class) of the consensus."""
    if share.shape[1] < 2 or len(share) < 10:
        return None
    x = share.to_numpy(dtype=float)
    rho = residual_correlation(x, posterior - 0.5)
    side = np.where(posterior >= 0.5, 1.0, -1.0)[:, None]
    with warnings.catch_warnings():  # a judge with no vote at all: no evidence
        warnings.simplefilter("ignore", RuntimeWarning)
        informative = np.nan_to_num(np.abs(np.nanmean(side * x, axis=0)), nan=1.0)
    excess = rho - np.maximum.outer(informative, informative)
    excess[(rho < residual_z / np.sqrt(len(x))) | np.eye(len(rho), dtype=bool)] = -np.inf
    j, k = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if not excess[j, k] > 0:
        return None
    return str(share.columns[j]), str(share.columns[k]), float(rho[j, k])
