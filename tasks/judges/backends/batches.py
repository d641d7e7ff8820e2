"""The providers' batch APIs for a judge with `batch: true`, through the official SDKs: the calls the cache misses
go as one batch (`custom_id` = the call key) and the run polls it until it ends and reads its results. About half
the price of the same calls, answered within the 24 h window.

- OpenAI: a JSONL file of chat-completions requests uploaded (purpose `batch`), `/v1/batches`, then the output
  and error files. Azure OpenAI (`api_version` set): the same through AzureOpenAI, to a Global Batch deployment
  (`model` its name), the requests' url and the batch's endpoint `/chat/completions`.
- Anthropic: Message Batches (`messages.batches.create` with the requests inline), then the results stream.

Paid once. The batch id is written to the call cache (`CallCache.record_batch`, under the digest of the call
keys it answers, with those keys) the moment the batch is created; a run that crashed or was cancelled while it
waited asks the cache first when rerun and polls the same batch. A judge of the same model and account whose
misses an open batch already asks for (another judge's sample of pairs that overlaps, another run's) waits for
that batch and reads its answers from it instead of sending them again. The replies are written to the cache
before the batch is closed there, so no crash between the two loses them.

What comes back. A request answered is parsed as one-by-one calls parse it (`parse_completion`,
`parse_message`). A request the batch did not reach (expired with the window, the batch cancelled) goes again in
a new batch, at most `MAX_ROUNDS` in all. A parameter the model refuses is learned as in one-by-one calls and
those requests go again without it. Any other failed request is a transport failure naming its cause
(`transport: batch: <code>`): never cached, counted in coverage, asked again by a rerun. Results are read line by
line: a line that is not a result (cut short, not JSON) is its call's transport failure where its custom_id can
still be read, and a call of a batch that ended without a line for it is one too — said in one log line, asked
again by a rerun, never sent again in this run — so one bad line neither fails the run nor keeps the batch open
(it failed every rerun with a JSONDecodeError). A batch that fails as a whole (its file refused) raises
JudgeBackendError with the provider's reasons; either way it is closed once read and never read twice.

How the run waits (`batch_wait`). `poll`: this process looks at the batch every `batch_poll_s` until it ends,
holding its worker (a batch that takes hours keeps a process sleeping for hours). `suspend`: a batch that has not
ended when first looked at raises BatchPending; the evaluate flow suspends the run (the worker is freed) and the
batch watcher resumes it once the batch has ended (flows/batches.py); the resumed run finds the batch here, in the
cache, and reads it. Either way the run can be cancelled and rerun at any time without paying twice.
"""

from __future__ import annotations

import hashlib
import json
import re
import time

import openai

from judgeops.config import JudgeConfig
from judgeops.schemas.liveness import raise_if_signalled
from judgeops.tasks.judges.backends.anthropic import AnthropicBackend, parse_message, verdict_tool
from judgeops.tasks.judges.backends.base import BatchPending, JudgeBackendError
from judgeops.tasks.judges.backends.openai import OpenAIBackend, parse_completion
from judgeops.tasks.judges.calls import TRANSPORT_FAILURE, Call, Reply
from judgeops.tasks.judges.prompts import SYSTEM
from judgeops.tasks.log import logger

ENDPOINT = "/v1/chat/completions"
AZURE_ENDPOINT = "/chat/completions"  # Azure OpenAI's batches: the deployment's path, no version prefix
ENDED = ("completed", "failed", "expired", "cancelled")
NOT_REACHED = ("batch_expired", "batch_cancelled")  # a request's error code when the batch never got to it
MAX_ROUNDS = 3
MAX_REQUESTS = 50_000  # one batch's limit (OpenAI's 50,000 requests; Anthropic's 100,000)
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([0-9a-f]{64})"')  # a call key, in a line that is not JSON


def batch_digest(keys: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()


class _Batches:
    """The provider-neutral loop (mixed in before a hosted backend): rounds of batches until every call is
    answered or failed, each batch created or found in the cache, waited for, read, cached, closed. A provider
    says how to create a batch, wait for it and read its results."""

    def __init__(self, judge: JudgeConfig, cache=None):
        super().__init__(judge)
        self.cache = cache
        self._sync = None

    def close(self) -> None:
        if self._sync is not None:
            self._sync.close()
        super().close()

    @property
    def account(self) -> str:
        """Who can read this judge's batches: its provider, model, endpoint and credentials' names (no secret)."""
        j = self.judge
        who = [j.backend, j.model, j.base_url, j.api_version, j.organization, j.project, j.api_key_env]
        return hashlib.sha256(json.dumps([*who, j.api_key_secret]).encode()).hexdigest()[:32]

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        out: dict[str, Reply] = {}
        pending = list({c.key: c for c in calls}.values())
        asked = {c.key for c in pending}
        for _ in range(MAX_ROUNDS):
            if not pending:
                break
            waiting: list[dict] = []
            for digest, batch_id, part, holds in self._plan(pending):
                try:
                    out.update(self._batch(part, digest, batch_id, asked, holds))
                except BatchPending as exc:  # every batch created first, then the run waits for them all
                    waiting += exc.batches
            if waiting:
                raise BatchPending(waiting)
            pending = [c for c in pending if c.key not in out]
        for call in pending:
            out[call.key] = Reply(error=f"{TRANSPORT_FAILURE}batch: not answered in {MAX_ROUNDS} batches")
        return out

    def _plan(self, calls: list[Call]) -> list[tuple[str, str | None, list[Call], set[str]]]:
        """(digest, batch id or None, calls, every call key the batch asks for) per batch: the open batches of this
        account that already ask for some of `calls` (this judge's, or another judge's of the same model whose sample
        of pairs overlaps), then new batches of at most MAX_REQUESTS for the rest."""
        left = {c.key: c for c in calls}
        plan = []
        held = self.cache.batches_holding(list(left), self.account) if self.cache is not None else {}
        for digest, (batch_id, keys) in held.items():
            part = [left.pop(k) for k in [k for k in left if k in keys]]
            if part:
                plan.append((digest, batch_id, part, keys))
        rest = list(left.values())
        for start in range(0, len(rest), MAX_REQUESTS):
            part = rest[start : start + MAX_REQUESTS]
            plan.append((batch_digest([c.key for c in part]), None, part, {c.key for c in part}))
        return plan

    def _batch(
        self,
        calls: list[Call],
        digest: str,
        batch_id: str | None,
        asked: set[str],
        holds: set[str],
    ) -> dict[str, Reply]:
        """One batch answering `calls` (created, or found in the cache: `batch_id`, or the batch recorded under
        `digest`), waited for and read. The calls it did not reach are left out of the result (the caller sends
        them again). It is closed once read unless the calls it asks for (`holds`) go beyond `asked` (another
        judge's, who reads and closes it)."""
        batch_id = batch_id or (self.cache.open_batch(digest) if self.cache is not None else None)
        if batch_id is None:
            batch_id = self._create(calls, digest)
            if self.cache is not None:  # before anything else can go wrong: a rerun polls this batch
                keys = [c.key for c in calls]
                self.cache.record_batch(digest, self.kind, self.judge.model, batch_id, keys, self.account)
            logger().info("judge %s: batch %s created for %d calls", self.judge.name, batch_id, len(calls))
        else:
            logger().info("judge %s: resuming batch %s (%d calls)", self.judge.name, batch_id, len(calls))
        batch = self._wait(batch_id)
        try:
            read = self._results(batch, {c.key: c for c in calls})
        except JudgeBackendError:
            if self.cache is not None:  # a batch that failed whole: nothing to resume
                self.cache.close_batch(digest)
            raise
        if self._ended_whole(batch):
            # every request had its turn: one without a result line is a failure, not one to send again now
            for call in calls:
                read.setdefault(
                    call.key, Reply(error=f"{TRANSPORT_FAILURE}batch: no result line for this call")
                )
        replies = {key: self._redacted(reply) for key, reply in read.items() if reply is not None}
        if self.cache is not None:  # the replies first, then the batch closed: a crash between loses nothing
            self.cache.put_many(self.judge.backend, self.judge.model, replies)
            if holds <= asked:
                self.cache.close_batch(digest)
        answered = sum(r.error is None for r in replies.values())
        logger().info(
            "judge %s: batch %s ended: %d of %d answered", self.judge.name, batch_id, answered, len(calls)
        )
        return replies

    def ended(self, batch_id: str) -> bool:
        """Whether the batch has ended (completed, failed, expired or cancelled): one look, for the watcher."""
        return self._ended(self._retrieve(batch_id))

    def _wait(self, batch_id: str):
        """The batch once it has ended: polled every batch_poll_s for at most batch_max_wait_s (then
        JudgeBackendError: the batch stays recorded and a rerun reads it), and never past a SIGINT or SIGTERM."""
        batch = self._retrieve(batch_id)
        if not self._ended(batch) and self.judge.batch_wait == "suspend":
            raise BatchPending([{"judge": self.judge.name, "batch_id": batch_id}])
        deadline = time.monotonic() + self.judge.batch_max_wait_s
        while not self._ended(batch):
            if time.monotonic() > deadline:
                raise JudgeBackendError(
                    f"judge {self.judge.name}: batch {batch_id} has not ended after "
                    f"{self.judge.batch_max_wait_s:g} s (batch_max_wait_s); it stays recorded: a rerun reads it "
                    "once it has ended, without paying again"
                )
            next_look = time.monotonic() + self.judge.batch_poll_s
            while (left := next_look - time.monotonic()) > 0:
                raise_if_signalled()  # SIGINT / SIGTERM end the wait within a second
                time.sleep(min(1.0, left))
            if self.cache is not None:  # its calls' claims kept fresh: no other host takes them for dead
                self.cache.release([])
            batch = self._retrieve(batch_id)
        return batch

    def _lines(self, lines, by_key: dict[str, Call], read_record) -> dict[str, Reply | None]:
        """Each result line read on its own (`read_record(record, call)`): a line that is not a JSON object is its
        call's transport failure where its custom_id can be found in it; the rest are counted in one log line."""
        replies: dict[str, Reply | None] = {}
        bad = 0
        for number, line in enumerate(lines, start=1):
            line = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                call = by_key.get(record.get("custom_id")) if isinstance(record, dict) else None
                reply = read_record(record, call) if call is not None else None
            except (ValueError, TypeError, KeyError, AttributeError):
                bad += 1
                found = _CUSTOM_ID.search(line)
                call = by_key.get(found.group(1)) if found else None
                reply = Reply(error=f"{TRANSPORT_FAILURE}batch: result line {number} unreadable")
            if call is not None:
                replies[call.key] = reply
        if bad:
            logger().warning(
                "judge %s: %d batch result line(s) unreadable: those calls are failures, asked again by a rerun",
                self.judge.name,
                bad,
            )
        return replies

    def _failed(self, code, status, body) -> Reply | None:
        """A request the batch answered with an error: None to send it again (a parameter now learned), else a
        transport failure naming the cause."""
        if status is not None and (found := self._unsupported(status, json.dumps(body))):
            self._learn(*found)
            return None
        return Reply(error=f"{TRANSPORT_FAILURE}batch: {code or status or 'no answer'}")


class OpenAIBatchBackend(_Batches, OpenAIBackend):
    """OpenAI's Batch API (see the module)."""

    def _client_sync(self) -> openai.OpenAI:
        if self._sync is None:
            judge = self.judge
            common = dict(
                api_key=self._key,
                organization=judge.organization,
                project=judge.project,
                timeout=judge.timeout_s,
                max_retries=judge.max_retries,  # the SDK's own backoff: a handful of control requests
                default_headers=dict(judge.extra_headers),
            )
            if judge.api_version:  # Azure OpenAI: a Global Batch deployment, `model` its name
                if self._key is None:
                    common.pop("api_key")  # the SDK reads AZURE_OPENAI_API_KEY
                self._sync = openai.AzureOpenAI(
                    azure_endpoint=judge.base_url, api_version=judge.api_version, **common
                )
            else:
                self._sync = openai.OpenAI(base_url=judge.base_url, **common)
        return self._sync

    @property
    def endpoint(self) -> str:
        """The batch's endpoint, and every request line's url: Azure's has no /v1."""
        return AZURE_ENDPOINT if self.judge.api_version else ENDPOINT

    def request_line(self, call: Call) -> dict:
        body = {
            "model": self.judge.model,
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": call.request.prompt},
            ],
            **self.params(call),
            **self.judge.extra_body,
        }
        return {"custom_id": call.key, "method": "POST", "url": self.endpoint, "body": body}

    def _create(self, calls: list[Call], digest: str) -> str:
        client = self._client_sync()
        lines = "\n".join(json.dumps(self.request_line(c), ensure_ascii=False) for c in calls)
        upload = client.files.create(file=("judgeops-batch.jsonl", lines.encode()), purpose="batch")
        return client.batches.create(
            input_file_id=upload.id,
            endpoint=self.endpoint,
            completion_window="24h",
            metadata={"judgeops_calls": digest[:16]},
        ).id

    def _retrieve(self, batch_id: str):
        return self._client_sync().batches.retrieve(batch_id)

    def _ended(self, batch) -> bool:
        return batch.status in ENDED

    def _results(self, batch, by_key: dict[str, Call]) -> dict[str, Reply | None]:
        if batch.status == "failed" and not batch.output_file_id:
            reasons = "; ".join(
                e.message or e.code or "" for e in (batch.errors.data if batch.errors else []) or []
            )
            raise JudgeBackendError(
                f"judge {self.judge.name}: batch {batch.id} failed: {reasons or 'no reason given'}"
            )
        replies: dict[str, Reply | None] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                lines = self._client_sync().files.content(file_id).text.splitlines()
                replies |= self._lines(lines, by_key, self._reply)
        return replies

    def _ended_whole(self, batch) -> bool:
        return batch.status in ("completed", "failed")

    def _reply(self, record: dict, call: Call) -> Reply | None:
        response = record.get("response") or {}
        status, body = response.get("status_code"), response.get("body")
        if status == 200 and isinstance(body, dict):
            return parse_completion(json.dumps(body), call.request.choices)
        error = (body or {}).get("error") if isinstance(body, dict) else None
        error = error or record.get("error") or {}
        code = error.get("code") if isinstance(error, dict) else None
        return None if code in NOT_REACHED else self._failed(code, status, body)


class AnthropicBatchBackend(_Batches, AnthropicBackend):
    """Anthropic's Message Batches (see the module)."""

    def _client_sync(self):
        if self._sync is None:
            import anthropic

            judge = self.judge
            self._sync = anthropic.Anthropic(
                api_key=self._key,
                base_url=judge.base_url,
                timeout=judge.timeout_s,
                max_retries=judge.max_retries,
                default_headers=dict(judge.extra_headers),
            )
        return self._sync

    def request(self, call: Call) -> dict:
        params = {
            "model": self.judge.model,
            "max_tokens": call.request.max_tokens,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": call.request.prompt}],
            **verdict_tool(call),
            **self.params(),
            **self.judge.extra_body,
        }
        return {"custom_id": call.key, "params": params}

    def _create(self, calls: list[Call], digest: str) -> str:
        return self._client_sync().messages.batches.create(requests=[self.request(c) for c in calls]).id

    def _retrieve(self, batch_id: str):
        return self._client_sync().messages.batches.retrieve(batch_id)

    def _ended(self, batch) -> bool:
        return batch.processing_status == "ended"

    def _results(self, batch, by_key: dict[str, Call]) -> dict[str, Reply | None]:
        # the SDK's decoder stops at the first line it cannot parse: its raw lines are read here one by one
        decoder = self._client_sync().messages.batches.results(batch.id)
        try:
            return self._lines(decoder.http_response.iter_lines(), by_key, self._result)
        finally:
            decoder.close()

    def _result(self, record: dict, call: Call) -> Reply | None:
        result = record["result"]
        if result["type"] == "succeeded":
            return parse_message(json.dumps(result["message"]))
        if result["type"] == "errored":
            error = result["error"]["error"]  # the error response's error: type, message
            body = {"type": "error", "error": {"type": error["type"], "message": error.get("message")}}
            return self._failed(
                error["type"], 400 if error["type"] == "invalid_request_error" else None, body
            )
        return None  # canceled, expired: not reached

    def _ended_whole(self, batch) -> bool:
        counts = batch.request_counts
        return not (counts.canceled or counts.expired)


def batch_backend(judge: JudgeConfig, cache=None):
    return (AnthropicBatchBackend if judge.backend == "anthropic" else OpenAIBatchBackend)(judge, cache)
