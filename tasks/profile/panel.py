"""The profile stage's outputs: every judge and every consensus method profiled alike (profiles.py), the
statistics across benchmarks (compare.py), and the judges' directional bias on examinee answers (bias.py)."""

from __future__ import annotations

import pandas as pd

from judgeops.config import JudgeConfig, ProfileConfig
from judgeops.schemas.stream import Rows, TableStream, frames, gather, joined
from judgeops.schemas.vocabulary import consensus_as_verdicts
from judgeops.tasks.profile.bias import pointwise_bias
from judgeops.tasks.profile.bootstrap import MapBlocks
from judgeops.tasks.profile.compare import profile_stats
from judgeops.tasks.profile.profiles import profile_all, profile_rows


def profile_panel(
    verdicts: Rows,
    consensus: Rows,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    judges: list[JudgeConfig],
    external_pairs: pd.DataFrame | None = None,
    responses: pd.DataFrame | None = None,
    map_blocks: MapBlocks | None = None,
) -> dict[str, pd.DataFrame]:
    """`profiles`, `profile_stats` and `pointwise_bias` of a run. `verdicts` and `consensus` may be streams of
    row groups (the profile stage's; schemas/stream.py). `map_blocks`: where the bootstrap's blocks of
    resamples are computed (profile/bootstrap.py; default here)."""
    judged = TableStream(lambda: (_verdict_columns(f) for f in frames(verdicts)))
    everyone = joined(judged, TableStream(lambda: map(consensus_as_verdicts, frames(consensus))))
    profiles = profile_all(everyone, variants, pairs, config, external_pairs, map_blocks)
    described = [j.model_dump(mode="json") for j in judges]
    families = {j.name: j.family or j.name for j in judges}
    bias = pointwise_bias(_on_responses(verdicts, responses), responses, described)
    return {
        "profiles": profile_rows(profiles),
        "profile_stats": profile_stats(profiles, config.confidence, families, bias),
        "pointwise_bias": bias,
    }


def _verdict_columns(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[["judge_id", "variant_id", "verdict", "p_first", "rationale"]]


def _on_responses(verdicts: Rows, responses: pd.DataFrame | None) -> pd.DataFrame:
    """The verdicts on examinee responses (pointwise judges), the only ones pointwise_bias reads."""
    columns = ["judge_id", "response_id", "verdict"]
    if responses is None or responses.empty:
        return pd.DataFrame(columns=columns)
    return gather(verdicts, lambda f: f["response_id"].notna(), columns)
