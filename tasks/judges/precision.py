"""The number type a local judge computes in: float32, or bfloat16 where the CPU multiplies it natively.

A local judge's verdict is one forward pass, compute-bound on a CPU (backends/local.py). On CPUs with AMX tiles
(Intel Xeon from Sapphire Rapids on) oneDNN multiplies bfloat16 matrices in the tile unit, and SmolLM2's pass over
the default run's prompts takes about half the time of float32 with the same verdicts (BENCHMARKS.md: 48 of 48 and
180 of 180; the choice probabilities within 0.02). Elsewhere bfloat16 is converted to float32 for every product
and is slower, so `precision: auto` (the default) takes bfloat16 only where the CPU reports AMX's bfloat16 unit.

The price is rounding: bfloat16 keeps 8 bits of mantissa, so a call's probabilities move by up to ~0.02 from
float32's, and by up to ~0.015 with the chunk it is scored in (the shared prefix's keys and values come from
another prompt's pass, whose matrix shapes round differently; float32's differ by ~1e-5). A verdict changes only
where P(A) and P(B) are that close (the closest of the default run's 48 calls is 0.029 apart). `precision:
float32` where that matters more than time. The precision is part of the call-cache key where it is not float32
(calls.call_key): verdicts computed in bfloat16 are not reused as float32's, and keys made before the option
existed still hold. A cached reply is the one computed first, whatever chunk later runs would score it in.

The CPU's flags are read from /proc/cpuinfo, not from torch: keys are computed on every run, and a warm rerun
imports no torch.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

FLOAT32, BFLOAT16 = "float32", "bfloat16"


@lru_cache(maxsize=1)
def native_bfloat16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether the CPU reports AMX's bfloat16 unit (Linux; False where its flags cannot be read)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return False
    flags = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return "amx_bf16" in flags.split()


def local_precision(precision: str) -> str:
    """FLOAT32 or BFLOAT16 for a judge's `precision` setting (auto: bfloat16 where native_bfloat16())."""
    if precision == "auto":
        return BFLOAT16 if native_bfloat16() else FLOAT32
    return precision
