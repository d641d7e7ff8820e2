"""Reads by row group: the store streams a table artifact in row groups (checked like a whole read), and the
stages that read verdicts and consensus rows that way (validate, aggregate, profile) give exactly what they
give on the whole table."""

import numpy as np
import pandas as pd
import pytest
from test_store import items_frame

from judgeops.config import JudgeConfig, ProfileConfig
from judgeops.schemas.store import ArtifactIntegrityError, ArtifactStore
from judgeops.schemas.stream import TableStream, frames, gather
from judgeops.tasks.aggregate import aggregate_panel
from judgeops.tasks.judges import coverage
from judgeops.tasks.profile.panel import profile_panel

ERRORS = ("factual_fabrication", "logical_reversal", "overclaim", "critical_omission")


def in_chunks(df: pd.DataFrame, size: int) -> TableStream:
    """The frame as a stream of `size`-row frames, like row groups read back (each pass a new iterator)."""
    return TableStream(
        lambda: (df.iloc[i : i + size].reset_index(drop=True) for i in range(0, len(df), size))
    )


def panel_run(n_pairs: int = 60, seed: int = 0):
    """Pairs × 3 presentations × 2 orders, 4 judges of different accuracy (one on a sample of the pairs,
    one that lost some rows, one answering twice now and then), rationales that sometimes name the edit, QC
    flags that make hard-constructed and weaker pairs."""
    rng = np.random.default_rng(seed)
    pairs = pd.DataFrame(
        {
            "pair_id": [f"p{k:03d}" for k in range(n_pairs)],
            "error_type": [ERRORS[k % 4] for k in range(n_pairs)],
            "domain": "math",
            "edit_before": [f"{k} apples" for k in range(n_pairs)],
            "edit_after": [f"{k + 1} apples" for k in range(n_pairs)],
            "qc_flags": [
                ["hard_constructed"] if k % 9 == 0 else ["type_fallback"] if k % 7 == 0 else []
                for k in range(n_pairs)
            ],
        }
    )
    variants = pd.DataFrame(
        [
            {
                "variant_id": f"{p}:{pres}:{order}",
                "pair_id": p,
                "presentation": pres,
                "order": order,
                "gold_position": "A" if order == "AB" else "B",
            }
            for p in pairs["pair_id"]
            for pres in ("plain", "polished", "padded")
            for order in ("AB", "BA")
        ]
    )
    rows = []
    for judge, accuracy in {"j1": 0.9, "j2": 0.75, "j3": 0.6, "j4": 0.55}.items():
        for v in variants.itertuples():
            if judge == "j2" and v.pair_id >= "p040":
                continue  # a sample of the pairs
            if judge == "j3" and rng.random() < 0.05:
                continue  # a lost row: a missing verdict
            for _ in range(2 if judge == "j4" and rng.random() < 0.1 else 1):
                right = rng.random() < accuracy
                verdict = v.gold_position if right else ("B" if v.gold_position == "A" else "A")
                verdict = "tie" if rng.random() < 0.03 else verdict
                k = int(v.pair_id[1:])
                rows.append(
                    {
                        "judge_id": judge,
                        "variant_id": v.variant_id,
                        "response_id": None,
                        "verdict": verdict,
                        "p_first": float(rng.random()),
                        "rationale": f"{k} apples is wrong" if rng.random() < 0.5 else "fine",
                    }
                )
    return pd.DataFrame(rows), variants, pairs


def test_the_store_streams_a_table_by_row_group_with_the_same_checks(tmp_path, monkeypatch):
    import judgeops.schemas.store as store_module

    monkeypatch.setattr(store_module, "ROW_GROUP", 4)
    store = ArtifactStore(str(tmp_path / "store"), "run-a")
    ref = store.write("items", items_frame(10))
    batches = list(store.iter_batches(ref, columns=["item_id", "gold"], batch_size=4))
    assert [b.num_rows for b in batches] == [4, 4, 2] and batches[0].schema.names == ["item_id", "gold"]
    stream = store.stream(ref, columns=["item_id"])
    assert [len(f) for f in stream] == [4, 4, 2] and [len(f) for f in stream] == [4, 4, 2]  # re-iterable
    whole = store.read_pandas(ref, columns=["item_id"])
    pd.testing.assert_frame_equal(pd.concat(list(stream), ignore_index=True), whole)
    path = tmp_path / "store" / ref.path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactIntegrityError, match="items"):
        next(iter(store.stream(ref)))


def test_gather_and_frames_take_a_frame_or_a_stream():
    df = pd.DataFrame({"a": range(10), "b": list("xyxyxyxyxy")})
    assert len(list(frames(df))) == 1 and len(list(frames(in_chunks(df, 3)))) == 4
    picked = gather(in_chunks(df, 3), lambda f: f["b"] == "x", ["a"])
    assert picked["a"].tolist() == [0, 2, 4, 6, 8]


@pytest.mark.parametrize("size", [1, 37, 10_000])
def test_aggregate_and_profile_from_row_groups_equal_the_whole_table(size):
    verdicts, variants, pairs = panel_run()
    methods = ["mv", "avg", "dawid_skene", "wmv", "cwv", "auto"]
    whole = aggregate_panel(verdicts, variants, methods, seed=1, pairs=pairs)
    streamed = aggregate_panel(in_chunks(verdicts, size), variants, methods, seed=1, pairs=pairs)
    for name in whole:
        pd.testing.assert_frame_equal(whole[name], streamed[name], check_exact=True)
    config = ProfileConfig(n_bootstrap=200)
    judges = [JudgeConfig(name=j, model="reference_match") for j in ("j1", "j2", "j3", "j4")]
    consensus = whole["consensus"]
    a = profile_panel(verdicts, consensus, variants, pairs, config, judges)
    b = profile_panel(in_chunks(verdicts, size), in_chunks(consensus, size), variants, pairs, config, judges)
    assert set(a["profiles"]["benchmark"]) >= {"judgereva", "judgereva-hard", "judgereva-qc-clean"}
    assert "C8_rationale" in set(a["profiles"]["condition"])
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name], check_exact=True)


def test_coverage_judge_by_judge_equals_coverage_of_the_whole_table():
    verdicts, variants, pairs = panel_run()
    verdicts = verdicts.assign(
        error=None, n_calls=1, cache_hits=0, tokens_in=10, tokens_out=2, request_notes=None
    )
    judges = [JudgeConfig(name=j, model="reference_match") for j in ("j1", "j2", "j3", "j4")]
    whole = coverage(verdicts, variants, judges, pairs)
    stream = in_chunks(verdicts, 50)
    one_by_one = pd.concat(
        [
            coverage(
                gather(stream, lambda f, j=j.name: f["judge_id"] == j, list(verdicts.columns)),
                variants,
                [j],
                pairs,
            )
            for j in judges
        ],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(whole, one_by_one, check_exact=True)
    assert whole.set_index("judge_id").loc["j3", "n_missing"] > 0
