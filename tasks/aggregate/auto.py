"""`auto`: a label-free choice among the aggregators, per panel, with majority vote as the fallback.

No label-free criterion can rank methods in general: votes alone cannot tell a consensus from its mirror
image, and a clique of judges sharing a bias looks like strong agreement. So `auto` does not search for the
best score; it goes through a short list of checks, each tied to the assumption that a method needs, and
takes a method only when the evidence for that assumption is present. Otherwise it keeps majority vote.

1. Perturbation evidence (the panel saw tasks in both orders or several presentations; consistency.py):
   when some judge's verdicts survive the perturbations so well that its implied per-run accuracy is at
   least `strong_consistency` (0.9, on at least `min_pairs` pairs), and the judges differ (the best implied
   accuracy exceeds the median by `min_spread`), the judges that read the content are identifiable:
   take the position-aware Dawid–Skene (ds_position), which starts from the consistency-weighted vote and
   discounts order-driven verdicts and correlated judges. If ds_position and the consistency-weighted vote
   disagree on more than `max_disagreement` of the tasks, the EM has wandered to another mode: take cwv.
2. Independent judges: Dawid–Skene weighs better judges more, but it assumes the judges are conditionally
   independent given the truth and it has a mirror mode. It is taken only when (a) no judge counts as
   more than `clique_multiplicity` judges by the dependence check of the weighted vote (cwv.py: residual
   correlation given the consensus; a clique or a shared confounder raises it — and so, less, does a
   consensus that errs where several good judges are right, which makes this check conservative), and
   (b) it lands on majority vote's side of the mirror (it agrees with majority vote on at least
   `min_agreement` of the tasks both decide), and (c) where the panel saw perturbations, its judges are
   mostly consistent (median implied accuracy ≥ `weak_consistency`): judges that mostly flip with the
   order or presentation may be below chance, and Dawid–Skene sharpens whichever side majority vote is
   on, the wrong one included (regime v).
3. Otherwise: majority vote.

`choice_` names the method, `reason_` says why in one sentence, `evidence_` holds the numbers.

The thresholds are round numbers set from the reasoning above, not fitted: one was added after a test
(`weak_consistency`, when the fixed regime (v) showed Dawid–Skene sharpening a below-chance majority), and
all were then checked on 50 random draws of every synthetic regime family (BENCHMARKS.md).

Where it cannot help: a panel whose most consistent judges are stable but wrong (step 1 then follows
them), and below-chance panels without perturbations (every vote-only method takes the wrong side).
"""

from __future__ import annotations

import pandas as pd

from judgeops.tasks.aggregate._base import BinaryAggregator, binary_classes, check_frame
from judgeops.tasks.aggregate.consistency import has_perturbations
from judgeops.tasks.aggregate.cwv import ConsistencyWeightedVote
from judgeops.tasks.aggregate.dawid_skene import DawidSkene
from judgeops.tasks.aggregate.mv import MajorityVote
from judgeops.tasks.aggregate.position_ds import PositionDawidSkene


def agreement(one: pd.Series, other: pd.Series, classes: tuple[str, str]) -> float:
    """Share of the tasks both decide (neither a tie) on which two label series agree; NaN if none."""
    both = pd.concat([one, other], axis=1, join="inner").dropna()
    decided = both.iloc[:, 0].isin(classes) & both.iloc[:, 1].isin(classes)
    if not decided.any():
        return float("nan")
    return float((both.iloc[:, 0][decided] == both.iloc[:, 1][decided]).mean())


class AutoAggregator(BinaryAggregator):
    """Fitted: `choice_` (the method taken), `reason_`, `evidence_` (dict of the numbers behind the
    choice), `chosen_` (the fitted estimator), `probas_`, `labels_`."""

    def __init__(
        self,
        classes: tuple[str, str] | None = None,
        min_pairs: int = 50,
        strong_consistency: float = 0.9,
        min_spread: float = 0.1,
        max_disagreement: float = 0.1,
        clique_multiplicity: float = 1.5,
        min_agreement: float = 0.5,
        weak_consistency: float = 0.8,
    ):
        self.classes, self.min_pairs, self.strong_consistency = classes, min_pairs, strong_consistency
        self.min_spread, self.max_disagreement = min_spread, max_disagreement
        self.clique_multiplicity, self.min_agreement = clique_multiplicity, min_agreement
        self.weak_consistency = weak_consistency

    def fit(self, df: pd.DataFrame) -> AutoAggregator:
        df = check_frame(df, "label", "AutoAggregator")
        classes = binary_classes(df["label"], self.classes, "AutoAggregator")
        df = df[df["label"].isin(classes)]
        cwv = ConsistencyWeightedVote(classes=classes).fit(df)
        evidence: dict = {
            "n_tasks": int(df["task"].nunique()),
            "n_judges": int(df["worker"].nunique()),
            "max_multiplicity": float(cwv.multiplicity_.max()),
        }
        chosen, reason = None, None
        if has_perturbations(df) and "implied_accuracy" in cwv.signals_.columns:
            sig = cwv.signals_
            measured = sig[(sig["order_pairs"] + sig["presentation_pairs"]) >= self.min_pairs]
            if len(measured):
                q = measured["implied_accuracy"]
                evidence.update(
                    best_consistent_judge=str(q.idxmax()),
                    best_implied_accuracy=float(q.max()),
                    median_implied_accuracy=float(q.median()),
                )
                if q.max() >= self.strong_consistency and q.max() - q.median() >= self.min_spread:
                    pds = PositionDawidSkene(classes=classes).fit(df, start=cwv)
                    agree = agreement(pds.labels_, cwv.labels_, classes)
                    evidence["ds_position_vs_cwv_agreement"] = agree
                    if agree >= 1 - self.max_disagreement:
                        chosen, name = pds, "ds_position"
                    else:
                        chosen, name = cwv, "cwv"
                    reason = (
                        f"judge {q.idxmax()} keeps its verdict across orders and presentations "
                        f"(implied accuracy {q.max():.2f} vs median {q.median():.2f}): the consistent "
                        f"judges are identifiable, so {name} weighs them"
                    )
        if chosen is None:
            mv = MajorityVote().fit(df)
            ds = DawidSkene().fit(df)
            agree = agreement(ds.labels_, mv.labels_, classes)
            evidence["dawid_skene_vs_mv_agreement"] = agree
            if cwv.multiplicity_.max() > self.clique_multiplicity:
                chosen, name = mv, "mv"
                reason = (
                    f"judge {cwv.multiplicity_.idxmax()} counts as {cwv.multiplicity_.max():.1f} judges "
                    "(correlated errors), so Dawid–Skene's independence does not hold: majority vote"
                )
            elif evidence.get("median_implied_accuracy", 1.0) < self.weak_consistency:
                chosen, name = mv, "mv"
                reason = (
                    f"most judges flip with the order or presentation (median implied accuracy "
                    f"{evidence['median_implied_accuracy']:.2f}): the panel may be below chance, and "
                    "Dawid–Skene would sharpen majority vote's side whichever it is: majority vote"
                )
            elif agree >= self.min_agreement:
                chosen, name = ds, "dawid_skene"
                reason = "judges look conditionally independent: Dawid–Skene weighs them by fitted skill"
            else:
                chosen, name = mv, "mv"
                reason = "Dawid–Skene took the mirror side of majority vote: majority vote"
        self.choice_, self.reason_, self.evidence_, self.chosen_ = name, reason, evidence, chosen
        probas = chosen.probas_.reindex(columns=list(classes), fill_value=0.0)
        return self._finish(probas[classes[0]].to_numpy(), probas.index, classes)
