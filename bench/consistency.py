"""Perturbation-consistency methods and `auto` on every regime family, the LLMBar panel, and speed.

    python bench/consistency.py [--seeds 50] [--tasks 1200]

Prints markdown: accuracy (mean ± sd over `--seeds` random draws of each regime family's parameters,
tasks/aggregate/synthetic.py `family=True`) of MV, DS, CWV, DS-position and auto, beside the best single
judge (picked with the truth, position-averaged: a bar, not a method); how often auto chose each method;
the LLMBar Natural panel (6 real LLM judges, both orders as runs); and the time of the consistency
signals + auto on 24 judges × 5,000 tasks × 2 orders. Pin to two cores (`taskset -c 0,1`).
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
from judgeops.tasks.aggregate.synthetic import REGIMES, best_single_judge, make_panel

warnings.filterwarnings("ignore", category=UserWarning)
PANEL6 = Path(__file__).resolve().parents[2] / "shared" / "data" / "llmbar" / "natural_vanilla_panel6.csv"
LABELS = {r: f"({n}) {r}" for n, r in zip(["i", "ii", "iii", "iv", "v", "vi", "vii"], REGIMES, strict=True)}
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
SCORED = ["AVG", "UWS", "CARE-SVD", "CARE-Tensor", "DS", "auto"]


def accuracy(labels: pd.Series, truth: pd.Series) -> float:
    return float((labels.reindex(truth.index) == truth).mean())


def fit(method: str, votes: pd.DataFrame):
    """Score methods read scores (P(A) per run; 1/0 from the label where a panel has none); BAER reads the
    votes per run, as in bench/aggregate.py; the rest read labels and the run columns."""
    if "score" not in votes.columns:
        votes = votes.assign(score=(votes["label"] == "A").astype(float))
    kind = "score" if method in ("avg", "uws", "care_svd", "care_tensor") else "label"
    cols = ["task", "worker", kind] + [c for c in RUN_COLUMNS if c in votes.columns]
    params = {"input": "label"} if method == "baer" else {}
    return get_aggregator(method, **params).fit(votes[cols])


def rank_and_error(est, truth: pd.Series) -> tuple[float, float]:
    """Kendall τ-b of the consensus P(A) with the truth, and its mean absolute error against 1{truth = A}."""
    from scipy.stats import kendalltau

    p = est.probas_["A"].reindex(truth.index).fillna(0.5).to_numpy()
    y = (truth == "A").to_numpy(dtype=float)
    return float(kendalltau(p, y).statistic), float(np.abs(p - y).mean())


def families(seeds: int, tasks: int, means: dict) -> list[str]:
    """The family tables; fills `means[regime][column]` with the mean accuracies for the targets table."""
    cols = list(METHODS)
    lines = [
        "| regime family | best single judge | " + " | ".join(cols) + " | auto − MV | auto chose |",
        "|---" * (len(cols) + 4) + "|",
    ]
    ranks = [
        "",
        "Score panels: Kendall τ-b of each consensus P(A) with the truth / MAE of P(A) against it "
        "(mean over the same draws):",
        "",
        "| regime family | " + " | ".join(SCORED) + " |",
        "|---" * (len(SCORED) + 1) + "|",
    ]
    for regime in REGIMES:
        acc: dict[str, list[float]] = {c: [] for c in ["best", *cols]}
        tau: dict[str, list[tuple[float, float]]] = {c: [] for c in SCORED}
        chose: Counter = Counter()
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
                    tau[col].append(rank_and_error(est, panel.truth))
                if method == "auto":
                    chose[est.choice_] += 1
        if regime in SCORE_REGIMES:
            ranks.append(
                f"| {LABELS[regime]} | "
                + " | ".join(
                    f"{np.mean([t for t, _ in tau[c]]):.3f} / {np.mean([m for _, m in tau[c]]):.3f}"
                    for c in SCORED
                )
                + " |"
            )
        means[regime] = {c: float(np.mean(v)) for c, v in acc.items()}
        gap = np.array(acc["auto"]) - np.array(acc["MV"])
        lines.append(
            f"| {LABELS[regime]} | {np.mean(acc['best']):.3f} ± {np.std(acc['best']):.3f} | "
            + " | ".join(f"{np.mean(acc[c]):.3f} ± {np.std(acc[c]):.3f}" for c in cols)
            + f" | {100 * gap.mean():+.1f} pts | {', '.join(f'{k} {v}' for k, v in chose.most_common())} |"
        )
        print(lines[-1], file=sys.stderr, flush=True)  # progress
    return lines + ranks


def llmbar(means: dict) -> list[str]:
    if not PANEL6.exists():
        return [f"(LLMBar panel skipped: {PANEL6} not found)"]
    wide = pd.read_csv(PANEL6)
    rows = []
    for col in [c for c in wide.columns if "__order" in c]:
        judge, order = col.split("__order")
        # canonical frame: A = output_1; run "AB" = output_1 shown first (order 12)
        vals = wide[col]
        rows.append(
            pd.DataFrame(
                {
                    "task": wide["idx"].astype(str),
                    "worker": judge,
                    "run": "AB" if order == "12" else "BA",
                    "label": vals.map({1: "A", 2: "B"}),
                }
            )
        )
    votes = pd.concat(rows).dropna(subset=["label"])
    truth = pd.Series(wide["label"].map({1: "A", 2: "B"}).to_numpy(), index=wide["idx"].astype(str))
    lines = ["| method | accuracy (100 pairs, both orders as runs) |", "|---|---|"]
    for col, method in METHODS.items():
        est = fit(method, votes)
        extra = f" (chose {est.choice_})" if method == "auto" else ""
        means[col] = accuracy(est.labels_, truth)
        means["auto chose"] = est.choice_ if method == "auto" else means.get("auto chose")
        lines.append(f"| {col} | {means[col]:.2f}{extra} |")
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
    for name, work in {
        "consistency signals": lambda: consistency_signals(votes),
        "auto (signals, cwv, its choice)": lambda: get_aggregator("auto").fit(votes),
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


def targets(fam: dict, bar: dict, seconds: dict) -> list[str]:
    """The issues' targets, each against this run's numbers."""
    label_free = [c for c in METHODS if c != "auto"]

    def best_free(regime: str) -> tuple[str, float]:
        return max(((c, fam[regime][c]) for c in label_free), key=lambda x: x[1])

    def verdict(ok: bool) -> str:
        return "met" if ok else "**not met**"

    rows = []
    for regime, need in (
        ("adversarial_surface", "≥ best single judge − 1 point and ≥ MV + 20"),
        ("clique_shared_bias", "≥ best single judge"),
    ):
        m = fam[regime]
        name, value = best_free(regime)
        ok = (
            value >= m["best"] - 0.01 and value >= m["MV"] + 0.20
            if regime == "adversarial_surface"
            else value >= m["best"]
        )
        rows.append(
            f"| {LABELS[regime]}: a label-free method {need} | {name} {value:.3f} vs best judge {m['best']:.3f}, "
            f"MV {m['MV']:.3f} | {verdict(ok)} |"
        )
    gaps = {r: 100 * (fam[r]["auto"] - fam[r]["MV"]) for r in fam}
    rows.append(
        "| `auto` ≥ MV − 1 point on every family | "
        + ", ".join(f"{LABELS[r].split()[0]} {g:+.1f}" for r, g in gaps.items())
        + f" | {verdict(min(gaps.values()) >= -1.0)} |"
    )
    for regime, method, margin in (
        ("confounder_follows_quality", "CARE-SVD", 10),
        ("confounder_independent", "CARE-Tensor", 15),
    ):
        m = fam[regime]
        gain = 100 * (m[method] - m["MV"])
        rows.append(
            f"| {LABELS[regime]}: {method} ≥ MV + {margin} | {m[method]:.3f} vs MV {m['MV']:.3f} ({gain:+.1f}) "
            f"| {verdict(gain >= margin)} |"
        )
    rows.append(
        f"| consistency signals + `auto`, 24 judges × 5,000 tasks × 2 orders, < 2 s | "
        f"{seconds['consistency signals']:.2f} s and {seconds['auto (signals, cwv, its choice)']:.2f} s "
        f"| {verdict(seconds['auto (signals, cwv, its choice)'] < 2)} |"
    )
    if bar:
        name, value = max(((c, bar[c]) for c in label_free if c != "MV"), key=lambda x: x[1])
        rows.append(
            f"| LLMBar Natural: label-free ≥ MV | {name} {value:.2f} vs MV {bar['MV']:.2f}; auto {bar['auto']:.2f} "
            f"(chose {bar['auto chose']}) | {verdict(value >= bar['MV'])}; auto {verdict(bar['auto'] >= bar['MV'])} |"
        )
    return ["Against the issues' targets:", "", "| target | measured | |", "|---|---|---|", *rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=1200)
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    args = parser.parse_args()
    with section("bench/consistency.py", args.write):
        fam, bar, seconds = {}, {}, {}
        for make in (
            lambda: speed(seconds),
            lambda: llmbar(bar),
            lambda: families(args.seeds, args.tasks, fam),
        ):
            print("\n".join(make()) + "\n", flush=True)
        print("\n".join(targets(fam, bar, seconds)))


if __name__ == "__main__":
    main()
