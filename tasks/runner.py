"""The stage runner: every stage declares its inputs, its parameters and its code, and runs one way.

A stage's key hashes its declared input artifacts (content hashes), its parameters (a typed config slice,
as JSON) and its code: the modules it names and every project module they import, transitively
(fingerprint.py), with the schemas and contracts its outputs must meet. If an earlier run recorded outputs
for that key, they are adopted (the log says so); otherwise the inputs are read from the store, the
stage's pure function is called, and each output is written through the store (schema check, data
contract, atomic write, manifest).

Reuse is keyed on the store's manifests rather than on Prefect's result cache: the cache record would live
apart from the artifacts, so a deleted or corrupted artifact could be "reused" as a dangling reference;
here reuse verifies the artifact's bytes first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel

from judgeops.schemas.artifacts import QUARANTINE_SUFFIX
from judgeops.schemas.store import ArtifactRef, ArtifactStore, stable_hash
from judgeops.schemas.stream import Rows
from judgeops.tasks.fingerprint import code_fingerprint
from judgeops.tasks.log import logger

Refs = dict[str, ArtifactRef]
Compute = Callable[[dict[str, Rows]], dict[str, pd.DataFrame]]

# what every stage's outputs must meet: their schemas and data contracts
OUTPUT_CHECKS = ("judgeops.schemas.artifacts", "judgeops.data_contracts")


@dataclass(frozen=True)
class Stage:
    """A stage's declaration: its name, the artifacts it reads (`optional` ones when the run has them; of a
    wide one, only the `columns` it uses), and the modules holding its logic (with everything they import,
    they are the code its outputs depend on)."""

    name: str
    code: tuple[str, ...]
    inputs: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    columns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # an input read in part: its columns
    # inputs its code reads by row group (a TableStream, schemas/stream.py), not as one DataFrame
    streamed: tuple[str, ...] = ()

    def select(self, artifacts: Mapping[str, ArtifactRef]) -> Refs:
        """This stage's inputs out of everything the run has produced so far."""
        missing = [n for n in self.inputs if n not in artifacts]
        if missing:
            raise KeyError(f"stage {self.name}: inputs {missing} were not produced by an earlier stage")
        return {n: artifacts[n] for n in (*self.inputs, *self.optional) if n in artifacts}

    def fingerprint(self) -> str:
        return code_fingerprint((*self.code, *OUTPUT_CHECKS))


def jsonable(params: Any) -> Any:
    if isinstance(params, BaseModel):
        return params.model_dump(mode="json")
    if isinstance(params, list | tuple):
        return [jsonable(p) for p in params]
    if isinstance(params, dict):
        return {k: jsonable(v) for k, v in params.items()}
    return params


def stage_key(
    stage: Stage, inputs: Refs, params: Mapping[str, Any], extra: Mapping[str, str] | None = None
) -> str:
    return stable_hash(
        {
            "stage": stage.name,
            "code": stage.fingerprint(),
            "params": jsonable(dict(params)),
            "inputs": {name: ref.sha256 for name, ref in sorted(inputs.items())},
            "extra": dict(extra or {}),
        }
    )


def run_stage(
    store: ArtifactStore,
    stage: Stage,
    inputs: Refs,
    params: Mapping[str, Any],
    compute: Compute,
    reuse: bool = True,
    extra_key: Mapping[str, str] | None = None,
    incomplete: Callable[[dict[str, pd.DataFrame]], str | None] | None = None,
) -> Refs:
    """Compute a stage or reuse an earlier run's outputs for the same key.

    `inputs` are the stage's declared inputs (`stage.select`), `params` everything else its result depends
    on, `extra_key` what lies outside the store (content hashes of source files). `incomplete(outputs)` may
    return why the outputs must not be reused (e.g. judge calls that never got an answer): they are written
    for this run but not indexed, so the next run computes the stage again.
    """
    log = logger()
    params = jsonable(dict(params))
    key = stage_key(stage, inputs, params, extra_key)
    if reuse:
        found = store.find_stage_outputs(stage.name, key)
        if found is not None:
            store.adopt(found)
            runs = sorted({r.run_id for r in found.values()})
            log.info(
                "stage %s: reused %s from run %s (inputs and parameters unchanged, key %s)",
                stage.name,
                ", ".join(f"{n} ({r.rows} rows)" for n, r in found.items()),
                ", ".join(runs),
                key[:12],
            )
            return found
    log.info("stage %s: computing (key %s)", stage.name, key[:12])
    tables = {
        name: (store.stream if name in stage.streamed else store.read_pandas)(
            ref, columns=stage.columns.get(name)
        )
        for name, ref in inputs.items()
    }
    outputs = compute(tables)
    refs: Refs = {}
    related = {name: t for name, t in tables.items() if isinstance(t, pd.DataFrame)}  # the contracts' parents
    set_aside = {n: df for n, df in outputs.items() if n.endswith(QUARANTINE_SUFFIX)}
    for name, df in outputs.items():
        if name in set_aside:
            continue
        refs[name] = store.write(
            name,
            df,
            parents=inputs,
            params=params,
            stage=stage.name,
            stage_key=key,
            related=related,
            quarantine=set_aside.get(name + QUARANTINE_SUFFIX),
        )
        if isinstance(df, pd.DataFrame):  # a stream (the judge stage's shards) is no later output's parent
            related[name] = df
        if store.exists(name + QUARANTINE_SUFFIX):  # rows set aside are outputs too: reused with the rest
            refs[name + QUARANTINE_SUFFIX] = store.ref(name + QUARANTINE_SUFFIX)
    why = incomplete(outputs) if incomplete else None
    if why:
        log.warning("stage %s: not offered for reuse: %s", stage.name, why)
    else:
        store.record_stage_outputs(stage.name, key, refs)
    log.info("stage %s: wrote %s", stage.name, ", ".join(f"{n} ({r.rows} rows)" for n, r in refs.items()))
    return refs
