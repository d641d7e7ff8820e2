"""`judgeops label`: people label an audit in the browser, every answer durable, their agreement measured, their
conflicts adjudicated, and the refit consensus uses the adjudicated labels. The server runs as a user runs it (the
command line, a real uvicorn on 127.0.0.1) and the page in headless Chromium, driven by the keyboard."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgeops import api
from judgeops.cli import main
from judgeops.tasks.labelling import display_order, log
from tests.browser import driver, needs_chromium

JUDGEOPS = str(Path(sys.executable).with_name("judgeops"))
SCRIPT = "<script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'


@pytest.fixture
def audit_files(tmp_path):
    """30 pairwise tasks voted by 3 judges in both orders, an audit of 10, and the items' texts — with markup in a
    question and an answer that must stay text."""
    rng = np.random.default_rng(0)
    n = 30
    y = rng.integers(0, 2, n)
    rows = []
    for j, acc in enumerate([0.9, 0.7, 0.6]):
        for run in ("AB", "BA"):
            right = rng.random(n) < acc
            label = np.where(right == (y == 1), "A", "B")
            rows.append(
                pd.DataFrame(
                    {"task": [f"t{i}" for i in range(n)], "worker": f"j{j}", "run": run, "label": label}
                )
            )
    votes = tmp_path / "votes.csv"
    pd.concat(rows).to_csv(votes, index=False)
    items = tmp_path / "items.csv"
    pd.DataFrame(
        {
            "task": [f"t{i}" for i in range(n)],
            "question": [f"Question {i}: which answer is right? {SCRIPT}" for i in range(n)],
            "answer_A": [f"answer A of t{i} {IMG}" for i in range(n)],
            "answer_B": [f"answer B of t{i}" for i in range(n)],
        }
    ).to_csv(items, index=False)
    proposal, _ = api.audit_propose(str(votes), 10)
    audit = tmp_path / "audit.csv"
    proposal.to_csv(audit, index=False)
    return votes, audit, items


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(votes: Path, audit: Path, items: Path, port: int, *extra: str) -> subprocess.Popen:
    """`judgeops label` over an audit file, as a user starts it; returns once the page answers."""
    args = ["label", str(votes), "--audit", str(audit), "--items", str(items), "--port", str(port), *extra]
    return start_command(args, port)


TOKEN = "a-test-session-token"  # the page's token (JUDGEOPS_LABEL_TOKEN): every request carries it


def start_command(args: list[str], port: int, env: dict | None = None) -> subprocess.Popen:
    """`judgeops ARGS` serving the annotation page on `port` with the session token TOKEN; returns once the page
    answers."""
    cmd = [JUDGEOPS, *args]
    env = {**(env or os.environ), "JUDGEOPS_LABEL_TOKEN": TOKEN}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"judgeops label exited: {proc.stdout.read()}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/?token={TOKEN}", timeout=1).read()
            return proc
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("judgeops label did not answer within 60 s")


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> None:
    proc.send_signal(sig)
    proc.wait(timeout=30)


def wait_for(browser, script: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {script}")


def label_by_keyboard(
    browser, port: int, who: str, answers: int, pick, note: str | None = None
) -> list[tuple]:
    """Open the page as `who` and answer `answers` items by keyboard: `pick(task, shown_labels)` gives the key.
    Returns (task, key, the class shown under that key) per answer."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(f"http://127.0.0.1:{port}/?token={TOKEN}&annotator={who}")
    wait_for(browser, "return document.getElementById('progress').textContent")
    given = []
    for _ in range(answers):
        task = wait_for(browser, "return document.getElementById('task-id').textContent").split()[1]
        shown = [
            browser.find_element(By.ID, f"choice-{i}").find_element(By.CSS_SELECTOR, ".text").text
            for i in (0, 1)
        ]
        labels = ["A" if s.startswith("answer A") else "B" for s in shown]
        key = pick(task, labels)
        if note:
            browser.find_element(By.ID, "note").send_keys(note, Keys.ESCAPE)
        done_before = browser.execute_script("return document.getElementById('progress').textContent")
        browser.find_element(By.TAG_NAME, "body").send_keys(key)
        wait_for(
            browser, f"return document.getElementById('progress').textContent !== {json.dumps(done_before)}"
        )
        given.append((task, key, labels[int(key) - 1] if key in "12" else {"t": "tie", "s": "skip"}[key]))
    return given


@needs_chromium
def test_two_reviewers_label_by_keyboard_survive_a_killed_server_and_an_adjudicator_settles_their_conflicts(
    audit_files, tmp_path
):
    votes, audit, items = audit_files
    port = free_port()
    logfile = audit.with_suffix(".labels.jsonl")
    browser = driver()
    server = start(votes, audit, items, port)
    try:
        # alice takes the answer with "A" in it; she answers 6, and the server is killed (no goodbye)
        alice = label_by_keyboard(browser, port, "alice", 6, lambda task, shown: str(shown.index("A") + 1))
        stop(server, signal.SIGKILL)
        records, problems = log.read(logfile)
        assert len(records) == 6 and not problems
        # what was recorded is what she saw under the key she pressed, in her own order of the candidates
        assert [(r.task, r.label) for r in records.itertuples()] == [(t, shown) for t, _, shown in alice]
        assert all(label == "A" for *_, label in alice)
        server = start(votes, audit, items, port)
        browser.get(f"http://127.0.0.1:{port}/?token={TOKEN}&annotator=alice")
        assert wait_for(browser, "return document.getElementById('progress').textContent") == "6 of 10"
        alice += label_by_keyboard(browser, port, "alice", 4, lambda task, shown: str(shown.index("A") + 1))
        assert wait_for(browser, "return document.getElementById('done-text').textContent").startswith(
            "All 10"
        )
        # bob takes "B" on the first 4 items he sees and "A" after, with a note full of markup
        seen = []

        def bob_pick(task, shown):
            seen.append(task)
            return str(shown.index("B" if len(seen) <= 4 else "A") + 1)

        label_by_keyboard(browser, port, "bob", 10, bob_pick, note=f"bob's note {IMG}")
        assert browser.execute_script("return window.__pwned") is None
        # the judges' verdicts appear only when asked for, after answering
        browser.find_element("tag name", "body").send_keys("\ue012")  # ← : back to bob's last item
        browser.find_element("tag name", "body").send_keys("v")
        wait_for(browser, "return !document.getElementById('reveal-box').classList.contains('hidden')")
        assert browser.execute_script("return document.getElementById('verdicts').rows.length") == 1 + 6
    finally:
        stop(server)
    agreement = json.loads(
        subprocess.run(
            [JUDGEOPS, "audit", "apply", str(votes), "--labels", str(logfile), "--json"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["annotators"]
    assert agreement["n_annotators"] == 2 and agreement["n_tasks"] == 10
    assert agreement["kappa"] is not None and len(agreement["conflicts"]) == 4
    conflicts = set(agreement["conflicts"])

    # the adjudicator sees only the conflicts, with what each reviewer said (markup shown as text), and settles them
    server = start(votes, audit, items, port, "--adjudicate")
    try:
        browser.get(f"http://127.0.0.1:{port}/?token={TOKEN}&annotator=carol")
        assert wait_for(browser, "return document.getElementById('progress').textContent") == "0 of 4"
        notes = browser.execute_script("return document.getElementById('people').textContent")
        assert IMG in notes  # the note's and the question's markup are text on the page
        assert SCRIPT in browser.execute_script("return document.getElementById('question').textContent")
        settled = label_by_keyboard(browser, port, "carol", 4, lambda task, shown: str(shown.index("B") + 1))
        assert {t for t, *_ in settled} == conflicts
        assert browser.execute_script("return window.__pwned") is None
    finally:
        stop(server)
        browser.quit()
    out = tmp_path / "consensus.csv"
    assert main(["audit", "apply", str(votes), "--labels", str(logfile), "--out", str(out)]) == 0
    refit = pd.read_csv(out).set_index("task")["label"]
    # the audited tasks keep their labels: the conflicts take carol's B, the agreed ones the reviewers' A
    assert (refit[sorted(conflicts)] == "B").all()
    agreed = [t for t, *_ in alice if t not in conflicts]
    assert len(agreed) == 6 and (refit[agreed] == "A").all()


def test_each_answer_is_checked_before_it_is_written(audit_files):
    votes, audit, items = audit_files
    port = free_port()
    server = start(votes, audit, items, port)
    task = pd.read_csv(audit)["task"].iloc[0]

    def post(body: dict, content_type: str = "application/json") -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/label",
            json.dumps(body).encode(),
            {"Content-Type": content_type, "X-Judgeops-Token": TOKEN},
        )
        try:
            with urllib.request.urlopen(request) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    try:
        assert post({"task": task, "label": "C", "annotator": "ann"}) == (
            400,
            {"error": "label: not one of ['A', 'B', 'tie', 'skip']"},
        )
        assert post({"task": "t-none", "label": "A", "annotator": "ann"}) == (
            400,
            {"error": "task: not in the audit"},
        )
        assert post({"task": task, "label": "A", "annotator": " "}) == (400, {"error": "annotator: empty"})
        assert (
            post({"task": task, "label": "A", "annotator": "ann"}, "text/plain")[0] == 415
        )  # no cross-site form
        with pytest.raises(urllib.error.HTTPError, match="403"):  # blind until answered
            urllib.request.urlopen(
                f"http://127.0.0.1:{port}/api/reveal?task={task}&annotator=ann&token={TOKEN}"
            )
        assert post({"task": task, "label": "tie", "annotator": "<b>ann</b>", "note": IMG})[0] == 200
    finally:
        stop(server)
    records, _ = log.read(audit.with_suffix(".labels.jsonl"))
    assert records[["task", "label", "annotator", "note"]].values.tolist() == [
        [task, "tie", "<b>ann</b>", IMG]
    ]


def test_a_torn_last_line_is_left_out_and_said(tmp_path):
    path = tmp_path / "labels.jsonl"
    log.append(path, {"task": "t1", "label": "A", "annotator": "ann"})
    log.append(path, {"task": "t1", "label": "B", "annotator": "ann"})  # changed her mind: the latest wins
    with open(path, "ab") as f:
        f.write(b'{"task": "t2", "label": "A", "annot')  # the power went out mid-write
    records, problems = log.read(path)
    assert len(records) == 2 and problems == [
        f"{path}:3: cut short (no newline: a crash mid-write); left out"
    ]
    assert log.latest(records)[["task", "label"]].values.tolist() == [["t1", "B"]]


def test_a_hand_filled_csv_is_imported_through_the_same_rules(audit_files, tmp_path, capsys):
    votes, audit, items = audit_files
    tasks = pd.read_csv(audit)["task"].tolist()
    filled = tmp_path / "filled.csv"
    pd.DataFrame(
        {
            "task": [tasks[0], tasks[1], "t-unknown", tasks[2], tasks[3]],
            "label": ["A", "maybe", "A", "B", ""],
            "annotator": ["dan", "dan", "dan", "", "dan"],
        }
    ).to_csv(filled, index=False)
    assert main(["label", str(votes), "--audit", str(audit), "--import", str(filled)]) == 0
    said = capsys.readouterr().out
    assert "imported 1 labels" in said and "3 rows set aside" in said
    quarantine = pd.read_csv(audit.with_suffix(".labels.quarantine.csv"))
    assert quarantine["quarantine_reason"].tolist() == [
        f"{filled}:3: label: not one of ['A', 'B', 'tie', 'skip']",
        f"{filled}:4: task: not in the audit",
        f"{filled}:5: annotator: empty",
    ]  # line 6 was not filled in: not an answer
    records, _ = log.read(audit.with_suffix(".labels.jsonl"))
    assert records[["task", "label", "annotator"]].values.tolist() == [[tasks[0], "A", "dan"]]


def test_the_order_of_the_candidates_is_drawn_per_reviewer_and_task_and_kept():
    orders = {
        (who, t): tuple(display_order(["A", "B"], f"t{t}", who))
        for who in ("alice", "bob")
        for t in range(40)
    }
    assert set(orders.values()) == {("A", "B"), ("B", "A")}
    assert any(orders[("alice", t)] != orders[("bob", t)] for t in range(40))
    assert all(tuple(display_order(["A", "B"], f"t{t}", "alice")) == orders[("alice", t)] for t in range(40))
