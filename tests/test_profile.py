import numpy as np
import pandas as pd
import pytest

from judgeops.config import ProfileConfig
from judgeops.tasks.profile import profile
from judgeops.tasks.profile.bootstrap import bootstrap_mean_ci


def tiny_fixture():
    """2 pairs × (plain, polished) × (AB, BA); judge j right except: pair p1 plain BA and p2 polished AB."""
    pairs = pd.DataFrame(
        {"pair_id": ["p1", "p2"], "error_type": ["overclaim", "factual_fabrication"], "domain": "math"}
    )
    rows = []
    for pid in ("p1", "p2"):
        for pres in ("plain", "polished"):
            for order in ("AB", "BA"):
                rows.append(
                    {
                        "variant_id": f"{pid}:{pres}:{order}",
                        "pair_id": pid,
                        "presentation": pres,
                        "order": order,
                        "gold_position": "A" if order == "AB" else "B",
                    }
                )
    variants = pd.DataFrame(rows)
    wrong = {"p1:plain:BA", "p2:polished:AB"}
    verdicts = pd.DataFrame(
        {
            "judge_id": "j",
            "variant_id": variants["variant_id"],
            "verdict": [
                ("B" if g == "A" else "A") if v in wrong else g
                for v, g in zip(variants["variant_id"], variants["gold_position"], strict=True)
            ],
            "p_first": 0.5,
        }
    )
    return verdicts, variants, pairs


def test_each_operator_matches_hand_computed_values():
    verdicts, variants, pairs = tiny_fixture()
    p = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).set_index("condition")["estimate"]
    assert p["overall"] == pytest.approx((0.5 + 1.0) / 2)  # PA: p1 right in 1 of 2 orders, p2 in both
    assert p["C3_overclaim"] == pytest.approx(0.5) and p["C1_factual"] == pytest.approx(1.0)
    assert "C2_logical" not in p  # no pair of that type: no cell
    assert p["order_AB"] == pytest.approx(1.0) and p["order_BA"] == pytest.approx(0.5)
    # C7: both orders right, per (pair, presentation): p1 plain ✗, p1 polished ✓, p2 plain ✓, p2 polished ✗
    assert p["C7_position"] == pytest.approx(0.5)
    # C5: plain and polished right, per (pair, order): p1 AB ✓, p1 BA ✗, p2 AB ✗, p2 BA ✓
    assert p["C5_style"] == pytest.approx(0.5)


def test_a_missing_verdict_counts_as_wrong():
    verdicts, variants, pairs = tiny_fixture()
    full = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).set_index("condition")
    less = profile(verdicts.iloc[1:], variants, pairs, ProfileConfig(n_bootstrap=200)).set_index("condition")
    assert less.loc["order_AB", "estimate"] == pytest.approx(0.5)
    assert full.loc["order_AB", "estimate"] == pytest.approx(1.0)


def test_bootstrap_ci_is_seeded_contains_the_estimate_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 2, 50).astype(float)
    large = rng.integers(0, 2, 2000).astype(float)
    a = bootstrap_mean_ci(small, 1000, 0.95, np.random.default_rng(1))
    assert a == bootstrap_mean_ci(small, 1000, 0.95, np.random.default_rng(1))
    assert a[1] <= a[0] <= a[2]
    b = bootstrap_mean_ci(large, 1000, 0.95, np.random.default_rng(1))
    assert (b[2] - b[1]) < (a[2] - a[1]) / 3
    assert bootstrap_mean_ci(np.ones(10)) == (1.0, 1.0, 1.0)
    # coverage of the true mean 0.5 over repeated samples is close to 95%
    hits = 0
    for seed in range(200):
        sample = np.random.default_rng(seed).integers(0, 2, 200).astype(float)
        _, lo, hi = bootstrap_mean_ci(sample, 500, 0.95, np.random.default_rng(seed))
        hits += lo <= 0.5 <= hi
    assert 0.88 <= hits / 200 <= 0.99


def test_hard_constructed_pairs_get_their_own_benchmark():
    from judgeops.tasks.profile import HARD_BENCHMARK, profile_all

    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(qc_flags=[[], ["hard_constructed"]])
    p = profile_all(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).set_index(
        ["benchmark", "condition"]
    )
    assert p.loc[("judgereva", "overall"), "n"] == 1 and p.loc[(HARD_BENCHMARK, "overall"), "n"] == 1
    assert p.loc[("judgereva", "overall"), "estimate"] == pytest.approx(0.5)  # p1 only
    assert p.loc[(HARD_BENCHMARK, "overall"), "estimate"] == pytest.approx(1.0)  # p2 only
