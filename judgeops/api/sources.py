"""The configured sources checked before a run starts (no Prefect import: `judgeops config` runs it too)."""

from __future__ import annotations

from pathlib import Path

from judgeops.config import ConfigError, EvaluateConfig, load_config
from judgeops.tasks.ingest import source_path_problems


def check_sources(config: EvaluateConfig, origin: str | Path | None = None) -> EvaluateConfig:
    """The config, once every source path it names can be read (a ConfigError naming each field that cannot:
    a run must not find a missing file 40 s in, after the Prefect server has started)."""
    problems = source_path_problems(config)
    if problems:
        where = str(origin) if origin is not None else "config"
        lines = [
            f"{where}: {len(problems)} source path(s) cannot be read",
            *(f"  {where}: {p}" for p in problems),
        ]
        raise ConfigError("\n".join(lines))
    return config


def checked_config(path: str | Path | None = None) -> EvaluateConfig:
    """`judgeops config`: the config loaded (./judgeops.yaml or the default without a path), its sources checked."""
    return check_sources(load_config(path), path or "judgeops.yaml")
