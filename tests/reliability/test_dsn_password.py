"""A password in the call cache's PostgreSQL URL (`postgresql://user:PASSWORD@host/db`, as the README showed it)
was written in clear to run.json, to the Prefect flow run's parameters and by `judgeops config`. Now it is
redacted wherever the config is recorded or shown, and the URL takes the password from the environment
(`${VAR}`) instead, so it need not be in the config at all. A real PostgreSQL server (trust authentication: any
password is let in, so the canary is really sent) and a real Prefect server."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName, LogFilter, LogFilterFlowRunId

from judgeops.flows.evaluate import evaluate
from judgeops.tasks.judges.cache import CacheUnavailable, open_cache
from tests.conftest import small_config
from tests.openai_server import ServerProcess
from tests.reliability.faults import with_http_judge

pytestmark = pytest.mark.slow

CANARY = "pw-judgeops-canary-0c4b71"
AS_OF = dt.date(2026, 10, 26)  # no other test runs this date: its flow run is this test's


def prefect_database_files() -> list[Path]:
    """The test Prefect server's SQLite database, with its WAL and journal if any: every byte it stored."""
    from prefect.settings import get_current_settings

    url = get_current_settings().server.database.connection_url.get_secret_value()
    db = Path(url.partition(":///")[2])
    return [p for p in db.parent.glob(db.name + "*") if p.is_file()]


def test_a_password_in_the_cache_url_is_used_and_recorded_nowhere(
    prefect_server, postgres, tmp_path, capfd, figure
):
    url = postgres.create_database("canary_calls").replace("judgeops@", f"judgeops:{CANARY}@")
    server = ServerProcess(tmp_path / "requests.jsonl")
    try:
        config = small_config(str(tmp_path / "store"), n_items=12)
        with_http_judge(config, server.url, max_pairs=3)
        config.cache.path = url
        evaluate(config=config, as_of=AS_OF)
    finally:
        server.stop()
    with open_cache(url) as cache:  # the calls went to that database
        assert sum(row["calls"] for row in cache.stats()) > 0

    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "requests.jsonl"]
    run_records = [p for p in files if p.name == "run.json"]
    assert run_records and all("***@" in p.read_text() for p in run_records)
    leaked = [str(p) for p in files if CANARY.encode() in p.read_bytes()]
    (tmp_path / "judgeops.yaml").write_text(yaml.safe_dump({"cache": {"path": url}}))
    shown = subprocess.run(
        [sys.executable, "-m", "judgeops.cli", "config", "--config", str(tmp_path / "judgeops.yaml")],
        capture_output=True,
        text=True,
    )
    out = capfd.readouterr()
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[f"evaluate-{AS_OF}"]))
        )
        runs = [r for r in runs if str(tmp_path) in str(r.parameters)]
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[r.id for r in runs]))
        )
    database = prefect_database_files()
    in_database = [str(p) for p in database if CANARY.encode() in p.read_bytes()]
    assert len(runs) == 1 and "***@" in str(runs[0].parameters)
    assert database and in_database == []
    assert leaked == [] and CANARY not in out.out + out.err
    assert shown.returncode == 0 and "***@" in shown.stdout and CANARY not in shown.stdout + shown.stderr
    assert not [log.message for log in logs if CANARY in log.message]
    figure(
        "a password written into the PostgreSQL cache URL",
        "used to connect; never in run.json, the store, the Prefect flow run, its logs or the Prefect "
        "database, the console, `judgeops config`",
        f"found in 0 of {len(files)} files ({len(run_records)} run.json), 0 flow-run parameters, 0 of {len(logs)} "
        f"log lines, 0 of {len(database)} Prefect database files, 0 console lines; `judgeops config` shows ***",
    )


def test_the_password_can_come_from_the_environment(postgres, monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEOPS_TEST_PG_PASSWORD", CANARY)
    url = postgres.create_database("env_calls").replace("judgeops@", "judgeops:${JUDGEOPS_TEST_PG_PASSWORD}@")
    with open_cache(url) as cache:
        assert CANARY not in cache.path and cache.stats() == []
    monkeypatch.delenv("JUDGEOPS_TEST_PG_PASSWORD")
    with pytest.raises(ConnectionError, match="environment variable JUDGEOPS_TEST_PG_PASSWORD is not set"):
        open_cache(url)


def test_the_password_can_come_from_a_prefect_secret_block(prefect_server, postgres, tmp_path):
    from prefect.blocks.system import Secret

    password = CANARY + "@/:%"  # characters a URL cannot hold as they are: encoded for it
    Secret(value=password).save("judgeops-test-pg", overwrite=True)
    base = postgres.password_user("secured", password, "block_calls")  # this role must give its password
    url = base.replace("secured@", "secured:{{ prefect.blocks.secret.judgeops-test-pg }}@")
    with open_cache(url) as cache:
        assert CANARY not in cache.path and cache.stats() == []
    with pytest.raises(CacheUnavailable, match="password authentication failed"):  # the role really checks it
        open_cache(base.replace("secured@", "secured:wrong@"))
    config = small_config(str(tmp_path / "store"), n_items=12)
    config.cache.path = url
    assert config.model_dump(mode="json")["cache"]["path"] == url  # the block's name, no secret, as written
    with pytest.raises(ConnectionError, match="Prefect Secret block 'judgeops-no-such-block' not found"):
        open_cache(url.replace("judgeops-test-pg", "judgeops-no-such-block"))
