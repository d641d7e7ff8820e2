"""`judgeops init`: a commented starter judgeops.yaml, the example config shipped inside the package."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from judgeops.config import LOCAL_EXTRA_HINT, ConfigError, local_judge_installed

_LOCAL_LINE = "  - {name: smollm2-135m, backend: local"


def starter_text(local: bool | None = None) -> str:
    """The example config; without the `local` extra its SmolLM2 judge is commented out, with how to add it."""
    text = files("judgeops").joinpath("judgeops.example.yaml").read_text(encoding="utf-8")
    if local_judge_installed() if local is None else local:
        return text
    lines = []
    for line in text.splitlines(keepends=True):
        if line.startswith(_LOCAL_LINE):
            lines.append(f"  # not installed here: {LOCAL_EXTRA_HINT}\n  # {line.lstrip()}")
        else:
            lines.append(line)
    return "".join(lines)


def init(path: str | Path = "judgeops.yaml", force: bool = False) -> str:
    """Write the starter config to `path` (never over an existing file unless `force`); returns a line to print."""
    if not str(path).strip() or "\x00" in str(path):
        raise ConfigError(f"--path {str(path)[:80]!r}: not a file path")
    path = Path(path)
    try:
        if path.is_dir():
            raise ConfigError(f"{path} is a folder: give --path a file name, e.g. {path / 'judgeops.yaml'}")
        if path.exists() and not force:
            raise ConfigError(f"{path} exists: pass --force to overwrite it, or --path to write elsewhere")
        path.write_text(starter_text(), encoding="utf-8")
    except OSError as exc:  # no such folder, a name too long, no permission
        raise ConfigError(f"cannot write {str(path)[:120]}: {exc.strerror or exc}") from None
    return f"wrote {path}: edit its sources and judges, then `judgeops run` (or `judgeops run --limit 10` to try it)"
