"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Replies are consumed in order from a list (thread-safe), or computed by a callable from the
request body. Reply forms:

- ``{"content": "text"}``: an assistant message, ``finish_reason`` "stop" (or the reply's own
  ``"finish_reason"``, e.g. "length");
- ``{"tool_calls": [{"name": ..., "arguments": {...} | "<raw string>"}], "content": ...}``:
  structured calls with ids ``call_N``, N counting the calls of the whole conversation so far
  (unique within it, independent of arrival order); arguments are serialised to JSON unless
  given as a raw string, so tests can send malformed JSON; ``finish_reason`` "tool_calls";
- ``{"status": 500, "body": ...}``: that HTTP status with an OpenAI-style error body (``body``
  a dict is sent as JSON, a string as the error message);
- ``{"sleep": seconds, "then": reply}``: wait, then reply (to trigger client timeouts).

When the script is exhausted (or the callable returns None) the server answers
:data:`EXHAUSTED_REPLY` and counts it in :attr:`ScriptedChatServer.exhausted`. Every success
carries a deterministic ``usage``: characters of the request's messages // 4 and of the reply //
4, each at least 1. ``GET /v1/models`` lists one model. A request with ``stream: true`` gets
the same reply as server-sent events: one chunk with the whole message, one with the finish
reason, a usage chunk when ``stream_options.include_usage`` is set, then ``[DONE]``.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = dict[str, Any]
Script = list[Reply] | Callable[[dict[str, Any]], Reply | None]

EXHAUSTED_REPLY: Reply = {"content": '{"answer": "not possible"}'}
MODEL_ID = "scripted-model"


def message_text(message: dict[str, Any]) -> str:
    """The text of a message's content, whether a string or a list of text parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, str):
            parts.append(part)
    return "".join(parts)


def _message_chars(message: dict[str, Any]) -> int:
    chars = len(message_text(message))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        chars += len(str(function.get("name", ""))) + len(str(function.get("arguments", "")))
    return chars


def prompt_tokens(body: dict[str, Any]) -> int:
    """The usage ``prompt_tokens`` the server reports for a request body."""
    return max(1, sum(_message_chars(m) for m in body.get("messages", [])) // 4)


def by_conversation(
    fn: Callable[[str, int, dict[str, Any]], Reply | None],
) -> Callable[[dict[str, Any]], Reply | None]:
    """A script computed per conversation: ``fn(question_text, turn, body)``.

    ``question_text`` is the first user message's text and ``turn`` the number of assistant
    messages already in the request, so concurrent episodes get the same replies whatever the
    order their requests arrive in.
    """

    def script(body: dict[str, Any]) -> Reply | None:
        messages = body.get("messages", [])
        question = next((message_text(m) for m in messages if m.get("role") == "user"), "")
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        return fn(question, turn, body)

    return script


class ScriptedChatServer:
    """An OpenAI-compatible chat server replaying scripted turns (see the module docstring).

    ``url`` ("http://127.0.0.1:PORT/v1") is valid after :meth:`start`; ``requests`` holds the JSON
    bodies of chat requests in arrival order and ``headers`` their HTTP headers; ``responses``
    the successful response bodies sent, ``exchanges`` the same as (request body, response)
    pairs. A reply delayed by ``sleep`` whose client hangs up meanwhile (a client timeout) is
    dropped at once and only counted in ``abandoned``, so usage sums match what clients
    received. :meth:`wait_idle` waits for the requests in flight; :meth:`stop` does too.
    ``retry_after_ms`` adds a ``retry-after-ms`` header to error replies, which the openai SDK
    honours (fast retries). ``port`` 0 (default) takes a free port.
    """

    def __init__(
        self, script: Script, *, retry_after_ms: float | None = None, port: int = 0
    ) -> None:
        self._script = script
        self._queue = list(script) if isinstance(script, list) else None
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.retry_after_ms = retry_after_ms
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.responses: list[dict[str, Any]] = []
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.exhausted = 0
        self.abandoned = 0
        self.errors: list[str] = []  # exceptions raised by a callable script
        self.url = ""
        self.port = port
        self._active = 0
        self._idle = threading.Condition(self._lock)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> ScriptedChatServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until no chat request is being handled; False if still busy after ``timeout``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout)

    def stop(self) -> None:
        """Wait (up to 5 s) for requests in flight, then shut the server down."""
        self.wait_idle()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- accounting ----------------------------------------------------------------------------

    def usage_totals(self) -> dict[str, int]:
        """Sums of the ``usage`` fields over every successful response."""
        with self._lock:
            usages = [r["usage"] for r in self.responses]
        return {
            key: sum(u[key] for u in usages)
            for key in ("prompt_tokens", "completion_tokens", "total_tokens")
        }

    # -- internals -----------------------------------------------------------------------------

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._queue is not None:
                if self._queue:
                    return self._queue.pop(0)
                self.exhausted += 1
                return EXHAUSTED_REPLY
        try:
            reply = self._script(body)  # type: ignore[operator]
        except Exception as exc:  # a broken test script: answer 500 and keep it for the test
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return {"status": 500, "body": f"script raised {type(exc).__name__}: {exc}"}
        if reply is None:
            with self._lock:
                self.exhausted += 1
            return EXHAUSTED_REPLY
        return reply

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        number = next(self._ids)
        content = reply.get("content")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        out_chars = len(content or "")
        finish = "stop"
        if reply.get("tool_calls"):
            calls = []
            earlier = sum(len(m.get("tool_calls") or []) for m in body.get("messages", []))
            for i, call in enumerate(reply["tool_calls"], start=earlier):
                arguments = call.get("arguments", {})
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                calls.append(
                    {
                        "id": call.get("id", f"call_{i}"),
                        "type": "function",
                        "function": {"name": call["name"], "arguments": arguments},
                    }
                )
                out_chars += len(call["name"]) + len(arguments)
            message["tool_calls"] = calls
            finish = "tool_calls"
        finish = reply.get("finish_reason", finish)
        prompt = prompt_tokens(body)
        completion = max(1, out_chars // 4)
        response = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": body.get("model", MODEL_ID),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
        return response

    def _delivered(self, body: dict[str, Any], response: dict[str, Any]) -> None:
        with self._lock:
            self.responses.append(response)
            self.exchanges.append((body, response))


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedChatServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
            pass

    def _error(self, status: int, message: str, body: Any = None) -> None:
        if isinstance(body, dict):
            payload = body
        else:
            payload = {
                "error": {
                    "message": body if isinstance(body, str) else message,
                    "type": "server_error" if status >= 500 else "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            }
        extra = {}
        if self.owner.retry_after_ms is not None:
            extra["retry-after-ms"] = str(self.owner.retry_after_ms)
        self._send(status, payload, extra)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "tests"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        with self.owner._idle:
            self.owner._active += 1
        try:
            self._post()
        finally:
            with self.owner._idle:
                self.owner._active -= 1
                self.owner._idle.notify_all()

    def _post(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "request body is not JSON")
            return
        reply = self.owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        while "sleep" in reply:
            if not self._wait(float(reply["sleep"])):
                with self.owner._lock:
                    self.owner.abandoned += 1
                self.close_connection = True
                return
            reply = reply.get("then") or EXHAUSTED_REPLY
        if "status" in reply:
            status = int(reply["status"])
            self._error(status, f"scripted error {status}", reply.get("body"))
            return
        response = self.owner._completion(body, reply)
        if body.get("stream"):
            self._send_events(
                response, bool((body.get("stream_options") or {}).get("include_usage"))
            )
        else:
            self._send(200, response)
        self.owner._delivered(body, response)

    def _send_events(self, response: dict[str, Any], include_usage: bool) -> None:
        """``response`` as a chat-completion chunk stream (server-sent events)."""
        choice = response["choices"][0]
        message = choice["message"]
        delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
        if message.get("tool_calls"):
            delta["tool_calls"] = [
                {"index": i, **call} for i, call in enumerate(message["tool_calls"])
            ]
        head = {k: response[k] for k in ("id", "created", "model")}
        head["object"] = "chat.completion.chunk"
        chunks = [
            {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {
                **head,
                "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
            },
        ]
        if include_usage:
            chunks.append({**head, "choices": [], "usage": response["usage"]})
        events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
        data = "".join(events).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds``; False as soon as the client closes the connection (timeout)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                readable, _, _ = select.select([self.connection], [], [], left)
                if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return False
            except OSError:
                return False
            if readable:  # data, not end of file (a pipelined request): just sleep it out
                time.sleep(max(0.0, deadline - time.monotonic()))
        return True
