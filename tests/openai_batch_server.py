"""A small real HTTP server speaking OpenAI's Files and Batch APIs and Anthropic's Message Batches, for the batch
judges' tests: `POST /v1/files` (multipart, purpose `batch`), `POST /v1/batches`, `GET /v1/batches/{id}`,
`GET /v1/files/{id}/content`; `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}` and its `results_url`
(JSONL). Each request is answered by tests/openai_server.py's judge (the same verdicts as one-by-one calls).

Run as a process: `python tests/openai_batch_server.py --log FILE [options]`; it prints `PORT <n>` when ready.
A batch stays `in_progress` for --batch-s seconds after it is created, then completes. Options:

  --expire-first N     the first batch created expires having answered only N of its requests (the others come
                       back in the error file with code batch_expired, as OpenAI's do; `expired` results in
                       Anthropic's)
  --fail-marker S      a request whose prompt contains S fails inside the batch (OpenAI: an output line with a 500
                       error body; Anthropic: an `errored` result with an api_error)
  --garble-first N     in the first batch, the result lines of the first N requests are cut short (not JSON), and
                       one line of garbage is added: a provider's results file with bad lines

Azure OpenAI's quirks under `/openai/` (AzureOpenAI's paths: `/openai/files`, `/openai/batches`, ...): every
request must carry `api-version` in its query and the key in an `api-key` header (401 otherwise), and a batch's
endpoint and every request line's url must be `/chat/completions` (400 otherwise, as a Global Batch deployment
refuses `/v1/...`).

Every batch created is appended to the --log file as one JSON line ({"event": "batch_created", "id", "n",
"endpoint", "path"}).
"""

from __future__ import annotations

import argparse
import email.parser
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_server import ServerProcess, answer, completion, message  # noqa: E402  (run as a script: this folder)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # quiet
        pass

    def _azure_refused(self) -> bool:
        """Azure's paths without its api-version or its api-key header: answered 401, True."""
        if not self.path.startswith("/openai/"):
            return False
        if "api-version=" in self.path and self.headers.get("api-key"):
            return False
        self._json(401, {"error": {"message": "api-version and api-key are required", "code": "401"}})
        return True

    def do_POST(self) -> None:  # noqa: N802
        srv: Server = self.server  # type: ignore[assignment]
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        path = self.path.split("?")[0]
        if self._azure_refused():
            return None
        if path.endswith("/files"):
            return self._json(200, srv.add_file(_multipart_file(self.headers["content-type"], raw)))
        if path.endswith("/messages/batches"):
            return self._json(200, srv.create_message_batch(json.loads(raw), self._base()))
        if path.endswith("/batches"):
            body = json.loads(raw)
            if path.startswith("/openai/") and (wrong := srv.not_azure(body)):
                return self._json(400, {"error": {"message": wrong, "code": "invalid_request"}})
            return self._json(200, srv.create_batch(body, path))
        self._json(404, {"error": {"message": f"no route {path}", "code": "not_found"}})

    def do_GET(self) -> None:  # noqa: N802
        srv: Server = self.server  # type: ignore[assignment]
        if self._azure_refused():
            return None
        parts = self.path.split("?")[0].strip("/").split("/")
        if parts[-1] == "results" and parts[-3] == "batches":
            return self._bytes(srv.message_results(parts[-2]))
        if parts[-2] == "batches" and parts[-3] == "messages":
            return self._json(200, srv.message_batch(parts[-1], self._base()))
        if parts[-2] == "batches":
            return self._json(200, srv.batch(parts[-1]))
        if parts[-1] == "content" and parts[-3] == "files":
            return self._bytes(srv.files[parts[-2]]["data"])
        self._json(404, {"error": {"message": f"no route {self.path}", "code": "not_found"}})

    def _base(self) -> str:
        return f"http://{self.headers['host']}"

    def _bytes(self, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/octet-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, body: dict) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _multipart_file(content_type: str, raw: bytes) -> tuple[str, bytes]:
    """(filename, bytes) of the `file` part of a multipart/form-data body."""
    message = email.parser.BytesParser().parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    for part in message.get_payload():
        if part.get_param("name", header="content-disposition") == "file":
            return part.get_filename() or "upload.jsonl", part.get_payload(decode=True)
    raise ValueError("no file part")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, opts: argparse.Namespace):
        super().__init__(("127.0.0.1", opts.port), Handler)
        self.opts, self.lock, self.ids = opts, threading.Lock(), itertools.count(1)
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}

    def add_file(self, upload: tuple[str, bytes], purpose: str = "batch") -> dict:
        name, data = upload
        with self.lock:
            file_id = f"file-{next(self.ids)}"
            self.files[file_id] = {"data": data, "name": name, "purpose": purpose}
        return _file_object(file_id, name, len(data), purpose)

    def not_azure(self, body: dict) -> str | None:
        """Why a Global Batch deployment would refuse this batch (its endpoint or a request's url), or None."""
        if body["endpoint"] != "/chat/completions":
            return f"endpoint {body['endpoint']!r} is not supported: use /chat/completions"
        with self.lock:
            lines = self.files[body["input_file_id"]]["data"].decode().strip().splitlines()
        urls = {json.loads(line)["url"] for line in lines}
        return (
            None if urls == {"/chat/completions"} else f"request urls {sorted(urls)}: use /chat/completions"
        )

    def create_batch(self, body: dict, path: str = "/v1/batches") -> dict:
        with self.lock:
            batch_id = f"batch_{next(self.ids)}"
            n = len(self.files[body["input_file_id"]]["data"].decode().strip().splitlines())
            first = not self.batches
            self.batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": body["endpoint"],
                "input_file_id": body["input_file_id"],
                "completion_window": body["completion_window"],
                "status": "in_progress",
                "created_at": int(time.time()),
                "metadata": body.get("metadata"),
                "request_counts": {"total": n, "completed": 0, "failed": 0},
                "_ready": time.time() + self.opts.batch_s,
                "_expire_at": self.opts.expire_first if first and self.opts.expire_first >= 0 else None,
                "_garble": self.opts.garble_first if first else 0,
            }
            with open(self.opts.log, "a") as log:
                event = {
                    "event": "batch_created",
                    "id": batch_id,
                    "n": n,
                    "endpoint": body["endpoint"],
                    "path": path,
                }
                log.write(json.dumps(event) + "\n")
            return _public(self.batches[batch_id])

    def batch(self, batch_id: str) -> dict:
        with self.lock:
            batch = self.batches[batch_id]
            if batch["status"] == "in_progress" and time.time() >= batch["_ready"]:
                self._finish(batch)
            return _public(batch)

    def _finish(self, batch: dict) -> None:
        lines = self.files[batch["input_file_id"]]["data"].decode().strip().splitlines()
        out, errors, answered = [], [], 0
        for i, line in enumerate(lines):
            request = json.loads(line)
            body = request["body"]
            prompt = body["messages"][-1]["content"]
            if batch["_expire_at"] is not None and answered >= batch["_expire_at"]:
                errors.append(_line(request, None, {"code": "batch_expired", "message": "not reached"}))
                continue
            answered += 1
            if self.opts.fail_marker and self.opts.fail_marker in prompt:
                failure = {
                    "error": {"message": "server error", "type": "server_error", "code": "server_error"}
                }
                out.append(
                    _line(request, {"status_code": 500, "request_id": f"req_{i}", "body": failure}, None)
                )
                continue
            text, probs = answer(prompt)
            reply = completion(i, body, text, probs, prompt)
            out.append(_line(request, {"status_code": 200, "request_id": f"req_{i}", "body": reply}, None))
        for kind, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                data = (
                    self._garbled(batch, [json.dumps(r) for r in rows]) if kind == "output_file_id" else None
                )
                data = data or ("\n".join(json.dumps(r) for r in rows) + "\n").encode()
                batch[kind] = self.add_file_locked(data)
        batch["status"] = "expired" if errors else "completed"
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(errors)}

    # -- Anthropic's Message Batches: the requests inline, results as JSONL at the batch's results_url ----------
    def create_message_batch(self, body: dict, base: str) -> dict:
        with self.lock:
            batch_id = f"msgbatch_{next(self.ids):04d}"
            first = not self.batches
            self.batches[batch_id] = {
                "id": batch_id,
                "type": "message_batch",
                "processing_status": "in_progress",
                "created_at": _iso(time.time()),
                "expires_at": _iso(time.time() + 86400),
                "ended_at": None,
                "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": None,
                "request_counts": {
                    "processing": len(body["requests"]),
                    "succeeded": 0,
                    "errored": 0,
                    "canceled": 0,
                    "expired": 0,
                },
                "_requests": body["requests"],
                "_ready": time.time() + self.opts.batch_s,
                "_expire_at": self.opts.expire_first if first and self.opts.expire_first >= 0 else None,
                "_garble": self.opts.garble_first if first else 0,
            }
            with open(self.opts.log, "a") as log:
                log.write(
                    json.dumps({"event": "batch_created", "id": batch_id, "n": len(body["requests"])}) + "\n"
                )
            return _public(self.batches[batch_id])

    def message_batch(self, batch_id: str, base: str) -> dict:
        with self.lock:
            batch = self.batches[batch_id]
            if batch["processing_status"] == "in_progress" and time.time() >= batch["_ready"]:
                results, counts = (
                    [],
                    dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0),
                )
                for i, request in enumerate(batch["_requests"]):
                    params = request["params"]
                    prompt = params["messages"][-1]["content"]
                    if batch["_expire_at"] is not None and i >= batch["_expire_at"]:
                        result = {"type": "expired"}
                    elif self.opts.fail_marker and self.opts.fail_marker in prompt:
                        error = {"type": "api_error", "message": "Internal server error"}
                        result = {"type": "errored", "error": {"type": "error", "error": error}}
                    else:
                        text, _ = answer(prompt)
                        result = {"type": "succeeded", "message": message(i, params, text, prompt)}
                    counts[result["type"]] += 1
                    results.append({"custom_id": request["custom_id"], "result": result})
                batch["_results"] = self._garbled(batch, [json.dumps(r) for r in results])
                batch["processing_status"], batch["ended_at"] = "ended", _iso(time.time())
                batch["request_counts"] = counts
                batch["results_url"] = f"{base}/v1/messages/batches/{batch_id}/results"
            return _public(batch)

    def message_results(self, batch_id: str) -> bytes:
        with self.lock:
            return self.batches[batch_id]["_results"]

    def _garbled(self, batch: dict, lines: list[str]) -> bytes:
        """The results file; in the first batch with --garble-first N, its first N lines cut short and a line of
        garbage added."""
        if batch.get("_garble"):
            n = batch["_garble"]
            lines = [line[: len(line) // 2] for line in lines[:n]] + lines[n:] + ["\x00not a result"]
        return ("\n".join(lines) + "\n").encode()

    def add_file_locked(self, data: bytes) -> str:
        file_id = f"file-{next(self.ids)}"
        self.files[file_id] = {"data": data, "name": "batch_output.jsonl", "purpose": "batch_output"}
        return file_id


def _line(request: dict, response: dict | None, error: dict | None) -> dict:
    return {
        "id": f"batch_req_{request['custom_id'][:12]}",
        "custom_id": request["custom_id"],
        "response": response,
        "error": error,
    }


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _public(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


def _file_object(file_id: str, name: str, size: int, purpose: str) -> dict:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": int(time.time()),
        "filename": name,
        "purpose": purpose,
        "status": "processed",
    }


class BatchServerProcess(ServerProcess):
    """This server in a child process (for tests): `.url`, `.batches_created()`, `.stop()`."""

    script = Path(__file__)

    def batches_created(self) -> list[dict]:
        return [e for e in self.entries() if e["event"] == "batch_created"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", required=True)
    parser.add_argument("--batch-s", type=float, default=1.0)
    parser.add_argument("--expire-first", type=int, default=-1)
    parser.add_argument("--fail-marker", default="")
    parser.add_argument("--garble-first", type=int, default=0)
    server = Server(parser.parse_args())
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
