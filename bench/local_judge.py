"""The local judge (SmolLM2-135M-Instruct on the CPU) on the default run's prompts: how it scored them before
(each prompt whole, the vocabulary projected at every position), each prompt whole with the projection at the last
position only, and as the backend scores a chunk (shared prefixes reused, tasks/judges/backends/local.py) in float32
and in the precision the default `auto` takes on this machine (bfloat16 where the CPU has AMX; precision.py) —
the same prompts, the same weights, in one process, each way timed `--repeats` times (the median kept); the
verdicts of every way compared with the first's.

    taskset -c 0,1 .venv/bin/python bench/local_judge.py [--pairs 8] [--repeats 3] [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import time

from benchmarks_md import write_section


def prompts(n_pairs: int):
    """The calls the default run makes of SmolLM2: every variant of `n_pairs` pairs of the default bank, as its
    judge config samples them (max_pairs)."""
    from judgeops.config import EvaluateConfig, JudgeConfig
    from judgeops.tasks.construct import construct
    from judgeops.tasks.ingest import ingest_items
    from judgeops.tasks.judges.calls import make_call
    from judgeops.tasks.judges.protocols import get_protocol
    from judgeops.tasks.judges.runner import select_subset, units_for

    config = EvaluateConfig()
    items = ingest_items(config.sources).items
    built = construct(items, config.construction)
    judge = next(j for j in config.judges if j.backend == "local").model_copy(update={"max_pairs": n_pairs})
    assert isinstance(judge, JudgeConfig)
    chosen = select_subset(built["variants"], judge.max_pairs, judge.name, built["pairs"])
    context = built["pairs"][["pair_id", "item_id"]].merge(
        items[["item_id", "question", "gold"]], on="item_id"
    )
    context = context.set_index("pair_id")
    pair = chosen["pair_id"]
    units = units_for(chosen, pair.map(context["question"]), pair.map(context["gold"]))
    protocol = get_protocol(judge.protocol, judge.rationale, judge.decoding.max_tokens)
    calls = [
        make_call(judge, r, protocol.version, u.unit_id, 0) for u in units for r in protocol.requests(u, None)
    ]
    return judge, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--pairs", type=int, default=8, help="pairs of the default bank (default 8, as the run)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args()
    import torch

    from judgeops.tasks.judges.backends.local import LocalBackend
    from judgeops.tasks.judges.precision import local_precision

    judge, calls = prompts(args.pairs)
    backend = LocalBackend(judge.model_copy(update={"precision": "float32"}))
    default = LocalBackend(judge)  # precision auto: bfloat16 where the CPU has AMX
    encoded = [backend._encode(c)["input_ids"] for c in calls]
    ids = backend.ids

    def verdicts(logits) -> list[str]:
        p = [torch.softmax(x.float(), -1) for x in logits]
        return ["A" if float(q[ids["a"]].sum()) >= float(q[ids["b"]].sum()) else "B" for q in p]

    def whole_all_positions():
        with torch.inference_mode():
            return [backend.model(x).logits[0, -1] for x in encoded]

    def whole_last_position():
        with torch.inference_mode():
            return [backend.model(x, logits_to_keep=1).logits[0, -1] for x in encoded]

    def shared_prefix(on=backend):
        replies = on.complete(calls)
        return [replies[c.key] for c in calls]

    ways = [
        ("each prompt whole, logits at every position (before)", whole_all_positions),
        ("each prompt whole, logits at the last position", whole_last_position),
        ("the chunk together, shared prefixes reused, float32", shared_prefix),
        (
            f"the chunk together, shared prefixes reused, precision auto: {local_precision('auto')} (now)",
            lambda: shared_prefix(default),
        ),
    ]
    whole_last_position()  # warm: first-call allocations outside the timings
    shared_prefix(default)
    rows, first, probs = [], None, []
    for label, way in ways:
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            out = way()
            times.append(time.perf_counter() - t0)
        if isinstance(out[0], torch.Tensor):
            said = verdicts(out)
        else:
            said = ["A" if r.probs["A"] >= r.probs["B"] else "B" for r in out]
            probs.append([(r.probs["A"], r.probs["B"]) for r in out])
        first = first or said
        same = sum(a == b for a, b in zip(said, first, strict=True))
        rows.append((label, statistics.median(times), same))
        print(
            f"{label}: {statistics.median(times):.2f} s, {same}/{len(said)} verdicts as before",
            file=sys.stderr,
        )
    tokens = sum(int(x.shape[1]) for x in encoded)
    base = rows[0][1]
    lines = [
        f"Command: `taskset -c 0,1 python bench/local_judge.py --pairs {args.pairs} --repeats {args.repeats}` "
        f"({dt.date.today().isoformat()}, {torch.get_num_threads()} torch threads).",
        "",
        f"SmolLM2-135M on the default run's {len(calls)} prompts ({args.pairs} pairs × their variants, "
        f"{tokens:,} tokens, one forward pass each: the choice's probability):",
        "",
        "| how | seconds (median) | speed-up | verdicts as before |",
        "|---|---|---|---|",
        *[f"| {label} | {s:.2f} | {base / s:.2f}× | {same} of {len(calls)} |" for label, s, same in rows],
        "",
        "The choice probabilities of the last two ways differ by at most "
        f"{max(abs(a[i] - b[i]) for a, b in zip(*probs, strict=True) for i in (0, 1)):.4f}; the closest call's "
        f"|P(A) − P(B)| in float32 is {min(abs(a - b) for a, b in probs[0]):.4f}.",
    ]
    print("\n".join(lines))
    if args.write:
        write_section("bench/local_judge.py", "\n".join(lines))


if __name__ == "__main__":
    main()
