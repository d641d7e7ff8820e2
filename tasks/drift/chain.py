"""The calibration chain in the store: which weeks are calibrated, and what a week needs first.

Week w continues the state of the last calibrated week before it. Weeks in between are filled in order
first: a week with a completed evaluation is calibrated from it; a week without one (no evaluation ran that
Monday) carries the last calibration forward, flagged `carried_from` in its run record, so one missed
evaluation never breaks every later week. A store with no calibration yet starts a new chain.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pandas as pd

from judgeops.schemas.store import ArtifactStore


def week_start(day: dt.date) -> dt.date:
    """The Monday of `day`'s ISO week: a calibration week runs Monday to Sunday."""
    return day - dt.timedelta(days=day.weekday())


@dataclass(frozen=True)
class Calibrated:
    """A week's calibration in the store: the recalibrate run that wrote it, and whether it was carried."""

    week: dt.date
    run_id: str
    carried_from: str | None  # the week (ISO) whose calibration it repeats, when no evaluation ran

    def table(self, store: ArtifactStore) -> pd.DataFrame:
        return ArtifactStore(store.url, self.run_id).read_pandas("calibration")


class ChainIndex:
    """The store's completed evaluate and recalibrate runs by week, listed once (a remote store lists slowly)."""

    def __init__(self, store: ArtifactStore):
        self.store = store
        self.calibrations: dict[dt.date, list[dict]] = {}
        self.evaluations: dict[dt.date, list[dict]] = {}
        for record in store.list_runs():  # oldest first
            if record.get("status") != "completed" or not record.get("as_of"):
                continue
            week = week_start(dt.date.fromisoformat(record["as_of"]))
            if record.get("flow") == "recalibrate":
                self.calibrations.setdefault(week, []).append(record)
            elif record.get("flow") == "evaluate":
                self.evaluations.setdefault(week, []).append(record)

    def calibration(self, week: dt.date) -> Calibrated | None:
        """The week's latest completed recalibrate run that still has its calibration, or None."""
        for record in reversed(self.calibrations.get(week, [])):
            if self.store.exists("calibration", record["run_id"]):
                return Calibrated(week, record["run_id"], record.get("carried_from"))
        return None

    def evaluation(self, week: dt.date) -> str | None:
        """The run id of the week's latest completed evaluate run, or None."""
        runs = self.evaluations.get(week)
        return runs[-1]["run_id"] if runs else None

    def plan(self, week: dt.date, from_scratch: bool = False) -> ChainPlan:
        """Walk back from the week before `week` to the last calibrated one.

        The walk stops at the store's first evaluated week: before it there is nothing to calibrate, and a
        chain that finds no calibration starts at the first evaluated week of the gap (from_scratch: at `week`
        itself)."""
        if from_scratch:
            return ChainPlan(None, [])
        first = min(self.evaluations, default=week)
        gaps: list[dt.date] = []
        day = week - dt.timedelta(weeks=1)
        while day >= first:
            done = self.calibration(day)
            if done is not None:
                return ChainPlan(done, gaps[::-1])
            gaps.append(day)
            day -= dt.timedelta(weeks=1)
        gaps = gaps[::-1]
        while gaps and self.evaluation(gaps[0]) is None:  # a new chain starts with an evaluated week
            gaps.pop(0)
        return ChainPlan(None, gaps)


@dataclass(frozen=True)
class ChainPlan:
    """What calibrating a week takes: the state it continues from, and the earlier weeks to fill first."""

    previous: Calibrated | None  # None: a new chain
    gaps: list[dt.date]  # weeks after `previous` and before the week, oldest first
