"""Fault helpers shared by the reliability tests."""

from __future__ import annotations


def fill(disk, leave_bytes: int = 0) -> None:
    """Fill the filesystem at `disk` but `leave_bytes` (a file named filler)."""
    import os

    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(disk / "filler", "wb") as fh:
        fh.truncate(0)
        chunk = b"\0" * (1 << 20)
        left = max(0, free - leave_bytes)
        try:
            while left > 0:
                n = fh.write(chunk[: min(len(chunk), left)])
                left -= n
        except OSError:
            pass
