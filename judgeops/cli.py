"""The `judgeops` command line: it parses arguments, calls `judgeops.api`, and prints.

Exit codes: 0 done; 1 a run stopped (a broken contract, an unreadable source, a full store: one line, the
traceback with --debug); 2 bad input (a config, a votes file, a broken calibration chain). Options before or
after the command. Each command imports what it needs when it runs, so `judgeops --help` starts at once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from judgeops import api  # its names load on first use: `judgeops --help` imports no pipeline code

# Offline-friendly defaults (a user's own settings win): no telemetry, and enough time for the ephemeral
# Prefect API's first database set-up (~30 s on 2 cores).
_DEFAULTS = "DO_NOT_TRACK=1 PREFECT_SERVER_ANALYTICS_ENABLED=false GX_ANALYTICS_ENABLED=false"
for _setting in f"{_DEFAULTS} PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=120".split():
    os.environ.setdefault(*_setting.split("="))

console = Console()


def _table(title: str, columns: list[str], rows: list[list]) -> None:
    table = Table(title=title)
    for i, col in enumerate(columns):  # the first column (a run id, a name) whole, so it can be copied
        table.add_column(col, no_wrap=i == 0, overflow="fold")
    for row in rows:
        table.add_row(*map(str, row))
    console.print(table)


def _write(frame, path: str) -> None:
    (frame.to_parquet if path.endswith(".parquet") else frame.to_csv)(path, index=False)


def cmd_run(args) -> int:
    gates = api.parse_fail_under(args.fail_under)  # a malformed gate fails before the run, not after
    run = api.evaluate(args.config, args.as_of, not args.no_reuse, args.store, args.max_cost, args.limit)
    result = api.summary(run, gates, args.fail_on)
    print(json.dumps(result) if args.json else "\n".join(api.summary_lines(result)))
    return result["exit_code"]


def cmd_ingest(args) -> int:
    result = api.ingest(args.config, args.as_of, args.store, args.source, args.per_domain)
    rows = [[r["source"], r["domain"], r["items"], r["quarantined"]] for r in result["summary"]]
    _table(f"ingested (run {result['run_id']})", ["source", "domain", "items", "quarantined"], rows)
    for name, path in result["artifacts"].items():
        print(f"{name}: {result['rows'][name]} rows at {path}")
    return 0


def cmd_recalibrate(args) -> int:
    result = api.recalibrate(args.week, args.config, args.from_scratch, args.force, args.store)
    for gap in [*result.filled, result.model_dump(mode="json")]:  # earlier weeks filled first, in order
        note = f", carried from {gap['carried_from']}" if gap.get("carried_from") else ""
        print(f"week {gap['week']}: {gap['status']} (run {gap['run_id']}{note})")
    for e in result.drifted:
        print(f"drift: {e['judge']} {e['metric']} {e['before']:.3f} → {e['after']:.3f}")
    return 0


def cmd_report(args) -> int:
    print(f"report: {api.report(args.run, _store_url(args))}")
    return 0


def cmd_store_ls(args) -> int:
    for line in api.sweep(_store_url(args), args.run):  # a dead run says so, not "running" forever
        print(line)
    for title, columns, rows in api.listing(_store_url(args), args.run, args.all):
        _table(title, columns, rows)
    if not args.run and not args.all:
        print("`judgeops store ls --run RUN_ID` (or --all) lists a run's artifacts.")
    return 0


def cmd_store_show(args) -> int:
    run = api.get_run(args.run, _store_url(args), flow=None, having=args.name)
    manifest = run.store.manifest(args.name)
    console.print_json(data=manifest)
    if manifest.get("kind") == "table":
        console.print(run.load(args.name).head(args.rows).to_string(max_colwidth=60), highlight=False)
    return 0


def cmd_cache_stats(args) -> int:
    with api.open_cache(_cache_path(args)) as cache:
        rows = [list(r.values()) for r in cache.stats()]
        _table(
            f"judge-call cache {cache.path} ({cache.size_bytes() / 1e6:.1f} MB)", cache.STATS_COLUMNS, rows
        )
    return 0


def cmd_cache_prune(args) -> int:
    n = api.prune_cache(_cache_path(args), args.older_than, args.model, args.unparsable, args.all)
    print(f"deleted {n} cached calls (they will be paid for again if asked)")
    return 0


def cmd_aggregate(args) -> int:
    params = api.parse_params(args.param or [], args.method, estimator=args.estimator, rule=args.rule)
    done = api.aggregate_file(
        args.votes, args.method, params, args.truth, args.dev_labels, args.tie_label, args.allow_partial_truth
    )
    if args.out:
        _write(done.predictions, args.out)
    if args.json:
        print(json.dumps(done.summary, default=float))
        return 0
    if not args.out:
        sys.stdout.write(done.predictions.to_csv(index=False))
    else:
        print(f"wrote {len(done.predictions)} predictions to {args.out}")
    print("\n".join(done.lines(args.tie_label)))
    return 0


def cmd_audit_propose(args) -> int:
    proposal, n_tasks = api.audit_propose(args.votes, args.k, args.method, args.by, args.strategy, args.seed)
    proposal.to_csv(args.out, index=False)
    print(
        f"proposed {len(proposal)} of {n_tasks} tasks to audit ({args.strategy} selection) in {args.out}: fill "
        f"the `label` column and run `judgeops audit apply {args.votes} --labels {args.out}`\n"
        + api.labels_to_ask(args.votes, len(proposal))
    )
    return 0


def cmd_audit_apply(args) -> int:
    out, summary = api.audit_apply(*(getattr(args, a) for a in api.AUDIT_APPLY_ARGS))
    failed = api.audit_gates(summary, args.fail_under)
    if args.out:
        _write(out, args.out)
    if args.json:
        print(json.dumps({**summary, "gates_failed": failed}, default=float))
        return 2 if failed else 0
    wrote = [f"wrote {len(out)} predictions to {args.out}"] if args.out else []
    print("\n".join([*api.audit_lines(summary), *wrote, *failed]))
    return 2 if failed else 0


def cmd_label(args) -> int:
    return api.label(**{name: getattr(args, name) for name in api.LABEL_OPTIONS})


def cmd_simulate_drift(args) -> int:
    print("\n".join(api.simulate_drift(Path(args.out), args.weeks, args.items_per_week, args.seeds)))
    return 0


def cmd_init(args) -> int:
    print(api.init(args.path, args.force))
    return 0


def cmd_config(args) -> int:
    sys.stdout.write(api.dump_config(api.checked_config(args.config)))
    return 0


def cmd_deploy(args) -> int:
    return api.deploy(notify=args.notify, config=args.config)


def cmd_server(args) -> int:
    return api.serve(args.port, ready=console.print)


def cmd_backfill(args) -> int:
    outcome = api.backfill(args.start, args.end, args.deployment, args.timeout, args.config, args.start_chain)
    for week, status in outcome.items():
        console.print(f"{week}: {status}")
    return 0


def _store_url(args) -> str:
    return args.store or api.load_config(args.config).store.url


def _cache_path(args) -> str:
    return args.path or api.load_config(args.config).cache.path


def build_parser() -> argparse.ArgumentParser:
    """The commands and their options are data (judgeops/commands.yaml), read into argparse here."""
    spec = yaml.safe_load((Path(__file__).parent / "commands.yaml").read_text(encoding="utf-8"))

    def add(parser: argparse.ArgumentParser, options: dict, suppress: bool = False) -> None:
        for flags, kwargs in options.items():
            kwargs = dict(kwargs or {})
            if "type" in kwargs:
                kwargs["type"] = api.OPTION_TYPES[kwargs["type"]]
            if suppress:  # a global option after the command: keep the value given before it otherwise
                kwargs["default"] = argparse.SUPPRESS
            parser.add_argument(*flags.split(), **kwargs)

    def commands(parser: argparse.ArgumentParser, tree: dict, prefix: str) -> None:
        sub = parser.add_subparsers(dest=f"{prefix or 'command'}", required=True)
        for name, node in tree.items():
            child = sub.add_parser(name, help=node["help"])
            if "commands" in node:
                commands(child, node["commands"], f"{prefix}{name}_")
                continue
            add(child, node.get("options") or {})
            add(child, spec["global"], suppress=True)
            child.set_defaults(fn=globals()[f"cmd_{prefix}{name}".replace("-", "_")])

    parser = argparse.ArgumentParser(prog="judgeops", description=spec["description"])
    parser.add_argument("--version", action="version", version=f"judgeops {version('judgeops')}")
    add(parser, spec["global"])
    commands(parser, spec["commands"], "")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.debug and args.command in ("run", "ingest", "recalibrate", "backfill"):
        from judgeops.api.errors import quiet_tracebacks  # lazy: it loads Prefect, which --help does not need

        quiet_tracebacks()
    from judgeops.api.interrupts import run_command  # signals end a run cleanly (its docstring)

    try:
        code, line = run_command(args.command, lambda: args.fn(args))
    except Exception as exc:
        from judgeops.api.errors import describe  # lazy: see quiet_tracebacks

        known = describe(exc, args.command)
        if known is None or args.debug:
            raise
        code, line = known
    if line:
        print(line, file=sys.stderr)  # unwrapped, so paths and keys stay on one line
    return code


if __name__ == "__main__":
    sys.exit(main())
