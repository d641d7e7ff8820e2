"""The report's charts, each a PNG as a base64 data URI (matplotlib on the non-interactive backend)."""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd

from judgeops.tasks.profile.conditions import CAP, CONDITION_BY_NAME


def _plt():
    """pyplot on the non-interactive backend (imported on first use: matplotlib costs start-up time)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def grouped_ci_chart(profiles: pd.DataFrame, conditions: list[str], title: str) -> str:
    """Bars of estimate per judge, one colour per condition, with the 95% CI as error bars."""
    plt = _plt()
    judges = sorted(profiles["judge_id"].unique())
    cells = profiles.set_index(["judge_id", "condition"])
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(judges)), 3.6))
    width = 0.8 / len(conditions)
    x = np.arange(len(judges))
    for k, cond in enumerate(conditions):
        est = np.array([cells["estimate"].get((j, cond), np.nan) for j in judges])
        lo = np.array([cells["ci_low"].get((j, cond), np.nan) for j in judges])
        hi = np.array([cells["ci_high"].get((j, cond), np.nan) for j in judges])
        ax.bar(
            x + (k - (len(conditions) - 1) / 2) * width,
            est,
            width,
            yerr=[est - lo, hi - est],
            capsize=2,
            label=f"{cond} ({CONDITION_BY_NAME[cond].label})",
        )
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, judges, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.28), frameon=False)
    return _png(fig)


def heatmap_chart(profiles: pd.DataFrame, conditions: list[str]) -> str:
    """Judges × conditions, colour = estimate, each cell annotated with its estimate and 95% CI."""
    plt = _plt()
    conditions = [c for c in conditions if c in set(profiles["condition"])]
    cells = profiles.set_index(["judge_id", "condition"])
    judges = sorted(profiles["judge_id"].unique())
    est = np.array([[cells["estimate"].get((j, c), np.nan) for c in conditions] for j in judges])
    fig, ax = plt.subplots(figsize=(1.25 * len(conditions) + 2.5, 0.55 * len(judges) + 1.5))
    im = ax.imshow(np.ma.masked_invalid(est), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    for i, j in enumerate(judges):
        for k, c in enumerate(conditions):
            if (j, c) in cells.index:
                r = cells.loc[(j, c)]
                ax.text(
                    k,
                    i,
                    f"{r.estimate:.2f}\n[{r.ci_low:.2f},{r.ci_high:.2f}]",
                    ha="center",
                    va="center",
                    fontsize=6.5,
                )
    ax.set_xticks(range(len(conditions)), conditions, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(judges)), judges, fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.025, pad=0.02, label="estimate")
    ax.set_title("Judges × CAP conditions (estimate, 95% CI); blank = no cell")
    return _png(fig)


def radar_chart(profiles: pd.DataFrame, conditions: list[str] = CAP) -> str:
    """One small radar per judge over C1–C8 (a missing cell is drawn at 0 and named in the title)."""
    plt = _plt()
    judges = sorted(profiles["judge_id"].unique())
    cells = profiles.set_index(["judge_id", "condition"])["estimate"]
    cols = min(4, len(judges))
    rows = int(np.ceil(len(judges) / cols))
    fig, axes = plt.subplots(
        rows, cols, subplot_kw={"projection": "polar"}, figsize=(3.1 * cols, 3.1 * rows), squeeze=False
    )
    angles = np.linspace(0, 2 * np.pi, len(conditions), endpoint=False)
    for ax, judge in zip(axes.ravel(), judges, strict=False):
        values = np.array([cells.get((judge, c), np.nan) for c in conditions])
        closed = np.append(np.nan_to_num(values), np.nan_to_num(values[0]))
        ax.plot(np.append(angles, angles[0]), closed, lw=1.5)
        ax.fill(np.append(angles, angles[0]), closed, alpha=0.25)
        ax.set_xticks(angles, [c.split("_")[0] for c in conditions], fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.5, 1.0], ["", ""])
        missing = [c.split("_")[0] for c, v in zip(conditions, values, strict=True) if np.isnan(v)]
        ax.set_title(judge + (f"\n(no {', '.join(missing)})" if missing else ""), fontsize=8)
    for ax in axes.ravel()[len(judges) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return _png(fig)


def bias_matrix_chart(bias: pd.DataFrame) -> str:
    """Judges × examinees, colour = DirectionalBias (red: lenient, blue: strict), n per cell, self-evaluation
    cells boxed."""
    plt = _plt()
    judges, examinees = sorted(bias["judge_id"].unique()), sorted(bias["examinee"].unique())
    cells = bias.set_index(["judge_id", "examinee"])
    grid = np.array([[cells["directional_bias"].get((j, e), np.nan) for e in examinees] for j in judges])
    fig, ax = plt.subplots(figsize=(1.3 * len(examinees) + 3, 0.6 * len(judges) + 1.6))
    im = ax.imshow(np.ma.masked_invalid(grid), cmap="coolwarm", vmin=-1, vmax=1, aspect="auto")
    for i, j in enumerate(judges):
        for k, e in enumerate(examinees):
            if (j, e) not in cells.index:
                continue
            r = cells.loc[(j, e)]
            text = "–" if np.isnan(r.directional_bias) else f"{r.directional_bias:+.2f}"
            ax.text(k, i, f"{text}\nn={r.n}", ha="center", va="center", fontsize=7)
            if r.self_evaluation:
                ax.add_patch(plt.Rectangle((k - 0.5, i - 0.5), 1, 1, fill=False, lw=2.2, ec="black"))
    ax.set_xticks(range(len(examinees)), examinees, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(judges)), judges, fontsize=8)
    ax.set_xlabel("examinee")
    fig.colorbar(im, ax=ax, fraction=0.03, pad=0.02, label="FPR − FNR")
    ax.set_title("Directional bias (red: lenient, blue: strict; boxed: self-evaluation)")
    return _png(fig)


def calibration_chart(calibration: pd.DataFrame) -> str:
    """FPR and FNR per judge over the weeks, one panel per estimator."""
    plt = _plt()
    estimators = sorted(calibration["estimator"].unique())
    fig, axes = plt.subplots(1, len(estimators), figsize=(4.6 * len(estimators), 3.2), squeeze=False)
    for ax, est in zip(axes[0], estimators, strict=True):
        part = calibration[calibration["estimator"] == est].sort_values("week")
        for k, (judge, g) in enumerate(part.groupby("judge_id")):
            colour = f"C{k % 10}"
            ax.plot(g["week"], g["fpr"], color=colour, marker="o", ms=3, label=f"{judge} FPR")
            ax.plot(g["week"], g["fnr"], color=colour, marker="x", ms=3, ls="--", label=f"{judge} FNR")
        ax.set_title(est)
        ax.set_ylim(0, 1)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)
    axes[0][0].set_ylabel("error rate")
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    fig.tight_layout()
    return _png(fig)
