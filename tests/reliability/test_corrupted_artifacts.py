"""A corrupted or outdated artifact: every read names it, the next run recomputes only the stage that made it
(and what its new outputs change), and nothing downstream is written from bad data."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from judgeops.flows.evaluate import evaluate
from judgeops.schemas.store import ArtifactIntegrityError, ArtifactStore, SchemaMismatchError
from tests.conftest import small_config

pytestmark = pytest.mark.slow
AS_OF = dt.date(2026, 10, 5)  # this module's flow runs only
STAGES = {
    "items": "ingest",
    "pairs": "construct",
    "variants": "construct",
    "verdicts": "judge",
    "consensus": "aggregate",
    "profiles": "profile",
}


def _corrupt_data(store: ArtifactStore, name: str) -> None:
    path = f"{store.root}/{store.ref(name).path}"
    data = bytearray(open(path, "rb").read())
    data[100] ^= 0x01
    open(path, "wb").write(bytes(data))


def _wrong_manifest_hash(store: ArtifactStore, name: str) -> None:
    path = f"{store.root}/runs/{store.run_id}/{name}.manifest.json"
    manifest = json.loads(open(path).read())
    manifest["sha256"] = "0" * 64
    open(path, "w").write(json.dumps(manifest))


def _older_schema(store: ArtifactStore, name: str) -> None:
    path = f"{store.root}/runs/{store.run_id}/{name}.manifest.json"
    manifest = json.loads(open(path).read())
    manifest["schema_version"] -= 1
    open(path, "w").write(json.dumps(manifest))


@pytest.mark.parametrize(
    ("fault", "damage", "error", "says"),
    [
        ("a flipped byte in pairs.parquet", _corrupt_data, ArtifactIntegrityError, "is corrupted"),
        ("a manifest hash that does not match", _wrong_manifest_hash, ArtifactIntegrityError, "is corrupted"),
        ("pairs written by an older schema version", _older_schema, SchemaMismatchError, "schema v"),
    ],
)
def test_a_damaged_artifact_is_named_and_only_its_stage_recomputes(
    prefect_server, tmp_path, caplog, figure, fault, damage, error, says
):
    url = str(tmp_path / "store")
    first = evaluate(config=small_config(url, n_items=24), as_of=AS_OF)
    old = ArtifactStore(url, first.run_id)
    damage(old, "pairs")
    with pytest.raises(error, match=rf"artifact 'pairs'.*{says}"):
        old.read("pairs")  # every read names it

    second = evaluate(config=small_config(url, n_items=24), as_of=AS_OF)
    new = ArtifactStore(url, second.run_id)
    reused = {n: bool(new.manifest(n).get("reused_from")) for n in STAGES}
    assert reused["items"] and not reused["pairs"] and not reused["variants"], (
        reused
    )  # ingest kept; construct redone
    recomputed = sorted({STAGES[n] for n, r in reused.items() if not r})
    assert new.read("pairs").num_rows == old.manifest("pairs")["rows"]
    assert "stage construct: not reusing the outputs of run" in caplog.text
    figure(
        f"{fault}, then `judgeops run`",
        "the read names the artifact; the next run recomputes only that stage "
        "(and what its new outputs change)",
        f"stages recomputed: {', '.join(recomputed)}; reused: "
        f"{', '.join(sorted({STAGES[n] for n, r in reused.items() if r}))}",
    )
    assert recomputed == ["construct"]  # the same pairs again: judge, aggregate, profile reuse their outputs
