"""A judge backend, an aggregator and a source format from outside judgeops, registered by entry point."""

from __future__ import annotations

import re

import pandas as pd

from judgeops.tasks.judges.calls import Call, Reply

_FENCE = re.compile(r"<<<(ANSWER_A|ANSWER_B|ANSWER)\n(.*?)\n\1>>>", re.S)


class ShorterAnswerBackend:
    """A judge with a known bias: the shorter answer wins (yes for an answer alone under 200 characters)."""

    def __init__(self, judge):
        self.judge = judge

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        out = {}
        for call in calls:
            parts = dict(_FENCE.findall(call.request.prompt))
            if "ANSWER" in parts:
                text = "yes" if len(parts["ANSWER"]) < 200 else "no"
            else:
                text = "A" if len(parts.get("ANSWER_A", "")) <= len(parts.get("ANSWER_B", "")) else "B"
            out[call.key] = Reply(
                text=text, probs={text: 0.9}, tokens_in=len(call.request.prompt) // 4, tokens_out=1
            )
        return out

    def close(self) -> None:
        pass


class Unanimous:
    """A task's label when every judge gives it, else a tie (`task, worker, label` in; `probas_`, `labels_`)."""

    default_input = "label"

    def fit(self, df: pd.DataFrame) -> Unanimous:
        counts = df.groupby(["task", "label"]).size().unstack(fill_value=0)
        agreed = counts.gt(0).sum(axis=1) == 1
        self.probas_ = counts.div(counts.sum(axis=1), axis=0).where(agreed, 0.5)
        self.labels_ = counts.idxmax(axis=1).where(agreed, "tie")
        return self

    def fit_predict(self, df: pd.DataFrame) -> pd.Series:
        return self.fit(df).labels_


def read_qa_lines(path, source):
    """`question ||| answer` per line; a line without the separator is given as is (judgeops quarantines it)."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                question, _, answer = line.partition("|||")
                yield {"question": question.strip(), "answer": answer.strip()} if answer else line
