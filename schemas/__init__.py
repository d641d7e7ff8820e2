"""Artifact schemas and the artifact store."""

from judgeops.schemas.artifacts import ARTIFACTS, schema_for
from judgeops.schemas.store import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactRef,
    ArtifactStore,
    SchemaMismatchError,
    StoreError,
)

__all__ = [
    "ARTIFACTS",
    "ArtifactIntegrityError",
    "ArtifactNotFoundError",
    "ArtifactRef",
    "ArtifactStore",
    "SchemaMismatchError",
    "StoreError",
    "schema_for",
]
