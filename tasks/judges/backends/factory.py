"""The backend of a judge's config, found by name in the `judgeops.judges` registry (judgeops/plugins.py):
openai, anthropic and local are registered there like any plugin; each loads only when a judge uses it (the
local backend's torch, the anthropic SDK)."""

from __future__ import annotations

from judgeops import plugins
from judgeops.config import JudgeConfig
from judgeops.tasks.judges.backends.base import Backend


def get_backend(judge: JudgeConfig) -> Backend:
    if judge.backend == "programmatic":
        raise ValueError(f"judge {judge.name}: backend 'programmatic' takes no requests")
    return plugins.load("judges", judge.backend)(judge)
