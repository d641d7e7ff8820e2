"""The label page's doors: another site could read the audit and plant labels (a JSON POST with a foreign Origin
was saved, a foreign Host — DNS rebinding — was answered, no token was asked), `seconds: Infinity` was written,
a 64 MB body was read whole; on a full disk the page confirmed an answer the log did not hold and the server
printed a traceback per request; a torn last line glued the next answer to it. Each case against a real
`judgeops label` process on loopback, a real tmpfs filled up, and SIGKILL mid-run."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time

import pandas as pd
import psutil

from judgeops.tasks.labelling import log
from tests.reliability.faults import fill
from tests.test_label_page import TOKEN, free_port, start, stop

FOREIGN = "evil.example"


def _ask(port, method, path, body=None, headers=None, host=None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else b"")
        sent = {"Content-Type": "application/json", "Content-Length": str(len(data)), **(headers or {})}
        for k, v in sent.items():
            if v is not None:
                conn.putheader(k, v)
        conn.endheaders()
        if data:
            conn.send(data)
        r = conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw.startswith(b"{") else {})
    finally:
        conn.close()


def _label(task, label="A", who="ann", **extra) -> dict:
    return {"task": task, "label": label, "annotator": who, **extra}


def test_the_page_answers_only_its_own_page(audit_files, figure):
    votes, audit, items = audit_files
    port = free_port()
    server = start(votes, audit, items, port)
    task = pd.read_csv(audit)["task"].iloc[0]
    ours = {"X-Judgeops-Token": TOKEN}
    try:
        refused = {
            "POST from another origin": _ask(
                port, "POST", "/api/label", _label(task), {**ours, "Origin": f"http://{FOREIGN}"}
            ),
            "GET with a foreign Host (DNS rebinding)": _ask(
                port, "GET", "/api/audit?annotator=ann", headers=ours, host=f"{FOREIGN}:{port}"
            ),
            "POST with a foreign Host": _ask(port, "POST", "/api/label", _label(task), ours, host=FOREIGN),
            "GET without the token": _ask(port, "GET", "/api/audit?annotator=ann"),
            "POST without the token": _ask(port, "POST", "/api/label", _label(task)),
            "POST with a wrong token": _ask(
                port, "POST", "/api/label", _label(task), {"X-Judgeops-Token": "x"}
            ),
            "the page without the token": _ask(port, "GET", "/"),
        }
        bad_numbers = {
            text: _ask(
                port,
                "POST",
                "/api/label",
                f'{{"task": "{task}", "label": "A", "annotator": "ann", "seconds": {text}}}'.encode(),
                ours,
            )
            for text in ("Infinity", "-Infinity", "NaN", "1e300", "-5")
        }
        proc = psutil.Process(server.pid)
        rss = proc.memory_info().rss
        t0 = time.monotonic()
        huge = _huge_post(port)
        huge_s, grown = time.monotonic() - t0, proc.memory_info().rss - rss
        own_page = _ask(port, "GET", f"/?token={TOKEN}", headers={"Origin": None})
        ok = _ask(port, "POST", "/api/label", _label(task), {**ours, "Origin": f"http://127.0.0.1:{port}"})
        state = _ask(port, "GET", "/api/audit?annotator=ann", headers=ours, host=f"localhost:{port}")
    finally:
        stop(server)
    assert {k: v[0] for k, v in refused.items()} == dict.fromkeys(refused, 403), refused
    assert all(v[0] == 400 and v[1]["error"].startswith("seconds:") for v in bad_numbers.values()), (
        bad_numbers
    )
    assert huge == 413 and grown < 32 * 2**20
    assert own_page[0] == 200 and ok[0] == 200 and state[0] == 200 and state[1]["answers"] == {task: "A"}
    records, problems = log.read(audit.with_suffix(".labels.jsonl"))
    assert len(records) == 1 and problems == []  # only the page's own answer was written
    figure(
        "the label page asked from another site: foreign Origin, foreign Host, no or a wrong token; "
        "seconds Infinity/NaN/1e300/-5; a 64 MB body",
        "403 / 400 / 413, nothing written; the page's own requests answered",
        f"{len(refused)} of {len(refused)} refused with 403, {len(bad_numbers)} of {len(bad_numbers)} numbers with "
        f"400, 64 MB body 413 in {huge_s:.2f} s (server +{grown / 2**20:.0f} MB); 1 record written, the page's own",
    )


def _huge_post(port) -> int:
    """A 64 MB JSON body announced by Content-Length: the answer comes before it is sent."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest("POST", "/api/label", skip_host=True)
        for k, v in {
            "Host": f"127.0.0.1:{port}",
            "Content-Type": "application/json",
            "Content-Length": str(64 * 2**20),
            "X-Judgeops-Token": TOKEN,
        }.items():
            conn.putheader(k, v)
        conn.endheaders()
        try:
            conn.send(b'{"note": "' + b"x" * (1 << 20))
        except OSError:
            pass  # the server answered and closed first
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_full_disk_never_confirms_an_answer_it_did_not_keep(audit_files, small_disk, tmp_path, figure):
    votes, audit, items = audit_files
    path = small_disk / "labels.jsonl"
    port = free_port()
    server = start(votes, audit, items, port, "--labels", str(path))
    tasks = pd.read_csv(audit)["task"].tolist()
    ours = {"X-Judgeops-Token": TOKEN}
    answers = {}
    try:
        assert _ask(port, "POST", "/api/label", _label(tasks[0], note="first"), ours)[0] == 200
        answers["first"] = 200
        fill(small_disk, leave_bytes=6_000)  # room for a few dozen answers, then none
        for i in range(400):
            status, _ = _ask(port, "POST", "/api/label", _label(tasks[i % len(tasks)], note=f"n{i}"), ours)
            answers[f"n{i}"] = status
        (small_disk / "filler").unlink()  # space again: the page saves again
        after = _ask(port, "POST", "/api/label", _label(tasks[0], note="after"), ours)[0]
        answers["after"] = after
        alive = server.poll() is None
    finally:
        stop(server)
        printed = server.stdout.read()
    confirmed = {n for n, s in answers.items() if s == 200}
    refused = {n for n, s in answers.items() if s == 503}
    records, problems = log.read(path)
    kept = records["note"].tolist()
    assert alive and after == 200 and refused and confirmed | refused == set(answers)
    assert problems == [] and sorted(kept) == sorted(confirmed)  # every confirmed answer once, nothing else
    assert "Traceback" not in printed and len(printed.splitlines()) <= len(refused) + 5
    figure(
        "full disk under the label page (402 answers posted, a 64 MiB tmpfs filled but 6 KB, then freed)",
        "every answer the page confirmed is in the log, once; a refused one says so; no torn line; the server "
        "stays up with one line per refusal",
        f"{len(confirmed)} confirmed, {len(refused)} refused (503), {len(kept)} in the log, 0 lost, 0 twice, "
        f"0 torn; {len(printed.splitlines())} lines printed, 0 tracebacks; saved again once freed",
    )


def test_a_torn_last_line_is_set_aside_and_the_log_goes_on(audit_files, figure):
    votes, audit, items = audit_files
    path = audit.with_suffix(".labels.jsonl")
    tasks = pd.read_csv(audit)["task"].tolist()
    log.append(path, _label(tasks[0]))
    log.append(path, _label(tasks[1]))
    with open(path, "ab") as fh:
        fh.write(b'{"task": "' + tasks[2].encode() + b'", "label": "A", "annot')  # a crash mid-write
    port = free_port()
    server = start(votes, audit, items, port)
    ours = {"X-Judgeops-Token": TOKEN}
    try:
        saved = _ask(port, "POST", "/api/label", _label(tasks[2], "B"), ours)[0]
        answered = _ask(port, "GET", "/api/audit?annotator=ann", headers=ours)[1]["answers"]
    finally:
        stop(server)
        printed = server.stdout.read()
    records, problems = log.read(path)
    torn = path.with_name(path.name + ".torn")
    said = [line for line in printed.splitlines() if ".torn" in line]
    assert saved == 200 and problems == [] and len(records) == 3
    assert answered == {tasks[0]: "A", tasks[1]: "A", tasks[2]: "B"}
    assert torn.read_bytes().startswith(b'{"task": "') and len(said) == 1
    figure(
        "a torn last line in the label log (a crash mid-write), then the page started and answered",
        "the torn line set aside in <log>.torn, named in one line; the next answer on a fresh line",
        f"{len(records)} of 3 answers readable after the restart (was 2, the next one lost with the torn line); "
        f"0 problems; {len(said)} line printed",
    )


def test_sigkill_while_answering_loses_no_confirmed_answer_and_repeats_none(audit_files, figure):
    votes, audit, items = audit_files
    path = audit.with_suffix(".labels.jsonl")
    tasks = pd.read_csv(audit)["task"].tolist()
    ours = {"X-Judgeops-Token": TOKEN}
    confirmed: list[str] = []
    rounds = 3
    for r in range(rounds):
        port = free_port()
        server = start(votes, audit, items, port)
        stop_now = threading.Event()

        def answer(port=port, r=r, stop_now=stop_now):
            i = 0
            while not stop_now.is_set():
                note = f"r{r}-{i}"
                try:
                    status, _ = _ask(
                        port, "POST", "/api/label", _label(tasks[i % len(tasks)], note=note), ours
                    )
                except OSError:
                    return
                if status == 200:
                    confirmed.append(note)
                i += 1

        worker = threading.Thread(target=answer)
        worker.start()
        time.sleep(1.0 + 0.3 * r)
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
        stop_now.set()
        worker.join()
    port = free_port()
    server = start(votes, audit, items, port)  # the restart sets aside any torn line
    stop(server)
    records, problems = log.read(path)
    kept = records["note"].tolist()
    assert problems == [] and confirmed and set(confirmed) <= set(kept)
    assert len(kept) == len(set(kept))  # none twice
    figure(
        f"SIGKILL of the label page's server while answers stream in ({rounds} times)",
        "every answer the page confirmed is in the log, none twice",
        f"{len(confirmed)} confirmed, {len(set(confirmed) & set(kept))} in the log, "
        f"{len(kept) - len(set(kept))} twice, {len(kept) - len(confirmed)} written but unconfirmed (killed "
        "before the answer was sent)",
    )
