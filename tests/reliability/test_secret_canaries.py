"""A canary API key never reaches an artifact, a log line, the call cache, the report or the Prefect API."""

from __future__ import annotations

import datetime as dt
import hashlib

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, LogFilter, LogFilterFlowRunId

from judgeops.flows.evaluate import evaluate
from tests.conftest import small_config
from tests.openai_server import ServerProcess
from tests.reliability.faults import with_http_judge

pytestmark = pytest.mark.slow

CANARY = "sk-judgeops-canary-5d1e9f7a"
AS_OF = dt.date(2026, 11, 9)  # no other test runs this date: its flow run is this test's


def test_a_canary_key_is_used_and_appears_nowhere(prefect_server, tmp_path, monkeypatch, capfd, figure):
    from prefect.blocks.system import Secret

    monkeypatch.setenv("JUDGEOPS_CANARY_KEY", CANARY)
    Secret(value=CANARY).save("judgeops-canary-key", overwrite=True)  # the other way to give a key
    server = ServerProcess(tmp_path / "requests.jsonl")
    try:
        config = small_config(str(tmp_path / "store"), n_items=24)
        with_http_judge(
            config, server.url, model="test-model", api_key_env="JUDGEOPS_CANARY_KEY", max_pairs=3
        )
        http = config.judges.pop()  # added back below, beside its twin that takes the key from a Secret block
        from_block = http.model_copy(
            update={
                "name": "http-judge-secret",
                "model": "test-model-2",  # another model: its own calls, not the first judge's cache hits
                "api_key_env": None,
                "api_key_secret": "judgeops-canary-key",
            }
        )
        config = config.model_copy(update={"judges": [*config.judges, http, from_block]})
        evaluate(config=config, as_of=AS_OF)
    finally:
        server.stop()
    entries = server.entries()
    bearer = hashlib.sha256(f"Bearer {CANARY}".encode()).hexdigest()
    assert entries and all(e["key_sha256"] == bearer for e in entries)  # the key was really sent, by both
    assert {e["model"] for e in entries} == {"test-model", "test-model-2"}

    needle = CANARY.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "requests.jsonl"]
    assert any(p.name == "report.html" for p in files) and any(p.suffix == ".sqlite" for p in files)
    leaked = [str(p) for p in files if needle in p.read_bytes()]
    assert leaked == []
    out = capfd.readouterr()
    assert CANARY not in out.out and CANARY not in out.err

    with get_client(sync_client=True) as client:
        flow_runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[f"evaluate-{AS_OF}"]))
        )
        flow_runs = [r for r in flow_runs if str(tmp_path) in str(r.parameters)]  # this test's run only
        assert len(flow_runs) == 1
        run_ids = [flow_runs[0].id]
        logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=run_ids)))
        artifacts = [a for a in client.read_artifacts() if a.flow_run_id in run_ids]
        params = [str(r.parameters) for r in flow_runs]
    assert logs and artifacts
    assert not [log.message for log in logs if CANARY in log.message]
    assert not [a.key for a in artifacts if CANARY in f"{a.data} {a.description}"]
    assert not [p for p in params if CANARY in p]
    figure(
        "API-key canary given by env var and by Prefect Secret block (and, refused, inline: "
        "test_config_secrets.py)",
        "never in stdout/stderr, logs, artifacts, cache, report, flow-run parameters",
        f"sent in {len(entries)} Authorization headers; found in 0 of {len(files)} files (store, cache, "
        f"report), 0 of {len(logs)} Prefect log lines, 0 of {len(artifacts)} Prefect artifacts, 0 flow-run "
        "parameters, 0 console lines",
    )
