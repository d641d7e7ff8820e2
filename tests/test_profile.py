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
    p = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).rows.set_index("condition")[
        "estimate"
    ]
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
    full = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).rows.set_index("condition")
    less = profile(verdicts.iloc[1:], variants, pairs, ProfileConfig(n_bootstrap=200)).rows.set_index(
        "condition"
    )
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
    from judgeops.tasks.profile import HARD_BENCHMARK, profile_all, profile_rows

    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(qc_flags=[[], ["hard_constructed"]])
    p = profile_rows(profile_all(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200))).set_index(
        ["benchmark", "condition"]
    )
    assert p.loc[("judgereva", "overall"), "n"] == 1 and p.loc[(HARD_BENCHMARK, "overall"), "n"] == 1
    assert p.loc[("judgereva", "overall"), "estimate"] == pytest.approx(0.5)  # p1 only
    assert p.loc[(HARD_BENCHMARK, "overall"), "estimate"] == pytest.approx(1.0)  # p2 only


def with_judges(verdicts: pd.DataFrame, variants: pd.DataFrame) -> pd.DataFrame:
    """Adds k (always says "A": right in AB, wrong in BA) and m (always picks the flawed answer)."""
    k = verdicts.assign(judge_id="k", verdict="A")
    m = verdicts.assign(judge_id="m", verdict=np.where(variants["gold_position"] == "A", "B", "A"))
    return pd.concat([verdicts, k, m], ignore_index=True)


def test_consistency_and_stable_but_wrong_beside_strict():
    verdicts, variants, pairs = tiny_fixture()
    p = profile(with_judges(verdicts, variants), variants, pairs, ProfileConfig(n_bootstrap=200)).rows
    p = p.set_index(["judge_id", "condition"])["estimate"]
    # j: C7 per (pair, presentation) p1 plain ✗✓ (inconsistent), p1 polished ✓✓, p2 plain ✓✓, p2 polished ✗✓
    assert p[("j", "C7_consistency")] == pytest.approx(0.5) and p[("j", "C7_stable_wrong")] == 0
    # C5 per (pair, order): p1 AB ✓✓, p1 BA ✗✓, p2 AB ✓✗, p2 BA ✓✓ → same choice in 2 of 4
    assert p[("j", "C5_consistency")] == pytest.approx(0.5)
    # k answers by position: right in AB, wrong in BA, so never the same choice across orders
    assert p[("k", "C7_position")] == 0 and p[("k", "C7_consistency")] == 0
    assert p[("k", "C5_consistency")] == 1 and p[("k", "C5_stable_wrong")] == pytest.approx(0.5)
    # m always picks the flawed answer: perfectly consistent, never right: all of it stable-but-wrong
    assert (
        p[("m", "C7_consistency")] == 1 and p[("m", "C7_stable_wrong")] == 1 and p[("m", "C7_position")] == 0
    )
    for judge in "jkm":  # stable-but-wrong = consistency − strict, exactly
        for c in ("C5", "C7"):
            strict = p[(judge, "C5_style" if c == "C5" else "C7_position")]
            assert p[(judge, f"{c}_stable_wrong")] == pytest.approx(p[(judge, f"{c}_consistency")] - strict)


def test_judges_scored_together_or_one_by_one_give_the_same_profile(monkeypatch):
    """Conditions score a block of judges in one pass (profiles.BLOCK_ROWS); a block of one judge each is the
    per-judge loop it replaced: the same rows, to the last bit."""
    import judgeops.tasks.profile.profiles as profiles

    verdicts, variants, pairs = tiny_fixture()
    panel = with_judges(verdicts, variants).sample(frac=1.0, random_state=0)  # any row order
    together = profile(panel, variants, pairs, ProfileConfig(n_bootstrap=200)).rows
    monkeypatch.setattr(profiles, "BLOCK_ROWS", 1)
    alone = profile(panel, variants, pairs, ProfileConfig(n_bootstrap=200)).rows
    pd.testing.assert_frame_equal(together, alone)
    assert (
        set(together["judge_id"]) == {"j", "k", "m"} and len(together) == 3 * together["condition"].nunique()
    )
    assert profiles._judge_blocks({"b": 3, "a": 2, "c": 5}, 5) == [["a", "b"], ["c"]]


def test_c8_counts_correct_verdicts_whose_rationale_names_the_edit():
    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(edit_before=["usually works", "36"], edit_after=["always works", "38"])
    rationale = {
        "p1:plain:AB": "B claims it always works",  # names "always"
        "p1:polished:AB": "A is better",  # names nothing
        "p1:polished:BA": "A overstates: always",
        "p2:plain:AB": "B says 38, but 12 × 3 = 36",
        "p2:plain:BA": "the arithmetic in A is wrong",
        "p2:polished:BA": "38 is wrong",
        "p1:plain:BA": "always!",  # a wrong verdict: not counted, whatever it says
        "p2:polished:AB": "38",  # wrong verdict
    }
    verdicts = verdicts.assign(rationale=verdicts["variant_id"].map(rationale))
    p = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).rows.set_index("condition")
    # p1: correct verdicts AB plain ✓named, AB polished ✗, BA polished ✓ → 2/3; p2: ✓, ✗, ✓ → 2/3
    assert p.loc["C8_rationale", "estimate"] == pytest.approx(2 / 3) and p.loc["C8_rationale", "n"] == 2
    assert p.loc["C8_rationale", "operator"] == "rationale"
    no_rationale = profile(
        verdicts.drop(columns="rationale"), variants, pairs, ProfileConfig(n_bootstrap=200)
    )
    assert "C8_rationale" not in set(no_rationale.rows["condition"])  # no rationales: no cell, not a zero


def test_rogan_gladen_correction_with_joint_bootstrap_and_saturation():
    from judgeops.config import LabelValidity

    verdicts, variants, pairs = tiny_fixture()
    validity = LabelValidity(specificity={"hits": 90, "n": 100}, sensitivity={"hits": 95, "n": 100})
    p = profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=500, label_validity=validity)).rows
    p = p.set_index("condition")
    assert p.loc["overall", "corrected"] == pytest.approx((0.75 + 0.9 - 1) / (0.9 + 0.95 - 1))
    assert not p.loc["overall", "saturated"]
    assert (
        p.loc["overall", "corrected_low"]
        <= p.loc["overall", "corrected"]
        <= p.loc["overall", "corrected_high"]
    )
    assert p.loc["C1_factual", "saturated"] and p.loc["C1_factual", "corrected"] == 1.0  # (1 − .1)/.85 > 1
    assert np.isnan(p.loc["C7_position", "corrected"])  # only content conditions are corrected
    assert np.isnan(
        profile(verdicts, variants, pairs, ProfileConfig(n_bootstrap=200)).rows["corrected"]
    ).all()


def test_one_resampling_serves_every_cell():
    from judgeops.tasks.profile.bootstrap import bootstrap_cells

    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 400).astype(float)
    b = np.where(rng.random(400) < 0.5, rng.integers(0, 2, 400), np.nan)  # a subset cell
    one = bootstrap_cells(np.c_[a], 1000, 0.95, np.random.default_rng(7))
    two = bootstrap_cells(np.c_[a, b], 1000, 0.95, np.random.default_rng(7))
    assert (
        one["low"][0] == two["low"][0] and one["high"][0] == two["high"][0]
    )  # adding a cell changes nothing
    assert two["n"].tolist() == [400, int((~np.isnan(b)).sum())]
    assert two["estimate"][1] == pytest.approx(np.nanmean(b))
    ref = bootstrap_mean_ci(a, 1000, 0.95, np.random.default_rng(7))
    assert abs((two["high"][0] - two["low"][0]) - (ref[2] - ref[1])) < 0.02  # same width as the per-cell CI
    diff = two["draws"][:, 0] - two["draws"][:, 1]  # joint: the difference is bootstrapped pair by pair
    assert np.isfinite(diff).all()


def test_qc_clean_and_hard_empirical_benchmarks():
    from judgeops.tasks.profile import HARD_EMPIRICAL, QC_CLEAN, profile_all, profile_rows

    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(qc_flags=[["final_answer_only"], []])
    everyone = with_judges(verdicts, variants)
    p = profile_rows(profile_all(everyone, variants, pairs, ProfileConfig(n_bootstrap=200)))
    p = p.set_index(["benchmark", "judge_id", "condition"])
    assert p.loc[(QC_CLEAN, "j", "overall"), "n"] == 1  # p2 only: p1 carries a weakening QC flag
    assert p.loc[(QC_CLEAN, "j", "overall"), "estimate"] == pytest.approx(1.0)
    # hard for j's peers (k: PA .5 on both pairs, m: 0): both pairs are hard for j, leave-one-out
    assert p.loc[(HARD_EMPIRICAL, "j", "overall"), "n"] == 2
    # for m, its peers j (PA .5 on p1, 1 on p2) and k (.5, .5) average .5 on p1 and .75 on p2: only p1 is hard
    assert p.loc[(HARD_EMPIRICAL, "m", "overall"), "n"] == 1


def test_profile_stats_stress_degradation_rank_stability_and_distance():
    from judgeops.tasks.profile import profile_all
    from judgeops.tasks.profile.compare import profile_stats

    verdicts, variants, pairs = tiny_fixture()
    pairs = pairs.assign(qc_flags=[[], ["hard_constructed"]])
    everyone = with_judges(verdicts, variants)
    profiles = profile_all(everyone, variants, pairs, ProfileConfig(n_bootstrap=200))
    stats = profile_stats(profiles, 0.95, families={"j": "x", "k": "x", "m": "y"})
    deg = stats[(stats["kind"] == "stress_degradation") & (stats["benchmark"] == "judgereva-hard")]
    deg = deg.set_index(["judge_id", "condition"])["estimate"]
    assert deg[("j", "overall")] == pytest.approx(0.5 - 1.0)  # p1 (standard) .5, p2 (hard) 1.0
    rank = stats[stats["kind"] == "rank_stability_benchmarks"].set_index("condition")["estimate"]
    # standard (p1): j .5 = k .5 > m 0; hard (p2): j 1 > k .5 > m 0 → ranks (1.5, 1.5, 3) vs (1, 2, 3)
    assert rank["overall"] == pytest.approx(np.sqrt(3) / 2)
    dist = stats[stats["kind"] == "profile_distance"].set_index(["judge_id", "other_judge"])["estimate"]
    assert 0 <= dist[("j", "m")] <= 1 and dist[("j", "m")] > dist[("j", "k")]
    family = stats[stats["kind"] == "family_distance"].set_index("condition")["estimate"]
    assert family["within_family"] == pytest.approx(dist[("j", "k")])
    assert stats["kind"].notna().all() and (stats["judge_id"].notna()).all()


def test_hard_empirical_pairs_are_those_the_other_judges_get_wrong():
    from judgeops.tasks.profile.profiles import canonical_frame, hard_empirical_pairs

    variants = pd.DataFrame(
        {
            "variant_id": [f"{p}:plain:{o}" for p in ("p1", "p2") for o in ("AB", "BA")],
            "pair_id": ["p1", "p1", "p2", "p2"],
            "presentation": "plain",
            "order": ["AB", "BA"] * 2,
            "gold_position": ["A", "B"] * 2,
        }
    )
    pairs = pd.DataFrame({"pair_id": ["p1", "p2"], "error_type": "overclaim", "domain": "math"})
    # p1 right by both; p2 mostly wrong, j2's p2:BA missing (counted wrong)
    verdicts = pd.DataFrame(
        {
            "judge_id": ["j1"] * 4 + ["j2"] * 3 + ["j3"] * 4,
            "variant_id": [*variants["variant_id"], *variants["variant_id"][:3], *variants["variant_id"]],
            "verdict": ["A", "B", "A", "A", "A", "B", "B", "B", "A", "A", "B"],
            "p_first": 0.5,
        }
    )
    canonical = canonical_frame(verdicts, variants, pairs)
    assert hard_empirical_pairs(canonical, "j3") == {"p2"}  # j1 and j2: 1 of 4 right on p2
    only_j1 = canonical[canonical["judge_id"] == "j1"]
    assert hard_empirical_pairs(only_j1, "j9") == {"p2"}  # 1 of 2 right: at the threshold
    # leave-one-out: for j1, the others are j2 and j3, who split on both pairs (at the threshold)
    assert hard_empirical_pairs(canonical, "j1") == {"p1", "p2"}
    assert hard_empirical_pairs(canonical[canonical["judge_id"] == "j3"], "j3") == set()
