"""`python -m llama_cpp.server` serving the SmolLM2 GGUF on a free localhost port (tests and bench).

llama-cpp-python builds from source (CMAKE_ARGS="-DLLAVA_BUILD=OFF", minutes on 2 cores), so it is not
a project dependency: `.ci/run` builds it in the background while the other tests run.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time

import httpx

from judgeops.tasks.judges.backends.local import gguf_path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    def __init__(self, model: str = "smollm2-135m-instruct", alias: str = "smollm2"):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf_path(model)),
            "--model_alias",
            alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            "2048",
            "--logits_all",
            "true",  # top_logprobs need every position's logits in llama-cpp-python 0.3.x
        ]

    def __enter__(self) -> LlamaServer:
        self.log = tempfile.TemporaryFile(mode="w+")  # a pipe would fill up with llama.cpp's load log
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError(f"llama_cpp.server exited: {self.log.read()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.5)
        raise RuntimeError("llama_cpp.server did not start within 120 s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()

    def __exit__(self, *exc) -> None:
        self.stop()
