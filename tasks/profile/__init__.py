"""Judge profiles: every judge (and every panel method) × every CAP condition, with a bootstrap CI
(profiles.py); the conditions (conditions.py), the joint bootstrap (bootstrap.py), comparisons across
benchmarks (compare.py), directional bias on examinee answers (bias.py), rationale checks (rationale.py)."""

from judgeops.tasks.profile.profiles import (
    BENCHMARK,
    HARD_BENCHMARK,
    HARD_EMPIRICAL,
    QC_CLEAN,
    Profile,
    canonical_frame,
    profile,
    profile_all,
    profile_rows,
)

__all__ = [
    "BENCHMARK",
    "HARD_BENCHMARK",
    "HARD_EMPIRICAL",
    "QC_CLEAN",
    "Profile",
    "canonical_frame",
    "profile",
    "profile_all",
    "profile_rows",
]
