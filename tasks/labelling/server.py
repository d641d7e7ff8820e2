"""The annotation page's server: a small Starlette app (Starlette and uvicorn come with Prefect) on 127.0.0.1 that
serves one static page and a JSON API over an Audit (items.py) and its label log (log.py).

GET  /, /page.js            the page (page.html, page.js: no CDN, no inline script or data; every text is set as
                            text, never markup, and the Content-Security-Policy runs no script but page.js)
GET  /api/audit?annotator=  the items in this reviewer's order, their answers so far, the classes and progress;
                            with `adjudicate`, only the tasks people labelled differently, with their labels
POST /api/label             {task, label, annotator, seconds, note}: checked by data_contracts/labels.py's rules,
                            appended and fsynced, then answered — a 400 with the reason names the field
GET  /api/reveal?task=&annotator=   the judges' verdicts and the planted edit, once this reviewer has answered
GET  /api/agreement         Cohen's κ / Krippendorff's α between the people so far, and the conflicts

A POST must be `application/json`: a form on another site cannot send that without the browser asking first, so
no page but this one can write labels.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pandas as pd
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from judgeops.data_contracts.labels import NO_LABEL, label_problems
from judgeops.tasks.aggregate.agreement import conflicting_tasks
from judgeops.tasks.labelling import log
from judgeops.tasks.labelling.items import Audit

MAX_NOTE = 2000  # characters
log_warning = logging.getLogger(__name__).warning


class Labels:
    """The log's latest answers in memory, kept in step with every append (one writer: this process)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock = threading.Lock()
        records, self.problems = log.read(self.path)
        self.records = log.latest(records)

    def add(self, record: dict) -> None:
        with self.lock:
            log.append(self.path, record)
            row = pd.DataFrame([{**record, "source": f"{self.path}:?"}]).reindex(columns=log.COLUMNS)
            self.records = log.latest(pd.concat([self.records, row], ignore_index=True))

    def answers(self, annotator: str, adjudicated: bool) -> dict[str, str]:
        mine = self.records[
            (self.records["annotator"] == annotator) & (self.records["adjudicated"] == adjudicated)
        ]
        return dict(zip(mine["task"].astype(str), mine["label"].astype(str), strict=True))

    def people(self) -> pd.DataFrame:
        """The reviewers' answers that are labels (not tie or skip, not an adjudication)."""
        r = self.records
        return r[~r["adjudicated"] & ~r["label"].isin(NO_LABEL)][["task", "annotator", "label", "note"]]

    def conflicts(self) -> list[str]:
        return conflicting_tasks(self.people())


def app(
    audit: Audit,
    log_path: str | Path,
    adjudicate: bool = False,
    on_complete: Callable[[], bool] | None = None,
) -> Starlette:
    """The page's app. `on_complete()` is called after each answer until it returns True (the caller's check that
    the audit has all its labels, and what it does then: judgeops/api/people.py); its failure is logged, never
    the answer's."""
    labels = Labels(log_path)
    complete = {"done": on_complete is None, "lock": threading.Lock()}

    def announce() -> None:
        with complete["lock"]:
            if complete["done"]:
                return
            try:
                complete["done"] = bool(on_complete())
            except Exception as exc:  # noqa: BLE001 - the answer is saved; the orchestrator's trouble is reported
                log_warning("judgeops label: the audit's completion could not be announced: %s", exc)

    def check_complete() -> None:
        """In a thread of its own: telling the orchestrator must not hold up the reviewer's next item."""
        if not complete["done"]:
            threading.Thread(target=announce, daemon=True).start()

    files = resources.files("judgeops.tasks.labelling")
    page, script = (files.joinpath(name).read_text(encoding="utf-8") for name in ("page.html", "page.js"))

    def tasks_shown() -> list[str]:
        if not adjudicate:
            return audit.tasks
        conflicting = set(labels.conflicts())
        return [t for t in audit.tasks if t in conflicting]

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page, headers={"Cache-Control": "no-store", "Content-Security-Policy": CSP})

    async def page_js(request: Request) -> Response:
        return Response(script, media_type="text/javascript", headers={"Cache-Control": "no-store"})

    async def state(request: Request) -> JSONResponse:
        annotator = request.query_params.get("annotator", "").strip()
        if not annotator:
            return JSONResponse({"error": "annotator: empty"}, status_code=400)
        shown = tasks_shown()
        items = [audit.item(t, annotator) for t in shown]
        if adjudicate:
            people = labels.people()
            for item in items:
                rows = people[people["task"] == item["task"]]
                item["people"] = (
                    rows[["annotator", "label", "note"]]
                    .astype(object)
                    .where(rows.notna(), None)
                    .values.tolist()
                )
        done = labels.answers(annotator, adjudicate)
        return JSONResponse(
            {
                "annotator": annotator,
                "adjudicate": adjudicate,
                "classes": audit.classes,
                "no_label": list(NO_LABEL),
                "items": items,
                "answers": {t: done[t] for t in shown if t in done},
                "total": len(shown),
                "log_problems": labels.problems,
            }
        )

    async def post_label(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "expected application/json"}, status_code=415)
        try:
            body = await request.json()
        except ValueError:
            return JSONResponse({"error": "the body is not JSON"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body is not a JSON object"}, status_code=400)
        task, label = str(body.get("task", "")), str(body.get("label", ""))
        annotator, note = str(body.get("annotator", "")).strip(), body.get("note") or None
        row = pd.DataFrame([{"task": task, "label": label, "annotator": annotator}])
        problems = label_problems(row, tasks_shown(), audit.classes)
        if note is not None and len(str(note)) > MAX_NOTE:
            problems = pd.Series([f"note: longer than {MAX_NOTE} characters"])
        try:
            seconds = max(0.0, float(body.get("seconds") or 0.0))
        except (TypeError, ValueError):
            problems = pd.Series(["seconds: not a number"])
        if len(problems):
            return JSONResponse({"error": problems.iloc[0]}, status_code=400)
        labels.add(
            {
                "task": task,
                "label": label,
                "annotator": annotator,
                "adjudicated": adjudicate,
                "labelled_at": log.now(),
                "seconds": round(seconds, 3),
                "note": None if note is None else str(note),
                "weight": audit.weights.get(task, 1.0),
            }
        )
        check_complete()
        done = labels.answers(annotator, adjudicate)
        return JSONResponse(
            {"saved": True, "done": sum(t in done for t in tasks_shown()), "total": len(tasks_shown())}
        )

    async def reveal(request: Request) -> JSONResponse:
        task = request.query_params.get("task", "")
        annotator = request.query_params.get("annotator", "").strip()
        if task not in labels.answers(annotator, adjudicate):
            return JSONResponse(
                {"error": "answer the item first: the judges stay hidden until then"}, status_code=403
            )
        return JSONResponse(audit.reveal(task))

    async def agreement(request: Request) -> JSONResponse:
        from judgeops.tasks.aggregate.agreement import annotators

        people = labels.people()
        if people["annotator"].nunique() < 2:
            return JSONResponse({"n_annotators": int(people["annotator"].nunique()), "conflicts": []})
        summary, _ = annotators(people[["task", "annotator", "label"]], n_boot=200)
        out = {k: (None if isinstance(v, float) and v != v else v) for k, v in summary.as_dict().items()}
        return JSONResponse(out)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/page.js", page_js),
            Route("/api/audit", state),
            Route("/api/label", post_label, methods=["POST"]),
            Route("/api/reveal", reveal),
            Route("/api/agreement", agreement),
        ]
    )


# the page runs only page.js (no inline script, no event-handler attribute) and talks only to this server; no frame
# may embed it
CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
