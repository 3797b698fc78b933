"""The LLM builder: seed -> Spec through the seven stages, with retries and a failure record.

Each stage is one conversation: the system prompt and the stage's user message; a rejected
reply is answered with the reason (``That reply was rejected: ...``) and the model tries again,
up to ``max_attempts`` replies per stage. A stage still failing then ends the build: the seed
is recorded as failed with the stage, the kind of check that failed and its message. A
backend failure (server unreachable, after the backend's own retries) is not the model's:
the build ends with status ``error`` and is not cached, so a later run retries it.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import time
from collections.abc import Callable
from typing import Any

from isg_gym.eval.backends.base import Completion, Message
from isg_gym.seeding import check_seed
from isg_gym.simulator.build import BuildResult
from isg_gym.simulator.llm.draft import Draft, Plan
from isg_gym.simulator.llm.parse import StageError, clip
from isg_gym.simulator.llm.prompts import PROMPT_VERSION, RETRY, SYSTEM
from isg_gym.simulator.llm.replies import PROFILES
from isg_gym.simulator.llm.sanity import SanityError
from isg_gym.simulator.llm.stages import Stage, stages

BUILDER = "llm"
DEFAULT_ATTEMPTS = 3
Ask = Callable[[list[Message], dict[str, Any]], Completion]


def _new_stats() -> dict[str, Any]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "stages": {}}


def backend_ask(backend: Any) -> Ask:
    """``ask`` over a ChatBackend: one conversation per call, the stage's JSON schema passed as
    ``response_format`` where the backend's ``complete`` accepts it (constrained decoding),
    else prompt and parse (the schema is in the prompt; the reply is validated all the same)."""
    try:
        structured = "response_format" in inspect.signature(backend.complete).parameters
    except (TypeError, ValueError):
        structured = False

    def ask(messages: list[Message], response_format: dict[str, Any]) -> Completion:
        if structured:  # a copy: a backend may rewrite the schema it is given (its $refs)
            fmt = copy.deepcopy(response_format)
            return backend.complete([messages], [], response_format=fmt)[0]
        return backend.complete([messages], [])[0]

    ask.structured = structured  # type: ignore[attr-defined]
    return ask


class LLMBuilder:
    """Builds Specs with a chat model through ``ask`` (see :func:`backend_ask`).

    ``model`` names the model in cache keys; ``max_attempts`` bounds the replies per stage;
    ``profile`` is ``full`` (builder name ``llm``) or ``small`` (``llm-small``: the fewest
    variables and short texts, for models of a few hundred million parameters; see
    :mod:`.replies`). ``time_budget`` (seconds, None: none) ends a build that runs longer,
    as a failure of kind ``timeout`` at the stage it reached.
    """

    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        ask: Ask,
        model: str,
        max_attempts: int = DEFAULT_ATTEMPTS,
        *,
        profile: str = "full",
        time_budget: float | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
        self.ask = ask
        self.model = model
        self.max_attempts = int(max_attempts)
        self.profile = PROFILES[profile]
        self.name = BUILDER if profile == "full" else f"{BUILDER}-{profile}"
        self.time_budget = time_budget

    def build(self, seed: int) -> BuildResult:
        seat = getattr(self.ask, "seat", None)  # a batching ask counts the builds in flight
        with seat() if seat is not None else contextlib.nullcontext():
            return self._build(check_seed(seed))

    def expect(self, builds: int) -> None:
        """``builds`` builds are about to start at once (a batching ask waits for them)."""
        expect = getattr(self.ask, "expect", None)
        if expect is not None:
            expect(builds)

    def _build(self, seed: int) -> BuildResult:
        started = time.perf_counter()
        draft = Draft(Plan.of(seed, self.profile))
        stats = _new_stats()
        result = None
        deadline = None if self.time_budget is None else started + self.time_budget
        for stage in stages(self.profile):
            result = self._stage(stage, draft, stats, deadline)
            if result is not None:
                break
        stats["seconds"] = round(time.perf_counter() - started, 3)
        if result is None:
            result = BuildResult(seed, "built", spec=draft.extra["spec"])
            stats["sanity"] = draft.extra["sanity"]
        result.stats = stats
        return result

    def _stage(
        self, stage: Stage, draft: Draft, stats: dict[str, Any], deadline: float | None
    ) -> BuildResult | None:
        """Run one stage; None when accepted, else the failed (or error) result."""
        record = stats["stages"].setdefault(stage.name, {"attempts": 0, "rejected": {}})
        messages: list[Message] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": stage.user_message(draft)},
        ]
        error: StageError | None = None
        for _ in range(self.max_attempts):
            if deadline is not None and time.perf_counter() > deadline:
                error = StageError("timeout", f"the build ran past its {self.time_budget:g} s")
                record["rejected"]["timeout"] = record["rejected"].get("timeout", 0) + 1
                break
            try:
                completion = self.ask(messages, stage.response_format)
            except Exception as exc:  # a backend should not raise; if it does, not the model's
                completion = Completion(error=f"{type(exc).__name__}: {exc}")
            record["attempts"] += 1
            stats["calls"] += 1
            stats["prompt_tokens"] += completion.prompt_tokens
            stats["completion_tokens"] += completion.completion_tokens
            if completion.error:
                if completion.error_kind == "model":  # the conversation outgrew the context
                    error = StageError("context", completion.error)
                    record["rejected"]["context"] = record["rejected"].get("context", 0) + 1
                    break
                return BuildResult(
                    draft.seed,
                    "error",
                    failure={
                        "stage": stage.name,
                        "kind": "backend",
                        "reason": clip(completion.error),
                    },
                )
            try:
                stage.check(draft, completion.text)
                return None
            except StageError as exc:
                error = exc
                if exc.kind == "json" and completion.finish_reason == "length":
                    error = StageError("truncated", f"{exc} (cut at the token limit: write less)")
            except Exception as exc:  # a bug in a check: recorded loudly, never retried
                error = StageError("internal", f"{type(exc).__name__}: {exc}")
            rejected = record["rejected"]
            rejected[error.kind] = rejected.get(error.kind, 0) + 1
            if error.kind == "internal" or (isinstance(error, SanityError) and not error.retry):
                break
            messages = [
                *messages,
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": RETRY.format(error=error)},
            ]
        assert error is not None
        return BuildResult(
            draft.seed,
            "failed",
            failure={
                "stage": stage.name,
                "kind": error.kind,
                "reason": clip(str(error)),
                "attempts": record["attempts"],
            },
        )
