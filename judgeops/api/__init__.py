"""The Python API: what the command line does, as functions a notebook can call (the CLI only parses and prints).

    from judgeops import api
    run = api.evaluate()                      # the evaluate flow on ./judgeops.yaml or the embedded default
    profiles = run.load("profiles")           # any artifact of the run, hash- and schema-checked
    api.report(run.run_id)                    # the same report the flow wrote, rendered again
    fitted = api.aggregate(votes, "dawid_skene")   # any long task, worker, label frame

Names resolve on first use (PEP 562), so `judgeops aggregate` does not load Prefect to aggregate a file.
"""

import importlib

_MODULES = {
    "judgeops.api.pipeline": "Run evaluate get_run ingest listing load open_store recalibrate report runs sweep",
    "judgeops.api.sources": "check_sources checked_config",
    "judgeops.api.arguments": "OPTION_TYPES",
    "judgeops.api.votes": "Aggregated InputError aggregate aggregate_file parse_params",
    "judgeops.api.audit": "AUDIT_APPLY_ARGS audit_apply audit_gates audit_lines audit_propose labels_to_ask",
    "judgeops.api.people": "LABEL_OPTIONS label load_audit read_labels",
    "judgeops.api.operations": "OperationError backfill deploy notify_on_drift open_cache prune_cache serve",
    "judgeops.api.drift": "simulate_drift",
    "judgeops.api.starter": "init starter_text",
    "judgeops.api.gates": "GateError parse_fail_under summary summary_lines",
    "judgeops.config": "ConfigError EvaluateConfig dump_config load_config",
    "judgeops.schemas.names": "NameRefused check_run_id",
}
_HOME = {name: module for module, names in _MODULES.items() for name in names.split()}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'judgeops.api' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
