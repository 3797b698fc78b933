"""Batch the requests of concurrent builds for backends that answer a batch at once.

Offline vLLM answers a whole batch in one ``LLM.chat`` call, but the builder asks one
conversation at a time on each worker thread. :class:`BatchedAsk` collects the requests:
when every build in flight is waiting for a reply, the last thread to ask sends the pending
requests of the earliest stage among them in one ``complete`` call (one response format per
call) and hands each reply back; requests of later stages wait, so builds that started late
catch up and the batches stay full. Builds enter and leave with ``seat()``, so a finished
build never holds the others up; ``expect(n)`` seats ``n`` builds before their threads start,
so the first requests wait for the builds that are about to start (full first batches on a
loaded machine too).
"""

from __future__ import annotations

import contextlib
import copy
import json
import threading
from collections.abc import Iterator
from typing import Any

from isg_gym.eval.backends.base import Completion, Message


def _stage_rank(response_format: dict[str, Any]) -> int:
    """The position of a request's stage in the pipeline (from its schema name)."""
    from isg_gym.simulator.llm.stages import STAGE_NAMES

    name = str((response_format.get("json_schema") or {}).get("name", ""))
    stage = name.removeprefix("isg_").rsplit("_v", 1)[0]
    return STAGE_NAMES.index(stage) if stage in STAGE_NAMES else len(STAGE_NAMES)


class _Request:
    def __init__(self, messages: list[Message], response_format: dict[str, Any]) -> None:
        self.messages = messages
        self.response_format = response_format
        self.reply: Completion | None = None


class BatchedAsk:
    """``ask(messages, response_format)`` that batches across the builds in flight."""

    structured = True

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self._cond = threading.Condition()
        self._seated = 0
        self._reserved = 0  # seats taken by expect() for builds whose threads have not started
        self._pending: list[_Request] = []
        self.batches: list[int] = []  # the size of every complete() call made

    def expect(self, builds: int) -> None:
        """Seat ``builds`` builds that are about to start (each takes its seat in ``seat``)."""
        with self._cond:
            self._reserved += builds
            self._seated += builds

    @contextlib.contextmanager
    def seat(self) -> Iterator[None]:
        """Count a build as in flight while it runs."""
        with self._cond:
            if self._reserved:
                self._reserved -= 1
            else:
                self._seated += 1
        try:
            yield
        finally:
            with self._cond:
                self._seated -= 1
            self._dispatch_if_ready()

    def __call__(self, messages: list[Message], response_format: dict[str, Any]) -> Completion:
        request = _Request(messages, response_format)
        with self._cond:
            self._pending.append(request)
        self._dispatch_if_ready()
        with self._cond:
            self._cond.wait_for(lambda: request.reply is not None)
        assert request.reply is not None
        return request.reply

    def _dispatch_if_ready(self) -> None:
        with self._cond:
            if not self._pending or len(self._pending) < self._seated:
                return
            first = min(self._pending, key=lambda r: _stage_rank(r.response_format))
            key = json.dumps(first.response_format, sort_keys=True)
            group = [
                r for r in self._pending if json.dumps(r.response_format, sort_keys=True) == key
            ]
            self._pending = [r for r in self._pending if r not in group]
        replies = self._complete(group)
        with self._cond:
            for request, reply in zip(group, replies, strict=True):
                request.reply = reply
            self._cond.notify_all()

    def _complete(self, group: list[_Request]) -> list[Completion]:
        try:
            replies = self.backend.complete(
                [r.messages for r in group],
                [],
                response_format=copy.deepcopy(group[0].response_format),
            )
        except Exception as exc:  # backends should not raise; if one does, no thread hangs
            replies = [Completion(error=f"{type(exc).__name__}: {exc}")] * len(group)
        self.batches.append(len(group))
        if len(replies) != len(group):
            error = f"the backend returned {len(replies)} replies for {len(group)} requests"
            replies = [Completion(error=error)] * len(group)
        return replies
