"""The profile stage's outputs: every judge and every consensus method profiled alike (profiles.py), the
statistics across benchmarks (compare.py), and the judges' directional bias on examinee answers (bias.py)."""

from __future__ import annotations

import pandas as pd

from judgeops.config import JudgeConfig, ProfileConfig
from judgeops.schemas.vocabulary import consensus_as_verdicts
from judgeops.tasks.profile.bias import pointwise_bias
from judgeops.tasks.profile.bootstrap import MapBlocks
from judgeops.tasks.profile.compare import profile_stats
from judgeops.tasks.profile.profiles import profile_all, profile_rows


def profile_panel(
    verdicts: pd.DataFrame,
    consensus: pd.DataFrame,
    variants: pd.DataFrame,
    pairs: pd.DataFrame,
    config: ProfileConfig,
    judges: list[JudgeConfig],
    external_pairs: pd.DataFrame | None = None,
    responses: pd.DataFrame | None = None,
    map_blocks: MapBlocks | None = None,
) -> dict[str, pd.DataFrame]:
    """`profiles`, `profile_stats` and `pointwise_bias` of a run. `map_blocks`: where the bootstrap's blocks
    of resamples are computed (profile/bootstrap.py; default here)."""
    panel = consensus_as_verdicts(consensus)
    everyone = pd.concat([verdicts[[*panel.columns, "rationale"]], panel], ignore_index=True)
    profiles = profile_all(everyone, variants, pairs, config, external_pairs, map_blocks)
    described = [j.model_dump(mode="json") for j in judges]
    families = {j.name: j.family or j.name for j in judges}
    bias = pointwise_bias(verdicts, responses, described)
    return {
        "profiles": profile_rows(profiles),
        "profile_stats": profile_stats(profiles, config.confidence, families, bias),
        "pointwise_bias": bias,
    }
