"""Every aggregator and `auto` on every regime family, the LLMBar panel in both layouts, the accuracy estimated
without labels against the truth, and speed.

    python bench/consistency.py [--seeds 50] [--tasks 1200] [--regimes NAME ...] [--write]

Prints markdown: accuracy (mean ± sd over `--seeds` random draws of each regime family's parameters,
tasks/aggregate/synthetic.py `family=True`) of every method and auto, beside the best single judge (picked with
the truth, position-averaged: a bar, not a method) and the best of auto's candidates; how often auto chose each
reading; Kendall τ of the score methods and auto on scores on the score families; the calibration of auto's
label-free accuracy estimate (mean |estimate − truth|, interval coverage, how often the identifiability
diagnostic warned); the LLMBar Natural panel (6 real LLM judges) with both display orders as runs of a judge and
as workers of their own; and the time of auto with its estimate on 24 judges × 5,000 tasks × 2 orders. Pin to two
cores (`taskset -c 0,1`).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from benchmarks_md import section

from judgeops.tasks.aggregate import get_aggregator
from judgeops.tasks.aggregate.consistency import RUN_COLUMNS, consistency_signals
from judgeops.tasks.aggregate.estimate import consensus_accuracy, identifiability
from judgeops.tasks.aggregate.synthetic import REGIMES, best_single_judge, make_panel

warnings.filterwarnings("ignore", category=UserWarning)
PANEL6 = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmbar" / "natural_vanilla_panel6.csv"
NUMERALS = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi"]
LABELS = {r: f"({n}) {r}" for n, r in zip(NUMERALS, REGIMES, strict=True)}
CANDIDATES = {"MV": "mv", "DS": "dawid_skene", "CWV": "cwv", "DS-position": "ds_position"}  # what auto reads
METHODS = {
    "MV": "mv",
    "AVG": "avg",
    "DS": "dawid_skene",
    "WS": "ws",
    "UWS": "uws",
    "CARE-SVD": "care_svd",
    "CARE-Tensor": "care_tensor",
    "WMV": "wmv",
    "BAER": "baer",
    "CWV": "cwv",
    "DS-position": "ds_position",
    "auto": "auto",
}
SCORE_REGIMES = ("independent", "clique", "confounder_follows_quality", "confounder_independent")
SCORED = ["AVG", "UWS", "CARE-SVD", "CARE-Tensor", "auto (scores)"]


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def fit(method: str, votes: pd.DataFrame, scores: bool = False):
    """Score methods read scores (P(A) per run; 1/0 from the label where a panel has none), and so does auto with
    `scores`; BAER reads the votes per run, as in bench/aggregate.py; the rest read labels and the run columns."""
    graded = "score" in votes.columns  # auto reads a panel's own scores beside the votes (its step 2)
    if not graded:
        votes = votes.assign(score=(votes["label"] == "A").astype(float))
    kind = "score" if method in ("avg", "uws", "care_svd", "care_tensor") or scores else "label"
    cols = ["task", "worker", kind] + [c for c in RUN_COLUMNS if c in votes.columns]
    cols += ["score"] if method == "auto" and kind == "label" and graded else []
    params = {"input": "label"} if method == "baer" else {"input": "score"} if scores else {}
    return get_aggregator(method, **params).fit(votes[cols])


def kendall(est, truth: pd.Series) -> float:
    """Kendall τ-b of the consensus P(A) with the truth."""
    from scipy.stats import kendalltau

    p = est.probas_["A"].reindex(truth.index).fillna(0.5).to_numpy()
    return float(kendalltau(p, (truth == "A").to_numpy(dtype=float)).statistic)


def families(seeds: int, tasks: int, regimes: list[str], means: dict, calibration: dict) -> list[str]:
    """The family tables; fills `means[regime][column]` with the mean accuracies and `calibration[regime]` with
    the estimate's errors, for the targets table."""
    cols = list(METHODS)
    lines = [
        "| regime family | best single judge | "
        + " | ".join(cols)
        + " | best candidate | auto − best candidate | auto − MV | auto chose |",
        "|---" * (len(cols) + 6) + "|",
    ]
    ranks = [
        "",
        "Score panels: Kendall τ-b of each consensus P(A) with the truth (mean over the same draws); auto (scores) is",
        "`auto --param input=score`:",
        "",
        "| regime family | " + " | ".join(SCORED) + " | auto (scores) chose |",
        "|---" * (len(SCORED) + 2) + "|",
    ]
    for regime in regimes:
        acc: dict[str, list[float]] = {c: [] for c in ["best", *cols]}
        tau: dict[str, list[float]] = {c: [] for c in SCORED}
        chose, chose_scores = Counter(), Counter()
        cal = calibration[regime] = {"error": [], "covered": [], "warned": [], "width": []}
        for seed in range(seeds):
            panel = make_panel(regime, n_tasks=tasks, seed=seed, family=True)
            acc["best"].append(best_single_judge(panel))
            for col, method in METHODS.items():
                try:
                    est = fit(method, panel.votes)
                except ValueError:  # a method that cannot fit this draw scores as chance, and is counted
                    acc[col].append(0.5)
                    continue
                acc[col].append(accuracy(est.labels_, panel.truth))
                if regime in SCORE_REGIMES and col in SCORED:
                    tau[col].append(kendall(est, panel.truth))
                if method == "auto":
                    chose[est.choice_] += 1
                    estimate = consensus_accuracy(est, est.labels_)
                    truth = acc[col][-1]
                    cal["error"].append(estimate.estimate - truth)
                    cal["covered"].append(estimate.ci_low <= truth <= estimate.ci_high)
                    cal["width"].append(estimate.ci_high - estimate.ci_low)
                    cal["warned"].append(not identifiability(est, estimate.estimate).identifiable)
            if regime in SCORE_REGIMES:
                est = fit("auto", panel.votes, scores=True)
                tau["auto (scores)"].append(kendall(est, panel.truth))
                chose_scores[est.choice_] += 1
        if regime in SCORE_REGIMES:
            ranks.append(
                f"| {LABELS[regime]} | "
                + " | ".join(f"{np.mean(tau[c]):.3f}" for c in SCORED)
                + f" | {', '.join(f'{k} {v}' for k, v in chose_scores.most_common())} |"
            )
            means.setdefault("tau", {})[regime] = {c: float(np.mean(v)) for c, v in tau.items()}
        means[regime] = {c: float(np.mean(v)) for c, v in acc.items()}
        readings = [*CANDIDATES, *(["CARE-Tensor"] if regime in SCORE_REGIMES else [])]
        best_c = max(readings, key=lambda c: means[regime][c])
        means[regime]["best candidate"] = means[regime][best_c]
        lines.append(
            f"| {LABELS[regime]} | {np.mean(acc['best']):.3f} ± {np.std(acc['best']):.3f} | "
            + " | ".join(f"{np.mean(acc[c]):.3f} ± {np.std(acc[c]):.3f}" for c in cols)
            + f" | {best_c} {means[regime][best_c]:.3f} | {100 * (means[regime]['auto'] - means[regime][best_c]):+.1f} pts"
            + f" | {100 * (means[regime]['auto'] - means[regime]['MV']):+.1f} pts"
            + f" | {', '.join(f'{k} {v}' for k, v in chose.most_common())} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)  # progress
    return lines + ranks


def calibration_table(calibration: dict) -> list[str]:
    """auto's label-free accuracy estimate against the truth, per family."""
    lines = [
        "The accuracy of auto's consensus estimated without labels (tasks/aggregate/estimate.py), against the truth",
        "of the same draws: mean |estimate − truth|, mean (estimate − truth), the share of draws whose 90 % interval",
        'covers the truth, the share on which the identifiability diagnostic warned ("may not be resolvable without',
        "labels\"), the mean |error| on the draws it did not warn on, and the interval's mean width (on a warned",
        "draw it spans the readings the warning leaves open):",
        "",
        "| regime family | mean abs error | mean error | interval covers | warned | mean abs error, not warned "
        "| interval width |",
        "|---|---|---|---|---|---|---|",
    ]
    for regime, cal in calibration.items():
        err, warned = np.array(cal["error"]), np.array(cal["warned"], dtype=bool)
        quiet = f"{np.abs(err[~warned]).mean():.3f}" if (~warned).any() else "–"
        lines.append(
            f"| {LABELS[regime]} | {np.abs(err).mean():.3f} | {err.mean():+.3f} | {np.mean(cal['covered']):.0%} | "
            f"{warned.mean():.0%} | {quiet} | {np.mean(cal['width']):.2f} |"
        )
    return lines


def panel6_votes() -> tuple[pd.DataFrame, pd.Series]:
    """The 6 LLM judges on LLMBar Natural: (votes task/worker/run/label in the canonical frame — A = output_1,
    run "AB" = output_1 shown first — and the truth)."""
    wide = pd.read_csv(PANEL6)
    rows = []
    for col in [c for c in wide.columns if "__order" in c]:
        judge, order = col.split("__order")
        rows.append(
            pd.DataFrame(
                {
                    "task": wide["idx"].astype(str),
                    "worker": judge,
                    "run": "AB" if order == "12" else "BA",
                    "label": wide[col].map({1: "A", 2: "B"}),
                }
            )
        )
    truth = pd.Series(wide["label"].map({1: "A", 2: "B"}).to_numpy(), index=wide["idx"].astype(str))
    return pd.concat(rows).dropna(subset=["label"]), truth


def llmbar(means: dict) -> list[str]:
    if not PANEL6.exists():
        return [f"(LLMBar panel skipped: {PANEL6} not found)"]
    votes, truth = panel6_votes()
    split = votes.assign(worker=votes["worker"] + "·" + votes["run"]).drop(columns="run")
    lines = [
        "| method | both orders as runs of a judge | each (judge, order) a worker of its own |",
        "|---|---|---|",
    ]
    for col, method in METHODS.items():
        est, other = fit(method, votes), fit(method, split)
        extra = f" (chose {est.choice_})" if method == "auto" else ""
        means[col] = accuracy(est.labels_, truth)
        means["auto chose"] = est.choice_ if method == "auto" else means.get("auto chose")
        if method == "auto":
            estimate = consensus_accuracy(est, est.labels_)
            means["auto estimate"] = (estimate.estimate, estimate.ci_low, estimate.ci_high)
            means["auto warning"] = identifiability(est, estimate.estimate).warning or "none"
        lines.append(f"| {col} | {means[col]:.2f}{extra} | {accuracy(other.labels_, truth):.2f} |")
    low_high = means["auto estimate"]
    lines += [
        "",
        f"auto's accuracy estimated without labels: {low_high[0]:.3f} (90 % interval {low_high[1]:.3f}–{low_high[2]:.3f});"
        f" measured with the labels: {means['auto']:.2f}. The identifiability warning: {means['auto warning']}.",
    ]
    sig = consistency_signals(votes).set_index("worker")
    lines += ["", "| judge | order consistency | position bias | implied accuracy |", "|---|---|---|---|"]
    lines += [
        f"| {j} | {r.order_consistency:.2f} | {r.position_bias:.2f} | {r.implied_accuracy:.2f} |"
        for j, r in sig.iterrows()
    ]
    return lines


def speed(best: dict) -> list[str]:
    rng = np.random.default_rng(0)
    n, p = 5000, 24
    y = rng.integers(0, 2, n)
    acc = rng.uniform(0.55, 0.9, p)
    pos = rng.uniform(0.0, 0.5, p)
    frames = []
    for run in ("AB", "BA"):
        right = rng.random((n, p)) < acc
        said = np.where(right, y[:, None], 1 - y[:, None])
        said = np.where(rng.random((n, p)) < pos, 1 if run == "AB" else 0, said)
        frames.append(
            pd.DataFrame(
                {
                    "task": np.repeat(np.arange(n), p),
                    "worker": np.tile(np.arange(p), n),
                    "run": run,
                    "label": np.where(said.ravel() == 1, "A", "B"),
                }
            )
        )
    votes = pd.concat(frames, ignore_index=True)

    def auto_and_estimate():
        auto = get_aggregator("auto").fit(votes)
        identifiability(auto, consensus_accuracy(auto, auto.labels_).estimate)

    get_aggregator("baer", input="label")  # imports scikit-learn outside the timing
    for name, work in {
        "consistency signals": lambda: consistency_signals(votes),
        "auto (its four readings, its choice)": lambda: get_aggregator("auto").fit(votes),
        "auto with its estimate and identifiability": auto_and_estimate,
        "dawid_skene": lambda: get_aggregator("dawid_skene").fit(votes),
        "baer (label-free, its import excluded)": lambda: get_aggregator("baer", input="label").fit(votes),
        "mv": lambda: get_aggregator("mv").fit(votes),
    }.items():
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            work()
            times.append(time.perf_counter() - t0)
        best[name] = min(times)
    lines = ["| 24 judges × 5,000 tasks × 2 orders | seconds (best of 3) | × MV |", "|---|---|---|"]
    lines += [f"| {k} | {v:.3f} | {v / best['mv']:.1f} |" for k, v in best.items()]
    return lines


def targets(fam: dict, bar: dict, seconds: dict, calibration: dict) -> list[str]:
    """The issues' targets, each against this run's numbers."""

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    regimes = [r for r in fam if r != "tau"]
    gaps = {r: 100 * (fam[r]["auto"] - fam[r]["best candidate"]) for r in regimes}
    mv_gaps = {r: 100 * (fam[r]["auto"] - fam[r]["MV"]) for r in regimes}
    rows = [
        "| `auto` ≥ the best of its readings (MV, DS, CWV, DS-position; CARE-Tensor on score panels) − 2 points, "
        "every family | "
        + ", ".join(f"{LABELS[r].split()[0]} {g:+.1f}" for r, g in gaps.items())
        + f" | {verdict(min(gaps.values()) >= -2.0)} |",
        "| `auto` ≥ MV − 1 point, every family | "
        + ", ".join(f"{LABELS[r].split()[0]} {g:+.1f}" for r, g in mv_gaps.items())
        + f" | {verdict(min(mv_gaps.values()) >= -1.0)} |",
    ]
    for regime, method, margin in (
        ("confounder_follows_quality", "CARE-SVD", 10),
        ("confounder_independent", "CARE-Tensor", 15),
    ):
        if regime in fam:
            m = fam[regime]
            gain = 100 * (m[method] - m["MV"])
            rows.append(
                f"| {LABELS[regime]}: {method} ≥ MV + {margin} | {m[method]:.3f} vs MV {m['MV']:.3f} ({gain:+.1f}) "
                f"| {verdict(gain >= margin)} |"
            )
    if "tau" in fam:
        taus = fam["tau"]
        below = {r: taus[r]["auto (scores)"] - taus[r]["AVG"] for r in taus}
        best = np.mean(
            [
                taus[r]["auto (scores)"] - max(v for k, v in taus[r].items() if k != "auto (scores)")
                for r in taus
            ]
        )
        rows.append(
            "| `auto` on scores ≥ AVG − 0.01 Kendall τ everywhere, ≥ the best candidate − 0.02 on average | "
            + ", ".join(f"{LABELS[r].split()[0]} {d:+.3f}" for r, d in below.items())
            + f"; vs the best on average {best:+.3f} | {verdict(min(below.values()) >= -0.01 and best >= -0.02)} |"
        )
    for regime, cal in calibration.items():
        err = np.abs(cal["error"]).mean()
        cover = np.mean(cal["covered"])
        rows.append(
            f"| estimate on {LABELS[regime]}: mean abs error ≤ 0.03, interval covers ≥ 85 % | {err:.3f}, {cover:.0%} "
            f"(warned on {np.mean(cal['warned']):.0%}) | {verdict(err <= 0.03 and cover >= 0.85)} |"
        )
    # draws whose estimate is off by more than 0.03: how many a warning flagged, how many more the interval
    # covered (an estimate whose interval holds the truth states its own uncertainty), and the rest, per family
    off_by, warned, covered, silent = 0, 0, 0, {}
    for regime, cal in calibration.items():
        off = np.abs(cal["error"]) > 0.03
        flagged, held = np.array(cal["warned"], dtype=bool), np.array(cal["covered"], dtype=bool)
        off_by += int(off.sum())
        warned += int((off & flagged).sum())
        covered += int((off & ~flagged & held).sum())
        if (off & ~flagged & ~held).any():
            silent[LABELS[regime].split()[0]] = int((off & ~flagged & ~held).sum())
    rows.append(
        "| honest where it fails: every draw whose estimate is off by more than 0.03 is warned of or covered by "
        f"its interval | {off_by} off: {warned} warned, {covered} more covered"
        + (f"; neither: {', '.join(f'{k} {v}' for k, v in silent.items())}" if silent else "")
        + f" | {verdict(not silent)} |"
    )
    auto_s = seconds["auto with its estimate and identifiability"]
    rows.append(
        f"| auto with its estimate, 24 judges × 5,000 tasks × 2 orders, < 3 s | {auto_s:.2f} s | {verdict(auto_s < 3)} |"
    )
    baer, ds = seconds["baer (label-free, its import excluded)"], seconds["dawid_skene"]
    rows.append(
        f"| BAER within 3× Dawid–Skene | {baer:.2f} s vs {ds:.2f} s ({baer / ds:.1f}×) | {verdict(baer <= 3 * ds)} |"
    )
    if bar:
        rows.append(
            f"| LLMBar Natural: auto ≥ 0.95 | auto {bar['auto']:.2f} (chose {bar['auto chose']}); MV {bar['MV']:.2f}, "
            f"DS-position {bar['DS-position']:.2f} | {verdict(bar['auto'] >= 0.95)} |"
        )
    return ["Against the issues' targets:", "", "| target | measured | |", "|---|---|---|", *rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=1200)
    parser.add_argument("--regimes", nargs="*", default=list(REGIMES))
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    with section("bench/consistency.py", args.write):
        fam, bar, seconds, calibration = {}, {}, {}, {}
        for make in (
            lambda: speed(seconds),
            lambda: llmbar(bar),
            lambda: families(args.seeds, args.tasks, args.regimes, fam, calibration),
            lambda: calibration_table(calibration),
        ):
            print("\n".join(make()) + "\n", flush=True)
        print("\n".join(targets(fam, bar, seconds, calibration)))


if __name__ == "__main__":
    main()
