"""What a protocol asks a backend (Request) and what comes back (Reply), and the call-cache key.

A Request is backend-neutral: a user prompt (the system prompt is prompts.SYSTEM), how many tokens may
be generated, and the `choices` whose probabilities at the first generated position the protocol reads
(verdict letters, yes/no). A backend that exposes probabilities fills `Reply.probs`; a backend that
only returns text leaves it empty and the protocol parses the text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from judgeops.config import JudgeConfig
from judgeops.tasks.judges.precision import FLOAT32, local_precision
from judgeops.tasks.judges.prompts import PROMPT_VERSION, SYSTEM


@dataclass(frozen=True)
class Request:
    prompt: str
    max_tokens: int
    choices: tuple[str, ...] = ()
    response_format: str | None = (
        None  # a JSON schema (as JSON text) the reply must follow: structured output
    )


def token_estimate(request: Request) -> tuple[float, int]:
    """(input, output) tokens a request may use before it is sent: ~4 characters a token for the system and
    user prompts, and at most `max_tokens` generated. Rate limits and the budget both plan with it."""
    return len(SYSTEM + request.prompt) / 4, request.max_tokens


TRANSPORT_FAILURE = "transport: "  # no answer came back: never cached, retried on the rerun
PROTOCOL_FAILURE = f"{TRANSPORT_FAILURE}protocol: "  # an answer that is not a completion (a broken endpoint)


@dataclass
class Reply:
    text: str | None = None
    probs: dict[str, float] | None = None  # choice -> probability at the first generated position
    tokens: int | None = None  # prompt + completion tokens, as the backend counted them
    latency_ms: float = 0.0
    raw: str | None = None  # the backend's response body (cached, for audits)
    error: str | None = None  # "transport: ..." (never cached; "transport: protocol: ..." among them) or
    # "unparsable: ..." (the model's own reply, with no verdict in it: cached)
    cached: bool = False
    tokens_in: int | None = None  # prompt tokens, where the backend reports them (priced apart)
    tokens_out: int | None = None  # completion tokens
    notes: str | None = None  # what the backend changed in the request to be answered ("temperature dropped")

    @property
    def transport_failure(self) -> bool:
        return self.error is not None and self.error.startswith(TRANSPORT_FAILURE)


@dataclass(frozen=True)
class Call:
    """One request of one judge for one unit and sample: what is cached and what is sent."""

    key: str
    unit_id: str
    sample: int
    request: Request
    seed: int | None = field(default=None)


def call_key(judge: JudgeConfig, request: Request, protocol_version: str, sample: int) -> str:
    """sha256 of (backend, model, prompts, decoding params, protocol + prompt version, sample index; a local
    judge's precision where it is not float32).

    Never the judge's name, its endpoint or its API key: renaming a judge or moving the server does
    not pay for the same call again, and no secret can reach the cache.
    """
    d = judge.decoding
    payload = {
        "backend": judge.backend,
        "model": judge.model,
        "system": SYSTEM,
        "prompt": request.prompt,
        "max_tokens": request.max_tokens,
        "choices": list(request.choices),
        "temperature": d.temperature,
        "top_logprobs": d.top_logprobs,
        "seed": sample_seed(judge, sample),
        "protocol": protocol_version,
        "prompts": PROMPT_VERSION,
        "sample": sample,
    }
    precision = local_precision(judge.precision) if judge.backend == "local" else FLOAT32
    if precision != FLOAT32:  # float32 (absent): earlier keys hold
        payload["precision"] = precision
    if judge.extra_body:  # fields such as reasoning_effort change the answer (absent: earlier keys hold)
        payload["extra_body"] = judge.extra_body
    if request.response_format:  # a rubric's structured output (absent: earlier keys hold)
        payload["response_format"] = request.response_format
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def sample_seed(judge: JudgeConfig, sample: int) -> int | None:
    """Sample i is sent with the judge's seed + i (None when the judge sets no seed)."""
    return None if judge.decoding.seed is None else judge.decoding.seed + sample


def make_call(
    judge: JudgeConfig, request: Request, protocol_version: str, unit_id: str, sample: int = 0
) -> Call:
    """The Call for one request: its cache key and the seed it is sent with, both from one rule."""
    return Call(
        call_key(judge, request, protocol_version, sample),
        unit_id,
        sample,
        request,
        sample_seed(judge, sample),
    )
