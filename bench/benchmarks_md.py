"""Tables in BENCHMARKS.md are written by the script that measures them: each owns the text between
`<!-- bench/NAME: start -->` and `<!-- bench/NAME: end -->`, and `--write` replaces it."""

from __future__ import annotations

import contextlib
import datetime
import io
import re
import sys
from collections.abc import Iterator
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


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def section(
    script: str, write: bool, prefix: str = "taskset -c 0,1 ", key: str | None = None
) -> Iterator[None]:
    """What the block prints goes to stdout and, with `write`, into `script`'s section of BENCHMARKS.md (or
    the section `key`, for a script with several), headed by the command that produced it and the date.
    Progress belongs on stderr."""
    argv = " ".join(a for a in sys.argv[1:] if a != "--write")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, buffer)):
        command = f"{prefix}python {script} {argv}".strip()
        print(f"Command: `{command}` ({datetime.date.today()}).\n")
        yield
    if write:
        write_section(key or script, buffer.getvalue())
