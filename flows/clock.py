"""The flows' one clock: the date a run is about (given, else its scheduled start, else today). Stages never
read the clock; the flows pass them this date (`as_of`) and the time the run started (`now`)."""

from __future__ import annotations

import datetime as dt

from prefect import runtime


def run_date(given: dt.date | None = None) -> dt.date:
    """The date a flow run is about: as given, else the scheduled start of this flow run, else today."""
    if given is not None:
        return given
    scheduled = runtime.flow_run.scheduled_start_time
    return scheduled.date() if scheduled else dt.date.today()


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
