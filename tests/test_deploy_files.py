"""The container files of deploy/ checked against the project, where no Docker daemon runs (CI has none):
the Dockerfile copies every package folder and installs extras that exist; the compose file's services, the
URLs between them, and the team configuration it mounts (which must load)."""

from __future__ import annotations

import re
import tomllib
from urllib.parse import urlparse

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
