"""Where items come from: the built-in bank (fixed, or drifting week by week), a weekly inbox folder, files.
Each source yields item rows (tuples in the `items` schema's column order) or `Reject`s."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

from judgeops.config import BankSource, EvaluateConfig, FileSource, InboxSource
from judgeops.tasks.ingest.adapters import (
    IngestError,
    Reject,
    expand_paths,
    identity_digest,
    read_file_source,
    read_generic,
    source_path,
)
from judgeops.tasks.ingest.bank import GENERATORS, generate_bank, iter_bank
from judgeops.tasks.ingest.bank import LICENSE as BANK_LICENSE


def week_mix(drift, as_of: dt.date) -> tuple[int, dict[str, float]]:
    """(week index, domain → share) of a drifting bank source on `as_of`."""
    k = min(max((as_of - drift.start).days // 7, 0), drift.weeks - 1)
    t = k / (drift.weeks - 1)
    domains = sorted(set(drift.from_mix) | set(drift.to_mix))
    weights = {d: (1 - t) * drift.from_mix.get(d, 0.0) + t * drift.to_mix.get(d, 0.0) for d in domains}
    total = sum(weights.values())
    return k, {d: w / total for d, w in weights.items() if w > 0}


def drifting_bank(source: BankSource, as_of: dt.date) -> list[dict]:
    """This week's batch: `n_items` items split over domains by the week's mix (largest remainder)."""
    unknown = sorted((set(source.drift.from_mix) | set(source.drift.to_mix)) - set(GENERATORS))
    if unknown:
        raise IngestError(f"bank drift: unknown domains {unknown}; the bank has {sorted(GENERATORS)}")
    k, mix = week_mix(source.drift, as_of)
    exact = {d: source.n_items * share for d, share in mix.items()}
    counts = {d: int(v) for d, v in exact.items()}
    for d in sorted(exact, key=lambda d: exact[d] - counts[d], reverse=True)[
        : source.n_items - sum(counts.values())
    ]:
        counts[d] += 1
    out, need = [], dict(counts)
    for item in iter_bank(source.seed + k):
        if need.get(item["domain"], 0) > 0:
            need[item["domain"]] -= 1
            item["provenance"] += f":drift_week={k + 1}"
            out.append(item)
            if not any(need.values()):
                break
    return out


def bank_rows(source: BankSource, as_of: dt.date | None) -> Iterator[tuple]:
    batch = drifting_bank(source, as_of) if source.drift else generate_bank(source.n_items, source.seed)
    for item in batch:
        steps = item["steps"]
        key = int.from_bytes(identity_digest(item["question"], []), "little", signed=True)
        yield (
            item["item_id"],
            "builtin_bank",
            item["domain"],
            item["question"],
            [],
            item["gold"],
            " ".join(steps),
            steps,
            item["conditions"],
            BANK_LICENSE,
            item["provenance"],
            key,
        )


def inbox_files(source: InboxSource, as_of: dt.date) -> list[Path]:
    """The jsonl files of the week ending at as_of: <root>/<YYYY-MM-DD>/*.jsonl with the date in (as_of - days, as_of];
    the root a local folder or any fsspec URL (s3://bucket/inbox)."""
    root = source_path(source.root)
    if not root.is_dir():
        raise IngestError(f"{root}: inbox folder not found")
    first = as_of - dt.timedelta(days=source.days - 1)
    folders = []
    for child in sorted(root.iterdir()):
        try:
            day = dt.date.fromisoformat(child.name)
        except ValueError:
            continue
        if child.is_dir() and first <= day <= as_of:
            folders.append(child)
    if not folders:
        raise IngestError(
            f"{root}: no inbox folder dated {first} to {as_of} (expected {root}/<YYYY-MM-DD>/*.jsonl)"
        )
    return [path for folder in folders for path in sorted(folder.glob("*.jsonl"), key=str) if path.is_file()]


def inbox_rows(source: InboxSource, as_of: dt.date) -> Iterator[tuple | Reject]:
    mapping = FileSource(
        path=source.root,
        format="jsonl",
        domain=source.domain,
        question_field=source.question_field,
        gold_field=source.gold_field,
        solution_field=source.solution_field,
        license=source.license,
    )
    for path in inbox_files(source, as_of):
        yield from read_generic(path, mapping, source_name=f"inbox:{path.parent.name}")


def source_rows(source, as_of: dt.date | None) -> Iterator[tuple | Reject]:
    """The rows of one source; a drifting bank and an inbox are read as of the run's date."""
    if as_of is None and (isinstance(source, InboxSource) or getattr(source, "drift", None) is not None):
        raise IngestError(f"{source.kind} source: reading it needs the run's date (as_of)")
    if isinstance(source, BankSource):
        return bank_rows(source, as_of)
    if isinstance(source, InboxSource):
        return inbox_rows(source, as_of)
    return read_file_source(source)


def source_path_problems(config: EvaluateConfig) -> list[str]:
    """`<field>: <why>` for every configured source path that cannot be read (missing, a folder with no file
    of its format, not a regular file), checked before a run starts; an inbox's weeks are checked by the run."""
    sections = {"sources": config.sources, "pairwise": config.pairwise, "responses": config.responses}
    problems = []
    for section, sources in sections.items():
        for i, source in enumerate(sources):
            try:
                if isinstance(source, InboxSource):
                    if not source_path(source.root).is_dir():
                        raise IngestError(f"{source.root}: inbox folder not found")
                elif getattr(source, "path", None) is not None:
                    expand_paths(source.path, source.format)
            except (IngestError, OSError) as exc:
                problems.append(f"{section}[{i}].{_field(source)}: {exc}")
            except Exception as exc:  # noqa: BLE001 - an object store's client errors (no credentials, no bucket)
                reason = f"cannot be reached ({type(exc).__name__}: {exc})"
                problems.append(
                    f"{section}[{i}].{_field(source)}: {getattr(source, 'path', None) or source.root}: {reason}"
                )
    return problems


def _field(source) -> str:
    return "root" if isinstance(source, InboxSource) else "path"
