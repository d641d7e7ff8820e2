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

It answers only its own page. Every request but page.js must carry the session's token (`?token=` in the URL
printed on the console, like Jupyter's; page.js sends it back as the `X-Judgeops-Token` header), its `Host` must
be the address it is bound to (a DNS-rebinding page names its own host), and an `Origin`, where the browser sends
one, must be that address too: 403 otherwise, nothing read or written. A POST must be `application/json` (a form on
another site cannot send that without the browser asking first), its body at most MAX_BODY bytes (413, refused
before it is read whole), and its numbers finite and bounded. A label that cannot be written (a full disk) is a
503 the page shows, with one line in the server's log; the server stays up.

Written as a small ASGI guard rather than Starlette's TrustedHostMiddleware: that one answers a foreign Host with
400 and checks neither Origin nor a token, and the three belong together.
"""

from __future__ import annotations

import json
import logging
import math
import os
import secrets
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pandas as pd
from starlette.applications import Starlette
from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from judgeops.data_contracts.labels import NO_LABEL, label_problems
from judgeops.tasks.aggregate.agreement import conflicting_tasks
from judgeops.tasks.labelling import log
from judgeops.tasks.labelling.items import Audit

MAX_NOTE = 2000  # characters
MAX_BODY = 64 * 1024  # bytes of one POST: an answer with its longest note is under 10 KB
MAX_SECONDS = 24 * 3600.0  # the time an answer took, as the page measured it
TOKEN_HEADER = "x-judgeops-token"
log_warning = logging.getLogger(__name__).warning


class Labels:
    """The log's latest answers in memory, kept in step with every append (one writer: this process)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock = threading.Lock()
        set_aside = log.recover(self.path)  # a torn last line (a crash mid-write) moved to <log>.torn
        if set_aside:
            log_warning("judgeops label: %s", set_aside)
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


class Guard:
    """The page's own door (see the module docstring): the bound Host, no foreign Origin, the session's token, a
    bounded body. Anything else gets a 403 (413 for a body too large) before the app sees it."""

    def __init__(self, app, token: str, host: str, port: int):
        self.app, self.token = app, token
        self.hosts = {f"{host}:{port}", f"localhost:{port}"} | ({f"[::1]:{port}"} if host == "::1" else set())
        self.origins = {f"http://{h}" for h in self.hosts}

    def refusal(self, scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        if headers.get("host", "") not in self.hosts:
            return 403, "this page answers only at the address it printed (a foreign Host header)"
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, "a request from another site (Origin) is refused"
        if scope["path"] != "/page.js":
            given = (
                headers.get(TOKEN_HEADER) or QueryParams(scope.get("query_string", b"")).get("token") or ""
            )
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                return 403, "open the address printed on the console: it carries this session's token"
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return 413, f"a request body over {MAX_BODY:,} bytes is refused"
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (refused := self.refusal(scope)):
            status, why = refused
            await JSONResponse({"error": why}, status_code=status)(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _body(request: Request) -> bytes | None:
    """The request's body, or None past MAX_BODY (a chunked body has no Content-Length to refuse it by)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def new_token() -> str:
    """The session's token: JUDGEOPS_LABEL_TOKEN where set (a team's own, or a test's), else a fresh random one."""
    return os.environ.get("JUDGEOPS_LABEL_TOKEN") or secrets.token_urlsafe(24)


def app(
    audit: Audit,
    log_path: str | Path,
    adjudicate: bool = False,
    on_complete: Callable[[], bool] | None = None,
) -> Starlette:
    """The page's app (serve it inside a Guard). `on_complete()` is called after each answer until it returns
    True (the caller's check that the audit has all its labels, and what it does then: judgeops/api/people.py);
    its failure is logged, never the answer's."""
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
        raw = await _body(request)
        if raw is None:
            return JSONResponse(
                {"error": f"a request body over {MAX_BODY:,} bytes is refused"}, status_code=413
            )
        try:
            body = json.loads(raw)
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
            seconds = float(body.get("seconds") or 0.0)
        except (TypeError, ValueError):
            seconds = math.nan
        if not 0.0 <= seconds <= MAX_SECONDS:  # NaN and ±Infinity (which JSON readers accept) fail this too
            problems = pd.Series([f"seconds: not a number of seconds from 0 to {MAX_SECONDS:g}"])
        if len(problems):
            return JSONResponse({"error": problems.iloc[0]}, status_code=400)
        try:
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
        except log.LogWriteError as exc:  # one line here, the reason on the page; the server stays up
            log_warning("judgeops label: %s", exc)
            return JSONResponse({"error": f"{exc}: this answer is not recorded"}, status_code=503)
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
