"""``ToolEnv``: the multi-turn tool-use step loop every isg-gym environment shares.

An environment is a world (a repository, a star system) plus a task (a question and its grader)
wired to a toolbox. :class:`ToolEnv` owns everything that is the same in all of them:

- the action formats (Hermes ``<tool_call>`` text, bare JSON, structured dicts, the OpenAI
  shape, lists of calls, an answer-only message; :mod:`isg_gym.envs.actions`), with every bad
  action or call an error observation, never an exception;
- tool dispatch with argument errors shown to the agent, output caps, and the final tool;
- the sandboxed Python tool (:class:`~isg_gym.tools.python_tool.PythonTool`), whose own
  failures are reported apart as ``info["infra_error"]``;
- ``max_steps`` truncation, the transcript and ``render("ansi")``, observation limits, and
  pickling (configuration, random state and the episode; not the runtime).

A subclass provides the world and the task through a few hooks: :meth:`_begin` (start an
episode: prompt and public info), :meth:`_tools` and :meth:`_tool_schemas`, :meth:`_privileged`,
:attr:`final_tool` with :meth:`_final_argument` and :meth:`_finish` (grade), and optionally
:meth:`_restore` (rebuild the world after unpickling), :meth:`_files_read` and :meth:`_close`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym

from isg_gym.envs.actions import FORMAT_HELP, Parsed, ParsedCall, describe_action, parse_action
from isg_gym.envs.actions import safe_text as safe_text
from isg_gym.envs.spaces import ToolCallText, UnicodeText
from isg_gym.tools.arguments import ToolError, cap, check_args
from isg_gym.tools.python_tool import (
    MAX_CODE_CHARS,
    PYTHON_SESSIONS,
    PythonTool,
    check_sandbox,
)

__all__ = ["OBSERVATION_LIMIT", "SEED_LIMIT", "ToolEnv", "score_info"]

_log = logging.getLogger(__name__)

SEED_LIMIT = 2**31 - 1
OBSERVATION_LIMIT = 1 << 20

ToolHandler = Callable[[dict[str, Any]], str]


class ToolEnv(gym.Env[str, Any]):
    """Base class of the isg-gym environments (see the module docstring).

    Common arguments: ``max_steps`` (step budget; truncation gives reward 0 and outcome
    ``truncated``), ``max_output_chars`` (cap on each tool's output), ``sandbox`` and
    ``sandbox_limits`` (the Python tool's backend: ``"auto"``, ``"bwrap"``, ``"landlock"``,
    ``"none"`` or an object with ``run(code, files)``; checked at construction),
    ``python_session`` (``"fresh"`` or ``"persistent"``), ``privileged_info`` (the answer key
    in ``info``), ``render_mode`` (``"ansi"``).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    final_tool: ClassVar[str] = "final_answer"

    def __init__(
        self,
        *,
        max_steps: int = 30,
        max_output_chars: int = 8000,
        sandbox: Any = "auto",
        sandbox_limits: Any = None,
        python_session: str = "fresh",
        privileged_info: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an integer >= 1, got {max_steps!r}")
        if max_output_chars < 100:
            raise ValueError(f"max_output_chars must be >= 100, got {max_output_chars!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if python_session not in PYTHON_SESSIONS:
            raise ValueError(
                f"python_session must be one of {PYTHON_SESSIONS}, got {python_session!r}"
            )
        self.max_steps = int(max_steps)
        self.max_output_chars = int(max_output_chars)
        self.sandbox_spec = check_sandbox(sandbox)
        self.sandbox_limits = sandbox_limits
        self.python_session = python_session
        self.privileged_info = bool(privileged_info)
        self.render_mode = render_mode
        self.observation_space = UnicodeText(OBSERVATION_LIMIT)
        self.action_space = ToolCallText(OBSERVATION_LIMIT)
        self._init_runtime()

    # --- hooks -----------------------------------------------------------------------------

    def _begin(self, options: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
        """Start an episode (randomness from ``self.np_random``): the prompt ``{"system",
        "user"}`` and the public info (``question_id``, ``repository``, ``type``, ``family``)."""
        raise NotImplementedError

    def _tools(self) -> dict[str, ToolHandler]:
        """The non-final tools by name; a handler returns the observation text or raises
        :class:`ToolError`."""
        raise NotImplementedError

    def _tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function schemas of every tool, the final one included."""
        raise NotImplementedError

    def _privileged(self) -> dict[str, Any]:
        """The answer key and task details shown with ``privileged_info=True``."""
        return {}

    def _final_argument(self, arguments: dict[str, Any]) -> Any:
        """The final tool's answer (raises :class:`ToolError` for bad arguments)."""
        check_args(arguments, ("answer",), ("answer",))
        value = arguments["answer"]
        if value is None:
            return ""
        if isinstance(value, str):
            return value[:MAX_CODE_CHARS]
        if isinstance(value, bool | int | float):
            return json.dumps(value)
        raise ToolError("`answer` must be a string, number or boolean")

    def _answer_message(self, text: str) -> Any:
        """The answer of an answer-only message (no tool call); by default its text."""
        return text

    def _finish(self, answer: Any) -> tuple[float, dict[str, Any]]:
        """Grade the answer: the reward and the final info (``outcome``, ``score``, ...)."""
        raise NotImplementedError

    def _restore(self, question_id: str) -> tuple[dict[str, str], dict[str, Any]]:
        """Rebuild the episode's world after unpickling (the steps so far are kept): the
        prompt and public info, as :meth:`_begin` gives them."""
        return self._begin({"question": question_id})

    def _files_read(self, paths: list[str]) -> list[str]:
        """``info["files_read"]`` from the paths the step's tools reported."""
        return sorted(set(paths))

    def _truncated_info(self) -> dict[str, Any]:
        """Extra info for a truncated episode's last step (e.g. ``episode_metrics``)."""
        return {}

    def _close(self) -> None:
        """Release the subclass's runtime resources."""

    # --- state -----------------------------------------------------------------------------

    def _init_runtime(self) -> None:
        self._python = PythonTool(
            self.sandbox_spec, self.sandbox_limits, self.python_session, self.max_output_chars
        )
        self._finalizer = weakref.finalize(self, self._python.close)
        self._public: dict[str, Any] | None = None
        self._prompt: dict[str, str] = {}
        self._steps = 0
        self._done = False
        self._transcript: list[tuple[str, str]] = []
        self._step_files: list[str] = []  # files the current step's tools read
        self._infra_error: str | None = None  # the sandbox failed during the current step
        self._closed = False

    @property
    def _cells(self) -> list[str]:
        return self._python.cells

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the configuration, the random state and the episode, not the runtime."""
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        state["_np_random"] = self._np_random
        state["_np_random_seed"] = getattr(self, "_np_random_seed", None)
        public = self._public or {}
        state["_episode"] = (
            public.get("question_id"),
            self._steps,
            self._done,
            list(self._transcript),
            list(self._python.cells),
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        episode = state.pop("_episode")
        self.__dict__.update(state)
        self._init_runtime()
        question_id, steps, done, transcript, cells = episode
        if question_id is not None:
            self._prompt, self._public = self._restore(question_id)
            self._steps, self._done, self._transcript = steps, done, list(transcript)
            self._python.cells = list(cells)

    # --- reset -----------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._python.reset()
        self._prompt, self._public = self._begin(dict(options or {}))
        self._steps = 0
        self._done = False
        observation = f"{self._prompt['system']}\n\n{self._prompt['user']}"
        self._transcript = [("system", observation)]
        return observation, self._info(first=True)

    def _info(self, first: bool = False) -> dict[str, Any]:
        assert self._public is not None
        info: dict[str, Any] = {**self._public, "step": self._steps}
        if first:
            info["tools"] = self._tool_schemas()
            info["prompt"] = dict(self._prompt)
        if self.privileged_info:
            info.update(self._privileged())
        return info

    # --- step ------------------------------------------------------------------------------

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._public is None:
            raise RuntimeError("call reset() before step()")
        if self._done:
            text = "[error] the episode is over; call reset()"
            return text, 0.0, True, False, {**self._info(), "outcome": "episode_over"}
        self._steps += 1
        self._transcript.append(("assistant", describe_action(action, MAX_CODE_CHARS)))
        parsed = self._parse(action)
        parts: list[str] = []
        results: list[dict[str, Any]] = []
        self._step_files = []
        self._infra_error = None
        final: tuple[Any] | None = None  # (answer,)
        if parsed.error is not None:
            parts.append(f"[error] {parsed.error}")
        elif parsed.answer_text is not None:
            final = (self._answer_message(parsed.answer_text),)
        else:
            for call in parsed.calls:
                if call.error is None and call.name == self.final_tool:
                    try:
                        final = (self._final_argument(call.arguments),)
                    except ToolError as exc:
                        error = self._error(self.final_tool, str(exc))
                        parts.append(error)
                        results.append(_call_result(call, error, error=True))
                        continue
                    results.append(_call_result(call, "", error=False))
                    break
                output, failed = self._run_call(call)
                parts.append(output)
                results.append(_call_result(call, output, error=failed))
        info = self._info()
        info["tool_calls"] = [c.name for c in parsed.calls if c.name]
        info["tool_results"] = results
        info["parse_error"] = parsed.error or next(
            (c.error for c in parsed.calls if c.error is not None), None
        )
        info["files_read"] = self._files_read(self._step_files)
        if self._infra_error is not None:  # the environment failed, not the agent
            info["infra_error"] = self._infra_error
        if final is not None:
            value, final_info = self._finish(final[0])
            observation = f"[{self.final_tool}] answer received; the episode is over."
            if parts:
                observation = "\n\n".join([*parts, observation])
            info.update(final_info)
            self._done = True
            self._transcript.append(("tool", observation))
            return self._obs(observation), float(value), True, False, info
        observation = "\n\n".join(parts) if parts else "[error] " + FORMAT_HELP
        truncated = self._steps >= self.max_steps
        if truncated:
            observation += f"\n\n[step limit of {self.max_steps} reached; episode truncated]"
            info["outcome"] = "truncated"
            info.update(self._truncated_info())
            self._done = True
        self._transcript.append(("tool", observation))
        return self._obs(observation), 0.0, False, truncated, info

    def _parse(self, action: Any) -> Parsed:
        return parse_action(action)

    @staticmethod
    def _obs(text: str) -> str:
        """The observation: valid UTF-8 text (lone surrogates escaped), within the space."""
        text = safe_text(text)
        if len(text) > OBSERVATION_LIMIT:
            return text[: OBSERVATION_LIMIT - 40] + "\n[observation truncated]"
        return text

    def _error(self, label: str, message: str) -> str:
        return safe_text(f"[{label}] error: {cap(message, min(2000, self.max_output_chars))}")

    def _run_call(self, call: ParsedCall) -> tuple[str, bool]:
        """The call's observation text (valid UTF-8), and whether it failed. Never raises."""
        name = call.name or "tool_call"
        label = name if len(name) <= 64 else name[:64] + "..."
        if call.error is not None:
            return self._error(label, call.error), True
        tools = self._tools()
        handler = tools.get(call.name or "")
        if handler is None:
            names = ", ".join([*tools, self.final_tool])
            return self._error(label, f"unknown tool {label!r}; tools: {names}"), True
        try:
            out = handler(call.arguments)
        except ToolError as exc:
            return self._error(label, str(exc)), True
        except Exception as exc:  # a bug in a tool must not end the episode or the run
            _log.exception("tool %s failed on %s", label, describe_action(call.arguments, 500))
            return f"[{label}] error: internal error in the tool ({type(exc).__name__})", True
        # The tools cap their own output with an exact note; cap here is only a safety net.
        return safe_text(f"[{label}]\n{cap(out, self.max_output_chars)}"), False

    def _run_python(self, arguments: dict[str, Any], files: Any) -> str:
        """The ``run_python_code`` handler over ``files`` (a directory, a FileSource, or a
        callable giving one once the sandbox is up): records the files the code read and a
        sandbox failure of the step."""
        try:
            return self._python(arguments, files)
        finally:
            self._step_files.extend(self._python.files_read)
            if self._python.infra_error is not None:
                self._infra_error = self._python.infra_error

    # --- render / close --------------------------------------------------------------------

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        blocks = [f"=== {role} ===\n{text}" for role, text in self._transcript]
        return "\n\n".join(blocks) + "\n"

    def close(self) -> None:
        """Stop the sandbox worker and release the episode's resources (idempotent)."""
        if hasattr(self, "_python"):
            self._python.close()
        with contextlib.suppress(Exception):
            self._close()
        self._closed = True


def score_info(score: Any, components: dict[str, float]) -> dict[str, Any]:
    """``info["score"]`` of a final step from a :class:`~isg_gym.rewards.Score` (the parsed
    answer as text, so that vector envs can stack it) and the reward's components."""
    return {
        "value": score.value,
        "parsed": None if score.parsed is None else str(score.parsed),
        "correct": score.correct,
        "abstained": score.abstained,
        "explanation": score.explanation,
        "components": components,
    }


def _call_result(call: ParsedCall, output: str, *, error: bool) -> dict[str, Any]:
    """One entry of ``info["tool_results"]``: the call, its observation text, whether it failed."""
    return {"name": call.name, "arguments": call.arguments, "output": output, "error": error}
