"""The parts of judgeops and the arrows allowed between them (ARCHITECTURE.md), enforced, not only described.

Every project module is imported (no cycle, no import error), and every import statement of every module —
at any depth, a function-level import is an arrow too — is checked against the allowed arrows.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import judgeops
from judgeops.tasks.fingerprint import imports_of, module_file

# part → the parts it may import. The order is the layering: a part imports only parts listed before it
# (stages, flows, api and cli sit on top and may use everything below them).
ALLOWED = {
    "package": set(),  # judgeops/__init__: the version
    "log": set(),  # tasks/log.py: the run logger
    "rubrics": set(),  # judgeops/rubrics.py: a team's prompt template and verdict parser, checked at config load
    "deploy": set(),  # deploy/: the deployment definitions, package data
    "plugins": set(),  # judgeops/plugins.py: the entry-point registries of judges, aggregators and sources
    "schemas": {"package", "data_contracts"},  # the store checks every write against the artifact's contract
    "data_contracts": {"package", "schemas"},
    "config": {"package", "schemas", "rubrics", "plugins"},
    "ingest": {"package", "schemas", "config", "plugins"},
    "judges": {"package", "schemas", "config", "rubrics", "plugins"},
    "construct": {"package", "schemas", "data_contracts", "config", "judges"},  # the LLM generator's calls
    "aggregate": {"package", "schemas", "plugins"},  # parameters come from the caller, not the config model
    "profile": {"package", "schemas", "config"},
    "drift": {"package", "schemas", "config", "aggregate"},  # calibration reuses WMV's error counts
    # renders their artifacts with their definitions; aggregate: what a label-free estimate may be quoted as
    "report": {"package", "schemas", "construct", "profile", "aggregate"},
    "runner": {"package", "schemas", "data_contracts", "log"},
    # the annotation page: checks answers by the labels contract, measures agreement, marks the planted edit
    "labelling": {"package", "schemas", "data_contracts", "aggregate", "report"},
}
for _part in ("ingest", "judges", "construct", "aggregate", "profile", "drift", "report", "labelling"):
    ALLOWED[_part] |= {"log"}  # the run logger (tasks/log.py)
TASKS = set("ingest judges construct aggregate profile drift report labelling runner log".split())
ALLOWED["stages"] = {"package", "schemas", "data_contracts", "config", *TASKS}
ALLOWED["flows"] = {*ALLOWED["stages"], "stages", "flows"}
ALLOWED["api"] = {*ALLOWED["flows"], "flows", "api", "deploy"}
ALLOWED["cli"] = {"package", "api"}
# where Prefect may be imported: orchestration, and the Prefect features a judge backend uses (Secret blocks
# for keys, the run logger, global concurrency limits for a fleet's budget); never the schemas, contracts, config
# or the estimators
PREFECT_OK = {"log", "runner", "stages", "flows", "api", "report.publish", "judges.backends"}
FORBIDDEN = [  # the arrows the redesign removed, named so a failure says which one came back
    ("aggregate", "judges"),
    ("profile", "judges"),
    ("construct", "profile"),
    ("schemas", "prefect"),
    ("schemas", "tasks"),
    ("data_contracts", "construct"),
    ("profile", "aggregate"),
]


def part_of(module: str) -> str:
    parts = module.split(".")
    if module == "judgeops":
        return "package"
    if parts[1] == "tasks":
        if len(parts) == 2:
            return "package"
        return {
            "stages": "stages",
            "people_stages": "stages",
            "sharding": "stages",
            "task_options": "stages",
            "runner": "runner",
            "fingerprint": "runner",
        }.get(parts[2], parts[2])
    return {
        "schemas": "schemas",
        "data_contracts": "data_contracts",
        "config": "config",
        "flows": "flows",
    }.get(parts[1], {"api": "api", "cli": "cli", "__main__": "cli"}.get(parts[1], parts[1]))


def project_modules() -> list[str]:
    names = ["judgeops"]
    for info in pkgutil.walk_packages(judgeops.__path__, "judgeops."):
        names.append(info.name)
    for sub in ("flows", "schemas", "data_contracts", "tasks"):  # installed under the namespace from folders
        package = importlib.import_module(f"judgeops.{sub}")
        names += [f"judgeops.{sub}"] + [
            i.name for i in pkgutil.walk_packages(package.__path__, f"judgeops.{sub}.")
        ]
    return sorted(set(names))


MODULES = project_modules()


def test_every_module_imports():
    assert len(MODULES) > 60
    for name in MODULES:
        importlib.import_module(name)


def arrows() -> set[tuple[str, str, str]]:
    """(module, imported project module or 'prefect', its part) for every import statement."""
    out = set()
    for name in MODULES:
        source = module_file(name).read_text()
        out |= {(name, dep, part_of(dep)) for dep in imports_of(name, source)}
        for node in ast.walk(ast.parse(source)):
            named = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            named += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == "prefect" for n in named):
                out.add((name, "prefect", "prefect"))
    return out


ARROWS = arrows()


def test_every_arrow_is_allowed():
    wrong = []
    for module, dep, part in sorted(ARROWS):
        mine = part_of(module)
        if part == "prefect":
            where = module.removeprefix("judgeops.tasks.")
            if not any(mine == ok or where.startswith(ok) for ok in PREFECT_OK):
                wrong.append(f"{module} → prefect")
        elif part != mine and part not in ALLOWED[mine]:
            wrong.append(f"{module} ({mine}) → {dep} ({part})")
    assert not wrong, "arrows the layering does not allow:\n" + "\n".join(wrong)


@pytest.mark.parametrize(("source", "target"), FORBIDDEN)
def test_the_removed_arrows_stay_removed(source, target):
    back = [
        f"{m} → {d}"
        for m, d, p in ARROWS
        if part_of(m) == source and (p == target or (target == "tasks" and d.startswith("judgeops.tasks")))
    ]
    assert not back, back


FACE_NAMES = ("__all__", "__version__", "_MODULES", "_HOME")  # what a face may assign


def test_package_faces_only_re_export():
    """Every __init__.py: a docstring, imports and __all__ (the API's lazy face: a name table and __getattr__),
    under 40 lines; the logic lives in modules named for what they do."""
    for name in MODULES:
        path = module_file(name)
        if path.name != "__init__.py":
            continue
        lines = path.read_text().splitlines()
        assert len(lines) < 40, f"{path}: {len(lines)} lines"
        for node in ast.parse(path.read_text()).body:
            ok = isinstance(node, ast.Import | ast.ImportFrom) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            )
            ok |= isinstance(node, ast.Assign) and node.targets[0].id in FACE_NAMES
            ok |= isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            assert ok, f"{path}:{node.lineno}: logic in a package face"


def test_the_command_line_is_thin_and_the_formatter_is_obeyed():
    root = Path(__file__).resolve().parent.parent
    assert len((root / "judgeops" / "cli.py").read_text().splitlines()) < 250
    skips = [
        f"{p}:{i}"
        for p in root.rglob("*.py")
        if ".venv" not in p.parts and ".judgeops" not in p.parts
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if "fmt: " + "skip" in line or "fmt: " + "off" in line
    ]
    assert not skips, skips
