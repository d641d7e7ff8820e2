"""Backends answer Requests. Each takes a list of Calls and returns one Reply per call key (base.py).

`openai` (any OpenAI-compatible chat-completions endpoint) and `local` (a GGUF model run in-process
with transformers) share this one method; programmatic judges read the units directly and never
come here (see tasks/judges/programmatic.py). `get_backend` (factory.py) picks one from a judge's config.
"""

from judgeops.tasks.judges.backends.base import Backend, BatchPending, JudgeBackendError
from judgeops.tasks.judges.backends.factory import get_backend

__all__ = ["Backend", "BatchPending", "JudgeBackendError", "get_backend"]
