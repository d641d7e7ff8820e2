"""Majority vote and score averaging: the label-free baselines every other method must beat."""

from __future__ import annotations

import pandas as pd

TIE = "tie"


def _check(df: pd.DataFrame, columns: tuple[str, ...], name: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{name}.fit: expected a long table with columns {list(columns)}, missing {missing}")


class MajorityVote:
    """The most frequent label of each task; ties are reported as ties, never broken by column order.

    Input: a long table `task, worker, label` (a missing vote is a missing row).

    >>> votes = pd.DataFrame({"task": [1, 1, 1, 2, 2], "worker": list("abcab"), "label": list("AABAB")})
    >>> MajorityVote().fit_predict(votes).tolist()
    ['A', 'tie']
    """

    def fit(self, df: pd.DataFrame) -> MajorityVote:
        _check(df, ("task", "worker", "label"), "MajorityVote")
        counts = df.groupby(["task", "label"]).size().unstack(fill_value=0)
        self.counts_ = counts
        self.probas_ = counts.div(counts.sum(axis=1), axis=0)
        top = counts.max(axis=1)
        tied = counts.eq(top, axis=0).sum(axis=1) > 1
        self.labels_ = counts.idxmax(axis=1).astype(object).where(~tied, TIE)
        return self

    def fit_predict(self, df: pd.DataFrame) -> pd.Series:
        return self.fit(df).labels_

    def fit_predict_proba(self, df: pd.DataFrame) -> pd.DataFrame:
        return self.fit(df).probas_


class ScoreAverage:
    """The mean score of each task: `task, worker, score` → score_ (AVG in the papers)."""

    def fit(self, df: pd.DataFrame) -> ScoreAverage:
        _check(df, ("task", "worker", "score"), "ScoreAverage")
        grouped = df.groupby("task")["score"]
        self.scores_ = grouped.mean()
        self.counts_ = grouped.size()
        return self

    def fit_predict(self, df: pd.DataFrame) -> pd.Series:
        return self.fit(df).scores_
