"""Test settings: no telemetry, a temporary PREFECT_HOME, time for the first database set-up.

Set before anything imports prefect (pytest loads this file first).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

os.environ["PREFECT_HOME"] = tempfile.mkdtemp(prefix="judgeops-prefect-home-")
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "120"
os.environ["GX_ANALYTICS_ENABLED"] = "false"
os.environ.pop("PREFECT_API_URL", None)

# Prefect's logging is set up on importing prefect.main, and its console handler keeps the sys.stderr it finds:
# set it up here, before any test's capsys or redirect replaces sys.stderr with a stream closed after that test
import prefect.main  # noqa: E402, F401
import pytest  # noqa: E402

from judgeops.config import (  # noqa: E402
    BankSource,
    CacheConfig,
    ConstructionConfig,
    EvaluateConfig,
    JudgeConfig,
    ProfileConfig,
    StoreConfig,
)
from judgeops.tasks.construct import construct  # noqa: E402
from judgeops.tasks.ingest import ingest_items  # noqa: E402
from judgeops.tasks.judges import judge_variants  # noqa: E402
from tests import openai_server, postgres_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


# The modules whose tests took longest in CI (`--durations`) start first. pytest-xdist's worksteal hands each worker
# a contiguous half of this order and lets an idle worker take from the other's queue; a seven-minute test started
# near the end leaves the other worker idle for its duration (longest-processing-time-first scheduling).
LONGEST_FIRST = (
    "test_readme.py",
    "test_flow_e2e.py",  # its module fixture (a flow run, ~2 min) ran twice where a steal split the module
    "reliability/test_killed_run.py",
    "test_recalibrate.py",
    "test_install.py",
    "test_cli.py",
    "test_deploy_e2e.py",
)


def pytest_collection_modifyitems(items) -> None:
    def rank(item) -> int:
        path = item.path.relative_to(ROOT / "tests").as_posix()
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: every module's tests stay together, in their order


def small_config(store_url: str, n_items: int = 48, llm: bool = False) -> EvaluateConfig:
    """A fast configuration for flow tests: every stage runs, on a few dozen items, with the call cache
    beside the store. The programmatic judges only, unless `llm`: then also the default panel's SmolLM2,
    on 4 pairs (one per error type) — each process that runs it pays ~20 s (torch import, model, prompts)."""
    judges = [
        j if j.backend == "programmatic" else j.model_copy(update={"max_pairs": 4})
        for j in EvaluateConfig().judges
        if llm or j.backend == "programmatic"
    ]
    return EvaluateConfig(
        sources=[BankSource(n_items=n_items, seed=1)],
        judges=judges,
        profile=ProfileConfig(n_bootstrap=200),
        store=StoreConfig(url=store_url),
        cache=CacheConfig(path=str(Path(store_url).parent / "calls.sqlite")),
    )


@pytest.fixture
def store_url(tmp_path) -> str:
    return str(tmp_path / "store")


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on loopback for the session. Where PostgreSQL is not installed the tests that
    need it skip with the reason, except in CI (`JUDGEOPS_REQUIRE_SERVERS=1`, set by .ci/run), where they fail."""
    if postgres_server.bin_dir() is None and not os.environ.get("JUDGEOPS_REQUIRE_SERVERS"):
        pytest.skip("PostgreSQL is not installed (Debian's postgresql package; .ci/run installs it)")
    server = postgres_server.PostgresServer()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3():
    """A real S3-compatible server on loopback (moto's server mode) for the session, with a bucket
    `judgeops-test`; this process and its subprocesses reach it through fsspec's configuration
    (FSSPEC_S3_ENDPOINT_URL and test credentials). Yields the endpoint URL."""
    import fsspec.config
    from moto.server import ThreadedMotoServer

    port = postgres_server.free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "FSSPEC_S3_ENDPOINT_URL": endpoint,  # subprocesses: fsspec reads FSSPEC_<PROTOCOL>_<OPTION> at import
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    fsspec.config.conf.setdefault("s3", {})["endpoint_url"] = endpoint  # this process imported fsspec already
    fsspec.filesystem("s3", skip_instance_cache=True).mkdir("judgeops-test")
    yield endpoint
    fsspec.config.conf["s3"].pop("endpoint_url", None)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture(scope="session")
def prefect_server():
    """A real Prefect API server (SQLite in a temp dir) for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


# --- a real OpenAI/Anthropic-protocol server and a small built bank, for the judge backends' tests ---


@pytest.fixture
def server_factory(tmp_path):
    started: list[openai_server.ServerProcess] = []

    def start(*flags: str) -> openai_server.ServerProcess:
        started.append(openai_server.ServerProcess(tmp_path / "requests.jsonl", *flags))
        return started[-1]

    yield start
    for s in started:
        s.stop()


@pytest.fixture(scope="module")
def built():
    items = ingest_items([BankSource(n_items=12, seed=3)]).items
    return items, construct(items, ConstructionConfig())


def http_judge(url: str, **kw) -> JudgeConfig:
    fields = {"name": "http", "backend": "openai", "model": "test-model", "base_url": url, "max_retries": 2}
    return JudgeConfig(**{**fields, **kw})


def judge_all(built, judge, cache_path, batch_size=500):
    items, b = built
    return judge_variants(
        b["variants"], b["pairs"], items, [judge], "r", batch_size, cache_path=str(cache_path)
    )


@pytest.fixture
def figure(request):
    """`figure(fault, promise, measured)`: a reliability figure, printed on one line and, when JUDGEOPS_FIGURES
    names a file (bench/reliability.py sets it), appended there as JSON: RELIABILITY.md is built from those."""

    def record(fault: str, promise: str, measured: str) -> None:
        line = {"test": request.node.nodeid, "fault": fault, "promise": promise, "figure": measured}
        print(f"\nFIGURE {fault}: {measured}")
        out = os.environ.get("JUDGEOPS_FIGURES")
        if out:
            with open(out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")

    return record
