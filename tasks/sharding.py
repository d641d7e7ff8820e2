"""Where the judge stage's shards and the profile bootstrap's blocks run: work orders saved in the store (so any
worker can take one), judged or resampled as Prefect tasks on the configured task runner (a thread pool, or
prefect-dask's DaskTaskRunner), read back in order. The stages (tasks/stages.py) ask for a runner here when
`sharding.runner` is not inline; the results are those of the unsharded run.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import time

import numpy as np
import pandas as pd
from prefect import flow, task, unmapped
from prefect.cache_policies import NO_CACHE

from judgeops.config import ShardingConfig, StagesConfig
from judgeops.schemas.store import ArtifactStore
from judgeops.schemas.stream import TableStream
from judgeops.tasks.judges.backends import BatchPending
from judgeops.tasks.judges.runner import (
    Plan,
    Shard,
    judge_shard,
    shard_plan,
    units_of,
    units_table,
)
from judgeops.tasks.log import logger
from judgeops.tasks.profile.bootstrap import Block, MapBlocks, blocks_here, resample_block
from judgeops.tasks.task_options import stage_options

SHARDS = "shards/judge"  # in the store: <key>.json (the work order), <key>.parquet (its rows), until the stage ends
# <block>.parquet: the units of a block, shared by the shards of every judge given them
UNITS = f"{SHARDS}/units"


@task(name="judge-shard", cache_policy=NO_CACHE, task_run_name="judge-shard-{key:.12}")
def judge_shard_task(key: str, store_url: str, run_id: str, batch_size: int, cache_path: str | None) -> str:
    """Judge one shard (its work order read from the store, so any worker can take it) and save its verdict
    rows in the store as it finishes; a shard already saved (by an attempt that crashed or lost its worker
    after it) is not judged again. Returns where the rows are."""
    store, rel = ArtifactStore(store_url), f"{SHARDS}/{key}.parquet"
    if store.has_blob(rel):
        logger().info("judge shard %s: saved by an earlier attempt, not judged again", key[:12])
        return rel
    t0 = time.perf_counter()
    shard = Shard.from_order(
        store.get_blob(f"{SHARDS}/{key}.json"),
        lambda block: units_of(pd.read_parquet(io.BytesIO(store.get_blob(f"{UNITS}/{block}.parquet")))),
    )
    rows = pd.DataFrame(judge_shard(shard, run_id, batch_size, cache_path))
    judged = time.perf_counter()
    store.put_blob(rel, rows.to_parquet(index=False))
    logger().info(
        "judge shard %s: %d units of %s judged in %.2f s, saved in %.2f s",
        key[:12],
        shard.n_units,
        ", ".join(judge.name for judge, _, _ in shard.plan),
        judged - t0,
        time.perf_counter() - judged,
    )
    return rel


@flow(name="judge-shards", flow_run_name="judge-shards-{run_id}")
def judge_shards(
    keys: list[str],
    store_url: str,
    run_id: str,
    batch_size: int,
    cache_path: str | None,
    stages: StagesConfig | None = None,
) -> list[str]:
    """Every shard as a task on this flow's task runner (a thread pool or Dask), with the stages' retries and
    timeout; where each shard's rows were saved, in shard order (BatchPending naming every shard's provider batch
    still running, where judges wait for theirs by suspending the run). Its parameters are the shards' keys: the
    work orders themselves are in the store."""
    shard_task = judge_shard_task.with_options(**stage_options(stages or StagesConfig()))
    futures = shard_task.map(
        keys, unmapped(store_url), unmapped(run_id), unmapped(batch_size), unmapped(cache_path)
    )
    saved, pending = [], []
    for future in futures:  # every shard's provider batches named, not only the first shard's
        try:
            saved.append(future.result())
        except BatchPending as waiting:
            pending += waiting.batches
    if pending:
        raise BatchPending(pending)
    return saved


def task_runner(sharding: ShardingConfig):
    """The configured Prefect task runner: a thread pool, or prefect-dask's DaskTaskRunner on an existing
    cluster (its address) or on a LocalCluster of `dask_workers` processes."""
    if sharding.runner == "threads":
        from prefect.task_runners import ThreadPoolTaskRunner

        return ThreadPoolTaskRunner(max_workers=sharding.max_workers)
    from prefect_dask import DaskTaskRunner

    if sharding.dask_address:
        return DaskTaskRunner(address=sharding.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": sharding.dask_workers, "threads_per_worker": 1})


def interleaved(judges: list[str]) -> list[int]:
    """The shards' positions with the judges taken in turn (each judge's first shard, then each one's second...),
    the order they are given to the task runner. The shards in flight at once are then of different judges, which
    progress together and end together; in plan order the last judge's shards ran alone at the end (stub judges
    on 4 threads: the last 13 s of 83 at 0.47 of the stub's ceiling, one judge's 8 calls at a time)."""
    by_judge: dict[str, list[int]] = {}
    for i, judge in enumerate(judges):
        by_judge.setdefault(judge, []).append(i)
    turns = itertools.zip_longest(*by_judge.values())
    return [i for turn in turns for i in turn if i is not None]


class ShardsRunner:
    """A PlanRunner that shards the plan, saves the work orders in the store, judges them on the configured
    task runner (`judge-shards`), and returns their rows in plan order (the unsharded rows) as a TableStream
    over the saved shards: the stage writes `verdicts` from it one row group at a time, so no process holds
    every verdict at once. `cleanup()` removes the saved shards once the stage has written them (or failed).
    `code` (the judge stage's code fingerprint) is part of each shard's key, so a shard saved by other code is
    not read back."""

    def __init__(
        self,
        store: ArtifactStore,
        sharding: ShardingConfig,
        batch_size: int,
        cache_path: str | None,
        stages: StagesConfig | None,
        code: str,
    ):
        self.store, self.sharding, self.batch_size = store, sharding, batch_size
        self.cache_path, self.stages, self.code = cache_path, stages, code
        self.shards: list[Shard] = []

    def __call__(self, plan: Plan) -> TableStream | pd.DataFrame:
        store, sharding = self.store, self.sharding
        shards = shard_plan(plan, sharding.units_per_shard, self.code)
        if not shards:
            return pd.DataFrame()
        self.shards += shards
        written: set[str] = set()  # blocks of units put in the store by this run
        for shard in shards:
            if not store.has_blob(f"{SHARDS}/{shard.key}.parquet"):
                if shard.block not in written:
                    store.put_blob(
                        f"{UNITS}/{shard.block}.parquet", units_table(shard.units).to_parquet(index=False)
                    )
                    written.add(shard.block)
                store.put_blob(f"{SHARDS}/{shard.key}.json", shard.order())
        logger().info(
            "judge: %d units in %d shards on %s", sum(s.n_units for s in shards), len(shards), sharding.runner
        )
        order = interleaved([s.judge.name for s in shards])
        flow_ = judge_shards.with_options(task_runner=task_runner(sharding))
        done = flow_(
            [shards[i].key for i in order],
            store.url,
            store.run_id,
            self.batch_size,
            self.cache_path,
            self.stages,
        )
        saved = [rel for _, rel in sorted(zip(order, done, strict=True))]  # back in plan order
        run_id = store.run_id
        return TableStream(
            lambda: (pd.read_parquet(io.BytesIO(store.get_blob(rel))).assign(run_id=run_id) for rel in saved)
        )

    def cleanup(self) -> None:
        """Remove this run's saved shards, their work orders and their blocks of units."""
        store = self.store
        for shard in self.shards:
            store.remove_blob(f"{SHARDS}/{shard.key}.parquet")
            store.remove_blob(f"{SHARDS}/{shard.key}.json")
        for block in {shard.block for shard in self.shards}:
            store.remove_blob(f"{UNITS}/{block}.parquet")
        if self.shards:
            store.remove_empty_folder(UNITS)
        self.shards = []


# in the store: <key>.npz, the matrix a bootstrap's blocks resample, until the profile stage ends
BOOTSTRAP = "shards/bootstrap"


@task(name="bootstrap-block", cache_policy=NO_CACHE, task_run_name="bootstrap-block-{block[1]}")
def bootstrap_block_task(store_url: str, key: str, block: Block) -> tuple[np.ndarray, np.ndarray]:
    """One block of the profile bootstrap's resamples, on the matrix saved in the store under `key`."""
    with np.load(io.BytesIO(ArtifactStore(store_url).get_blob(f"{BOOTSTRAP}/{key}.npz"))) as saved:
        return resample_block(saved["filled"], saved["has"], block)


@flow(name="profile-bootstrap", flow_run_name="profile-bootstrap-{key:.12}")
def bootstrap_blocks(
    store_url: str, key: str, blocks: list[Block], stages: StagesConfig | None = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every block as a task on this flow's task runner, with the stages' retries and timeout; in block order."""
    block_task = bootstrap_block_task.with_options(**stage_options(stages or StagesConfig()))
    futures = block_task.map(unmapped(store_url), unmapped(key), blocks)
    return [f.result() for f in futures]


def blocks_runner(store: ArtifactStore, sharding: ShardingConfig, stages: StagesConfig | None) -> MapBlocks:
    """A MapBlocks that computes a bootstrap's blocks on the configured task runner once its matrix has
    `sharding.bootstrap_min_cells` cells (the matrix saved in the store for the workers, removed after), and
    here below that: a small bootstrap is not worth a flow run."""

    def run(filled: np.ndarray, has: np.ndarray, blocks: list[Block]) -> list[tuple[np.ndarray, np.ndarray]]:
        if filled.size < sharding.bootstrap_min_cells:
            return blocks_here(filled, has, blocks)
        buffer = io.BytesIO()
        np.savez(buffer, filled=filled, has=has)
        key = hashlib.sha256(buffer.getvalue()).hexdigest()[:24]
        store.put_blob(f"{BOOTSTRAP}/{key}.npz", buffer.getvalue())
        logger().info(
            "profile: %d resamples of %s in %d blocks on %s",
            sum(b[2] for b in blocks),
            filled.shape,
            len(blocks),
            sharding.runner,
        )
        try:
            flow_ = bootstrap_blocks.with_options(task_runner=task_runner(sharding))
            return flow_(store.url, key, blocks, stages)
        finally:
            store.remove_blob(f"{BOOTSTRAP}/{key}.npz")
            store.remove_empty_folder(BOOTSTRAP)

    return run
