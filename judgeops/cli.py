"""The `judgeops` command line: run, ingest, report, store ls/show, cache stats/prune, config, deploy, server,
backfill."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
import typing
from pathlib import Path

# Offline-friendly Prefect defaults (a user's own settings win): no telemetry, and enough time for
# the ephemeral API's first database set-up (~30 s on 2 cores).
for _key, _value in {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
    "GX_ANALYTICS_ENABLED": "false",
}.items():
    os.environ.setdefault(_key, _value)

import yaml  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from judgeops.config import ConfigError, dump_config, load_config  # noqa: E402

console = Console()


def _error(message: str) -> None:
    """Errors go to stderr unwrapped, so file paths and keys stay on one line."""
    print(message, file=sys.stderr)


POOL = "judgeops-process"
# the prefect executable of this environment, so a venv works without being activated
_beside = Path(sys.executable).parent / "prefect"
PREFECT = str(_beside) if _beside.exists() else "prefect"


def _date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def _store(args):
    from judgeops.flows.observer import PrefectObserver
    from judgeops.schemas.store import ArtifactStore

    url = args.store or load_config(args.config).store.url
    return ArtifactStore(url, observer=PrefectObserver())


def _stopping_errors() -> tuple[type[Exception], ...]:
    """Errors that stop a flow with a message meant for the user (printed without a traceback)."""
    from judgeops.data_contracts import ContractViolation
    from judgeops.schemas.store import StoreError
    from judgeops.tasks.ingest import IngestError
    from judgeops.tasks.judges.backends import JudgeBackendError

    return ContractViolation, IngestError, StoreError, JudgeBackendError


def cmd_run(args) -> int:
    config = load_config(args.config)
    if args.store:
        config.store.url = args.store
    from judgeops.flows.evaluate import evaluate

    started = time.perf_counter()
    try:
        result = evaluate(config=config, as_of=args.as_of, reuse=not args.no_reuse)
    except _stopping_errors() as exc:
        _error(f"judgeops run stopped: {exc}")
        return 1
    print(f"run {result.run_id} finished in {time.perf_counter() - started:.1f}s")
    print(f"artifacts: {Path(result.report).parent}")
    print(f"report: {result.report}")
    return 0


def cmd_recalibrate(args) -> int:
    """One week of the calibration chain (see flows/recalibrate.py)."""
    config = load_config(args.config)
    if args.store:
        config.store.url = args.store
    from judgeops.flows.recalibrate import RecalibrationError, recalibrate

    try:
        result = recalibrate(week=args.week, config=config, from_scratch=args.from_scratch, force=args.force)
    except RecalibrationError as exc:
        _error(f"judgeops recalibrate: {exc}")
        return 2
    print(f"week {result.week}: {result.status} (run {result.run_id})")
    for e in result.drifted:
        print(f"drift: {e['judge']} {e['metric']} {e['before']:.3f} → {e['after']:.3f}")
    return 0


def sources_from_args(specs: list[list[str]]):
    """`--source FORMAT:PATH [PATH ...]` → item sources and pairwise sources (formats as the config knows them)."""
    from judgeops.config import FileSource, ItemFormat, PairwiseFormat, PairwiseSource

    item_formats, pairwise_formats = typing.get_args(ItemFormat), typing.get_args(PairwiseFormat)
    items, pairwise = [], []
    for spec in specs:
        fmt, sep, first = spec[0].partition(":")
        if not sep or fmt not in item_formats + pairwise_formats:
            raise ConfigError(
                f"--source {spec[0]!r}: expected FORMAT:PATH with FORMAT one of {', '.join(item_formats + pairwise_formats)}"
            )
        for path in [first, *spec[1:]]:
            if fmt in pairwise_formats:
                pairwise.append(PairwiseSource(format=fmt, path=path))
            else:
                items.append(FileSource(format=fmt, path=path))
    return items, pairwise


def cmd_ingest(args) -> int:
    from judgeops.flows.ingest import ingest

    config = load_config(args.config)
    if args.store:
        config.store.url = args.store
    if args.source:
        items, pairwise = sources_from_args(args.source)
        config.sources = items or config.sources
        config.pairwise = pairwise or config.pairwise
    if args.per_domain:
        config.sampling.per_domain = args.per_domain
    try:
        result = ingest(config=config, as_of=args.as_of)
    except _stopping_errors() as exc:
        _error(f"judgeops ingest stopped: {exc}")
        return 1
    table = Table(title=f"ingested (run {result['run_id']})")
    for col in ("source", "domain", "items", "quarantined"):
        table.add_column(col)
    for row in result["summary"]:
        table.add_row(row["source"], row["domain"], str(row["items"]), str(row["quarantined"]))
    console.print(table)
    for name, path in result["artifacts"].items():
        print(f"{name}: {result['rows'][name]} rows at {path}")
    return 0


def cmd_report(args) -> int:
    from judgeops.schemas.store import ArtifactStore
    from judgeops.tasks import report as report_module

    base = _store(args)
    run_id = args.run or base.latest_run_id()
    store = ArtifactStore(base.url, run_id)
    from judgeops.tasks.stages import previous_profiles

    names = ["profiles", "profile_stats", "pointwise_bias", "coverage", "pairs", "construction_log",
             "consistency", "aggregation_notes"]  # fmt: skip
    names = [
        n for n in names if n in ("profiles", "coverage", "pairs", "construction_log") or store.exists(n)
    ]
    tables = {n: store.read_pandas(n) for n in names}
    record = store.run_record()
    html = report_module.render_report(
        tables,
        run_id=run_id,
        title=f"judgeops evaluation, {record.get('as_of', '')}",
        artifacts=store.list_artifacts(),
        judges=record.get("config", {}).get("judges", []),
        previous=previous_profiles(store),
    )
    ref = store.write_file("report.html", html.encode(), parents={n: store.ref(n) for n in names})
    print(f"report: {store.display_path(ref.path)}")
    return 0


def _age(iso: str) -> str:
    seconds = (dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(iso)).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def cmd_store_ls(args) -> int:
    store = _store(args)
    for r in store.sweep_crashed():  # a run whose process died says so, instead of "running" forever
        swept = r["swept"]
        console.print(
            f"run {r['run_id']}: crashed ({r['error']}); removed {swept['temp_files_removed']} temp files"
            + (
                "; stopped the temporary Prefect server it left running"
                if swept["prefect_server_stopped"]
                else ""
            )
        )
    runs = store.list_runs()
    if not runs:
        console.print(f"no runs in store {store.url}")
        return 0
    if not args.run and not args.all:
        table = Table(title=f"runs in {store.url}")
        for col in ("run_id", "as_of", "status", "started", "artifacts"):
            table.add_column(col)
        for r in runs:
            table.add_row(
                r["run_id"],
                r.get("as_of", ""),
                r.get("status", ""),
                r.get("started_at", ""),
                str(len(store.list_artifacts(r["run_id"]))),
            )
        console.print(table)
        console.print("`judgeops store ls --run RUN_ID` (or --all) lists a run's artifacts.")
        return 0
    for r in runs if args.all else [store.run_record(args.run)]:
        table = Table(title=f"run {r['run_id']} ({r.get('status', '')})")
        for col in ("artifact", "rows", "sha256", "age", "from run"):
            table.add_column(col)
        for m in store.list_artifacts(r["run_id"]):
            table.add_row(
                m["name"],
                str(m["rows"]),
                m["sha256"][:16],
                _age(m["created_at"]),
                m.get("reused_from", "this run"),
            )
        console.print(table)
    return 0


def cmd_store_show(args) -> int:
    from judgeops.schemas.store import ArtifactStore

    base = _store(args)
    store = ArtifactStore(base.url, args.run or base.latest_run_id(status=None))
    manifest = store.manifest(args.name)
    console.print_json(data=manifest)
    if manifest.get("kind") == "table":
        df = store.read_pandas(args.name)
        with_pd_options = df.head(args.rows).to_string(max_colwidth=60)
        console.print(with_pd_options, highlight=False)
    return 0


def _cache(args):
    from judgeops.tasks.judges.cache import CallCache

    path = Path(args.path or load_config(args.config).cache.path)
    if not path.exists():
        raise SystemExit(f"no judge-call cache at {path}")
    return CallCache(path)


def cmd_cache_stats(args) -> int:
    with _cache(args) as cache:
        rows = cache.stats()
        size = sum(f.stat().st_size for f in cache.path.parent.glob(cache.path.name + "*"))  # + WAL
        table = Table(title=f"judge-call cache {cache.path} ({size / 1e6:.1f} MB)")
        for col in ("backend", "model", "calls", "unparsable", "tokens", "oldest", "newest"):
            table.add_column(col)
        for r in rows:
            table.add_row(
                *(
                    str(r[c])
                    for c in ("backend", "model", "calls", "unparsable", "tokens", "oldest", "newest")
                )
            )
        console.print(table)
    return 0


def cmd_cache_prune(args) -> int:
    if args.older_than is None and args.model is None and not args.unparsable and not args.all:
        _error(
            "judgeops cache prune: say what to delete: --older-than DAYS, --model NAME, --unparsable or --all"
        )
        return 2
    with _cache(args) as cache:
        n = cache.prune(args.older_than, args.model, args.unparsable)
    print(f"deleted {n} cached calls (they will be paid for again if asked)")
    return 0


def _param(text: str) -> tuple[str, object]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise SystemExit(f"--param expects key=value, got {text!r}")
    return key, yaml.safe_load(value)


def cmd_aggregate(args) -> int:
    """Aggregate a long table of votes (task, worker, label) or scores (task, worker, score)."""
    import inspect

    import pandas as pd

    from judgeops.tasks.aggregate import AGGREGATORS, USES_LABELS, get_aggregator, scoring

    params = dict(_param(p) for p in args.param or [])
    for flag in ("estimator", "rule"):
        if getattr(args, flag):
            if args.method != "wmv":
                _error(f"judgeops aggregate: --{flag} applies to --method wmv only")
                return 2
            params[flag] = getattr(args, flag)
    try:
        estimator = get_aggregator(args.method, **params)
    except (ValueError, TypeError) as exc:
        _error(f"judgeops aggregate: {exc}")
        return 2
    try:
        table = scoring.read_table(args.votes, "votes")
        kind = params.get("input", AGGREGATORS[args.method][1])
        if "input" in inspect.signature(type(estimator)).parameters and kind not in table.columns:
            other = "label" if kind == "score" else "score"
            if other in table.columns and "input" not in params:
                kind = estimator.input = other
        votes, tie_votes = scoring.prepare_votes(table, kind, args.votes, args.tie_label)
        tasks = pd.Index(votes["task"].unique())
        fit_kwargs, dev = {}, None
        if args.dev_labels:
            if args.method not in USES_LABELS:
                raise scoring.InputError(
                    f"{args.method} does not use development labels; {list(USES_LABELS)} do"
                )
            dev_table = scoring.read_table(args.dev_labels, "dev labels")
            dev = scoring.check_truth(dev_table, tasks, args.dev_labels, allow_partial=True)
            fit_kwargs["dev_labels"] = dev
        if args.method == "wmv" and params.get("estimator") == "oracle":
            if not args.truth:
                raise scoring.InputError("the oracle estimator reads the true labels: give --truth")
            oracle = scoring.read_table(args.truth, "truth")
            fit_kwargs["dev_labels"] = scoring.check_truth(oracle, tasks, args.truth, allow_partial=True)
        elif args.method == "wmv" and params.get("estimator") in ("bayesian", "stratified") and dev is None:
            raise scoring.InputError(
                f"the {params['estimator']} estimator needs an audit set: give --dev-labels"
            )
        truth, truth_kind = None, "label"
        if args.truth:
            truth_table = scoring.read_table(args.truth, "truth")
            truth_kind = "score" if kind == "score" and "label" not in truth_table.columns else "label"
            truth = scoring.check_truth(truth_table, tasks, args.truth, truth_kind, args.allow_partial_truth)
            if dev is not None:
                truth = truth.drop(index=dev.index, errors="ignore")
        estimator.fit(votes, **fit_kwargs)
    except scoring.InputError as exc:
        _error(f"judgeops aggregate: {exc}")
        return 2
    except ValueError as exc:
        _error(f"judgeops aggregate: {args.votes}: {exc}")
        return 2
    labels = estimator.labels_.rename("label")
    out = labels.rename_axis("task").reset_index()
    if hasattr(estimator, "probas_"):
        out["probability"] = (
            estimator.probas_.reindex(labels.index).max(axis=1).to_numpy()
        )  # the decision's confidence
    if hasattr(estimator, "scores_"):
        out["score"] = estimator.scores_.reindex(labels.index).to_numpy()
    if args.out:
        (out.to_parquet if args.out.endswith(".parquet") else out.to_csv)(args.out, index=False)
    elif not args.json:
        sys.stdout.write(out.to_csv(index=False))
    summary = {"method": args.method, "votes": args.votes, "n_tasks": int(len(labels)), "n_votes": int(len(votes)),
               "tie_votes": tie_votes, "ties": int((labels == "tie").sum())}  # fmt: skip
    if args.method == "auto":
        summary.update(choice=estimator.choice_, reason=estimator.reason_, evidence=estimator.evidence_)
    try:
        if truth is not None:
            if truth_kind == "label":
                space = set(votes["label"].dropna()) if kind == "label" else set(labels) - {"tie"}
                summary["scored"] = scoring.score_labels(labels, truth, sorted(space, key=str), args.truth)
            elif hasattr(estimator, "scores_"):
                summary["scored"] = scoring.score_scores(estimator.scores_, truth)
            else:
                raise scoring.InputError(
                    f"{args.truth}: score truth needs a method with scores (avg, uws, care_*)"
                )
            if dev is not None:
                summary["scored"]["scored_outside_dev_labels"] = True
    except scoring.InputError as exc:
        _error(f"judgeops aggregate: {exc}")
        return 2
    if args.json:
        print(json.dumps(summary, default=float))
        return 0
    if args.out:
        print(f"wrote {len(out)} predictions to {args.out}")
    if tie_votes:
        print(f"explicit tie votes (label {args.tie_label!r}, not counted for either side): {tie_votes}")
    if args.method == "auto":
        print(f"auto chose {estimator.choice_}: {estimator.reason_}")
    scored = summary.get("scored")
    if scored and "accuracy" in scored:
        if dev is not None:
            print(f"scored on {scored['n']} tasks outside the development labels")
        print(f"accuracy: {scored['accuracy']:.4f} (ties and undecided count as wrong)")
        print(f"accuracy on decided tasks: {scored['accuracy_decided']:.4f}")
        decided = scored["n"] - scored["ties"] - scored["undecided"]
        print(
            f"coverage: {scored['coverage']:.4f} ({decided} of {scored['n']} tasks decided; ties: {scored['ties']})"
        )
    elif scored:
        print(f"mae: {scored['mae']:.4f}")
        print(f"kendall_tau: {scored['kendall_tau']:.4f}")
        print(f"coverage: {scored['coverage']:.4f}")
    return 0


def cmd_audit_propose(args) -> int:
    """The k tasks whose labels would inform the consensus most, as a csv for an auditor to fill."""
    from judgeops.tasks.aggregate import audit, scoring

    try:
        votes = scoring.read_label_votes(args.votes)
        proposal = audit.propose(votes, args.k, args.method, args.by, args.strategy, args.seed)
    except (scoring.InputError, ValueError) as exc:
        _error(f"judgeops audit propose: {exc}")
        return 2
    proposal.to_csv(args.out, index=False)
    print(f"proposed {len(proposal)} of {votes['task'].nunique()} tasks to audit ({args.strategy} selection) "
          f"in {args.out}: fill the `label` column and run `judgeops audit apply {args.votes} --labels {args.out}`")  # fmt: skip
    return 0


def cmd_audit_apply(args) -> int:
    """The consensus refitted with the audited labels: the head chosen by leave-one-out on the audit."""
    from judgeops.tasks.aggregate import audit, scoring

    try:
        votes = scoring.read_label_votes(args.votes)
        labels, weights = scoring.read_audit_labels(args.labels)
        result = audit.refit(votes, labels, weights, args.method)
        truth = None
        if args.truth:
            tasks = result["labels"].index
            truth = scoring.check_truth(scoring.read_table(args.truth, "truth"), tasks, args.truth,
                                        allow_partial=args.allow_partial_truth)  # fmt: skip
    except (scoring.InputError, ValueError) as exc:
        _error(f"judgeops audit apply: {exc}")
        return 2
    out = result["labels"].rename("label").rename_axis("task").reset_index()
    if args.out:
        (out.to_parquet if args.out.endswith(".parquet") else out.to_csv)(args.out, index=False)
    summary = {"n_labels": result["n_labels"], "head": result["head"], "audit_accuracy": result["scores"]}
    if truth is not None:
        space = sorted(set(votes["label"].dropna()), key=str)
        summary["scored"] = scoring.score_labels(result["labels"], truth, space, args.truth)
    if args.json:
        print(json.dumps(summary, default=float))
        return 0
    print(f"{result['n_labels']} audited labels; head taken: {result['head']}")
    for head, score in result["scores"].items():
        print(
            f"  {head}: weighted accuracy on the audit {score:.3f}"
            + (" (leave-one-out)" if head in audit.HEADS[1:] else "")
        )
    if args.out:
        print(f"wrote {len(out)} predictions to {args.out}")
    if truth is not None:
        print(f"accuracy: {summary['scored']['accuracy']:.4f} (audited tasks keep their labels)")
    return 0


def cmd_simulate_drift(args) -> int:
    """The capability-bias paper's 12-week drift simulation: per-week table, summary and a Figure-4 PNG."""
    from judgeops.tasks.drift.simulate import Setup, figure, run, summary

    setup = Setup(weeks=args.weeks, items_per_week=args.items_per_week)
    table = run(setup, args.seeds)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    weekly = table.groupby("week").mean(numeric_only=True).drop(columns="seed")
    weekly.to_csv(out / "drift_weekly.csv", float_format="%.4f")
    table.to_csv(out / "drift_runs.csv", index=False, float_format="%.4f")
    figure(table, str(out / "drift.png"))
    means = summary(table)
    print(
        f"{args.seeds} seeds × {args.weeks} weeks × {args.items_per_week} items; averages over weeks and seeds:"
    )
    for name, value in means.items():
        if not name.endswith("_oracle") or name.startswith("acc"):
            print(f"  {name}: {value:.4f}")
    print(f"wrote {out / 'drift_weekly.csv'}, {out / 'drift_runs.csv'}, {out / 'drift.png'}")
    return 0


def cmd_config(args) -> int:
    sys.stdout.write(dump_config(load_config(args.config)))
    return 0


def project_root() -> Path:
    """The checkout holding deploy/prefect.yaml and flows/ (deployments run from source)."""
    import judgeops.flows

    for candidate in (Path.cwd(), Path(judgeops.flows.__file__).resolve().parent.parent):
        if (candidate / "deploy" / "prefect.yaml").exists() and (
            candidate / "flows" / "evaluate.py"
        ).exists():
            return candidate
    raise SystemExit("judgeops deploy needs the project checkout (deploy/prefect.yaml): run it from there")


def _require_api() -> str:
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        raise SystemExit(
            "this command talks to a Prefect server: start one with `judgeops server` and "
            "`export PREFECT_API_URL=http://127.0.0.1:4200/api`"
        )
    return url


def cmd_deploy(args) -> int:
    _require_api()
    root = project_root()
    _ensure_pool()
    cmd = [PREFECT, "--no-prompt", "deploy", "--all", "--prefect-file", str(root / "deploy" / "prefect.yaml")]
    return subprocess.call(cmd, cwd=root)


def _ensure_pool() -> None:
    """Create the process work pool unless it exists (tolerating a concurrent creator)."""

    def exists() -> bool:
        return subprocess.run([PREFECT, "work-pool", "inspect", POOL], capture_output=True).returncode == 0

    if exists():
        return
    created = subprocess.run(
        [PREFECT, "work-pool", "create", POOL, "--type", "process"], capture_output=True, text=True
    )
    if created.returncode != 0 and not exists():
        raise SystemExit(f"could not create work pool {POOL}: {created.stdout}{created.stderr}")


def wait_for_api(api: str, process: subprocess.Popen, timeout_s: float = 180) -> bool:
    """Poll the API's health endpoint until it answers, the process dies or the time is up."""
    import httpx

    deadline = time.time() + timeout_s
    while process.poll() is None and time.time() < deadline:
        try:
            if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(1)
    return False


def cmd_server(args) -> int:
    """A local Prefect server (UI + API) and a process worker, until Ctrl-C."""
    api = f"http://127.0.0.1:{args.port}/api"
    env = {**os.environ, "PREFECT_API_URL": api}
    server = subprocess.Popen(
        [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(args.port)], env=env
    )
    worker = None
    try:
        if not wait_for_api(api, server):
            _error("the Prefect server did not start; see its log above")
            return 1
        os.environ["PREFECT_API_URL"] = api
        _ensure_pool()
        worker = subprocess.Popen([PREFECT, "worker", "start", "--pool", POOL], env=env)
        console.print(f"Prefect UI: http://127.0.0.1:{args.port}   worker: pool {POOL}")
        console.print(
            f"In another shell: export PREFECT_API_URL={api}; judgeops deploy; judgeops backfill --start ... --end ..."
        )
        while server.poll() is None and worker.poll() is None:
            time.sleep(1)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for proc in (worker, server):
            for _ in range(2):  # the worker stops on the second Ctrl-C (STACK_NOTES)
                if proc is not None and proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
                    try:
                        proc.wait(8)
                    except subprocess.TimeoutExpired:
                        continue
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def cmd_backfill(args) -> int:
    _require_api()
    from judgeops.flows.backfill import backfill

    # the worker loads the same judgeops.yaml (by absolute path) for every week
    parameters = {"config_file": str(Path(args.config).resolve())} if args.config else {}
    outcome = backfill(
        start=args.start,
        end=args.end,
        deployment=args.deployment,
        timeout_s=args.timeout,
        parameters=parameters,
        start_chain=args.start_chain,
    )
    for week, status in outcome.items():
        console.print(f"{week}: {status}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="judgeops", description="How far to trust your LLM judges.")
    p.add_argument(
        "--config", help="judgeops.yaml (default: ./judgeops.yaml if present, else the embedded default)"
    )
    p.add_argument("--store", help="artifact store URL (overrides store.url of the config)")
    p.add_argument(
        "--debug",
        action="store_true",
        help="show tracebacks of the errors that stop a run (one line without)",
    )
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run the evaluate flow and print where the report and artifacts are")
    run.add_argument("--as-of", type=_date, help="the date evaluated (default: today)")
    run.add_argument("--no-reuse", action="store_true", help="recompute every stage")
    run.set_defaults(fn=cmd_run)

    rec = sub.add_parser("recalibrate", help="re-estimate every judge's error rates for one week (the chain)")
    rec.add_argument("--week", type=_date, help="a day of the week to calibrate (default: today)")
    rec.add_argument("--from-scratch", action="store_true", help="start a new chain at this week")
    rec.add_argument("--force", action="store_true", help="recompute a week that is already calibrated")
    rec.set_defaults(fn=cmd_recalibrate)

    ing = sub.add_parser(
        "ingest", help="read sources into the items artifact and print a summary by source and domain"
    )
    ing.add_argument(
        "--source",
        action="append",
        nargs="+",
        metavar="FORMAT:PATH",
        help="e.g. gsm8k:test.jsonl, mmlu:a.csv b.csv, truthfulqa:TruthfulQA.csv, medqa:x.jsonl, llmbar:natural.json "
        "(repeatable; replaces the config's sources)",
    )
    ing.add_argument("--as-of", type=_date, help="the date (inbox sources read the week ending at it)")
    ing.add_argument("--per-domain", type=int, help="sample at most this many items per domain")
    ing.set_defaults(fn=cmd_ingest)

    rep = sub.add_parser("report", help="re-render the HTML report from stored artifacts")
    rep.add_argument("--run", help="run id (default: the latest completed run)")
    rep.set_defaults(fn=cmd_report)

    store = sub.add_parser("store", help="inspect the artifact store").add_subparsers(
        dest="store_command", required=True
    )
    ls = store.add_parser("ls", help="list runs, or one run's artifacts with rows, hash and age")
    ls.add_argument("--run", help="list this run's artifacts")
    ls.add_argument("--all", action="store_true", help="list every run's artifacts")
    ls.set_defaults(fn=cmd_store_ls)
    show = store.add_parser(
        "show", help="an artifact's manifest and first rows (reading checks hash and schema)"
    )
    show.add_argument("name")
    show.add_argument("--run", help="run id (default: the latest run)")
    show.add_argument("--rows", type=int, default=5)
    show.set_defaults(fn=cmd_store_show)

    cache = sub.add_parser("cache", help="the judge-call cache").add_subparsers(
        dest="cache_command", required=True
    )
    stats = cache.add_parser("stats", help="cached calls per backend and model")
    stats.add_argument("--path", help="the cache file (default: cache.path of the config)")
    stats.set_defaults(fn=cmd_cache_stats)
    prune = cache.add_parser("prune", help="delete cached calls (filters combine)")
    prune.add_argument("--path", help="the cache file (default: cache.path of the config)")
    prune.add_argument("--older-than", type=float, metavar="DAYS", help="entries older than this many days")
    prune.add_argument("--model", help="entries of this model")
    prune.add_argument("--unparsable", action="store_true", help="entries whose output could not be parsed")
    prune.add_argument("--all", action="store_true", help="every entry")
    prune.set_defaults(fn=cmd_cache_prune)

    agg = sub.add_parser(
        "aggregate", help="aggregate a long table of votes or scores (csv/parquet) without labels"
    )
    agg.add_argument("votes", help="task, worker, label (categorical) or task, worker, score (continuous)")
    agg.add_argument(
        "--method",
        required=True,
        help="mv, avg, dawid_skene, ws, uws, care_svd, care_tensor, wmv, baer, cwv, ds_position, auto "
        "(cwv, ds_position and auto also read optional run, shown_first and item columns)",
    )
    agg.add_argument(
        "--truth", help="task, label (or task, score): prints accuracy (or mae, Kendall τ) and coverage"
    )
    agg.add_argument("--out", help="write the predictions here (.csv or .parquet); default: stdout")
    agg.add_argument(
        "--json",
        action="store_true",
        help="print one JSON summary (tasks, ties, auto's choice, and with --truth accuracy, accuracy on decided "
        "tasks, coverage) instead of the predictions (give --out to keep them)",
    )
    agg.add_argument(
        "--tie-label",
        default="tie",
        help="the label a judge uses for an explicit tie (default 'tie'): no vote for either side, counted",
    )
    agg.add_argument(
        "--allow-partial-truth",
        action="store_true",
        help="score only the usable tasks when the truth file has tasks the votes lack, lacks voted tasks, or "
        "repeats tasks (otherwise that is an error, with the counts)",
    )
    agg.add_argument(
        "--estimator", help="wmv: disagreement (default, label-free), bayesian, stratified, oracle"
    )
    agg.add_argument("--rule", help="wmv: spec_sens (default) or log_odds")
    agg.add_argument(
        "--dev-labels",
        help="task, label of a labelled development split: care_svd/care_tensor choose their hyper-parameters "
        "and quality factor on it, wmv's bayesian/stratified estimators audit with it, baer trains on it; "
        "accuracy is then scored on the other tasks",
    )
    agg.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="an estimator parameter, e.g. --param axis=leading",
    )
    agg.set_defaults(fn=cmd_aggregate)

    aud = sub.add_parser(
        "audit", help="a few labels, chosen well: propose tasks to audit, then refit with them"
    )
    aud_sub = aud.add_subparsers(dest="audit_command", required=True)
    prop = aud_sub.add_parser("propose", help="the k tasks whose labels would most reduce the uncertainty")
    prop.add_argument(
        "votes", help="task, worker, label (and run, shown_first, item when the panel has them)"
    )
    prop.add_argument("--k", type=int, required=True, help="how many tasks you can audit")
    prop.add_argument("--by", help="a column of the votes to spread the audit over (e.g. error_type)")
    prop.add_argument("--strategy", default="stratified", choices=["stratified", "random"],
                      help="stratified (default): uncertain tasks sampled more, with weights; random: uniform")  # fmt: skip
    prop.add_argument("--method", default="auto", help="the label-free consensus whose uncertainty is used")
    prop.add_argument("--seed", type=int, default=0)
    prop.add_argument("--out", default="audit.csv", help="the csv to fill in (default audit.csv)")
    prop.set_defaults(fn=cmd_audit_propose)
    app = aud_sub.add_parser("apply", help="refit the consensus with the audited labels")
    app.add_argument("votes", help="the same votes file")
    app.add_argument("--labels", required=True, help="the filled audit csv (task, label, weight)")
    app.add_argument("--method", default="auto", help="the label-free consensus among the candidates")
    app.add_argument("--truth", help="task, label: prints accuracy over every task")
    app.add_argument("--allow-partial-truth", action="store_true")
    app.add_argument("--out", help="write the predictions here (.csv or .parquet)")
    app.add_argument("--json", action="store_true", help="print one JSON summary")
    app.set_defaults(fn=cmd_audit_apply)

    drift = sub.add_parser("simulate-drift", help="the 12-week drift simulation of the capability-bias paper")
    drift.add_argument("--weeks", type=int, default=12)
    drift.add_argument("--items-per-week", type=int, default=40)
    drift.add_argument("--seeds", type=int, default=20)
    drift.add_argument("--out", default="drift-simulation", help="folder for the tables and the figure")
    drift.set_defaults(fn=cmd_simulate_drift)

    sub.add_parser("config", help="print the effective configuration as YAML").set_defaults(fn=cmd_config)
    sub.add_parser("deploy", help="register the deployments of deploy/prefect.yaml").set_defaults(
        fn=cmd_deploy
    )

    srv = sub.add_parser("server", help="start a local Prefect server and a process worker")
    srv.add_argument("--port", type=int, default=4200)
    srv.set_defaults(fn=cmd_server)

    bf = sub.add_parser("backfill", help="run the weekly evaluation for each week in [start, end], in order")
    bf.add_argument("--start", type=_date, required=True)
    bf.add_argument("--end", type=_date, required=True)
    bf.add_argument(
        "--deployment", default="evaluate/evaluate-weekly", help="or recalibrate/recalibrate-weekly"
    )
    bf.add_argument(
        "--start-chain", action="store_true", help="recalibrate: the first week run starts a new chain"
    )
    bf.add_argument("--timeout", type=float, default=3600, help="seconds to wait for each week's run")
    bf.set_defaults(fn=cmd_backfill)
    return p


class _OneLineErrors:
    """A console-handler filter: the errors that stop a run with a message meant for the user (a full disk,
    a broken contract, an unreadable source) are logged without their traceback on the terminal. Prefect's
    API handler runs first (it sits on the flow- and task-run loggers), so the Prefect UI keeps the traceback;
    `--debug` keeps it on the terminal too."""

    def filter(self, record) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], _stopping_errors() + (ConfigError,)):
            record.exc_info, record.exc_text = None, None
        return True


def _quiet_tracebacks() -> None:
    import logging

    import prefect.main  # noqa: F401 - sets up Prefect's logging, whose console handler gets the filter
    from prefect.logging.handlers import PrefectConsoleHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrefectConsoleHandler) and not any(
            isinstance(f, _OneLineErrors) for f in handler.filters
        ):
            handler.addFilter(_OneLineErrors())


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.debug and args.command in ("run", "ingest", "recalibrate", "backfill"):
        _quiet_tracebacks()
    try:
        return args.fn(args)
    except ConfigError as exc:
        _error(str(exc))
        return 2
    except Exception as exc:
        from judgeops.schemas.store import StoreError

        if isinstance(exc, StoreError):
            _error(f"judgeops: {exc}")
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
