"""How accurate is a consensus, without labels — and can this panel be resolved without them at all?

The estimate. `auto` (auto.py) fits a latent-class reading of the votes; its posterior P(y_t = c) is, where the
reading's assumptions hold, the probability that class c is right on task t. A consensus that says L_t on task
t is then right with probability v_t = P(y_t = L_t), and its accuracy over the n tasks is

    â = (1/n) Σ_t v_t,

for auto's own labels (a tie-broken task has v_t = ½) and for any other method's labels or any judge's
votes alike (a tie or no decision: v_t = 0, as the scoring counts it). The 90 % interval has three parts:
- the realised accuracy of n decisions, each right with probability v_t, varies by a Poisson-binomial standard
  deviation √(Σ v_t(1 − v_t))/n;
- â itself varies with the tasks drawn: its standard error over tasks, sd(v)/√n (the nonparametric bootstrap of a
  mean estimates exactly this; computed, so 300,000 tasks cost no resampling matrix);
- the reading may be wrong: the interval also spans the estimates of the same labels under the other readings
  auto fitted (Dawid–Skene, the dependence-corrected vote, the consistency reading), so that where they
  disagree the interval says so.
- judges that err together make every reading's posterior too confident (a group's agreement counts as more
  evidence than it is; the family of synthetic.py's versions: +0.015 on average, the interval covering 60 % of
  the draws without this part): the interval also spans the estimate under the chosen posterior tempered by the
  largest effective multiplicity m of the judges' shared error, logit p / m — the posterior as if every vote
  were m times fewer independent ones. m is cwv's multiplicity Σ_k max(0, ρ_jk) with each residual correlation
  of the votes taken back to the preferences they threshold: votes that split correlated Gaussian preferences
  at their medians correlate φ = (2/π) arcsin ρ (Sheppard 1899), so ρ = sin(πφ/2) — the votes understate how
  much a group shares (versions: 84 % of the draws covered with φ, 96 % with ρ). On a panel of independent
  judges m ≈ 1 and this adds nothing.
The first two are added in quadrature (normal interval); the last two widen the result to its hull.

Where the identifiability diagnostic below names an alternative the votes cannot rule out, the interval also
spans the consensus's accuracy under it (a set-identified quantity: the votes fit every reading in the set about
equally, so the honest interval is their hull, and the point estimate keeps the reading taken):
- `chance` — a second signal that the consensus may follow instead of the truth (a pair of judges agreeing beyond
  it; judges whose consistency vouches for nothing). A consensus that follows a signal independent of the truth
  is right on about half the tasks: ½ ± Z90 · ½/√n. (BENCHMARKS.md: regime families x and xi, where the reading
  follows a surface preference or a binary confounder and its interval covered 0 % and 6 % of the draws.)
- `mirror` — no judge vouches for a side, so the reading and its mirror image fit about equally: the mirrored
  bounds 1 − high and 1 − low, and the consensus's agreement g with the most consistent judge taken back through
  that judge's implied accuracy q on either side, ½ ± (g − ½)/(2q − 1) (if the judge is right with probability q
  and errs independently of the consensus, g = aq + (1 − a)(1 − q)). With q near ½ this spans nearly [0, 1], which
  is what such a panel says about its consensus (family v: the interval covered 10 % of the draws without it).

When it cannot help. Every reading assumes something the votes cannot check: that consistent judges are better
than chance, or that a group's shared error is a minority. Where the assumption fails the posterior is
confident and wrong, and so is â (BENCHMARKS.md: the calibration table, per family). `identifiability` names
the panels where that is likely, from the same evidence auto chose by, and says how many labelled tasks would
settle it (`judgeops audit propose … --k K`):
- no perturbation and fewer than three effective judges (Σ 1/m_j, m_j the effective multiplicity of cwv.py):
  a latent-class model of a binary truth needs three conditionally independent views to be identified
  (Allman, Matias & Rhodes 2009; with perturbations, consistency identifies the reading judges instead);
- no perturbation and most judges in correlated groups: a group's shared error looks like the truth (unless
  auto read the panel's graded scores with CARE-Tensor, whose second latent is such a group);
- no perturbation and two judges that agree with each other more than either agrees with the consensus
  (cwv.agreeing_beyond): the votes hold a second signal the reading does not follow, so that pair or the
  consensus follows something other than the truth. A minority of good judges beside a clique that follows a
  binary confounder (synthetic.py's binary_confounded) reads so, with Dawid–Skene confident and wrong; with
  perturbations consistency tells the two apart and this is not asked;
- the reading taken rests on judges whose verdict never changed with the display order on at least
  `min_pairs` tasks, and no order-sensitive judge could vouch for them (cwv's anchor_invariant found no
  anchor): a judge that scores each answer on its own (a reward model) is consistent by construction, and its
  consistency vouches for nothing;
- with perturbations, no judge keeps its verdict well enough to vouch for a side: the most consistent judge's
  implied accuracy is below `min_implied_accuracy`. Consistency measures |2q − 1| and cannot tell a judge right
  with probability q from one right with 1 − q; on a panel this weak the reading and its mirror image (every
  judge's accuracy q ↦ 1 − q) fit the votes about equally, and the side taken rests on most judges being better
  than chance (synthetic.py's below_chance_order: every draw's best judge implies 0.50–0.79, where the other
  perturbed families' implies 0.84 or more);
- the two readings that use the same evidence disagree on more than `max_disagreement` of the tasks
  (ds_position and cwv with perturbations; Dawid–Skene and cwv without, unless auto read the scores): the
  votes support more than one answer;
- the consistency reading takes the other side from majority vote: it may be right (a panel fooled by surface)
  or follow stable-but-wrong judges; only labels tell.
K is the number of audited tasks that estimates the accuracy to ±`margin` at 90 % (normal approximation at the
estimate, at least `min_audit`), at most the number of tasks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate.auto import SCORES, VOUCHING_ACCURACY, first_class_posterior
from judgeops.tasks.aggregate.consistency import order_invariant

Z90 = 1.6448536269514722  # the normal quantile of a two-sided 90 % interval
CHANCE, MIRROR = "chance", "mirror"  # the alternatives an unresolved panel leaves open (module docstring)


@dataclass(frozen=True)
class AccuracyEstimate:
    """`estimate` with its 90 % interval [`ci_low`, `ci_high`] over `n` tasks."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Identifiability:
    """`effective_judges` (Σ 1/m_j), `identifiable` (no reason below applies), `reasons` (each a sentence),
    `audit_k` (labelled tasks that would settle it), `warning` (one line, empty when identifiable) and
    `alternatives` (CHANCE, MIRROR: the readings the reasons leave open, which the accuracy interval spans)."""

    effective_judges: float
    identifiable: bool
    reasons: list[str] = field(default_factory=list)
    audit_k: int = 0
    warning: str = ""
    alternatives: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _confidences(posterior: pd.Series, labels: pd.Series, classes: tuple[str, str]) -> np.ndarray:
    """v_t = P(y_t = L_t) under `posterior` (P(classes[0]) per task); 0 where L_t is no class, ½ where the
    posterior is missing."""
    p = posterior.reindex(labels.index).astype(float).fillna(0.5).to_numpy()
    lab = labels.to_numpy()
    return np.where(lab == classes[0], p, np.where(lab == classes[1], 1.0 - p, 0.0))


def _interval(v: np.ndarray, others: list[float]) -> AccuracyEstimate:
    n = len(v)
    if n == 0:
        return AccuracyEstimate(float("nan"), float("nan"), float("nan"), 0)
    est = float(v.mean())
    realised = float(np.sqrt((v * (1 - v)).sum()) / n)
    # what a bootstrap over tasks estimates, without n × B draws in memory
    drawn = float(v.std() / np.sqrt(n))
    sd = float(np.hypot(realised, drawn))
    low, high = min([est - Z90 * sd, *others]), max([est + Z90 * sd, *others])
    return AccuracyEstimate(est, float(np.clip(low, 0, 1)), float(np.clip(high, 0, 1)), n)


def consensus_accuracy(auto, labels: pd.Series, ident: Identifiability | None = None) -> AccuracyEstimate:
    """The accuracy of `labels` (task → class, `tie` or missing counted wrong) estimated under the reading a
    fitted AutoAggregator chose, with its 90 % interval spanning the alternatives `ident` (auto's
    identifiability diagnostic, computed when not given) leaves open (module docstring)."""
    classes, chosen = auto.classes_, auto.choice_
    posteriors = auto.posteriors_
    labels = labels.reindex(posteriors.index)
    v = _confidences(posteriors[chosen], labels, classes)  # a tie auto broke has P = ½ either way
    others = [
        float(_confidences(posteriors[name], labels, classes).mean())
        for name in posteriors.columns
        if name not in (chosen, "mv")  # a vote share is not a posterior
    ]
    tempered = tempered_posterior(posteriors[chosen], shared_error_multiplicity(auto))
    others.append(float(_confidences(tempered, labels, classes).mean()))
    ident = ident if ident is not None else diagnosis(auto)
    return _unresolved(_interval(v, others), auto, labels, ident.alternatives if ident else [])


def _unresolved(est: AccuracyEstimate, auto, labels: pd.Series, alternatives: list[str]) -> AccuracyEstimate:
    """`est` with its interval widened to the hull of the consensus's accuracy under each alternative reading
    (module docstring)."""
    if not alternatives or est.n == 0:
        return est
    bounds = [est.ci_low, est.ci_high]
    if CHANCE in alternatives:
        half = Z90 * 0.5 / np.sqrt(est.n)
        bounds += [0.5 - half, 0.5 + half]
    if MIRROR in alternatives:
        bounds += [1.0 - est.ci_high, 1.0 - est.ci_low]
        judge = auto.consistent_judge_votes_
        q = auto.evidence_.get("best_implied_accuracy", 0.5)
        if judge is not None and q > 0.5:
            side = np.sign(judge.reindex(labels.index).to_numpy(dtype=float))
            ours = labels.to_numpy()
            both = (side != 0) & ~np.isnan(side) & np.isin(ours, auto.classes_)
            if both.any():
                g = float(np.mean((ours[both] == auto.classes_[0]) == (side[both] > 0)))
                shift = (g - 0.5) / (2 * q - 1)
                bounds += [0.5 + shift, 0.5 - shift]
    low, high = np.clip([min(bounds), max(bounds)], 0.0, 1.0)
    return AccuracyEstimate(est.estimate, float(low), float(high), est.n)


def diagnosis(auto) -> Identifiability | None:
    """`identifiability(auto)`, or None for auto on scores, which has no such diagnostic."""
    return identifiability(auto) if getattr(auto, "input", "label") == "label" else None


def shared_error_multiplicity(auto) -> float:
    """The largest effective multiplicity of a judge's shared error: Σ_k max(0, sin(π ρ_jk / 2)) over cwv's
    residual correlations of the votes (module docstring); 1 where auto read the scores (CARE-Tensor models
    the groups itself, and the score branch runs no dependence check)."""
    if "max_multiplicity" not in auto.evidence_:
        return 1.0
    rho = np.nan_to_num(auto.candidates_["cwv"].residual_correlation_.to_numpy(dtype=float))
    return float(np.clip(np.sin(np.pi / 2 * rho), 0.0, None).sum(axis=1).max())


def tempered_posterior(posterior: pd.Series, multiplicity: float) -> pd.Series:
    """P(first class) with its log-odds divided by `multiplicity`: the posterior as if the votes were that
    many times fewer, independent ones (module docstring)."""
    p = posterior.astype(float).clip(1e-12, 1 - 1e-12)
    return 1.0 / (1.0 + np.exp(-np.log(p / (1 - p)) / max(multiplicity, 1.0)))


def judge_accuracy(auto, votes: pd.DataFrame, ident: Identifiability | None = None) -> pd.DataFrame:
    """Per judge: its votes' accuracy estimated under auto's reading (every run a vote), with the 90 % interval,
    which spans the mirror image where `ident` (computed when not given) leaves it open; columns worker,
    estimate, ci_low, ci_high, n."""
    ident = ident if ident is not None else diagnosis(auto)
    mirrored = ident is not None and MIRROR in ident.alternatives
    classes = auto.classes_
    post = auto.posteriors_
    used = votes[votes["label"].isin(classes)]
    rows = []
    for worker, own in used.groupby("worker", sort=True):
        first = own["label"].to_numpy() == classes[0]
        p = post.reindex(own["task"].to_numpy()).astype(float).fillna(0.5)
        v = {name: np.where(first, p[name].to_numpy(), 1.0 - p[name].to_numpy()) for name in post.columns}
        others = [float(v[n].mean()) for n in post.columns if n not in (auto.choice_, "mv")]
        est = _interval(v[auto.choice_], others)
        if mirrored:  # every judge's q ↦ 1 − q
            est = AccuracyEstimate(
                est.estimate, min(est.ci_low, 1 - est.ci_high), max(est.ci_high, 1 - est.ci_low), est.n
            )
        rows.append({"worker": worker, **est.as_dict()})
    return pd.DataFrame(rows, columns=["worker", "estimate", "ci_low", "ci_high", "n"])


# a label-free accuracy is quoted as a number only where its 90 % interval is at most this wide (issue 46: a
# 50-point interval gates nothing, and the point estimate is the number people read)
MAX_QUOTED_WIDTH = 0.10


def withheld(ci_low: float, ci_high: float, warning: str | None = None) -> str | None:
    """Why a label-free accuracy must be shown as bounds and not as a number (None: it may be quoted): the
    identifiability check warns (the votes fit readings with different accuracies), or the interval is wider than
    MAX_QUOTED_WIDTH. One line, for the run's last lines, `aggregate`, the report."""
    if warning:
        return "the votes alone cannot pin it down (identifiability warning)"
    if ci_high - ci_low > MAX_QUOTED_WIDTH:
        return f"its 90 % interval is {ci_high - ci_low:.2f} wide, over {MAX_QUOTED_WIDTH:.2f}"
    return None


def label_free_text(estimate: float, ci_low: float, ci_high: float, warning: str | None = None) -> str:
    """A label-free accuracy as people read it: `0.912 [0.880, 0.945] estimated without labels` where it may be
    quoted, else its bounds, why there is no number, and the labels that would make one (`label_budget`)."""
    why = withheld(ci_low, ci_high, warning)
    if why is None:
        return f"{estimate:.3f} [{ci_low:.3f}, {ci_high:.3f}] estimated without labels (90 %)"
    from judgeops.tasks.aggregate.prediction_powered import label_budget

    need = label_budget(0.03, 0.1, label_free_interval=(ci_low, ci_high))
    return (
        f"between {ci_low:.3f} and {ci_high:.3f} without labels, no point estimate: {why}; about {need} audited "
        "labels make it ± 0.03 (judgeops audit propose)"
    )


def audit_size(estimate: float, n_tasks: int, margin: float = 0.05, min_audit: int = 20) -> int:
    """Labelled tasks that estimate an accuracy near `estimate` to ±margin at 90 % (normal approximation)."""
    a = float(np.clip(estimate if np.isfinite(estimate) else 0.5, 0.05, 0.95))
    return int(min(n_tasks, max(min_audit, np.ceil(Z90**2 * a * (1 - a) / margin**2))))


def identifiability(
    auto,
    estimate: float | None = None,
    min_pairs: int = 50,
    max_disagreement: float = 0.15,
    margin: float = 0.05,
    min_implied_accuracy: float = VOUCHING_ACCURACY,
) -> Identifiability:
    """Whether the panel a fitted AutoAggregator read can be resolved without labels (module docstring)."""
    ev, cwv = auto.evidence_, auto.candidates_["cwv"]
    m = cwv.multiplicity_
    n_eff = float((1.0 / m).sum())
    reasons, alternatives = [], []
    perturbed = "best_implied_accuracy" in ev
    scored = auto.choice_ == SCORES  # CARE-Tensor models the groups the vote readings cannot tell apart
    if not perturbed and n_eff < 3:
        reasons.append(
            f"fewer than three independent judges ({n_eff:.1f} effective): a latent-class consensus is not "
            "identified from votes alone"
        )
    if not perturbed and not scored and ev.get("dependent_share", 0.0) >= auto.max_dependent_share:
        reasons.append(
            f"{ev['dependent_share']:.0%} of the judges err in correlated groups and no task was shown twice: "
            "a group's shared error cannot be told from the truth"
        )
    pair = ev.get("agreeing_beyond")
    if pair:
        reasons.append(
            f"judges {pair[0]} and {pair[1]} agree with each other beyond the consensus (residual correlation "
            f"{pair[2]:.2f}, more than either agrees with it): a second signal that they or the consensus follow "
            "instead of the truth"
        )
        alternatives.append(CHANCE)
    if perturbed and ev["best_implied_accuracy"] < min_implied_accuracy:
        reasons.append(
            f"no judge keeps its verdict across orders and presentations well enough to vouch for a side (the most "
            f"consistent, {ev['most_consistent_judge']}, implies accuracy {ev['best_implied_accuracy']:.2f}): the "
            "consensus and its mirror image fit the votes about equally"
        )
        alternatives.append(MIRROR)
    if perturbed:
        sig = cwv.signals_
        invariant = order_invariant(sig, min_pairs)
        if "anchored_on" in sig.columns:  # their accuracy was read off the order-sensitive judges instead
            invariant = invariant[sig.loc[invariant, "anchored_on"] == ""]
        if len(invariant):
            top = cwv.weights_.sort_values(ascending=False).index[: max(1, len(cwv.weights_) // 2)]
            leaning = sorted(set(invariant) & set(top), key=str)
            if leaning:
                reasons.append(
                    f"the consensus leans on judges whose verdict never changed with the display order "
                    f"({', '.join(map(str, leaning[:4]))}): consistency by construction vouches for nothing"
                )
                alternatives.append(CHANCE)
        contradicting = ev.get("consistent_but_contradicting")
        if contradicting:
            a, b, agree, least = contradicting
            reasons.append(
                f"judges {a} and {b} are each consistent enough to vouch for a side, yet agree on {agree:.0%} of the "
                f"tasks where their consistency implies at least {least:.0%}: one of them follows something other "
                "than the truth as consistently, and the votes do not say which"
            )
            alternatives.append(CHANCE)
        if ev["agreement_with_mv"].get("ds_position+cwv", 1.0) < 0.5:
            reasons.append(
                "the consistency reading takes the other side from majority vote: right where most judges are "
                "fooled by position or surface, wrong where the consistent judges are stably wrong"
            )
    post = auto.posteriors_
    # the readings that answer the same question: with perturbations the two that use them (Dawid–Skene ignores
    # them and is expected to differ), without, Dawid–Skene and the dependence-corrected vote
    decided = {
        name: np.sign(
            first_class_posterior(auto.candidates_[name], auto.classes_, post.index).fillna(0.5) - 0.5
        )
        for name in (("ds_position", "cwv") if perturbed else ("dawid_skene", "cwv"))
    }
    names = sorted(decided)
    worst = max(
        (float(np.mean((decided[a] != decided[b]) & (decided[a] != 0) & (decided[b] != 0))), a, b)
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
    if worst[0] > max_disagreement and not scored:
        reasons.append(f"{worst[1]} and {worst[2]} disagree on {worst[0]:.0%} of the tasks")
    k = audit_size(estimate if estimate is not None else float("nan"), len(post), margin)
    warning = ""
    if reasons:
        warning = (
            f"this panel may not be resolvable without labels ({reasons[0]}); audit {k} items "
            f"(judgeops audit propose VOTES --k {k}) to confirm the consensus"
        )
    return Identifiability(
        n_eff, not reasons, reasons, k if reasons else 0, warning, sorted(set(alternatives))
    )
