"""Test helpers for the real llama.cpp model and server: what they need, and llama-cpp-python's
OpenAI-compatible server serving SmolLM2-135M-Instruct on 127.0.0.1.

Locally a missing requirement skips the test; under CI (the ``CI`` env var set) it fails.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from isg_gym.eval.backends.llamacpp import INSTALL_HINT, MODEL_HINT, default_model_path

SERVER_MODULES = ("fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings")
SERVER_HINT = (
    "pip install fastapi uvicorn sse-starlette 'starlette-context>=0.3.6,<0.4' pydantic-settings"
    " (llama-cpp-python's [server] extra, without rebuilding llama-cpp-python)"
)
MODEL_ALIAS = "smollm2"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(problem: str) -> None:
    """Skip locally, fail under CI."""
    if in_ci():
        pytest.fail(f"CI needs the llama.cpp test setup: {problem}")
    pytest.skip(problem)


def require_llama_cpp() -> None:
    try:
        import llama_cpp  # noqa: F401
    except ImportError as exc:
        unavailable(f"llama-cpp-python is not installed ({exc}); run: {INSTALL_HINT}")


def smollm2_path() -> str:
    """The SmolLM2 GGUF path (llama-cpp-python and the model installed)."""
    require_llama_cpp()
    try:
        return default_model_path()
    except FileNotFoundError as exc:
        unavailable(f"{exc} (install with: {MODEL_HINT})")
        raise


def require_server() -> None:
    missing = []
    for name in SERVER_MODULES:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        unavailable(f"llama-cpp-python's server needs {', '.join(missing)}: {SERVER_HINT}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` on a free port of 127.0.0.1, serving SmolLM2 as model
    ``smollm2`` with ``chat_format``; its output goes to ``log``. A context manager: ready when
    ``/v1/models`` answers (or an error naming the log), terminated (then killed) on exit."""

    def __init__(
        self,
        log: Path,
        chat_format: str = "chatml-function-calling",
        n_ctx: int = 4096,
        start_timeout: float = 180.0,
    ) -> None:
        require_server()
        self.model_path = smollm2_path()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", self.model_path, "--model_alias", MODEL_ALIAS,
            "--chat_format", chat_format, "--n_ctx", str(n_ctx),
            "--n_threads", "1", "--n_threads_batch", "1",
            "--host", "127.0.0.1", "--port", str(self.port),
        ]  # fmt: skip
        self.start_timeout = start_timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    def __enter__(self) -> LlamaServer:
        self._log_file = self.log.open("wb")
        self._process = subprocess.Popen(
            self.command, stdout=self._log_file, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self.__exit__()
                raise RuntimeError(f"llama_cpp.server exited ({self._process.returncode}): "
                                   f"{self.log_tail()}")  # fmt: skip
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/models", timeout=2) as response,
            ):
                if response.status == 200:
                    return self
            time.sleep(0.5)
        self.__exit__()
        raise RuntimeError(f"llama_cpp.server not ready in {self.start_timeout:.0f} s: "
                           f"{self.log_tail()}")  # fmt: skip

    def __exit__(self, *exc: object) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def log_tail(self, chars: int = 2000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def requests(self) -> list[str]:
        """The access-log lines of chat-completion requests so far (status included)."""
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if "POST /v1/chat/completions" in line]  # fmt: skip
