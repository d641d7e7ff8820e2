"""judgerEva construction: items → plain pairs with one planted error (pairs.py, operators.py, llm.py) →
displayed variants (variants.py, presentation.py); `construct` (build.py) runs both."""

from judgeops.tasks.construct.build import construct, construction_summary
from judgeops.tasks.construct.pairs import build_pairs, expand_answer, plant, qc_flags, subtlety_gate
from judgeops.tasks.construct.variants import build_variants, external_variants

__all__ = [
    "build_pairs",
    "build_variants",
    "construct",
    "construction_summary",
    "expand_answer",
    "external_variants",
    "plant",
    "qc_flags",
    "subtlety_gate",
]
