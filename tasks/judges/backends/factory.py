"""The backend of a judge's config."""

from __future__ import annotations

from judgeops.config import JudgeConfig
from judgeops.tasks.judges.backends.base import Backend
from judgeops.tasks.judges.backends.openai import OpenAIBackend


def get_backend(judge: JudgeConfig) -> Backend:
    if judge.backend == "openai":
        return OpenAIBackend(judge)
    if judge.backend == "anthropic":
        from judgeops.tasks.judges.backends.anthropic import AnthropicBackend  # an optional extra

        return AnthropicBackend(judge)
    if judge.backend == "local":
        # lazy: the local backend loads torch and transformers, needed only when a local judge has a miss
        from judgeops.tasks.judges.backends.local import LocalBackend

        return LocalBackend(judge)
    raise ValueError(f"judge {judge.name}: backend {judge.backend!r} takes no requests")
