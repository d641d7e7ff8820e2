"""Claude models through the official `anthropic` SDK (the Messages API), inside the shared batch skeleton
of hosted.py. Install with the `anthropic` extra.

The Messages API gives no token probabilities, so the protocols read the verdict from the text (the
pairwise letter, yes/no, the scores). A structured verdict (verdict_format json, a rubric's JSON schema) is asked
as Anthropic's structured output: one tool whose input schema is the verdict's, the model made to call it
(`tool_choice`), its input read as the verdict's JSON. `temperature` is sent where the judge sets one; a model that
refuses it (400 naming the parameter) gets it dropped once, as in the OpenAI backend. A 529
("overloaded") is retried like a 503.
"""

from __future__ import annotations

import json
import re

from judgeops.tasks.judges.backends.base import JudgeBackendError
from judgeops.tasks.judges.backends.hosted import HostedBackend, params_with, read_limited
from judgeops.tasks.judges.calls import PROTOCOL_FAILURE, Call, Reply
from judgeops.tasks.judges.prompts import SYSTEM

try:  # an extra: the error names the install command, not a missing module
    import anthropic
except ImportError:  # pragma: no cover - exercised only without the extra
    anthropic = None

_PARAM = re.compile(r"^\s*`?(temperature|top_p|top_k|stop_sequences)`?\b")


class AnthropicBackend(HostedBackend):
    kind = "anthropic"

    def __init__(self, judge):
        if anthropic is None:
            raise JudgeBackendError(
                f"judge {judge.name}: the anthropic backend needs the SDK: pip install 'judgeops[anthropic]'"
            )
        self.status_error = anthropic.APIStatusError
        self.connection_error = anthropic.APIConnectionError
        super().__init__(judge)

    def _client(self):
        judge = self.judge
        return anthropic.AsyncAnthropic(
            api_key=self._key,  # None: the SDK reads ANTHROPIC_API_KEY
            base_url=judge.base_url,
            timeout=judge.timeout_s,
            max_retries=0,  # hosted.HostedBackend retries: one policy for the whole batch
            default_headers=dict(judge.extra_headers),
        )

    def params(self) -> dict:
        return params_with(self.findings, {"temperature": self.judge.decoding.temperature}, lambda p: (p,))

    async def _send(self, client, call: Call) -> tuple[str, int]:
        async with client.messages.with_streaming_response.create(
            model=self.judge.model,
            max_tokens=call.request.max_tokens,
            system=SYSTEM,
            messages=[{"role": "user", "content": call.request.prompt}],
            **verdict_tool(call),
            extra_body={**self.params(), **self.judge.extra_body},
        ) as response:  # streamed, so that a body over max_reply_bytes is refused before it is read whole
            return await read_limited(response, self.judge.max_reply_bytes), response.status_code

    def _parse(self, body: str, call: Call) -> Reply:
        return parse_message(body)

    def _unsupported(self, status: int, body: str) -> tuple[str, str] | None:
        """A 400 invalid_request_error whose message starts with the parameter's name
        ("temperature: ... is not supported for this model")."""
        try:
            error = json.loads(body).get("error") or {}
        except (ValueError, AttributeError):
            return None
        found = (
            _PARAM.match(str(error.get("message", "")))
            if error.get("type") == "invalid_request_error"
            else None
        )
        return (found.group(1), "drop") if found and "support" in error.get("message", "") else None


VERDICT_TOOL = "record_verdict"


def verdict_tool(call: Call) -> dict:
    """The `tools` and `tool_choice` asking for a structured verdict (a JSON schema in the request) as a call of
    one tool, which the model must make; nothing for a request without one, or whose schema is not an object
    (a tool's input is one): that verdict is asked in words, as the prompt already does."""
    schema = json.loads(call.request.response_format) if call.request.response_format else None
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return {}
    tool = {"name": VERDICT_TOOL, "description": "Record your verdict.", "input_schema": schema}
    return {"tools": [tool], "tool_choice": {"type": "tool", "name": VERDICT_TOOL}}


def parse_message(body: str) -> Reply:
    """A 200 Messages response: the verdict tool's input as JSON text where the model called it, else the text
    blocks joined; and usage. A body that is not a message is a protocol failure (retried, never cached); a
    message with neither is the model's own reply, unparsable."""
    try:
        data = json.loads(body)
        blocks = data["content"]
        called = [b["input"] for b in blocks if b.get("type") == "tool_use" and b.get("name") == VERDICT_TOOL]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if data.get("type") != "message":
            raise ValueError("not a message")
    except (ValueError, KeyError, TypeError, AttributeError):
        return Reply(error=f"{PROTOCOL_FAILURE}a 2xx reply that is not a message: {body[:80]!r}")
    if called:
        text = json.dumps(called[0])
    elif not any(b.get("type") == "text" for b in blocks):
        return Reply(raw=body[:4000], error=f"unparsable: a message with no text block: {body[:80]!r}")
    usage = data.get("usage") or {}
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    return Reply(
        text=text,
        tokens=(tokens_in or 0) + (tokens_out or 0) if usage else None,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        raw=body[:4000],
    )
