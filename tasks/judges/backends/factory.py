"""The backend of a judge's config, found by name in the `judgeops.judges` registry (judgeops/plugins.py):
openai, anthropic and local are registered there like any plugin; each loads only when a judge uses it (the
local backend's torch, the anthropic SDK)."""

from __future__ import annotations

from judgeops import plugins
from judgeops.config import JudgeConfig
from judgeops.tasks.judges.backends.base import Backend


def get_backend(judge: JudgeConfig, cache=None) -> Backend:
    """`cache`: the call cache, where a batch judge (`batch: true`) keeps the ids of its batches in flight."""
    if judge.backend == "programmatic":
        raise ValueError(f"judge {judge.name}: backend 'programmatic' takes no requests")
    if judge.batch:
        from judgeops.tasks.judges.backends.batches import batch_backend

        return batch_backend(judge, cache)
    return plugins.load("judges", judge.backend)(judge)
