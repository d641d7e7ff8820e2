"""The store on S3, against a real S3-compatible server on loopback (moto's server mode: the `s3` fixture):
the evaluate flow end to end, reuse, the command line, the report link, and the manifest as the commit point."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import fsspec
import httpx
import pytest

from judgeops.schemas.store import ArtifactStore, StoreWriteError
from tests.conftest import small_config
from tests.test_store import items_frame

BUCKET = "judgeops-test"


@pytest.mark.slow
def test_the_pipeline_on_an_s3_store_reuses_lists_and_links_its_report(prefect_server, s3, tmp_path):
    from judgeops.flows.evaluate import evaluate

    config = small_config(f"s3://{BUCKET}/pipeline", n_items=24)
    config.cache.path = str(tmp_path / "calls.sqlite")  # the cache is a local file (or PostgreSQL), not S3
    first = evaluate(config=config, as_of=dt.date(2026, 11, 16))
    assert first.report == f"s3://{BUCKET}/pipeline/runs/{first.run_id}/report.html"
    fs = fsspec.filesystem("s3")
    objects = fs.find(f"{BUCKET}/pipeline")
    assert not [o for o in objects if ".tmp-" in o]  # one PUT per object: no temp objects, no renames
    store = ArtifactStore(config.store.url, first.run_id)
    names = [Path(o).name.removesuffix(".manifest.json") for o in objects if o.endswith(".manifest.json")]
    assert {"items", "pairs", "verdicts", "consensus", "profiles"} <= set(names)
    for name in ("verdicts", "consensus", "profiles"):
        store.read_bytes(store.ref(name))  # every byte as its manifest's sha256 says
    # the second run of the same week reuses every stage's outputs from the first, on S3 too
    second = evaluate(config=config, as_of=dt.date(2026, 11, 16))
    assert ArtifactStore(config.store.url, second.run_id).manifest("verdicts")["reused_from"] == first.run_id
    # the command line on the same store, from another process (fsspec's configuration in the environment)
    judgeops = str(Path(sys.executable).parent / "judgeops")
    listed = subprocess.run(
        [judgeops, "store", "ls", "--store", config.store.url], capture_output=True, text=True, env=os.environ
    )
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert first.run_id in listed.stdout and second.run_id in listed.stdout
    # the Prefect UI's report link: a presigned HTTPS URL a browser opens (s3:// it could not)
    link = store.browser_url(f"runs/{first.run_id}/report.html")
    assert link.startswith(s3) and "Signature=" in link
    page = httpx.get(link)
    assert page.status_code == 200 and "<html" in page.text[:500].lower()


def test_an_artifact_on_s3_is_visible_only_once_its_manifest_is_written(s3, monkeypatch):
    """Data first, manifest last: a write that dies between them leaves nothing a reader can see."""
    store = ArtifactStore(f"s3://{BUCKET}/commit", "run-a")
    opened = store.fs.open

    def manifest_fails(path: str, mode: str = "rb", **kwargs):
        if path.endswith(".manifest.json") and "w" in mode:
            raise OSError("connection reset")
        return opened(path, mode, **kwargs)

    monkeypatch.setattr(store.fs, "open", manifest_fails)
    with pytest.raises(StoreWriteError, match="cannot write 'items' to s3://.*connection reset"):
        store.write("items", items_frame())
    monkeypatch.undo()
    assert not store.exists("items") and not ArtifactStore(store.url).list_runs()
    store.write("items", items_frame())  # the retry
    assert ArtifactStore(store.url, "run-a").read("items").num_rows == 3


def test_sources_on_s3_are_read_listed_and_fingerprinted_like_local_files(s3, tmp_path):
    """A GSM8K file (one of them gzipped) and a Parquet file under s3:// prefixes: a glob, a folder and a file
    URL read as the same files on disk read; a bad row is quarantined naming its s3:// file and line; a file
    edited in place changes the ingest stage's key; a missing one is named."""
    import gzip
    import json

    import pandas as pd

    from judgeops.config import EvaluateConfig, FileSource
    from judgeops.tasks.ingest import IngestError, ingest_items
    from judgeops.tasks.stages import source_fingerprint

    rows = [
        {"question": f"What is {i} + {i}?", "answer": f"{i} + {i} = {2 * i}.\n#### {2 * i}"}
        for i in range(30)
    ]
    lines = [json.dumps(r) for r in rows[:20]] + ['{"question": "no answer here"}']
    fs = fsspec.filesystem("s3")
    fs.pipe(f"{BUCKET}/sources/gsm8k/a.jsonl", "\n".join(lines[:10]).encode())
    fs.pipe(f"{BUCKET}/sources/gsm8k/b.jsonl.gz", gzip.compress("\n".join(lines[10:]).encode()))
    table = pd.DataFrame([{"q": r["question"], "a": str(2 * i)} for i, r in enumerate(rows[20:], 20)])
    fs.pipe(f"{BUCKET}/sources/mapped.parquet", table.to_parquet(index=False))
    local = tmp_path / "gsm8k"
    local.mkdir()
    (local / "a.jsonl").write_text("\n".join(lines[:10]))
    (local / "b.jsonl.gz").write_bytes(gzip.compress("\n".join(lines[10:]).encode()))

    def items(path: str, **kw):
        return ingest_items([FileSource(path=path, **kw)])

    on_disk = items(str(local), format="gsm8k")
    for url in (f"s3://{BUCKET}/sources/gsm8k", f"s3://{BUCKET}/sources/gsm8k/*.jsonl*"):
        got = items(url, format="gsm8k")
        assert got.items["question"].tolist() == on_disk.items["question"].tolist() and len(got.items) == 20
        (bad,) = got.quarantine.itertuples()
        assert bad.provenance == f"s3://{BUCKET}/sources/gsm8k/b.jsonl.gz:line 11"
        assert bad.quarantine_rule == "ingest:answer"
    mapped = items(
        f"s3://{BUCKET}/sources/mapped.parquet", format="parquet", question_field="q", gold_field="a"
    )
    assert len(mapped.items) == 10

    config = EvaluateConfig(sources=[FileSource(path=f"s3://{BUCKET}/sources/gsm8k", format="gsm8k")])
    before = source_fingerprint(config, dt.date(2026, 11, 16))
    assert set(before) == {f"s3://{BUCKET}/sources/gsm8k/a.jsonl", f"s3://{BUCKET}/sources/gsm8k/b.jsonl.gz"}
    fs.pipe(f"{BUCKET}/sources/gsm8k/a.jsonl", "\n".join(lines[:9]).encode())
    assert source_fingerprint(config, dt.date(2026, 11, 16)) != before
    with pytest.raises(IngestError, match=rf"s3://{BUCKET}/sources/absent.jsonl: source file not found"):
        items(f"s3://{BUCKET}/sources/absent.jsonl", format="gsm8k")


def test_an_inbox_on_s3_reads_the_week_s_dated_folders_like_a_local_one(s3):
    """The weekly inbox at an s3:// prefix: the folders dated in the week are read (others and non-dated ones
    are not), their files fingerprint the ingest stage, and a week with no folder is named."""
    import json

    from judgeops.config import EvaluateConfig, InboxSource
    from judgeops.tasks.ingest import IngestError, inbox_files, ingest_items
    from judgeops.tasks.stages import source_fingerprint

    fs = fsspec.filesystem("s3")
    root = f"s3://{BUCKET}/inbox"
    for day, n in (("2026-11-10", 3), ("2026-11-16", 4), ("2026-11-20", 5), ("notes", 2)):
        lines = [json.dumps({"question": f"{day}: {i} + 1?", "answer": str(i + 1)}) for i in range(n)]
        fs.pipe(f"{BUCKET}/inbox/{day}/batch.jsonl", "\n".join(lines).encode())
    source = InboxSource(root=root)
    as_of = dt.date(2026, 11, 16)
    files = inbox_files(source, as_of)
    assert [str(f) for f in files] == [f"{root}/2026-11-10/batch.jsonl", f"{root}/2026-11-16/batch.jsonl"]
    items = ingest_items([source], as_of=as_of).items
    assert len(items) == 7 and items["question"].str.startswith(("2026-11-10", "2026-11-16")).all()
    config = EvaluateConfig(sources=[source])
    assert set(source_fingerprint(config, as_of)) == {str(f) for f in files}
    with pytest.raises(IngestError, match="no inbox folder dated"):
        inbox_files(source, dt.date(2026, 12, 7))
