"""Tables in BENCHMARKS.md are written by the script that measures them: each owns the text between
`<!-- bench/NAME: start -->` and `<!-- bench/NAME: end -->`, and `--write` replaces it."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"


def write_section(script: str, text: str, path: Path = BENCHMARKS) -> None:
    """Replace the section `script` (e.g. "bench/startup.py") owns, or append it."""
    start, end = f"<!-- {script}: start -->", f"<!-- {script}: end -->"
    block = f"{start}\n{text.rstrip()}\n{end}"
    doc = path.read_text()
    if start in doc:
        doc = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, doc, flags=re.S)
    else:
        doc = doc.rstrip() + "\n\n" + block + "\n"
    path.write_text(doc)
