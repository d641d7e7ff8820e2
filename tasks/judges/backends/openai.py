"""Any OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server)
through the official `openai` SDK (AsyncOpenAI, or AsyncAzureOpenAI with `api_version`), inside the
shared batch skeleton of hosted.py.

Logprobs are asked for (top_logprobs) and the choice tokens' probabilities at the first position are
returned; a server that ignores the field still works (the protocol parses the text). Reasoning models
(o-series, GPT-5) refuse `temperature`, `logprobs` and `max_tokens` with a 400 `unsupported_parameter` /
`unsupported_value`: the first such answer drops the parameter (or sends `max_tokens` as
`max_completion_tokens`) for that model, and the call goes again.

The raw body is read and parsed here rather than the SDK's typed object, so that a server's quirks (an
empty `choices`, a body that is not JSON) become a protocol failure: retried like a 5xx, never cached, counted
as `protocol_error` in coverage. A completion's body is cached for audits.
"""

from __future__ import annotations

import json
import math
import os

import openai

from judgeops.tasks.judges.backends.hosted import HostedBackend, params_with, read_limited
from judgeops.tasks.judges.calls import PROTOCOL_FAILURE, Call, Reply
from judgeops.tasks.judges.prompts import SYSTEM

RENAMES = {"max_tokens": "max_completion_tokens"}  # what a parameter is called on models that refuse it
TOGETHER = {"logprobs": ("logprobs", "top_logprobs"), "top_logprobs": ("logprobs", "top_logprobs")}


class OpenAIBackend(HostedBackend):
    kind = "openai"
    status_error = openai.APIStatusError
    connection_error = openai.APIConnectionError  # APITimeoutError is one
    _per_request_headers: dict = {}  # the SDK drops a header only when a request says so

    def _client(self) -> openai.AsyncOpenAI:
        judge = self.judge
        common = dict(
            api_key=self._key,
            organization=judge.organization,
            project=judge.project,
            timeout=judge.timeout_s,
            max_retries=0,  # hosted.HostedBackend retries: one policy for the whole batch
            default_headers=dict(judge.extra_headers),
        )
        if judge.api_version:  # Azure: base_url is the resource endpoint, model the deployment name
            if self._key is None:
                common.pop("api_key")  # the SDK reads AZURE_OPENAI_API_KEY
            return openai.AsyncAzureOpenAI(
                azure_endpoint=judge.base_url, api_version=judge.api_version, **common
            )
        if self._key is None and not _env_key() and judge.base_url:
            # a self-served model with no key (vLLM, llama.cpp): send no Authorization header at all
            common["api_key"] = "unused"
            self._per_request_headers = {"Authorization": openai.omit}
        return openai.AsyncOpenAI(base_url=judge.base_url, **common)

    def params(self, call: Call) -> dict:
        """The request's parameters, after what this model was found not to take."""
        d = self.judge.decoding
        params = {"max_tokens": call.request.max_tokens, "temperature": d.temperature}
        if call.seed is not None:
            params["seed"] = call.seed
        if call.request.choices and d.top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = d.top_logprobs
        if call.request.response_format:  # a rubric's JSON schema, as structured output
            schema = json.loads(call.request.response_format)
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": False},
            }
        return params_with(self.findings, params, lambda p: TOGETHER.get(p, (p,)))

    async def _send(self, client: openai.AsyncOpenAI, call: Call) -> tuple[str, int]:
        async with client.chat.completions.with_streaming_response.create(
            model=self.judge.model,
            messages=[
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": call.request.prompt},
            ],
            extra_body={**self.params(call), **self.judge.extra_body},
            extra_headers=self._per_request_headers,
        ) as response:  # streamed, so that a body over max_reply_bytes is refused before it is read whole
            return await read_limited(response, self.judge.max_reply_bytes), response.status_code

    def _parse(self, body: str, call: Call) -> Reply:
        return parse_completion(body, call.request.choices)

    def _unsupported(self, status: int, body: str) -> tuple[str, str] | None:
        """OpenAI's answer to a parameter a model does not take: 400 with error.code `unsupported_parameter`
        or `unsupported_value` and error.param naming it."""
        try:
            error = json.loads(body).get("error") or {}
        except (ValueError, AttributeError):
            return None
        param = error.get("param") if isinstance(error, dict) else None
        if error.get("code") not in ("unsupported_parameter", "unsupported_value") or not param:
            return None
        return param, RENAMES.get(param, "drop")


def _env_key() -> bool:
    return bool(os.environ.get("OPENAI_API_KEY"))


def choice_probs(logprobs: dict | None, choices: tuple[str, ...]) -> dict[str, float] | None:
    """Probability of each choice at the first generated position: the sum over top_logprobs entries
    whose text, stripped and lower-cased, is the choice (" A", "A" and "a" are all A)."""
    if not choices or not logprobs or not logprobs.get("content"):
        return None
    first = logprobs["content"][0]
    entries = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
    probs = dict.fromkeys(choices, 0.0)
    for entry in entries:
        token = (entry.get("token") or "").strip().lower()
        for choice in choices:
            if token == choice.lower() and entry.get("logprob") is not None:
                probs[choice] += math.exp(entry["logprob"])
    return probs


def parse_completion(body: str, choices: tuple[str, ...]) -> Reply:
    """A 200 response: text, choice probabilities and usage; malformed JSON or no choices → a protocol failure."""
    try:
        data = json.loads(body)
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return Reply(error=f"{PROTOCOL_FAILURE}a 2xx reply that is not a chat completion: {body[:80]!r}")
    usage = data.get("usage") or {}
    return Reply(
        text=text,
        probs=choice_probs(choice.get("logprobs"), choices),
        tokens=_int(usage.get("total_tokens")),
        tokens_in=_int(usage.get("prompt_tokens")),
        tokens_out=_int(usage.get("completion_tokens")),
        raw=body[:4000],
    )


def _int(value) -> int | None:
    return int(value) if value is not None else None
