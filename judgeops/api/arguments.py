"""The types of the command line's options (judgeops/commands.yaml's `type:`): each refuses, in one line, a value
that is not one, so a negative count or a NaN never reaches a run."""

from __future__ import annotations

import argparse
import datetime as dt


def _typed(cast, expected: str, ok=lambda v: True):
    """An argparse type: `cast(text)` where `ok` holds, else one line saying what was expected."""

    def parse(text: str):
        try:
            value = cast(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


OPTION_TYPES = {
    "date": _typed(dt.date.fromisoformat, "a date as YYYY-MM-DD"),
    "int": _typed(int, "a whole number"),
    "count": _typed(int, "a whole number ≥ 1", lambda v: v >= 1),
    "port": _typed(int, "a port number (1-65535)", lambda v: 1 <= v <= 65535),
    "float": _typed(float, "a number", lambda v: v == v and abs(v) != float("inf")),
    "positive": _typed(float, "a number > 0", lambda v: 0 < v < float("inf")),
    "probability": _typed(float, "a number strictly between 0 and 1", lambda v: 0 < v < 1),
}
