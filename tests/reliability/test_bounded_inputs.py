"""Every input bounded. `audit apply` used label weights of -5, 0 and NaN (exit 0), ran silent for over 10 minutes
on a 2,000,000-row labels file, and used 18 of 20 records of a log with torn lines without a word; an
unterminated CSV quote lost the 5 good rows after it; one empty file among good sources stopped the whole ingest.
Each through the real command line or the ingest task."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from judgeops.config import FileSource
from judgeops.tasks.ingest import ingest_items

JUDGEOPS = [sys.executable, "-m", "judgeops.cli"]


@pytest.fixture
def votes(tmp_path):
    rng = np.random.default_rng(0)
    rows = [
        pd.DataFrame(
            {"task": [f"t{i}" for i in range(60)], "worker": f"j{j}", "label": rng.choice(["A", "B"], 60)}
        )
        for j in range(3)
    ]
    path = tmp_path / "votes.csv"
    pd.concat(rows).to_csv(path, index=False)
    return path


def _apply(votes, labels, *more) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*JUDGEOPS, "audit", "apply", str(votes), "--labels", str(labels), *more],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("weight", ["-5", "0", "NaN", "inf", "heavy"])
def test_a_label_weight_that_is_not_positive_and_finite_is_refused_naming_its_row(votes, tmp_path, weight):
    labels = tmp_path / "labels.csv"
    labels.write_text(f"task,label,weight\nt1,A,2.0\nt2,B,{weight}\nt3,A,1.5\n")
    done = _apply(votes, labels)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{labels}, row 3, field 'weight'" in done.stderr and "positive finite" in done.stderr


def test_a_labels_file_past_its_size_is_refused_at_once(votes, tmp_path, figure):
    n = 2_000_000
    labels = tmp_path / "labels.csv"
    pd.DataFrame({"task": [f"t{i % 60}" for i in range(n)], "label": "A", "annotator": "p"}).to_csv(
        labels, index=False
    )
    t0 = time.monotonic()
    done = _apply(votes, labels)
    took = time.monotonic() - t0
    assert done.returncode == 2 and "2,000,000 rows, more than the 200,000" in done.stderr
    figure(
        "audit apply on a 2,000,000-row labels file",
        "refused with one line naming the file and the bound",
        f"exit 2 in {took:.1f} s (was silent past 600 s at 1 GB)",
    )


def test_log_lines_left_out_are_counted_and_named(votes, tmp_path, figure):
    log = tmp_path / "audit.labels.jsonl"
    lines = [
        json.dumps({"task": f"t{i}", "label": "A", "annotator": "ann", "weight": 1.0}) for i in range(18)
    ]
    lines.insert(5, '{"task": "t40", "label": "A", "annot')  # a line torn in the middle (a crash, then more)
    lines.insert(9, "[1, 2, 3]")
    log.write_text("\n".join(lines) + "\n")
    done = _apply(votes, log)
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "2 line(s) left out of 20" in warning[0] and f"{log}:6" in warning[0]
    figure(
        "audit apply on a label log with 2 unreadable lines of 20",
        "the lines left out counted and named",
        f"18 of 20 used, and said: {warning[0][:110]}…",
    )


def test_an_unterminated_quote_keeps_the_good_rows_after_it(tmp_path, figure):
    path = tmp_path / "qa.csv"
    good = "".join(f"What is {i} + {i}?,{2 * i}\n" for i in range(3, 8))
    path.write_text(f'question,answer\nWhat is 1 + 1?,2\n"What is 2 + 2?,4\n{good}')
    result = ingest_items([FileSource(path=str(path), format="csv")])
    (reason,) = result.quarantine["quarantine_reason"]
    assert len(result.items) == 6 and reason.startswith(f"{path}, line 3: malformed CSV")
    figure(
        "a CSV with a quote left open on line 3 of 7 rows",
        "only that row quarantined; the rows after it kept",
        f"{len(result.items)} of 7 rows kept, 1 quarantined (was 1 kept: the 5 after it lost)",
    )


def test_an_empty_file_among_good_sources_is_skipped_with_a_warning(tmp_path, figure):
    for i in range(4):
        (tmp_path / f"part{i}.jsonl").write_text(
            "".join(json.dumps({"question": f"Q{i}.{j}?", "answer": str(j)}) + "\n" for j in range(5))
        )
    (tmp_path / "part9.jsonl").write_text("")
    result = ingest_items([FileSource(path=str(tmp_path))])
    (reason,) = result.quarantine["quarantine_reason"]
    assert len(result.items) == 20 and "part9.jsonl" in reason and "empty" in reason
    figure(
        "one empty file among 5 source files of 20 items",
        "a warning and a quarantine row naming it; the rest ingested",
        f"{len(result.items)} of 20 kept (was 0: the ingest stopped)",
    )
