"""`auto`: a label-free consensus that reads whatever evidence the panel carries, and says what it read.

No label-free criterion can rank methods in general: votes alone cannot tell a consensus from its mirror
image, and a clique of judges sharing a bias looks like strong agreement. `auto` therefore does not search
for the best score; it takes the reading whose assumption the panel gives evidence for, and keeps majority
vote where it has none. The candidates are four latent-class readings of the same votes, from the least to
the most assuming:

- mv: every vote counts once (one shared accuracy, no dependence);
- dawid_skene: a confusion matrix per judge (every run a vote), judges independent given the truth;
- cwv: each judge weighted by the accuracy its perturbation consistency implies, divided by its effective
  multiplicity (the dependence correction of cwv.py);
- ds_position: a confusion per judge and display context, started from cwv and tempered by the same
  multiplicities (a composite likelihood in which a clique counts about once).

The choice:

1. Perturbation evidence (some judge saw tasks in both orders or several presentations, on at least
   `min_pairs` pairs): the consistency reading, the average of ds_position's and cwv's posteriors. Both rest
   on one assumption — a judge whose verdict survives the perturbations reads the content and is better than
   chance — and use it differently: cwv weighs each run by it, ds_position models each judge's position
   preference and lets EM refine the weights. EM can move ds_position to the other mode of its likelihood;
   where the two disagree the average goes with the more confident of them, so one wandering fit does not
   decide alone. This also settles the panels whose strong judge is only a little more consistent than the
   rest (LLMBar Natural: GPT-4's implied accuracy 0.97 against a median of 0.88, where the old rule asked for a
   spread of 0.1 and kept majority vote at 0.91; the average reaches 0.97).
   Except where some judges never changed their verdict with the display order and cwv read their accuracy off
   the order-sensitive judges instead (consistency.anchor_invariant: reward models that score each answer on its
   own are consistent by construction): then cwv alone. ds_position's EM re-estimates every judge from its
   agreement with the latent class, and a group that agrees by construction pulls the latent back to its shared
   preference (regime x: ds_position 0.61 from the anchored start, cwv 0.83, the best judge 0.81).
2. No perturbation, and the votes carry graded scores (a `score` column on every vote, with three or more
   distinct values for the median judge — 0/1 scores only repeat the votes — that order the judge's own votes:
   the median judge's AUC of score for its first-class votes ≥ 0.9, so a score is evidence for the first class
   and the vote its threshold, not, say, a confidence in whichever side was voted): CARE-Tensor's reading of the
   scores, if it fitted without a fallback, ranks the tasks with the judges' average (Kendall τ ≥ 0) and lands
   on majority vote's side. A vote is a thresholded score, so the scores lose nothing the votes have; and
   CARE-Tensor is the one reading that models a binary confounder or a clique's shared noise beside the truth,
   separated by the fourth cumulant, which second-order evidence (steps 3 and 4) cannot do. Where it cannot
   help: scores without a graded signal (a judge's few fixed ratings), or a confounder that is itself
   Gaussian-like on the scores — its fit then falls back or lands on the mirror, and the steps below decide.
3. No perturbation, and most judges look conditionally independent (fewer than `max_dependent_share` of them
   count as more than `clique_multiplicity` judges by cwv's dependence check), and Dawid–Skene lands on
   majority vote's side of the mirror (agreement ≥ `min_agreement`): dawid_skene, which weighs better judges
   more. The assumption: Dawid–Skene's latent class is the truth while the judges it explains as independent
   are the majority; a minority that errs together (or, as the check is made against majority vote, a few
   strong judges right together where the vote is wrong: regime iii) does not move its latent.
4. No perturbation, and most judges are in correlated groups (a clique, a family, a confounder they share):
   cwv, which is then majority vote with each judge's vote divided by its effective multiplicity (a group
   counts about once), if it lands on majority vote's side; else majority vote. (Tempered Dawid–Skene,
   ds_position without contexts, was 1–3 points below it on those families: EM drifts from the corrected
   vote back towards the group it was meant to discount.)

Every task some judge decided gets a label: where the chosen reading is an exact tie (½), the tie is broken by
the next reading in the order ds_position+cwv → dawid_skene → cwv → mv → the most reliable judge who voted on the
task (largest cwv weight, its runs' majority) → the consensus's majority class (`tie_breaks_` counts each).

`choice_` names the reading, `reason_` says why in one sentence, `evidence_` holds the numbers.

Scores (`input="score"`: a score per judge and task, e.g. 0–100 ratings or P(first)): a label-free choice among
AVG, UWS, CARE-SVD and CARE-Tensor. CARE-Tensor models what the others cannot — a binary truth beside a binary
confounder or a clique's shared noise, separated by the fourth cumulant — and on the score families it is the
best or within 0.01 Kendall τ of the best everywhere (BENCHMARKS.md), so it is taken unless its fit fell back
(a failed CP or mixture EM) or its consensus ranks the tasks against the judges' average (the mirror: Kendall
τ with AVG < 0); then CARE-SVD on the same conditions; then AVG, which assumes nothing. `scores_` are the chosen
method's, with its `scale_` "input": a reading whose own scores are not on the judges' scale (CARE-Tensor's
posterior, UWS's standardised factor) has its ranking carried onto the judges' average's values
(`on_the_judges_scale`), so MAE against a truth on that scale means something and Kendall τ is the reading's.

Where it cannot help, and what the user sees then (BENCHMARKS.md, the families of synthetic.py):
- a panel whose most consistent judges are stable but wrong for a reason the perturbations do not touch: step 1
  follows them. Judges whose verdict never changes with the order are read through the order-sensitive ones
  (regime x), but a judge that does change with the order and is stably wrong on the content still looks
  reliable, and a panel of order-invariant judges alone has nothing to anchor them on;
- a clique or a confounder on a panel shown once with labels only (regime xi; ii and iv without their
  scores): second-order evidence cannot tell a group's shared error from the truth. The dependence check and
  the share rule of step 3 are a bet on the majority; it loses on the draws where the correlated group is under
  half the panel. Graded scores (step 2: ii 0.65 → 0.92, iv 0.71 → 0.90 on the families) or labels settle those
  panels; CARE-Tensor itself follows the confounder where its BIC keeps one latent (iv: about 1 draw in 10).
The identifiability diagnostic (estimate.py) warns on such panels and says how many labels would settle them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import BinaryAggregator, binary_classes, check_frame
from judgeops.tasks.aggregate.consistency import has_perturbations
from judgeops.tasks.aggregate.cwv import ConsistencyWeightedVote, agreeing_beyond, signed_votes
from judgeops.tasks.aggregate.dawid_skene import DawidSkene
from judgeops.tasks.aggregate.mv import MajorityVote
from judgeops.tasks.aggregate.position_ds import PositionDawidSkene

CONSISTENCY = "ds_position+cwv"
CHOICES = (CONSISTENCY, "dawid_skene", "cwv", "mv")  # the readings auto takes, in tie-breaking order
SCORES = "care_tensor"  # the reading of graded scores, where the votes carry them (step 2)
VOUCHING_ACCURACY = 0.8  # a judge whose consistency implies this accuracy vouches for a side (estimate.py)
# the median judge's scores must order its own votes (AUC): the vote is a thresholded score
MIN_SEPARATION = 0.9


def agreement(one: pd.Series, other: pd.Series, classes: tuple[str, str]) -> float:
    """Share of the tasks both decide (neither a tie) on which two label series agree; NaN if none."""
    both = pd.concat([one, other], axis=1, join="inner").dropna()
    decided = both.iloc[:, 0].isin(classes) & both.iloc[:, 1].isin(classes)
    if not decided.any():
        return float("nan")
    return float((both.iloc[:, 0][decided] == both.iloc[:, 1][decided]).mean())


def first_class_posterior(estimator, classes: tuple[str, str], tasks: pd.Index) -> pd.Series:
    """P(classes[0]) per task from a fitted estimator (NaN where it has no row for a task)."""
    probas = estimator.probas_
    p = probas[classes[0]] if classes[0] in probas.columns else pd.Series(0.0, index=probas.index)
    return p.reindex(tasks).astype(float)


class AutoAggregator(BinaryAggregator):
    """Fitted: `choice_` (the reading taken), `reason_`, `evidence_` (dict of the numbers behind the
    choice), `candidates_` (name → fitted estimator), `posteriors_` (tasks × candidate: P(first class)),
    `tie_breaks_` (rule → tasks it decided), `consistent_judge_votes_` (with perturbations: the most consistent
    judge's mean vote per task, +1 the first class; else None), `probas_`, `labels_`."""

    def __init__(
        self,
        classes: tuple[str, str] | None = None,
        min_pairs: int = 50,
        clique_multiplicity: float = 1.5,
        max_dependent_share: float = 0.5,
        min_agreement: float = 0.5,
        input: str = "label",
        neutral: float | None = None,
    ):
        self.classes, self.min_pairs = classes, min_pairs
        self.clique_multiplicity, self.max_dependent_share = clique_multiplicity, max_dependent_share
        self.min_agreement, self.input, self.neutral = min_agreement, input, neutral

    def fit(self, df: pd.DataFrame) -> AutoAggregator:
        if self.input not in ("label", "score"):
            raise ValueError(f"AutoAggregator: input must be 'label' or 'score', got {self.input!r}")
        if self.input == "score":
            return self._fit_scores(df)
        df = check_frame(df, "label", "AutoAggregator")
        classes = binary_classes(df["label"], self.classes, "AutoAggregator")
        df = df[df["label"].isin(classes)]
        cwv = ConsistencyWeightedVote(classes=classes).fit(df)
        pds = PositionDawidSkene(classes=classes).fit(df, start=cwv)
        mv = MajorityVote().fit(df)
        ds = DawidSkene().fit(df)
        tasks = pd.Index(sorted(df["task"].unique()), name="task")
        post = pd.DataFrame(
            {
                CONSISTENCY: (
                    first_class_posterior(pds, classes, tasks) + first_class_posterior(cwv, classes, tasks)
                )
                / 2,
                "dawid_skene": first_class_posterior(ds, classes, tasks),
                "cwv": first_class_posterior(cwv, classes, tasks),
                "mv": first_class_posterior(mv, classes, tasks).fillna(0.0),
            },
            index=tasks,
        )
        self.candidates_ = {"mv": mv, "dawid_skene": ds, "cwv": cwv, "ds_position": pds}
        labels = {name: _labels(post[name], classes) for name in post.columns}
        m = cwv.multiplicity_
        evidence: dict = {
            "n_tasks": len(tasks),
            "n_judges": int(df["worker"].nunique()),
            "max_multiplicity": float(m.max()),
            "dependent_share": float((m > self.clique_multiplicity).mean()),
            "effective_judges": float((1 / m).sum()),
            "agreement_with_mv": {
                name: agreement(labels[name], labels["mv"], classes)
                for name in (CONSISTENCY, "dawid_skene", "cwv")
            },
        }
        measured = pd.Series(dtype=float)
        if has_perturbations(df) and "implied_accuracy" in cwv.signals_.columns:
            sig = cwv.signals_
            measured = sig.loc[
                (sig["order_pairs"] + sig["presentation_pairs"]) >= self.min_pairs, "implied_accuracy"
            ]
        self.consistent_judge_votes_ = None
        if len(measured):
            own = df[df["worker"].astype(str) == str(measured.idxmax())]
            # for estimate.py's mirror bound: the most consistent judge's mean vote per task, +1 the first class
            self.consistent_judge_votes_ = (
                pd.Series(np.where(own["label"] == classes[0], 1.0, -1.0), index=own["task"].to_numpy())
                .groupby(level=0)
                .mean()
                .reindex(tasks)
            )
            evidence.update(
                most_consistent_judge=str(measured.idxmax()),
                best_implied_accuracy=float(measured.max()),
                median_implied_accuracy=float(measured.median()),
                ds_position_vs_cwv_agreement=agreement(pds.labels_, cwv.labels_, classes),
                consistent_but_contradicting=contradicting_pair(df, classes, measured, VOUCHING_ACCURACY),
            )
            anchored = sig.index[sig["anchored_on"] != ""] if "anchored_on" in sig.columns else []
            if len(anchored):
                evidence["anchored"] = {str(k): str(sig.at[k, "anchored_on"]) for k in anchored}
                name = "cwv"
                reason = (
                    f"the judges saw each task under perturbations, and {len(anchored)} of them never changed their "
                    f"verdict with the display order ({', '.join(map(str, list(anchored)[:3]))}): their accuracy "
                    f"is read off their agreement with the order-sensitive judges ({sig.at[anchored[0], 'anchored_on']}), "
                    "so the consistency-weighted vote with those accuracies (ds_position's EM would fit them back)"
                )
            else:
                name = CONSISTENCY
                reason = (
                    f"the judges saw each task under perturbations (orders, presentations): judge "
                    f"{measured.idxmax()} keeps its verdict best (implied accuracy {measured.max():.2f}, median "
                    f"{measured.median():.2f}), so the consistency reading (ds_position and cwv, averaged) weighs "
                    "the judges that read the content"
                )
        else:
            pair = cwv.most_correlated_pair_
            dependent = evidence["dependent_share"] >= self.max_dependent_share
            scored = self._score_reading(df, classes, tasks, labels["mv"], evidence)
            if scored is not None:
                name, post[SCORES] = SCORES, scored
                reason = (
                    "no perturbation, and the judges' scores say more than their votes: CARE-Tensor fitted "
                    f"without a fallback, ranks the tasks with the judges' average (Kendall τ "
                    f"{evidence['score_reading']['kendall_tau_with_avg']:.2f}) and lands on majority vote's side; "
                    "its two-latent mixture separates the truth from a confounder or clique the votes cannot"
                )
            elif not dependent and evidence["agreement_with_mv"]["dawid_skene"] >= self.min_agreement:
                name = "dawid_skene"
                reason = (
                    f"no perturbation, and most judges look conditionally independent ("
                    f"{evidence['dependent_share']:.0%} count as more than {self.clique_multiplicity:g} judges): "
                    "Dawid–Skene weighs them by fitted skill"
                )
            elif not dependent:
                name = "mv"
                reason = "Dawid–Skene took the mirror side of majority vote: majority vote"
            elif evidence["agreement_with_mv"]["cwv"] >= self.min_agreement:
                name = "cwv"
                reason = (
                    f"no perturbation, and {evidence['dependent_share']:.0%} of the judges err in correlated groups "
                    f"(judges {pair[0]} and {pair[1]}: residual correlation {pair[2]:.2f}; "
                    f"{evidence['effective_judges']:.1f} effective judges of {evidence['n_judges']}): a vote that "
                    "counts each group about once"
                )
            else:
                name = "mv"
                reason = "the dependence-corrected vote took the mirror side of majority vote: majority vote"
        chosen = post[name]
        if "best_implied_accuracy" not in evidence and name != SCORES:  # for estimate.identifiability
            pair = agreeing_beyond(signed_votes(df, classes, "mean").reindex(tasks), chosen.to_numpy())
            evidence["agreeing_beyond"] = list(pair) if pair else None
        final, self.tie_breaks_ = _break_ties(chosen, post, name, df, cwv, classes)
        evidence["ties_broken"] = int(sum(self.tie_breaks_.values()))
        self.choice_, self.reason_, self.evidence_ = name, reason, evidence
        self.posteriors_ = post
        return self._finish(final.to_numpy(), tasks, classes)

    def _score_reading(
        self, df: pd.DataFrame, classes: tuple[str, str], tasks: pd.Index, mv: pd.Series, evidence: dict
    ) -> pd.Series | None:
        """CARE-Tensor's P(first class) where the votes come with graded scores (step 2 of the module docstring),
        or None where they do not, or where its fit fell back, ranks against the average or takes the mirror."""
        if "score" not in df.columns or df["score"].isna().any():
            return None
        if df.groupby("worker")["score"].nunique().median() < 3:  # 0/1 scores repeat the votes: nothing new
            return None
        separation = _vote_separation(df, classes)
        evidence["score_separates_votes"] = separation
        if not separation >= MIN_SEPARATION:  # not evidence for the first class (a confidence, say): not read
            return None
        try:
            reading = AutoAggregator(classes=classes, input="score", neutral=self.neutral).fit(df)
        except ValueError as exc:
            evidence["score_reading"] = {"could_not_fit": str(exc)}
            return None
        p = first_class_posterior(reading, classes, tasks)
        evidence["score_reading"] = {
            "choice": reading.choice_,
            "kendall_tau_with_avg": reading.evidence_["kendall_tau_with_avg"].get(
                "care_tensor", float("nan")
            ),
            "agreement_with_mv": agreement(_labels(p, classes), mv, classes),
        }
        if (
            reading.choice_ != SCORES
            or not evidence["score_reading"]["agreement_with_mv"] >= self.min_agreement
        ):
            return None
        self.candidates_[SCORES] = reading.candidates_[SCORES]
        return p

    def _fit_scores(self, df: pd.DataFrame) -> AutoAggregator:
        """The score branch (module docstring)."""
        from scipy.stats import kendalltau  # lazy: scipy.stats is slow to import

        from judgeops.tasks.aggregate.care import CareSVD, CareTensor
        from judgeops.tasks.aggregate.mv import ScoreAverage
        from judgeops.tasks.aggregate.uws import UniversalWeakSupervision

        df = check_frame(df, "score", "AutoAggregator")
        classes = tuple(self.classes) if self.classes is not None else ("A", "B")
        avg = ScoreAverage(classes=classes).fit(df)
        fits, evidence, failed = {"avg": avg}, {"n_tasks": len(avg.scores_)}, {}
        for name, make in (
            ("care_tensor", lambda: CareTensor(neutral=self.neutral, classes=classes)),
            ("care_svd", lambda: CareSVD(neutral=self.neutral, classes=classes)),
            ("uws", lambda: UniversalWeakSupervision(neutral=self.neutral, classes=classes)),
        ):
            try:
                fits[name] = make().fit(df)
            except ValueError as exc:  # too few judges, say: not a candidate
                failed[name] = str(exc)
        tau = {}
        for name, est in fits.items():
            p = first_class_posterior(est, classes, avg.scores_.index).fillna(0.5)
            tau[name] = float(kendalltau(p, avg.scores_).statistic) if name != "avg" else 1.0
        evidence.update(kendall_tau_with_avg=tau, could_not_fit=failed)
        name, reason = "avg", "no CARE fit is usable on these scores: the judges' average"
        for candidate in ("care_tensor", "care_svd"):
            est = fits.get(candidate)
            fell_back = list(getattr(est, "fallbacks_", None) or []) if est is not None else None
            evidence[f"{candidate}_fallbacks"] = fell_back
            if est is not None and not fell_back and tau[candidate] >= 0:
                name = candidate
                reason = (
                    f"{candidate} fitted without a fallback and ranks the tasks with the judges' average "
                    f"(Kendall τ {tau[candidate]:.2f})"
                    + (
                        ": its two-latent mixture separates the truth from a shared confounder"
                        if candidate == "care_tensor"
                        else ": its low-rank factor is the quality axis"
                    )
                )
                break
        chosen = fits[name]
        self.choice_, self.reason_, self.evidence_, self.candidates_ = name, reason, evidence, fits
        self.scores_, self.scale_ = chosen.scores_, getattr(chosen, "scale_", "rank")
        # on the judges' scale all the same: the reading's order, the average's values
        if self.scale_ != "input":
            self.scores_, self.scale_ = on_the_judges_scale(chosen.scores_, avg.scores_), "input"
            evidence["scores_on_the_judges_scale"] = f"{name}'s order, the judges' average's values (by rank)"
        p = first_class_posterior(chosen, classes, chosen.probas_.index)
        self.posteriors_ = pd.DataFrame({name: p})
        self.tie_breaks_, self.consistent_judge_votes_ = {}, None
        return self._finish(p.to_numpy(), p.index, classes)


def contradicting_pair(
    df: pd.DataFrame, classes: tuple, implied: pd.Series, min_implied: float, top: int = 8
) -> list | None:
    """[judge, judge, their agreement, the least it could be] for two judges whose consistency implies that each
    is right on at least `min_implied` of its verdicts, yet who agree with each other less than that allows
    (both right or both wrong: at least q_j q_k + (1 − q_j)(1 − q_k) where their errors are independent, more where
    they err together) by a margin of 0.1 or three standard errors. They cannot both be as accurate as their
    consistency says: one of them, or both, is consistently following something other than the truth (a clique
    sharing a bias beside the strong judge, a surface cue that every presentation keeps), and the votes do not
    say which. None where no such pair is found (the `top` most consistent judges are compared)."""
    strong = implied[implied >= min_implied].sort_values(ascending=False).index[:top]
    if len(strong) < 2:
        return None
    mean = signed_votes(df[df["worker"].isin(strong)], classes, "mean")
    worst = None
    for i, a in enumerate(strong):
        for b in strong[i + 1 :]:
            both = mean[[a, b]].dropna()
            both = both[(both[a] != 0) & (both[b] != 0)]
            if len(both) < 30:
                continue
            agree = float((np.sign(both[a]) == np.sign(both[b])).mean())
            qa, qb = float(implied[a]), float(implied[b])
            least = qa * qb + (1 - qa) * (1 - qb)
            gap = least - agree
            if gap > max(0.1, 3 * np.sqrt(least * (1 - least) / len(both))) and (
                worst is None or gap > worst[4]
            ):
                worst = [str(a), str(b), agree, least, gap]
    return worst[:4] if worst else None


def on_the_judges_scale(order: pd.Series, average: pd.Series) -> pd.Series:
    """`order`'s ranking of the tasks carried onto the scale of the judges' `average` by quantile matching: the
    task ranked r-th by `order` gets the r-th smallest average (tied tasks share their ranks' mean value). A
    reading whose scores are a posterior or a standardised factor (CARE-Tensor, UWS) keeps its Kendall τ, and its
    scores can be compared with a truth on the judges' scale (MAE) — their spread is the average's, which is what
    the judges' scale says of the tasks, without the reading's own claim of how far apart they are."""
    from scipy.stats import rankdata  # lazy: scipy.stats is slow to import

    order = order.reindex(average.index)
    ranks = rankdata(order.fillna(order.median()).to_numpy(dtype=float), method="average")
    values = np.sort(average.to_numpy(dtype=float))
    return pd.Series(np.interp(ranks, np.arange(1, len(values) + 1), values), index=average.index)


def _vote_separation(df: pd.DataFrame, classes: tuple[str, str]) -> float:
    """The median judge's AUC of its scores for its own votes (P(score of a first-class vote > score of a
    second-class vote), ties half): 1 when each vote is its score thresholded, ½ when the score says nothing
    about the vote's side. NaN when no judge voted both ways."""
    from scipy.stats import rankdata  # lazy: scipy.stats is slow to import

    aucs = []
    for _, own in df.groupby("worker"):
        first = (own["label"] == classes[0]).to_numpy()
        n1, n0 = int(first.sum()), int((~first).sum())
        if n1 and n0:
            ranks = rankdata(pd.to_numeric(own["score"], errors="coerce").to_numpy(dtype=float))
            aucs.append((ranks[first].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))
    return float(np.median(aucs)) if aucs else float("nan")


def _labels(p: pd.Series, classes: tuple[str, str]) -> pd.Series:
    return pd.Series(np.where(p > 0.5, classes[0], np.where(p < 0.5, classes[1], "tie")), index=p.index)


def _break_ties(
    chosen: pd.Series, post: pd.DataFrame, name: str, df: pd.DataFrame, cwv, classes: tuple[str, str]
) -> tuple[pd.Series, dict[str, int]]:
    """The chosen posterior with each exact tie (½) decided by the next reading that decides it (module
    docstring); a tie-broken task keeps a posterior just off ½ (½ ± 1e-6), so its confidence stays honest."""
    final, counts = chosen.copy(), {}
    for rule in [c for c in CHOICES if c != name]:
        tied = (final == 0.5) & post[rule].notna() & (post[rule] != 0.5)
        if tied.any():
            final[tied] = np.where(post.loc[tied, rule] > 0.5, 0.5 + 1e-6, 0.5 - 1e-6)
            counts[rule] = int(tied.sum())
    tied = final == 0.5
    if tied.any():  # the most reliable judge who voted on the task, by its runs' majority
        weight = cwv.weights_
        sub = df[df["task"].isin(final.index[tied])].assign(
            sign=np.where(df.loc[df["task"].isin(final.index[tied]), "label"] == classes[0], 1.0, -1.0),
            weight=lambda f: f["worker"].map(weight).fillna(0.0),
        )
        lean = sub.groupby(["task", "worker"]).agg(sign=("sign", "sum"), weight=("weight", "first"))
        lean = lean[lean["sign"] != 0].sort_values("weight", ascending=False, kind="stable")
        top = lean.groupby(level="task")["sign"].first()
        decided = top.index[top != 0]
        if len(decided):
            final[decided] = np.where(top[decided] > 0, 0.5 + 1e-6, 0.5 - 1e-6)
            counts["most_reliable_judge"] = len(decided)
    tied = final == 0.5
    if tied.any():  # nothing separates them: the consensus's majority class
        first = bool((final > 0.5).sum() >= (final < 0.5).sum())
        final[tied] = 0.5 + 1e-6 if first else 0.5 - 1e-6
        counts["majority_class"] = int(tied.sum())
    return final, counts
