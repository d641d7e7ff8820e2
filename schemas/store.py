"""The artifact store: every artifact crosses a stage boundary through here.

Layout under the store URL (any fsspec URL: a local path, `file://`, `s3://` where s3fs is installed):

    runs/<run_id>/<name>.parquet           the data (written to a temp name, then renamed)
    runs/<run_id>/<name>.manifest.json     rows, sha256, parents, params, versions; written last,
                                           so an artifact without one does not exist
    runs/<run_id>/<name>.validation.json   the data contract's result
    runs/<run_id>/run.json                 the run record (as_of, status, config)
    index/<stage>/<stage_key>/<run_id>.json which run produced a stage's outputs for that key

A run writes only under its own `runs/<run_id>/` and its own index entries, so two runs never
write the same path. A stage whose key (code, parameters, input hashes) matches an earlier run's
adopts that run's outputs: this run gets manifests that point at the earlier data.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import io
import json
import logging
import signal
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import fsspec
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from judgeops import __version__
from judgeops.data_contracts import ContractParts, ContractViolation
from judgeops.data_contracts import check_contract as run_contract
from judgeops.schemas import liveness
from judgeops.schemas.artifacts import ArtifactSchema, base_name, schema_for
from judgeops.schemas.names import check_component, check_relative
from judgeops.schemas.stream import RowGroupWriter, TableStream, regrouped

log = logging.getLogger(__name__)


class StoreError(Exception):
    """Base class of every store failure; the message names the artifact."""


class ArtifactNotFoundError(StoreError):
    pass


class ArtifactIntegrityError(StoreError):
    """The bytes on disk are not the bytes the manifest recorded."""


class SchemaMismatchError(StoreError):
    pass


class StoreWriteError(StoreError):
    """The store could not take a write (a full disk, a read-only store, no permission): names the path."""


class ArtifactRef(BaseModel):
    """A handle on one stored artifact; what tasks pass to each other instead of data."""

    name: str
    run_id: str
    path: str  # relative to the store root
    sha256: str
    rows: int


def stable_hash(obj: Any) -> str:
    """sha256 of a JSON rendering with sorted keys: the same content always gives the same key."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def new_run_id(as_of: dt.date) -> str:
    now = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{as_of.isoformat()}_{now}_{uuid.uuid4().hex[:6]}"


def _cancelled(exc: BaseException) -> dict | None:
    """The record of a run a signal stopped — Ctrl-C's KeyboardInterrupt, judgeops' Interrupted (SIGINT, SIGTERM;
    api/interrupts.py) or Prefect's TerminationSignal inside a flow (its `signal`), or any exception after a signal
    was noted (liveness.signal_received: the signal's own exception was swallowed on the way): cancelled."""
    signum = getattr(exc, "signum", None) or getattr(exc, "signal", None) or liveness.signal_received()
    if isinstance(signum, int) and not isinstance(signum, bool):
        with contextlib.suppress(ValueError):
            return {"status": "cancelled", "error": f"interrupted by {signal.Signals(signum).name}"}
    if isinstance(exc, KeyboardInterrupt):
        return {"status": "cancelled", "error": "interrupted by SIGINT"}
    return None


def _utcnow() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


HASH_CHUNK = 8 * 2**20  # bytes hashed at a time when an artifact is verified
ROW_GROUP = 131_072  # rows per Parquet row group: the unit `iter_batches` streams (pyarrow's default is 1M)


def arrow_backed(dtype: pa.DataType):
    """to_pandas types_mapper: list columns stay in Arrow memory (Python lists cost ~10× more per row)."""
    return pd.ArrowDtype(dtype) if pa.types.is_list(dtype) or pa.types.is_large_list(dtype) else None


def to_arrow(name: str, data: pd.DataFrame | pa.Table, spec: ArtifactSchema) -> pa.Table:
    """Convert to the artifact's exact schema or raise a SchemaMismatchError naming the column."""
    expected = spec.schema
    columns = list(data.column_names if isinstance(data, pa.Table) else data.columns)
    missing = [c for c in expected.names if c not in columns]
    extra = [c for c in columns if c not in expected.names]
    if missing or extra:
        raise SchemaMismatchError(
            f"artifact {name!r} (schema v{spec.version}): missing columns {missing}, unexpected columns {extra}"
        )
    if isinstance(data, pa.Table):
        data = data.select(expected.names)
        if data.schema.equals(expected, check_metadata=False):
            return data
        data = data.to_pandas()
    arrays = []
    for field in expected:  # one conversion per column, which is also the check that names the column
        try:
            arrays.append(pa.array(data[field.name], type=field.type, from_pandas=True))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise SchemaMismatchError(
                f"artifact {name!r}, column {field.name!r}: expected {field.type}, got values that do not convert ({exc})"
            ) from exc
    return pa.Table.from_arrays(arrays, schema=expected)


class RunObserver:
    """What the orchestrator around the store hears about (none by default): the store itself knows nothing of
    Prefect; the flow layer passes `judgeops.flows.observer.PrefectObserver`, which shows contract results on
    the flow run, records the flow run in the run record, and sets dead runs' flow runs to Crashed."""

    def context(self) -> dict:
        """What the run record keeps about the orchestrator's run (e.g. its flow run id)."""
        return {}

    def contract_checked(self, outcome: Any) -> None:
        """An artifact's data contract was evaluated (a `ContractOutcome`)."""

    def contract_reused(self, name: str, computed_by: str, validation: dict) -> None:
        """An artifact was reused from run `computed_by`, whose contract result (`validation`) still holds."""

    def runs_crashed(self, records: list[dict]) -> list[dict]:
        """Runs the sweep found dead; returns those the orchestrator now also shows as crashed."""
        return []

    def suspensions_ended(self, records: list[dict]) -> dict[str, str]:
        """Suspended runs whose orchestrator run ended without resuming (it timed out, or was cancelled):
        run id → the state it ended in. Unknown without an orchestrator: none."""
        return {}

    def cancelled(self) -> str | None:
        """Where the orchestrator is cancelling this run (the signal that stopped it was its doing): who or
        what, in a line. Unknown without an orchestrator: None."""
        return None


class ArtifactStore:
    """Reads and writes the artifacts of one run, with schema, hash and contract checks."""

    def __init__(self, url: str, run_id: str | None = None, observer: RunObserver | None = None):
        self.observer = observer or RunObserver()
        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url)
        self.root = root.rstrip("/")
        self.run_id = run_id

    # -- paths ---------------------------------------------------------------------------------
    def _abs(self, rel: str) -> str:
        """The full path of `rel`, which must stay under the root once normalised (no `..`, no absolute path,
        no URL): a name from outside (a run id, an index entry's path) never reaches a file beside the store."""
        return f"{self.root}/{check_relative(rel)}"

    def _run_rel(self, run_id: str | None = None) -> str:
        run_id = run_id or self.run_id
        if not run_id:
            raise StoreError("this store handle is not bound to a run: pass run_id")
        return f"runs/{check_component(run_id, 'run id')}"

    def _artifact_rel(self, name: str, suffix: str, run_id: str | None = None) -> str:
        return f"{self._run_rel(run_id)}/{check_component(name, 'artifact name')}{suffix}"

    def absolute_url(self) -> str:
        """The store's URL as any process finds it: an absolute local path, or the URL of a remote store."""
        return self.display_path("").rstrip("/")

    def _protocol(self) -> str:
        return self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]

    def display_path(self, rel: str) -> str:
        """Where a person finds the file: a local path, or the URL for remote stores."""
        full = self._abs(rel)
        return full if self.is_local() else f"{self._protocol()}://{full}"

    def is_local(self) -> bool:
        return self._protocol() in ("file", "local")

    def browser_url(self, rel: str, expires_s: int = 7 * 86400) -> str:
        """A link a browser (the Prefect UI's link artifact) can open: file:// for a local store; for an object
        store a presigned HTTPS URL (valid `expires_s`, S3's maximum being 7 days) where the filesystem can sign
        one, else its s3:// style URL."""
        if self.is_local():
            return f"file://{self._abs(rel)}"
        with contextlib.suppress(NotImplementedError, AttributeError, ValueError):
            return self.fs.sign(self._abs(rel), expiration=expires_s)
        return self.display_path(rel)

    def _put_atomic(self, rel: str, payload: bytes) -> None:
        """Write so that a reader never sees half a file. Locally: a temp name in the same folder, then a
        rename. On an object store: one PUT (an object appears whole or not at all; a rename there is a copy
        and a delete). A failed write (a full disk, a read-only store) removes its temp file and says which
        file failed. Artifacts write their data first and their manifest last: the manifest is the commit."""
        path, local = self._abs(rel), self.is_local()
        tmp = f"{path}.tmp-{uuid.uuid4().hex}" if local else path
        try:
            if local:
                self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
            with self.fs.open(tmp, "wb") as fh:
                fh.write(payload)
            if tmp != path:
                self.fs.mv(tmp, path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if self.fs.exists(tmp):
                    self.fs.rm(tmp)
            what = rel.rsplit("/", 1)[-1].split(".", 1)[0]
            reason = exc.strerror or str(exc) or type(exc).__name__
            raise StoreWriteError(
                f"cannot write {what!r} to {self.display_path(rel)}: {reason}"
                + (f" [errno {exc.errno}]" if exc.errno else "")
            ) from exc

    # -- files beside the artifacts (work in progress a rerun picks up, e.g. the judge stage's shards) --------
    def put_blob(self, rel: str, payload: bytes) -> None:
        """Write `rel` (relative to the store's root) whole or not at all."""
        self._put_atomic(rel, payload)

    def get_blob(self, rel: str) -> bytes:
        return self.fs.cat_file(self._abs(rel))

    def has_blob(self, rel: str) -> bool:
        return self.fs.exists(self._abs(rel))

    def remove_blob(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(self._abs(rel))

    def remove_empty_folder(self, rel: str) -> None:
        """Remove folder `rel` if it is empty (an object store has no empty folders to remove)."""
        if self.is_local():
            with contextlib.suppress(OSError):
                self.fs.rmdir(self._abs(rel))

    def _put_json(self, rel: str, obj: Any) -> None:
        self._put_atomic(rel, json.dumps(obj, indent=2, sort_keys=True, default=str).encode())

    def _get_json(self, rel: str) -> Any:
        return json.loads(self.fs.cat_file(self._abs(rel)))

    # -- artifacts -----------------------------------------------------------------------------
    def write(
        self,
        name: str,
        data: pd.DataFrame | pa.Table | TableStream,
        *,
        parents: Mapping[str, ArtifactRef] | None = None,
        params: Mapping[str, Any] | None = None,
        stage: str | None = None,
        stage_key: str | None = None,
        related: Mapping[str, pd.DataFrame] | None = None,
        check_contract: bool = True,
        quarantine: pd.DataFrame | None = None,
    ) -> ArtifactRef:
        """Check schema and contract, write Parquet atomically, then the manifest. A TableStream is written
        one row group at a time (`_write_stream`): the same bytes, hash and contract, never the whole table
        in memory.

        Rows failing a row-level rule marked `quarantine` go to `<name>__quarantine` with the
        reason, together with `quarantine` (rows the stage itself set aside, e.g. unreadable
        input lines); a failing `stop` rule raises ContractViolation and writes nothing but the
        validation result and those set-aside rows (which are often why it failed: the message says so).
        Nothing is written once the process has been sent SIGINT or SIGTERM (liveness.raise_if_signalled).
        """
        liveness.raise_if_signalled()
        spec = schema_for(name)
        parents = dict(parents or {})
        if isinstance(data, TableStream):
            check = check_contract and name == base_name(name)
            return self._write_stream(
                name, spec, data, parents, params, stage, stage_key, related, quarantine, check
            )
        table = to_arrow(name, data, spec)
        if check_contract and name == base_name(name):
            # zero-copy view for the contract: the columns stay Arrow arrays
            outcome = run_contract(name, table.to_pandas(types_mapper=pd.ArrowDtype), related=related or {})
            self._put_json(self._artifact_rel(name, ".validation.json"), outcome.validation)
            self.observer.contract_checked(outcome)
            if not outcome.passed:
                self._stopped(name, outcome, quarantine, parents, params, stage)
            if outcome.quarantined is not None and len(outcome.quarantined):
                table = to_arrow(name, outcome.clean, spec)
                quarantine = pd.concat(
                    [q for q in (quarantine, outcome.quarantined) if q is not None], ignore_index=True
                )
        if quarantine is not None and len(quarantine):
            self._write_quarantine(name, quarantine, parents, params, stage)
        return self._write_table(name, spec, table, parents, params, stage, stage_key)

    def _write_quarantine(self, name, rows, parents, params, stage) -> ArtifactRef:
        """`<name>__quarantine`: the rows set aside, each with its reason (no contract: they broke it)."""
        return self.write(
            f"{name}__quarantine", rows, parents=parents, params=params, stage=stage, check_contract=False
        )

    def _write_stream(
        self, name, spec, stream, parents, params, stage, stage_key, related, quarantine, check
    ) -> ArtifactRef:
        """`write` for a TableStream. Its frames are regrouped into parts of ROW_GROUP rows; each part is
        converted to the schema, checked against the contract (row numbers counted from the part's first row;
        the keys' uniqueness across parts checked by ContractParts, as GX sees one part at a time), and its clean
        rows written as whole row groups of ROW_GROUP rows to a temporary file, so the file's bytes — and its
        hash — are those `_write_table` gives the whole table. A stop rule broken in any part raises as `write`
        does; an empty stream goes the whole-table way, whose contract says what an empty table breaks."""
        set_aside, rows, checked = [], 0, ContractParts(name, spec.key)
        with tempfile.TemporaryDirectory(prefix="judgeops-stream-") as tmp:
            path = f"{tmp}/{name}.parquet"
            with RowGroupWriter(path, spec.schema.remove_metadata(), ROW_GROUP) as writer:
                for frame in regrouped(stream, ROW_GROUP):
                    table = to_arrow(name, frame, spec)
                    if check:
                        view = table.to_pandas(types_mapper=pd.ArrowDtype)
                        outcome = run_contract(name, view, related=related or {}, first_row=rows)
                        checked.add(outcome)
                        if not outcome.passed:
                            self._put_json(self._artifact_rel(name, ".validation.json"), checked.validation())
                            self._stopped(name, outcome, quarantine, parents, params, stage)
                        if outcome.quarantined is not None and len(outcome.quarantined):
                            set_aside.append(outcome.quarantined)
                            table = to_arrow(name, outcome.clean, spec)
                    rows += len(frame)
                    writer.write(table)
            if not rows:
                kept = {"parents": parents, "params": params, "stage": stage, "stage_key": stage_key}
                return self.write(
                    name, spec.schema.empty_table(), related=related, quarantine=quarantine, **kept
                )
            if check:
                outcome = checked.finish()
                self._put_json(self._artifact_rel(name, ".validation.json"), outcome.validation)
                self.observer.contract_checked(outcome)
                outcome.raise_if_stopped()
            with open(path, "rb") as fh:
                payload = fh.read()
        kept = [q for q in (quarantine, *set_aside) if q is not None and len(q)]
        if kept:
            self._write_quarantine(name, pd.concat(kept, ignore_index=True), parents, params, stage)
        return self._commit(name, spec, payload, writer.rows, parents, params, stage, stage_key)

    def _stopped(self, name, outcome, quarantine, parents, params, stage) -> None:
        """Raise the ContractViolation of a stop rule, keeping the rows the stage set aside: they are often why
        the contract broke (an unreadable file), and the message says so."""
        if quarantine is not None and len(quarantine):
            self._write_quarantine(name, quarantine, parents, params, stage)
            reason = quarantine["quarantine_reason"].iloc[0] if "quarantine_reason" in quarantine else ""
            raise ContractViolation(
                name,
                outcome.message()
                + f"\n  {len(quarantine)} input rows were set aside to {name}__quarantine"
                + (f", e.g. {reason}" if reason else ""),
                outcome.stop_failures,
            )
        outcome.raise_if_stopped()

    def _write_table(self, name, spec, table, parents, params, stage, stage_key) -> ArtifactRef:
        buf = io.BytesIO()
        # no pandas metadata: the same content gives the same bytes (and hash) whatever dtypes it came from
        pq.write_table(table.replace_schema_metadata(None), buf, row_group_size=ROW_GROUP)
        return self._commit(name, spec, buf.getvalue(), table.num_rows, parents, params, stage, stage_key)

    def _commit(self, name, spec, payload, rows, parents, params, stage, stage_key) -> ArtifactRef:
        """Write the Parquet bytes atomically, then the manifest (the commit)."""
        rel = self._artifact_rel(name, ".parquet")
        self._put_atomic(rel, payload)
        ref = ArtifactRef(
            name=name,
            run_id=self.run_id,
            path=rel,
            sha256=hashlib.sha256(payload).hexdigest(),
            rows=rows,
        )
        manifest = {
            **ref.model_dump(),
            "kind": "table",
            "schema_version": spec.version,
            "parents": {k: v.sha256 for k, v in parents.items()},
            "params": dict(params or {}),
            "stage": stage,
            "stage_key": stage_key,
            "code_version": __version__,
            "created_at": _utcnow(),
        }
        self._put_json(self._artifact_rel(name, ".manifest.json"), manifest)
        return ref

    def write_file(
        self, name: str, payload: bytes, *, parents: Mapping[str, ArtifactRef] | None = None
    ) -> ArtifactRef:
        """A non-tabular artifact (the HTML report), with the same manifest and hash check."""
        rel = self._artifact_rel(name, "")
        self._put_atomic(rel, payload)
        ref = ArtifactRef(
            name=name, run_id=self.run_id, path=rel, sha256=hashlib.sha256(payload).hexdigest(), rows=0
        )
        manifest = {
            **ref.model_dump(),
            "kind": "file",
            "parents": {k: v.sha256 for k, v in (parents or {}).items()},
            "code_version": __version__,
            "created_at": _utcnow(),
        }
        self._put_json(self._artifact_rel(name, ".manifest.json"), manifest)
        return ref

    def manifest(self, name: str, run_id: str | None = None) -> dict:
        rel = self._artifact_rel(name, ".manifest.json", run_id)
        if not self.fs.exists(self._abs(rel)):
            raise ArtifactNotFoundError(
                f"artifact {name!r} not found in run {run_id or self.run_id} of store {self.url}"
            )
        return self._get_json(rel)

    def exists(self, name: str, run_id: str | None = None) -> bool:
        return self.fs.exists(self._abs(self._artifact_rel(name, ".manifest.json", run_id)))

    def ref(self, name: str, run_id: str | None = None) -> ArtifactRef:
        m = self.manifest(name, run_id)
        return ArtifactRef(**{k: m[k] for k in ArtifactRef.model_fields})

    def _missing(self, ref: ArtifactRef) -> None:
        if not self.fs.exists(self._abs(ref.path)):
            raise ArtifactNotFoundError(
                f"artifact {ref.name!r}: data file {self.display_path(ref.path)} is missing"
            )

    def _check_hash(self, ref: ArtifactRef, actual: str) -> None:
        if actual != ref.sha256:
            raise ArtifactIntegrityError(
                f"artifact {ref.name!r} at {self.display_path(ref.path)} is corrupted: sha256 {actual[:16]}… "
                f"does not match its manifest ({ref.sha256[:16]}…). Delete the run or rerun with --no-reuse."
            )

    def verify(self, ref: ArtifactRef) -> None:
        """Check the artifact's bytes against the manifest's sha256, streamed in chunks (a 175 MB verdicts file
        is never held whole; on an object store, a read of the object in ranges)."""
        self._missing(ref)
        digest = hashlib.sha256()
        with self.fs.open(self._abs(ref.path), "rb") as f:
            while chunk := f.read(HASH_CHUNK):
                digest.update(chunk)
        self._check_hash(ref, digest.hexdigest())

    def read_bytes(self, ref: ArtifactRef) -> bytes:
        """The artifact's bytes, after checking them against the manifest's sha256."""
        self._missing(ref)
        payload = self.fs.cat_file(self._abs(ref.path))
        self._check_hash(ref, hashlib.sha256(payload).hexdigest())
        return payload

    def _parquet(self, name_or_ref: str | ArtifactRef, run_id: str | None) -> Any:
        """A verified table artifact's open file (the caller closes it), its schema version and schema checked."""
        ref = name_or_ref if isinstance(name_or_ref, ArtifactRef) else self.ref(name_or_ref, run_id)
        manifest = self.manifest(ref.name, ref.run_id)
        spec = schema_for(ref.name)
        if manifest.get("schema_version") != spec.version:
            raise SchemaMismatchError(
                f"artifact {ref.name!r} in run {ref.run_id} was written with schema v{manifest.get('schema_version')}, "
                f"this code reads v{spec.version}; rerun the stage that produces it"
            )
        self.verify(ref)
        f = self.fs.open(self._abs(ref.path), "rb")
        stored = pq.read_schema(f)
        if not stored.equals(spec.schema, check_metadata=False):
            f.close()
            raise SchemaMismatchError(
                f"artifact {ref.name!r} at {self.display_path(ref.path)}: stored schema differs from v{spec.version}:\n"
                f"stored:   {stored}\nexpected: {spec.schema}"
            )
        return f

    def read(
        self, name_or_ref: str | ArtifactRef, run_id: str | None = None, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """Read a table artifact (only `columns`, when given), checking hash, schema version and schema: the
        file is read by column chunk, only the columns asked for."""
        f = self._parquet(name_or_ref, run_id)
        with f:
            return pq.ParquetFile(f).read(columns=list(columns) if columns is not None else None)

    def iter_batches(
        self,
        name_or_ref: str | ArtifactRef,
        run_id: str | None = None,
        columns: Sequence[str] | None = None,
        batch_size: int = 65_536,
    ) -> Iterator[pa.RecordBatch]:
        """A table artifact streamed by row group (the same checks as `read`): at most one row group's
        columns in memory at a time."""
        f = self._parquet(name_or_ref, run_id)
        with f:
            cols = list(columns) if columns is not None else None
            yield from pq.ParquetFile(f).iter_batches(batch_size=batch_size, columns=cols)

    def stream(self, ref: ArtifactRef, columns: Sequence[str] | None = None) -> TableStream:
        """A table artifact as a TableStream: each pass reads it again, one row group at a time."""
        return TableStream(
            lambda: (
                batch.to_pandas(types_mapper=arrow_backed)
                for batch in self.iter_batches(ref, columns=columns, batch_size=ROW_GROUP)
            )
        )

    def read_pandas(
        self, name_or_ref: str | ArtifactRef, run_id: str | None = None, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        return self.read(name_or_ref, run_id, columns).to_pandas(types_mapper=arrow_backed)

    def list_artifacts(self, run_id: str | None = None) -> list[dict]:
        rel = self._run_rel(run_id)
        if not self.fs.exists(self._abs(rel)):
            return []
        out = []
        for path in sorted(self.fs.glob(self._abs(f"{rel}/*.manifest.json"))):
            out.append(json.loads(self.fs.cat_file(path)))
        return out

    # -- stage reuse ---------------------------------------------------------------------------
    def find_stage_outputs(self, stage: str, key: str) -> dict[str, ArtifactRef] | None:
        """Outputs an earlier run recorded for this stage key, verified against their hashes."""
        folder = self._abs(f"index/{check_component(stage, 'stage')}/{check_component(key, 'stage key')}")
        if not self.fs.exists(folder):
            return None
        for path in sorted(self.fs.ls(folder, detail=False), reverse=True):
            if ".tmp-" in path:
                continue
            entry = json.loads(self.fs.cat_file(path))
            refs = {n: ArtifactRef(**r) for n, r in entry["outputs"].items()}
            why = next((w for w in map(self._not_reusable, refs.values()) if w), None)
            if why is None:
                return refs
            # never silently reused, never a dead end: this stage (and what its new outputs change) recomputes
            log.warning(
                "stage %s: not reusing the outputs of run %s: %s; computing it again",
                stage,
                next(iter(refs.values())).run_id if refs else "?",
                why,
            )
        return None

    def _not_reusable(self, ref: ArtifactRef) -> str | None:
        """Why an earlier run's artifact must not be reused (missing, corrupted, an older schema), or None."""
        if not self.fs.exists(self._abs(ref.path)):
            return f"artifact {ref.name!r}: data file {self.display_path(ref.path)} is missing"
        try:
            self.verify(ref)
            manifest = self.manifest(ref.name, ref.run_id)
            if manifest.get("sha256") != ref.sha256:  # what readers check the data against
                self.verify(ArtifactRef(**{k: manifest[k] for k in ArtifactRef.model_fields}))
        except StoreError as exc:
            return str(exc)
        version = manifest.get("schema_version")
        if manifest.get("kind") == "table" and version != schema_for(ref.name).version:
            return f"artifact {ref.name!r} was written with schema v{version}, this code writes v{schema_for(ref.name).version}"
        return None

    def record_stage_outputs(self, stage: str, key: str, refs: Mapping[str, ArtifactRef]) -> None:
        self._put_json(
            f"index/{check_component(stage, 'stage')}/{check_component(key, 'stage key')}/{self.run_id}.json",
            {"outputs": {n: r.model_dump() for n, r in refs.items()}, "created_at": _utcnow()},
        )

    def adopt(self, refs: Mapping[str, ArtifactRef]) -> None:
        """Make another run's artifacts part of this run (manifests pointing at the same data)."""
        for ref in refs.values():
            if ref.run_id == self.run_id:
                continue
            manifest = self.manifest(ref.name, ref.run_id)
            computed_by = manifest.get("reused_from") or ref.run_id  # the run that validated the data
            manifest["reused_from"] = ref.run_id
            self._put_json(f"{self._run_rel()}/{ref.name}.manifest.json", manifest)
            validation = f"{self._run_rel(computed_by)}/{ref.name}.validation.json"
            if self.fs.exists(self._abs(validation)):  # this run shows the result it stands on
                self.observer.contract_reused(ref.name, computed_by, self._get_json(validation))

    # -- runs ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def recording(
        self,
        flow: str,
        as_of: dt.date,
        config: Any,
        done: str = "completed",
        suspended: tuple[type[BaseException], ...] = (),
    ) -> Iterator[dict]:
        """The run record around a flow's body: "running" (with its owner process and a heartbeat), then
        `done` (with what the body added to the yielded dict), "failed" with the error, "cancelled" with the
        signal that stopped it, or "suspended" when the body raised one of `suspended` (the orchestrator's
        suspension: the run continues when resumed, `suspended_run`). A process that dies
        without either is found by `sweep_crashed` (every flow start and `judgeops store ls` run it)."""
        self.sweep_crashed()
        record = {
            "flow": flow,
            "as_of": as_of.isoformat(),
            "config": config.model_dump(mode="json"),
            "started_at": _utcnow(),
            "owner": liveness.owner(),
            "prefect": self.observer.context(),
        }
        self.write_run_record({**record, "status": "running", "heartbeat_at": _utcnow()})
        extra: dict = {}
        beat = lambda: self.write_run_record({**record, "status": "running", "heartbeat_at": _utcnow()})  # noqa: E731
        try:
            with liveness.Heartbeat(beat):
                yield extra
        except suspended:
            self.write_run_record({**record, **extra, "status": "suspended", "suspended_at": _utcnow()})
            raise
        except BaseException as exc:
            ended = _cancelled(exc)  # a signal stopped it: not a failure
            if ended is not None:  # ... sent by the orchestrator cancelling the run? Then say so
                why = None
                try:
                    why = self.observer.cancelled()
                except Exception as again:  # noqa: BLE001 - the signal's record stands
                    log.warning("run %s: could not ask why it was cancelled: %s", self.run_id, again)
                ended = {"status": "cancelled", "error": why} if why else ended
            try:
                self.write_run_record(
                    {**record, **(ended or {"status": "failed", "error": f"{type(exc).__name__}: {exc}"})}
                )
            except StoreWriteError as again:  # the store is full or read-only: a later sweep marks it
                log.warning("run %s: could not record its failure: %s", self.run_id, again)
            raise
        self.write_run_record({**record, **extra, "status": done})

    def write_run_record(self, record: Mapping[str, Any], run_id: str | None = None) -> None:
        self._put_json(
            f"{self._run_rel(run_id)}/run.json",
            {**record, "run_id": run_id or self.run_id, "updated_at": _utcnow()},
        )

    def sweep_crashed(self) -> list[dict]:
        """Mark "running" records whose owner process is gone as "crashed": remove the temp files the run
        left and stop the temporary Prefect server it started. Then, where a Prefect API is reachable (in a
        flow, or PREFECT_API_URL set), set every crashed run's Prefect flow run to Crashed (once). Returns
        the records it marked crashed now."""
        swept, on_record = [], []  # marked crashed now; crashed as the store records it
        for record in self.list_runs():
            if record.get("status") == "crashed":
                on_record.append(record)
            if record.get("status") != "running":
                self._stop_server_left_by(record)
                continue
            if liveness.run_alive(record) is not False:
                continue
            run_id, who = record["run_id"], record["owner"]
            removed = self._remove_temp_files(run_id)
            context = record.get("prefect") or {}
            stopped = liveness.stop_orphan_server(context.get("temporary_server"))
            crashed = {
                **record,
                "status": "crashed",
                "error": f"its process (pid {who['pid']} on {who['host']}) ended without finishing the run",
                "swept": {
                    "at": _utcnow(),
                    "temp_files_removed": removed,
                    "prefect_server_stopped": stopped,
                    "prefect_state": "pending",
                },
            }
            with contextlib.suppress(StoreWriteError):  # a read-only store: reported, not fixed
                self.write_run_record(crashed, run_id)
                on_record.append(crashed)
            log.warning("run %s: %s; marked crashed", run_id, crashed["error"])
            swept.append(crashed)
        suspended = [r for r in self.list_runs() if r.get("status") == "suspended"]
        for run_id, state in (self.observer.suspensions_ended(suspended) if suspended else {}).items():
            record = next(r for r in suspended if r["run_id"] == run_id)
            failed = {
                **record,
                "status": "failed",
                "error": f"it was suspended waiting for its audit's labels and its flow run ended {state} "
                "without resuming",
            }
            with contextlib.suppress(StoreWriteError):
                self.write_run_record(failed, run_id)
            log.warning("run %s: %s; marked failed", run_id, failed["error"])
        pending = [r for r in on_record if (r.get("swept") or {}).get("prefect_state") == "pending"]
        for record in self.observer.runs_crashed(pending) if pending else []:
            with contextlib.suppress(StoreWriteError):
                self.write_run_record(
                    {**record, "swept": {**record["swept"], "prefect_state": "crashed"}}, record["run_id"]
                )
        return swept

    def _stop_server_left_by(self, record: dict) -> None:
        """A finished run (failed, cancelled) whose process is gone but whose temporary Prefect server is not:
        stop the server (once; the record says so)."""
        server = (record.get("prefect") or {}).get("temporary_server")
        if not server or record.get("server_stopped_at") or liveness.run_alive(record) is not False:
            return
        if liveness.stop_orphan_server(server):
            log.warning("run %s: stopped the temporary Prefect server it left running", record["run_id"])
            with contextlib.suppress(StoreWriteError):
                self.write_run_record({**record, "server_stopped_at": _utcnow()}, record["run_id"])

    def _remove_temp_files(self, run_id: str) -> int:
        """The `*.tmp-*` files a killed writer of `run_id` left (its folder and its index entries)."""
        found = self.fs.glob(self._abs(f"runs/{run_id}/*.tmp-*")) + self.fs.glob(
            self._abs(f"index/*/*/{run_id}.json.tmp-*")
        )
        for path in found:
            with contextlib.suppress(OSError):
                self.fs.rm(path)
        return len(found)

    def run_record(self, run_id: str | None = None) -> dict:
        rel = f"{self._run_rel(run_id)}/run.json"
        if not self.fs.exists(self._abs(rel)):
            raise ArtifactNotFoundError(
                f"no run {run_id or self.run_id} in store {self.url} (`judgeops store ls` lists its runs)"
            )
        return self._get_json(rel)

    def list_runs(self) -> list[dict]:
        """Run records, oldest first."""
        records = []
        for path in self.fs.glob(self._abs("runs/*/run.json")):
            records.append(json.loads(self.fs.cat_file(path)))
        return sorted(records, key=lambda r: (r.get("started_at", ""), r["run_id"]))

    def completed_runs(self, flow: str, first: str = "", last: str = "9999") -> list[dict]:
        """Completed runs of `flow` with as_of (ISO date) in [first, last], oldest first."""
        return [
            r
            for r in self.list_runs()
            if r.get("flow") == flow
            and r.get("status") == "completed"
            and first <= r.get("as_of", "") <= last
        ]

    def suspended_run(self, flow_run_id: Any) -> str | None:
        """The store run a suspended orchestrator flow run left (resumed, the flow run continues it), or None."""
        if not flow_run_id:
            return None
        for record in reversed(self.list_runs()):
            if record.get("status") == "suspended" and (record.get("prefect") or {}).get(
                "flow_run_id"
            ) == str(flow_run_id):
                return record["run_id"]
        return None

    def latest_run_id(self, status: str | None = "completed") -> str:
        runs = [r for r in self.list_runs() if status is None or r.get("status") == status]
        if not runs:
            raise ArtifactNotFoundError(
                f"no {status or ''} run in store {self.url}; run `judgeops run` first".replace("  ", " ")
            )
        return runs[-1]["run_id"]
