"""A :class:`ChatBackend` for OpenAI-compatible chat-completions APIs (OpenAI, vLLM's and
llama.cpp's servers, most hosted providers), through the official ``openai`` SDK.

The API key only ever comes from the environment (``api_key_env``, default
``OPENAI_API_KEY``); a local server (``base_url`` on localhost) gets the placeholder
``"EMPTY"`` when the variable is unset. Transient failures (408, 409, 429, 5xx, connection
errors, timeouts) are retried by the SDK with exponential backoff (``max_retries``); a request
that still fails becomes a :class:`Completion` with ``error`` set, never an exception.
"""

from __future__ import annotations

import ipaddress
import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

from isg_gym.eval.backends.base import Completion, Message

LOCAL_HOSTS = frozenset({"localhost", "localhost.localdomain", "host.docker.internal"})
PLACEHOLDER_KEY = "EMPTY"
MAX_ERROR_CHARS = 500


def is_local_url(url: str | None) -> bool:
    """Whether ``url`` points at this machine (or a private-network address of a local server)."""
    if not url:
        return False
    host = (urlparse(url).hostname or "").lower()
    if host in LOCAL_HOSTS or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def check_base_url(url: str | None) -> None:
    """Raise ValueError unless ``url`` is None or an http(s) URL with a host."""
    if url is None:
        return
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(
            f"base URL {url!r} is not an http(s) URL with a host; write it in full, e.g. "
            f"http://{url.split('://')[-1]}"
        )


def clean_message(message: Message) -> Message:
    """``message`` without ``None`` values the API may reject; an assistant message keeps
    ``content: None`` when it carries tool calls (the API's own shape for such turns)."""
    out = {k: v for k, v in message.items() if v is not None}
    if message.get("role") == "assistant" and message.get("tool_calls"):
        out.setdefault("content", None)
    elif "content" not in out:
        out["content"] = ""
    return out


_CONTEXT_ERROR = re.compile(
    r"context length|context window|maximum context|too many tokens|prompt is too long|"
    r"reduce the length|exceeds? the (model'?s )?(maximum|context)",
    re.IGNORECASE,
)


def is_context_overflow(message: str) -> bool:
    """Whether an error message says the conversation no longer fits the model's context."""
    return bool(_CONTEXT_ERROR.search(message))


def _error_kind(exc: BaseException) -> str:
    """``"model"`` for a refusal because the conversation no longer fits the model's context
    (HTTP 400 saying so: the agent's doing), else ``"backend"`` (infrastructure)."""
    import openai

    if isinstance(exc, openai.BadRequestError) and is_context_overflow(str(exc)):
        return "model"
    return "backend"


def _error_text(exc: BaseException) -> str:
    import openai

    if isinstance(exc, openai.APIStatusError):
        text = f"{type(exc).__name__} {exc.status_code}: {exc.message}"
    else:
        text = f"{type(exc).__name__}: {exc}"
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 3] + "..."
    return text


class OpenAIBackend:
    """Chat completions from an OpenAI-compatible server.

    ``concurrency`` requests are in flight at most (one per conversation of a batch);
    ``timeout`` is seconds per request attempt; ``max_retries`` retries per request on
    transient errors. ``temperature`` or ``max_tokens`` set to None are not sent (some models
    reject them; pass ``extra_body={"max_completion_tokens": ...}`` instead). ``extra_body``
    is merged into every request (e.g. vLLM's ``chat_template_kwargs``). With ``native_tools``
    False no ``tools`` are sent and the model is expected to write Hermes ``<tool_call>``
    blocks as text.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        max_retries: int = 3,
        timeout: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1024,
        extra_body: dict[str, Any] | None = None,
        tool_choice: str | dict[str, Any] | None = "auto",
        native_tools: bool = True,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - openai is installed in the test env
            raise ImportError(
                "OpenAIBackend needs the openai package: pip install 'isg-gym[openai]'"
            ) from exc
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        check_base_url(base_url)
        self.model = model
        self.base_url = base_url
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.tool_choice = tool_choice
        self.native_tools = native_tools
        self.api_key_env = api_key_env
        key = os.environ.get(api_key_env)
        if not key:
            if not is_local_url(base_url or os.environ.get("OPENAI_BASE_URL")):
                where = base_url or "the OpenAI API"
                raise ValueError(
                    f"no API key for {where}: set the environment variable {api_key_env} "
                    "(keys are read from the environment only)"
                )
            key = PLACEHOLDER_KEY
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, max_retries=self.max_retries, timeout=self.timeout
        )
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="openai-backend")

    def complete(
        self,
        conversations: list[list[Message]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, in order (requests run concurrently).

        ``response_format`` (e.g. ``{"type": "json_schema", "json_schema": {"name", "schema"}}``)
        is sent as is: the server constrains the reply to the schema (vLLM's structured
        outputs, OpenAI's JSON-schema mode); the caller still validates what comes back.
        """
        if not conversations:
            return []
        send_tools = tools if self.native_tools and tools else None
        return list(self._pool.map(lambda conv: self._one(conv, send_tools, response_format),
                                   conversations))  # fmt: skip

    def _request(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> dict:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [clean_message(m) for m in messages],
        }
        if response_format is not None:
            kwargs["response_format"] = response_format
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if self.max_tokens is not None:
            kwargs["max_tokens"] = self.max_tokens
        if tools:
            kwargs["tools"] = tools
            if self.tool_choice is not None:
                kwargs["tool_choice"] = self.tool_choice
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        return kwargs

    def _one(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None = None,
    ) -> Completion:
        try:
            request = self._request(messages, tools, response_format)
            response = self._client.chat.completions.create(**request)
        except Exception as exc:  # the SDK has retried already: report, never raise
            return Completion(error=_error_text(exc), error_kind=_error_kind(exc))
        return parse_response(response)

    def close(self) -> None:
        """Stop the worker threads and close the HTTP client."""
        self._pool.shutdown(wait=True)
        self._client.close()


def parse_response(response: Any) -> Completion:
    """A :class:`Completion` from an SDK ``ChatCompletion``."""
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    produced = int(getattr(usage, "completion_tokens", 0) or 0)
    choices = getattr(response, "choices", None) or []
    if not choices:
        return Completion(
            prompt_tokens=prompt, completion_tokens=produced, error="the response has no choices"
        )
    choice = choices[0]
    message = choice.message
    calls = []
    for i, call in enumerate(message.tool_calls or []):
        function = getattr(call, "function", None)
        if function is None:  # a non-function (custom) tool call: not an ISG tool
            continue
        calls.append(
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {"name": function.name, "arguments": function.arguments or "{}"},
            }
        )
    return Completion(
        text=message.content or "",
        tool_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=produced,
        finish_reason=choice.finish_reason,
    )
