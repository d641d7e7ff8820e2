"""Majority vote and score averaging: the label-free baselines every other method must beat."""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgeops.tasks.aggregate._base import TIE, check_frame, two_component_posterior

__all__ = ["TIE", "MajorityVote", "ScoreAverage"]


class MajorityVote:
    """The most frequent label of each task; ties are reported as ties, never broken by column order.

    Input: a long table `task, worker, label` (a missing vote is a missing row). Any number of labels.

    >>> votes = pd.DataFrame({"task": [1, 1, 1, 2, 2], "worker": list("abcab"), "label": list("AABAB")})
    >>> MajorityVote().fit_predict(votes).tolist()
    ['A', 'tie']
    """

    def fit(self, df: pd.DataFrame) -> MajorityVote:
        df = check_frame(df, "label", "MajorityVote")
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
    """The mean score of each task: `task, worker, score` → `scores_` (AVG in the papers).

    Binary decisions (`labels_`, `probas_`, first class = high score): scores that are probabilities
    (all in [0, 1]) are read as P(first class) and cut at 0.5 (exactly 0.5 is a tie); other scales are
    split by a two-component mixture on the averages, with no labels and no assumed class balance."""

    def __init__(self, classes: tuple[str, str] = ("A", "B")):
        self.classes = classes

    def fit(self, df: pd.DataFrame) -> ScoreAverage:
        df = check_frame(df, "score", "ScoreAverage")
        grouped = df.groupby("task")["score"]
        self.scores_ = grouped.mean()
        self.scale_ = "input"  # the judges' own scale: MAE against score truth means something
        self.counts_ = grouped.size()
        s = self.scores_.to_numpy()
        p = s if ((s >= 0) & (s <= 1)).all() else two_component_posterior(s)
        first, second = self.classes
        self.probas_ = pd.DataFrame({first: p, second: 1 - p}, index=self.scores_.index)
        self.labels_ = pd.Series(
            np.where(p > 0.5, first, np.where(p < 0.5, second, TIE)).astype(object), index=self.scores_.index
        )
        return self

    def fit_predict(self, df: pd.DataFrame) -> pd.Series:
        return self.fit(df).scores_

    def fit_predict_proba(self, df: pd.DataFrame) -> pd.DataFrame:
        return self.fit(df).probas_
