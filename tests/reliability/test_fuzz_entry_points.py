"""A fuzz suite over the doors into judgeops: every CLI command and option that takes a name, a path, a number or
a file, the config loader, and the votes / truth / labels and source readers, fed generated hostile values.

The property, per case: exit code 1 or 2 with a message and no traceback (argparse's own usage error for an
option's type); never exit 0 on garbage; nothing read under a planted folder beside the working tree (an audit
hook watches every open, listing and glob) and nothing written anywhere in the tree. Deterministic
(`derandomize`) and bounded: RELIABILITY.md gives the count of cases per entry point.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgeops.cli import main

CASES = int(os.environ.get("JUDGEOPS_FUZZ_CASES", "40"))  # per entry point
SETTINGS = settings(
    max_examples=CASES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

_WATCHED: list[str] = []  # folders nothing may open; empty outside a case
_TOUCHED: list[str] = []


def _audit(event: str, args: tuple) -> None:
    if not _WATCHED or event not in (
        "open",
        "os.listdir",
        "os.scandir",
        "glob.glob",
        "os.mkdir",
        "os.rename",
    ):
        return
    target = args[0] if args else None
    if isinstance(target, bytes):
        target = target.decode("utf-8", "replace")
    if isinstance(target, str | os.PathLike):
        with contextlib.suppress(ValueError, OSError):
            resolved = os.path.realpath(os.fspath(target))
            if any(resolved == w or resolved.startswith(w + os.sep) for w in _WATCHED):
                _TOUCHED.append(f"{event} {resolved}")


sys.addaudithook(_audit)  # process-wide and permanent: it does nothing while _WATCHED is empty


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A working folder with a store, and beside it a planted folder of what a traversal would reach."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / ".judgeops" / "store" / "runs").mkdir(parents=True)
    (outside / "x").mkdir(parents=True)
    (outside / "x" / "run.json").write_text('{"run_id": "x", "status": "completed"}')
    (outside / "votes.csv").write_text("task,worker,label\n1,a,A\n")
    (work / "votes.csv").write_text("task,worker,label\n1,a,A\n1,b,A\n2,a,B\n2,b,A\n3,a,B\n3,b,B\n")
    monkeypatch.chdir(work)
    return tmp_path


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def run_cli(
    tree: Path, argv: list[str], inputs: dict[str, bytes] | None = None, watch: bool = True
) -> tuple[int, str]:
    """judgeops ARGV in this process with `inputs` written first: (exit code, stderr), the tree checked. With
    `watch`, nothing may be opened under the planted folder (off where the hostile value is itself a path the
    user names as an input: reading what they named is the command's job)."""
    for name, payload in (inputs or {}).items():
        (tree / "work" / name).write_bytes(payload)
    before = _snapshot(tree)
    out, err = io.StringIO(), io.StringIO()
    _WATCHED[:] = [os.path.realpath(tree / "outside")] if watch else []
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse's usage error
                code = exc.code
    finally:
        _WATCHED.clear()
    touched, _TOUCHED[:] = list(_TOUCHED), []
    store = str(tree / "work" / ".judgeops")  # a run's own records may be written there, nothing else
    after = {p: v for p, v in _snapshot(tree).items() if not p.startswith(store)}
    before = {p: v for p, v in before.items() if not p.startswith(store)}
    text = err.getvalue()
    assert not touched, f"{argv}: read beside the tree: {touched[:3]}"
    assert after == before, f"{argv}: wrote {sorted(set(after.items()) - set(before.items()))[:3]}"
    assert "Traceback" not in text + out.getvalue(), f"{argv}: {text[-500:]}"
    assert code in (1, 2), f"{argv}: exit {code} on garbage (stderr {text[-300:]!r})"
    assert text.strip(), f"{argv}: exit {code} without a message"
    return code, text


# -- generated hostile values --------------------------------------------------------------------------------

TRAVERSALS = st.sampled_from(
    ["../outside/x", "../../outside/x", "../outside", "/etc", "/", ".", "..", "x/../../outside/x", "~/x"]
)
URLS = st.sampled_from(
    ["s3://bucket/run", "file:///etc/passwd", "http://127.0.0.1:9/x", "memory://x", "c:\\x"]
)
NAMES = st.one_of(
    TRAVERSALS,
    URLS,
    st.text(min_size=1, max_size=40).map(lambda s: s + "/.."),
    st.text(min_size=0, max_size=300),
    st.text(alphabet="./\\\x00 ", min_size=1, max_size=20),
    st.builds(lambda s: f"{s}\x00", st.text(max_size=10)),
    st.just("x" * 5000),
    st.sampled_from(
        ["é", "\u202e", "\ufeff2026-01-01_20260101T000000_abcdef", "2026-01-01_20260101T000000_ABCDEF"]
    ),
)
BAD_COUNTS = st.one_of(
    st.integers(max_value=0).map(str),
    st.sampled_from(["", " ", "1.5", "nan", "inf", "-inf", "1e3", "0x10", "one", "\x00"]),
    st.text(alphabet="abcXYZ-.", min_size=1, max_size=8),
)
BAD_FLOATS = st.one_of(
    st.floats(max_value=0, allow_nan=False).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "", "abc", "1,5", "\x00"]),
)
GARBAGE = st.one_of(
    st.binary(max_size=2000).map(lambda b: b"\xff\xfe" + b),  # not UTF-8
    st.sampled_from([b"", b"\n\n", b"# only a comment\n", b"\x1f\x8b\x08\x00garbage", b"PAR1\x00\x00PAR1"]),
    st.text(max_size=300).map(lambda t: ("- " + t).encode()),  # a list, not a mapping
)


def _yaml_scalar(value) -> str:
    import json

    return json.dumps(value)


WRONG_TYPED = st.sampled_from(
    [
        ("batch_size", True),
        ("batch_size", "5"),
        ("batch_size", -1),
        ("profile", {"n_bootstrap": 5}),
        ("profile", {"confidence": 1.5}),
        ("judges", []),
        ("judges", [{"name": "a b", "model": "reference_match"}]),
        ("sources", [{"kind": "nope"}]),
        ("store", "not a mapping"),
        ("aggregation", {"methods": ["magic"]}),
        ("aggregation", {"params": {"dawid_skene": {"bogus": 1}}}),
        ("sharding", {"runner": "threads", "max_workers": 0}),
        ("nonsense", 1),
    ]
)
BAD_CONFIGS = st.one_of(
    GARBAGE,
    WRONG_TYPED.map(lambda kv: f"{kv[0]}: {_yaml_scalar(kv[1])}\n".encode()),
    WRONG_TYPED.map(lambda kv: f"{kv[0]}: {_yaml_scalar(kv[1])}\n{kv[0]}: {_yaml_scalar(kv[1])}\n".encode()),
)
BAD_TABLES = st.one_of(
    GARBAGE,
    st.sampled_from(
        [
            b"task,worker,label\n",  # a header, no rows
            b"task,worker\n1,a\n",  # no label column
            b"task,worker,label\n,,\n,,\n",  # every value missing
            b"a,b,c\n1,2,3\n",
            b'task,worker,label\n"1,a,A\n',  # an unterminated quote
        ]
    ),
)


def fuzz(figure, entry: str, values, check) -> None:
    """`check(value)` on every generated value (SETTINGS: derandomized, CASES of them), then the count reported."""
    n = 0

    @SETTINGS
    @given(values)
    def case(value):
        nonlocal n
        n += 1
        check(value)

    case()
    figure(
        f"fuzz: {entry}",
        "exit 1 or 2 with a message, no traceback, nothing read or written beside",
        f"{n} cases",
    )


def _a_readable_file(value: str) -> bool:
    with contextlib.suppress(OSError, ValueError):
        return Path(value.removeprefix("file://")).is_file()
    return False


# -- entry points ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [["store", "ls", "--run"], ["report", "--run"], ["store", "show", "items", "--run"]],
    ids=["store ls --run", "report --run", "store show --run"],
)
def test_fuzz_run_ids(tree, figure, command):
    def check(value):
        code, err = run_cli(tree, [*command, value])
        assert code == 2 and "is not a run id" in err

    fuzz(figure, " ".join(command), NAMES, check)


def test_fuzz_artifact_names(tree, figure):
    def check(value):
        code, err = run_cli(tree, ["store", "show", value])
        assert code == 2 and "is not an artifact" in err

    fuzz(figure, "store show NAME", NAMES, check)


def test_fuzz_config_files(tree, figure):
    def check(payload):
        code, err = run_cli(tree, ["--config", "fuzzed.yaml", "config"], {"fuzzed.yaml": payload})
        assert code == 2 and err.startswith("fuzzed.yaml: ")

    fuzz(figure, "--config FILE (hostile content)", BAD_CONFIGS, check)


def test_fuzz_config_paths(tree, figure):
    def check(value):
        assert run_cli(tree, ["--config", value, "config"], watch=False)[0] == 2

    fuzz(figure, "--config PATH", NAMES.filter(lambda v: v != "votes.csv"), check)


@pytest.mark.parametrize(
    "argv", [["aggregate", "{}", "--method", "mv"], ["audit", "propose", "{}", "--k", "2"]]
)
def test_fuzz_votes_files(tree, figure, argv):
    def check(case):
        payload, name = case
        assert run_cli(tree, [a.format(name) for a in argv], {name: payload})[0] == 2

    files = st.tuples(BAD_TABLES, st.sampled_from(["fuzzed.csv", "fuzzed.parquet"]))
    fuzz(figure, f"{' '.join(argv[:2]).replace('{}', 'VOTES')} (hostile content)", files, check)


@pytest.mark.parametrize(
    "argv",
    [
        ["aggregate", "votes.csv", "--method", "mv", "--truth", "{}"],
        ["audit", "apply", "votes.csv", "--labels", "{}"],
    ],
    ids=["aggregate --truth", "audit apply --labels"],
)
def test_fuzz_truth_and_label_files(tree, figure, argv):
    # a task the votes lack, an unknown class, nothing filled in, no task column
    extra = st.sampled_from([b"task,label\n99,A\n", b"task,label\n1,Z\n", b"task,label\n1,\n", b"label\nA\n"])

    def check(payload):
        assert run_cli(tree, [a.format("fuzzed.csv") for a in argv], {"fuzzed.csv": payload})[0] == 2

    fuzz(figure, " ".join(argv[:1] + argv[-2:-1]), st.one_of(BAD_TABLES, extra), check)


@pytest.mark.parametrize(
    "argv",
    [
        ["aggregate", "{}", "--method", "mv"],
        ["audit", "apply", "votes.csv", "--labels", "{}"],
        ["cache", "stats", "--path", "{}"],
        ["ingest", "--source", "jsonl:{}"],
    ],
    ids=["aggregate VOTES", "audit apply --labels", "cache stats --path", "ingest --source"],
)
def test_fuzz_paths(tree, figure, argv):
    def check(value):
        assert run_cli(tree, [a.format(value) for a in argv], watch=False)[0] in (1, 2)

    # an existing file would be read, and rightly
    paths = NAMES.filter(lambda v: not _a_readable_file(v))
    fuzz(figure, f"{' '.join(argv[:-1] if '{}' in argv[-1] else argv)} PATH", paths, check)


NUMBERS = [
    (["run", "--limit"], BAD_COUNTS),
    (["ingest", "--per-domain"], BAD_COUNTS),
    (["store", "show", "items", "--rows"], BAD_COUNTS),
    (["audit", "propose", "votes.csv", "--k"], BAD_COUNTS),
    (["simulate-drift", "--weeks"], BAD_COUNTS),
    (["server", "--port"], st.one_of(BAD_COUNTS, st.integers(min_value=65536).map(str))),
    (["run", "--max-cost"], BAD_FLOATS),
    (["backfill", "--start", "2026-01-05", "--end", "2026-01-12", "--timeout"], BAD_FLOATS),
    (["cache", "prune", "--older-than"], BAD_FLOATS),
    (["run", "--as-of"], st.one_of(st.text(max_size=12), st.sampled_from(["2026-13-01", "2026-02-30", "0"]))),
    (
        ["recalibrate", "--week"],
        st.one_of(st.text(max_size=12), st.sampled_from(["2026-13-01", "12/01/2026"])),
    ),
]


@pytest.mark.parametrize("command, values", NUMBERS, ids=[" ".join(c) for c, _ in NUMBERS])
def test_fuzz_numbers(tree, figure, command, values):
    def check(value):
        code, err = run_cli(tree, [*command, value])
        assert code == 2 and f"argument {command[-1]}: expected" in err

    fuzz(figure, " ".join(command), values, check)


UNWRITABLE = st.one_of(
    st.sampled_from(["", " ", ".", "..", "/", "../outside", "x" * 5000, "a\x00b"]),
    st.text(max_size=30).map(lambda t: f"no-such-folder/{t}/judgeops.yaml"),
)


def test_fuzz_init_paths(tree, figure):
    def check(value):
        assert run_cli(tree, ["init", "--path", value])[0] == 2

    fuzz(figure, "init --path", UNWRITABLE, check)


# -- the readers, called directly -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "gsm8k", "mmlu", "truthfulqa", "medqa", "parquet"])
def test_fuzz_source_readers(tmp_path, figure, fmt):
    """Every record read is an item or a quarantined row; a whole file that cannot be read is an IngestError
    naming it; nothing else escapes."""
    from judgeops.config import FileSource
    from judgeops.tasks.ingest import IngestError, ingest_items

    suffix = {"gsm8k": "jsonl", "medqa": "jsonl", "mmlu": "csv", "truthfulqa": "csv"}.get(fmt, fmt)
    content = st.one_of(
        GARBAGE,
        st.binary(max_size=3000),
        st.lists(st.text(max_size=80), max_size=20).map(lambda rows: "\n".join(rows).encode()),
        st.lists(
            st.dictionaries(
                st.sampled_from(["question", "answer", "id"]), st.one_of(st.text(), st.integers(), st.none())
            ),
            max_size=10,
        ).map(lambda rows: "\n".join(__import__("json").dumps(r) for r in rows).encode()),
    )

    def check(payload):
        path = tmp_path / f"source.{suffix}"
        path.write_bytes(payload)
        try:
            result = ingest_items([FileSource(path=str(path), format=fmt)])
        except IngestError as exc:
            assert str(path) in str(exc)
            return
        assert {"quarantine_reason"} <= set(result.quarantine.columns) or result.quarantine.empty

    fuzz(figure, f"source reader {fmt}", content, check)


def test_fuzz_votes_reader(tmp_path, figure):
    from judgeops.tasks.aggregate.scoring import InputError, read_table

    def check(case):
        payload, name = case
        path = tmp_path / name
        path.write_bytes(payload)
        try:
            read_table(str(path), "votes")
        except InputError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)

    tables = st.tuples(
        st.one_of(BAD_TABLES, st.binary(max_size=2000)), st.sampled_from(["v.csv", "v.parquet", "v.txt"])
    )
    fuzz(figure, "votes / truth / labels reader", tables, check)
