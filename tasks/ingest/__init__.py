"""Ingest: sources (sources.py: bank, inbox, files through adapters.py) → the `items` artifact and its
quarantine (items.py); published pairwise sets (pairwise.py) and examinee outputs (responses.py)."""

from judgeops.tasks.ingest.adapters import IngestError, expand_paths, normalize_text
from judgeops.tasks.ingest.items import IngestResult, ingest_items, reject_frame, summary_table
from judgeops.tasks.ingest.pairwise import ingest_pairwise
from judgeops.tasks.ingest.responses import ingest_responses
from judgeops.tasks.ingest.sources import inbox_files, source_path_problems, week_mix

__all__ = [
    "IngestError",
    "IngestResult",
    "expand_paths",
    "inbox_files",
    "ingest_items",
    "ingest_pairwise",
    "ingest_responses",
    "normalize_text",
    "reject_frame",
    "source_path_problems",
    "summary_table",
    "week_mix",
]
