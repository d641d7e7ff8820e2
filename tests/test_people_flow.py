"""The evaluate flow with people in the loop (config `audit:`), on a real Prefect server (prefect_test_harness): a
run proposes its audit; labels that appear in the label log are used by the next run (reuse by content), or by
the same run when it waits for them; the report, the summary and the Prefect UI show the judges against people.
The suspended deployment run is in tests/test_deploy_e2e.py."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

from judgeops import api
from judgeops.config import AuditConfig
from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactStore
from judgeops.tasks.labelling import log
from judgeops.tasks.labelling.run_audit import CLASSES
from tests.conftest import small_config

pytestmark = pytest.mark.slow
AS_OF = dt.date(2026, 11, 23)


def label_all(audit, path, who: str, flip_first: int = 0, adjudicated: bool = False) -> None:
    """`who` labels every audited task A (the first `flip_first` of them B), as the page would write them."""
    for i, task in enumerate(audit["task"]):
        label = CLASSES[1] if i < flip_first else CLASSES[0]
        log.append(
            path, {"task": task, "label": label, "annotator": who, "adjudicated": adjudicated, "weight": 1.0}
        )


def shows_the_planted_edit_after_an_answer(url: str, run_id: str) -> bool:
    """`judgeops label --run`, in headless Chromium where it is installed: once answered, the judgerEva pair's edit
    is marked as the words that changed (<del> in the correct answer, <ins> in the flawed one)."""
    from tests.browser import CHROMEDRIVER, CHROMIUM, driver
    from tests.test_label_page import TOKEN, free_port, start_command, stop, wait_for

    if not (CHROMIUM and CHROMEDRIVER):
        return False
    port = free_port()
    page = start_command(["label", "--run", run_id, "--store", url, "--port", str(port)], port)
    browser = driver()
    try:
        browser.get(f"http://127.0.0.1:{port}/?token={TOKEN}&annotator=ann")
        wait_for(browser, "return document.getElementById('progress').textContent === '0 of 6'")
        body = browser.find_element("tag name", "body")
        body.send_keys("1")
        wait_for(browser, "return document.getElementById('progress').textContent === '1 of 6'")
        body.send_keys("\ue012", "v")  # back to the answered item, and reveal
        wait_for(browser, "return !document.getElementById('reveal-box').classList.contains('hidden')")
        marks = browser.execute_script(
            "return [document.querySelectorAll('#edit-correct del').length,"
            " document.querySelectorAll('#edit-flawed ins').length]"
        )
        assert marks[0] >= 1 and marks[1] >= 1, marks
    finally:
        browser.quit()
        stop(page)
    return True


def test_a_later_run_uses_the_labels_people_gave_an_earlier_runs_audit(prefect_server, tmp_path):
    url, labels = str(tmp_path / "store"), tmp_path / "labels.jsonl"
    config = small_config(url, n_items=24)
    config.audit = AuditConfig(k=6, labels=str(labels), target_error=0.2)
    first = evaluate(config=config, as_of=AS_OF)
    store = ArtifactStore(url, first.run_id)
    audit = store.read_pandas("audit")
    assert len(audit) == 6 and not store.exists("audit_summary")  # nobody has labelled yet
    assert audit[["question", "answer_A", "answer_B", "verdicts_json"]].notna().all().all()
    if shows_the_planted_edit_after_an_answer(url, first.run_id):
        assert (
            len(log.read(labels)[0]) == 1
        )  # the page wrote its answer where the run reads: its audit.labels
    label_all(audit, labels, "ann")
    label_all(audit, labels, "ben", flip_first=2)  # two conflicts...
    log.append(labels, {"task": audit["task"].iloc[0], "label": "A", "annotator": "cat", "adjudicated": True})
    second = evaluate(config=config, as_of=AS_OF)  # ...one settled by an adjudicator
    later = ArtifactStore(url, second.run_id)
    assert (
        later.read_pandas("audit")["task"].tolist() == audit["task"].tolist()
    )  # the same texts: the same keys
    summary = later.read_pandas("audit_summary").iloc[0]
    assert summary["n_labels"] == 5 and summary["n_annotators"] == 2 and summary["n_conflicts"] == 2
    assert summary["target_error"] == 0.2 and 0 <= summary["coverage"] <= 1
    assert len(later.read_pandas("audit_labels")) == 13
    agreement = later.read_pandas("human_agreement")
    assert set(agreement["kind"]) == {"judge", "consensus"}
    assert (agreement.loc[agreement["kind"] == "consensus", "n_tasks"] == 5).all()  # a judge: where it voted
    # the numbers a team quotes, on the whole workload: 5 labels are too few for the normal interval, so each is
    # the exact labels-only one (tasks/aggregate/prediction_powered.py), never zero wide
    estimates = later.read_pandas("estimates").set_index(["quantity", "who"])
    consensus = estimates.loc[("consensus_accuracy", "")]
    assert consensus["n_labels"] == 5 and consensus["method"].startswith("labels only (exact)")
    assert consensus["ci_low"] <= consensus["estimate"] <= consensus["ci_high"] and consensus["ci_low"] < 0.9
    assert ("first_share", "A") in estimates.index
    report = (tmp_path / "store" / "runs" / second.run_id / "report.html").read_text()
    assert 'id="human-agreement"' in report and "5 of 6 audited tasks labelled by 2 annotator(s)" in report
    assert 'id="summary-estimates">On the whole workload, the consensus is right on' in report
    run_summary = api.summary(api.get_run(second.run_id, url))
    assert run_summary["audit"]["n_labels"] == 5 and len(run_summary["audit"]["human_agreement"]) == len(
        agreement
    )
    with get_client(sync_client=True) as client:
        published = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["human-agreement"]))
        )
        shown = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["estimates"]))
        )
    assert published and published[0].type == "table"
    assert shown and shown[0].type == "table" and "consensus_accuracy" in str(shown[0].data)
    assert {r["quantity"] for r in run_summary["audit"]["estimates"]} >= {"consensus_accuracy", "first_share"}


def test_a_run_told_to_wait_polls_the_label_log_until_its_audit_is_labelled(prefect_server, tmp_path):
    url, labels = str(tmp_path / "store"), tmp_path / "labels.jsonl"
    config = small_config(url, n_items=24)
    config.audit = AuditConfig(k=4, labels=str(labels), wait=True, timeout_s=300)
    done = {}
    runner = threading.Thread(target=lambda: done.update(result=evaluate(config=config, as_of=AS_OF)))
    runner.start()
    store = ArtifactStore(url)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the run proposes its audit, then waits
        runs = store.list_runs()
        if runs and store.exists("audit", runs[-1]["run_id"]):
            break
        time.sleep(0.5)
    run_id = runs[-1]["run_id"]
    time.sleep(3)
    assert runner.is_alive() and store.run_record(run_id)["status"] == "running"
    label_all(store.read_pandas("audit", run_id=run_id), labels, "ann")
    runner.join(timeout=300)
    assert done["result"].run_id == run_id and store.run_record(run_id)["status"] == "completed"
    assert store.read_pandas("audit_summary", run_id=run_id).iloc[0]["n_labels"] == 4


def test_a_suspended_run_whose_flow_run_was_cancelled_is_marked_failed_by_the_next_sweep(
    prefect_server, tmp_path
):
    from prefect import flow
    from prefect.states import Cancelled

    from judgeops.flows.observer import PrefectObserver

    @flow
    def waiting() -> None:
        pass

    with get_client(sync_client=True) as client:
        run = client.create_flow_run(waiting)
        client.set_flow_run_state(run.id, Cancelled(), force=True)
    store = ArtifactStore(str(tmp_path / "store"), "2026-11-23_waiting", observer=PrefectObserver())
    store.write_run_record(
        {"flow": "evaluate", "status": "suspended", "prefect": {"flow_run_id": str(run.id)}}
    )
    store.sweep_crashed()
    assert store.run_record()["status"] == "failed" and "ended Cancelled" in store.run_record()["error"]


def test_a_published_pair_in_the_audit_shows_its_own_question(prefect_server, tmp_path):
    import json

    from judgeops.config import PairwiseSource

    rows = [
        {
            "question": f"What is {i} + {i}?",
            "response_A": f"The answer is {2 * i}.",
            "response_B": f"It is {2 * i + 1}.",
            "label": "A>B" if i % 2 else "B>A",
            "source": "livebench-reasoning",
        }
        for i in range(12)
    ]
    path = tmp_path / "judgebench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = small_config(str(tmp_path / "store"), n_items=6)
    config.pairwise = [PairwiseSource(format="judgebench", path=str(path))]
    config.audit = AuditConfig(k=40, strategy="random", labels=str(tmp_path / "labels.jsonl"))
    result = evaluate(config=config, as_of=AS_OF)
    audit = ArtifactStore(config.store.url, result.run_id).read_pandas("audit")
    published = audit[audit["pair_id"].str.startswith("judgebench-")]
    assert len(published) and published["question"].str.startswith("What is").all()
    assert (audit["question"].str.len() > 0).all() and audit["task"].is_unique
