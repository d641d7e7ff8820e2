"""The container files of deploy/ checked against the project, where no Docker daemon runs (CI has none):
the Dockerfile copies every package folder and installs extras that exist; the compose file's services, the
URLs between them, and the team configuration it mounts (which must load)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from judgeops.config import load_config
from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_dockerfile_copies_the_package_and_installs_extras_that_exist():
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    copied = {line.split()[1] for line in lines if line.startswith("COPY ")}
    for source in copied:
        assert (ROOT / source).exists(), source
    folders = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())
    assert folders <= copied, folders - copied  # every folder the package is built from
    (install,) = [line for line in lines if "pip install" in line]
    extras = re.search(r"'\.\[([a-z0-9,]+)\]'", install).group(1).split(",")
    assert set(extras) <= set(PYPROJECT["project"]["optional-dependencies"]), extras
    assert "local" not in extras  # PyTorch stays out of the fleet's image


def test_the_compose_file_wires_the_team_setup():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "minio", "create-bucket", "prefect-server", "worker"} <= set(services)
    for name, service in services.items():
        needs = service.get("depends_on", [])
        assert set(needs) <= set(services), (name, needs)
    # the Prefect server's database is the postgres service's, with its user and database
    pg = services["postgres"]["environment"]
    db = urlparse(services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"])
    assert (
        db.scheme == "postgresql+asyncpg" and db.hostname == "postgres" and db.username == pg["POSTGRES_USER"]
    )
    assert db.path == f"/{pg['POSTGRES_DB']}"
    # the worker: built from deploy/Dockerfile, talks to the server, mounts a configuration that loads
    worker = services["worker"]
    assert (
        DEPLOY / worker["build"]["context"] / worker["build"]["dockerfile"]
    ).resolve() == DEPLOY / "Dockerfile"
    env = worker["environment"]
    api = urlparse(env["PREFECT_API_URL"])
    assert api.hostname == "prefect-server" and str(api.port) in services["prefect-server"]["ports"][0]
    assert urlparse(env["FSSPEC_S3_ENDPOINT_URL"]).hostname == "minio"
    ((mounted, target),) = [v.rsplit(":", 1)[0].split(":") for v in worker["volumes"]]
    assert target == "/work/judgeops.yaml"
    config = load_config(DEPLOY / mounted)
    cache, store = urlparse(config.cache.path), urlparse(config.store.url)
    assert cache.hostname == "postgres" and cache.password is None  # the secret comes from PGPASSWORD
    assert "PGPASSWORD" in env
    init = (DEPLOY / services["postgres"]["volumes"][1].split(":")[0]).read_text()
    assert f"CREATE DATABASE {cache.path.lstrip('/')};" in init
    assert store.scheme == "s3" and f"store/{store.hostname}" in services["create-bucket"]["entrypoint"]
    assert config.sharding.runner == "threads"


POOLS = DEPLOY / "work-pools"
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


def _prefect_default(kind: str) -> dict:
    """Prefect's own default base job template of a worker type (shipped with the server, offline)."""
    import json

    import prefect.server.api.collections as collections

    views = (
        Path(collections.__file__).parent / "collections_data" / "views" / "aggregate-worker-metadata.json"
    )
    for workers in json.loads(views.read_text()).values():
        if kind in workers:
            return workers[kind]["default_base_job_configuration"]
    raise KeyError(kind)


def _paths(obj, prefix=()) -> set[tuple]:
    if isinstance(obj, dict):
        return {p for k, v in obj.items() for p in _paths(v, (*prefix, k))} | {prefix}
    if isinstance(obj, list):
        return {p for i, v in enumerate(obj) for p in _paths(v, (*prefix, i))} | {prefix}
    return {prefix}


@pytest.mark.parametrize("kind", ["docker", "kubernetes"])
def test_the_work_pool_templates_are_prefects_with_our_defaults(kind):
    """Every field Prefect's own template for the worker type fills is still there (the worker reads them), every
    placeholder names a declared variable, every default has its variable's type, and no secret is in it."""
    import json

    ours, default = json.loads((POOLS / f"{kind}.json").read_text()), _prefect_default(kind)
    assert _paths(default["job_configuration"]) <= _paths(ours["job_configuration"])
    declared = ours["variables"]["properties"]
    used = set(PLACEHOLDER.findall(json.dumps(ours["job_configuration"])))
    assert used <= set(declared), used - set(declared)
    types = {
        "string": str,
        "integer": int,
        "boolean": bool,
        "object": dict,
        "array": list,
        "number": (int, float),
    }
    for name, prop in declared.items():
        if prop.get("default") is not None and "type" in prop:
            assert isinstance(prop["default"], types[prop["type"]]), (name, prop)
    assert declared["image"]["default"] == "judgeops:latest"
    assert declared["env"]["default"]["JUDGEOPS_WORKDIR"] == "/work"  # where the Dockerfile's WORKDIR is
    defaults = json.dumps([p.get("default") for p in declared.values()])
    assert not re.search(r"change-me|sk-[a-z0-9]", defaults)
    assert not [k for k in declared["env"]["default"] if re.search(r"PASSWORD|SECRET|KEY|TOKEN", k)]
