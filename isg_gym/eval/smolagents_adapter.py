"""smolagents agents on ISG-v0: the env's tools as smolagents ``Tool``s and an episode policy.

:func:`make_tools` wraps the env's four tools (names, descriptions and inputs from
:func:`isg_gym.tools.schemas.tool_schemas`); every call is one ``env.step``, so the env does all
the work (the Python sandbox, output caps, grading) and records it. :class:`SmolagentsPolicy`
plays each episode with a fresh smolagents agent:

- ``agent="tool_calling"`` (default): a ``ToolCallingAgent``. By default its system prompt is
  the env's own (``system_prompt="env"``), so the model sees the same prompt as with
  :class:`~isg_gym.eval.policy.ChatPolicy`; ``"smolagents"`` keeps smolagents' prompt and adds
  the env's task description as instructions. Calls smolagents would reject (an unknown tool,
  arguments that do not fit the schema) go to the env as they are, so the env records them and
  its error message is what the model reads.
- ``agent="code"``: a ``CodeAgent`` whose code never runs in this process. smolagents'
  ``LocalPythonExecutor`` is replaced by :class:`SandboxExecutor` (``CodeAgent(executor=...)``,
  smolagents' own hook for remote executors): each code block becomes one ``run_python_code``
  call, run by the env in its sandbox with the repository at ``/data``; ``final_answer(x)``
  inside the code is a sandbox-side function that prints a marker, and the executor submits
  the value through the env's ``final_answer`` tool. The other tools are not callable from the
  code (the sandbox has no way back to this process); the code reads ``/data`` directly.
  Variables persist between code blocks only when the env runs with
  ``python_session="persistent"``; the agent is told which.

The transcript (``episode.messages``) is rebuilt from the agent's memory in the OpenAI chat
shape: the system prompt and task the model saw, then per step an assistant message (text and
``tool_calls``) and one ``tool`` message per call with the observation smolagents gave back (a
``user`` message for step errors without a call). Note that smolagents itself sends tool calls
and observations to the model as plain assistant / user text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from isg_gym.eval.policy import EpisodePolicy, EpisodeState, Message
from isg_gym.tools.schemas import FINAL_ANSWER, RUN_PYTHON_CODE, tool_schemas

AGENTS = ("tool_calling", "code")
SYSTEM_PROMPTS = ("env", "smolagents")
INSTALL_HINT = "pip install 'isg-gym[smolagents]'"
FINAL_MARK = "@@ISG_FINAL_ANSWER@@"
GENERATION_ERROR = "Error in generating final LLM output"  # smolagents' provide_final_answer
NAME = "smolagents"

StepFn = Callable[[Any], tuple[str, float, bool, bool, dict[str, Any]]]


def _smolagents() -> Any:
    try:
        import smolagents
    except ImportError as exc:
        raise ImportError(
            f"the smolagents adapter needs smolagents; install it with `{INSTALL_HINT}`"
        ) from exc
    return smolagents


class EpisodeOver(RuntimeError):
    """A tool was called after the env ended the episode."""


class EnvSession:
    """The tools' shared handle on one episode: ``step`` is :meth:`EpisodeState.step` or
    ``env.step``. Calls are serialised (smolagents may run tool calls in threads) and refused
    once the env has ended the episode."""

    def __init__(self, step: StepFn) -> None:
        self._step = step
        self._lock = threading.Lock()
        self.done = False
        self.answered = False

    def call(self, name: str, arguments: Any) -> tuple[str, bool, dict[str, Any]]:
        """One env step with one tool call: (observation, terminated, info)."""
        with self._lock:
            if self.done:
                raise EpisodeOver("the episode is over; no more tool calls are accepted")
            observation, _, terminated, truncated, info = self._step(
                {"name": name, "arguments": arguments}
            )
            self.done = bool(terminated or truncated)
            if terminated and name == FINAL_ANSWER:
                self.answered = True
        return observation, bool(terminated), info

    def run_tool(self, name: str, arguments: Any) -> Any:
        """A tool's result for smolagents: the env's observation (errors included, as the env
        words them), or for ``final_answer`` the answer once the env accepted it."""
        observation, terminated, _ = self.call(name, arguments)
        if name == FINAL_ANSWER:
            if not terminated:  # the env refused the answer: smolagents must not stop
                raise ValueError(observation)
            return arguments.get("answer") if isinstance(arguments, dict) else arguments
        return observation


def _unwrap(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def _inputs(parameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """smolagents ``inputs`` from a JSON-Schema ``parameters`` object: the env's types and
    descriptions (and defaults, bounds) kept as they are; optional arguments are nullable."""
    required = set(parameters.get("required", []))
    inputs = {}
    for name, prop in parameters["properties"].items():
        entry = dict(prop)
        if name not in required:
            entry["nullable"] = True
        inputs[name] = entry
    return inputs


@lru_cache(maxsize=1)
def _tool_class() -> type:
    smolagents = _smolagents()

    class EnvTool(smolagents.Tool):
        """One of the env's tools; ``forward`` is one env step."""

        # inputs come from the env's schema: forward takes them generically
        skip_forward_signature_validation = True

        def __init__(self, schema: dict[str, Any], session: EnvSession) -> None:
            fn = schema["function"]
            self.name = fn["name"]
            self.description = fn["description"]
            self.inputs = _inputs(fn["parameters"])
            self.output_type = "any" if self.name == FINAL_ANSWER else "string"
            self.session = session
            super().__init__()

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            arguments = dict(zip(self.inputs, args, strict=False))
            arguments.update(kwargs)
            arguments = {k: v for k, v in arguments.items() if v is not None}
            return self.session.run_tool(self.name, arguments)

    return EnvTool


def make_tools(episode_or_env_step: EpisodeState | EnvSession | StepFn) -> list[Any]:
    """The env's four tools as smolagents ``Tool``s (``final_answer`` included: it replaces
    smolagents' ``FinalAnswerTool``), bound to an episode, a session, or an ``env.step``."""
    session = _session(episode_or_env_step)
    cls = _tool_class()
    return [cls(schema, session) for schema in tool_schemas()]


def _session(source: EpisodeState | EnvSession | StepFn) -> EnvSession:
    if isinstance(source, EnvSession):
        return source
    if isinstance(source, EpisodeState):
        return EnvSession(source.step)
    if callable(source):
        return EnvSession(source)
    raise TypeError(f"expected an EpisodeState, EnvSession or env.step, got {source!r}")


# --- the CodeAgent executor: code goes to the env's sandbox, never to this process ----------

_JSONABLE = "answer if isinstance(answer, (str, bool, int, float, type(None))) else str(answer)"
# The sandbox's final_answer prints the answer on a marker line (stdout and stderr, in case an
# output cap cuts one) and stops the cell. One line (a lambda) sent before the model's code, so
# that line numbers in tracebacks are off by exactly one.
PRELUDE = (
    "final_answer = lambda answer: [print(line, file=stream, flush=True) "
    f"for line in [{FINAL_MARK!r} + __import__('json').dumps({_JSONABLE})] "
    "for stream in (__import__('sys').stdout, __import__('sys').stderr)] "
    "and __import__('sys').exit(0)\n"
)


def _final_marker(observation: str) -> tuple[bool, Any]:
    """(found, value) of the final-answer marker line in a run_python_code observation."""
    for line in observation.splitlines():
        if line.startswith(FINAL_MARK):
            try:
                return True, json.loads(line[len(FINAL_MARK) :])
            except ValueError:
                continue  # cut by an output cap: try the stderr copy
    return False, None


@lru_cache(maxsize=1)
def _executor_class() -> type:
    _smolagents()
    from smolagents.local_python_executor import CodeOutput, PythonExecutor

    class SandboxExecutor(PythonExecutor):
        """A smolagents ``PythonExecutor`` that runs each code block as the env's
        ``run_python_code`` tool (the env's sandbox) and turns ``final_answer(x)`` into the
        env's ``final_answer`` call. It executes nothing itself."""

        def __init__(self, session: EnvSession) -> None:
            self.session = session
            self.state: dict[str, Any] = {}

        def send_tools(self, tools: dict[str, Any]) -> None:
            """Tools stay on this side; only ``final_answer`` exists in the sandbox."""

        def send_variables(self, variables: dict[str, Any]) -> None:
            if variables:
                raise ValueError("SandboxExecutor cannot send variables into the sandbox")

        def __call__(self, code_action: str) -> Any:
            observation, _, info = self.session.call(
                RUN_PYTHON_CODE, {"code": PRELUDE + code_action}
            )
            found, answer = _final_marker(observation)
            if found:
                self.session.run_tool(FINAL_ANSWER, {"answer": answer})
                return CodeOutput(output=answer, logs="", is_final_answer=True)
            results = info.get("tool_results") or []
            logs = observation.removeprefix(f"[{RUN_PYTHON_CODE}]\n")
            if not results or results[0].get("error") or "\n[error]\n" in f"\n{logs}":
                raise RuntimeError(logs)  # smolagents shows it to the model as the step's error
            return CodeOutput(output=None, logs=logs, is_final_answer=False)

    return SandboxExecutor


def code_instructions(persistent: bool) -> str:
    """What a CodeAgent is told about the sandbox its code runs in."""
    memory = (
        "Variables, imports and functions you define persist between code blocks."
        if persistent
        else "Each code block runs in a fresh Python process: variables, imports and functions "
        "do NOT persist between code blocks, so recompute what you need in every block."
    )
    return (
        "The task is about a scientific data repository. Your code runs in a sandbox (Python 3 "
        "with numpy, pandas and scipy; no network) where the repository's files are mounted "
        "read-only at /data, which is also the working directory: explore it with os.listdir / "
        "os.walk and read the files with open() or pandas. The only tool is "
        "final_answer(answer): call it with the answer value only (a string, number or "
        "boolean), or 'not possible' when the question cannot be answered from the data. " + memory
    )


# --- the policy -----------------------------------------------------------------------------


class SmolagentsPolicy(EpisodePolicy):
    """Plays each episode with a fresh smolagents agent (one per episode, so concurrent
    episodes share no state; ``model_factory()`` is called once per episode, and may return a
    shared model where that is safe, e.g. one ``VLLMModel`` with ``concurrency=1``).

    ``max_steps`` bounds the agent's model turns (default: the env's ``max_steps``; each tool
    call is one env step, so the env's step limit may end the episode first, as
    ``truncated``). An agent that stops without ``final_answer`` ends the episode unanswered
    (outcome ``no_answer``): smolagents' max-steps fallback text is kept in the transcript but
    never submitted or graded.
    ``agent_kwargs`` go to the agent's constructor (e.g. ``planning_interval``).
    """

    name = NAME

    def __init__(
        self,
        model_factory: Callable[[], Any],
        agent: str = "tool_calling",
        max_steps: int | None = None,
        *,
        system_prompt: str = "env",
        model_id: str | None = None,
        verbosity: int = -1,
        agent_kwargs: dict[str, Any] | None = None,
    ) -> None:
        _smolagents()
        if agent not in AGENTS:
            raise ValueError(f"agent must be one of {AGENTS}, got {agent!r}")
        if system_prompt not in SYSTEM_PROMPTS:
            raise ValueError(
                f"system_prompt must be one of {SYSTEM_PROMPTS}, got {system_prompt!r}"
            )
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.model_factory = model_factory
        self.agent = agent
        self.max_steps = max_steps
        self.system_prompt = system_prompt
        self.verbosity = verbosity
        self.agent_kwargs = dict(agent_kwargs or {})
        self._spare: Any = None
        self._lock = threading.Lock()
        if model_id is None:  # build the first episode's model now, to learn its id
            self._spare = model_factory()
            model_id = str(getattr(self._spare, "model_id", "") or "")
        self.model = model_id

    def _take_model(self) -> Any:
        with self._lock:
            spare, self._spare = self._spare, None
        return spare if spare is not None else self.model_factory()

    def build_agent(self, episode: EpisodeState, session: EnvSession, model: Any) -> Any:
        """A fresh smolagents agent bound to the episode's tools."""
        smolagents = _smolagents()
        from smolagents.memory import ActionStep

        prompt = episode.info.get("prompt") or {"system": "", "user": episode.observation}
        env = _unwrap(episode.env)
        max_steps = self.max_steps or int(getattr(env, "max_steps", 20))

        def stop_when_over(step: Any, agent: Any) -> None:
            if session.done:
                agent.interrupt()

        common = {
            "model": model,
            "max_steps": max_steps,
            "verbosity_level": self.verbosity,
            "step_callbacks": {ActionStep: stop_when_over},
            **self.agent_kwargs,
        }
        if self.agent == "code":
            persistent = getattr(env, "python_session", "fresh") == "persistent"
            return smolagents.CodeAgent(
                tools=[],
                executor=_executor_class()(session),
                additional_authorized_imports=["numpy", "pandas", "scipy"],
                instructions=code_instructions(persistent),
                **common,
            )
        cls = _tool_agent_class()
        templates = None
        instructions = None
        if self.system_prompt == "env":
            templates = _default_templates("toolcalling_agent.yaml")
            templates["system_prompt"] = "{% raw %}" + prompt["system"] + "{% endraw %}"
        else:
            instructions = prompt["system"].split("\n\nTools:", 1)[0]
        return cls(
            tools=make_tools(session),
            session=session,
            prompt_templates=templates,
            instructions=instructions,
            max_tool_threads=1,
            **common,
        )

    def play(self, episode: EpisodeState) -> None:
        prompt = episode.info.get("prompt") or {"system": "", "user": episode.observation}
        session = EnvSession(episode.step)
        agent = self.build_agent(episode, session, self._take_model())
        output: Any = None
        try:
            output = agent.run(prompt["user"])
        except Exception as exc:  # model failures, interrupts after the env ended the episode
            if not session.done:
                # an overflowed context is the agent's failure (graded wrong), not the server's
                kind = "model" if _context_overflow(exc) else "backend"
                episode.fail(kind, f"smolagents {type(exc).__name__}: {str(exc)[:500]}")
        finally:
            self._record(episode, agent)
            if hasattr(agent, "cleanup"):
                agent.cleanup()
        if session.done or episode.error is not None:
            return
        # The agent stopped without final_answer (max steps). smolagents' fallback text is not
        # an answer (it can be anything, e.g. a half-written call such as
        # "functions.list_directory:"): the episode ends unanswered, the text stays in the
        # transcript. A fallback that failed to generate is the server's failure.
        text = (_text(output) or "").strip()
        if text.startswith(GENERATION_ERROR):
            episode.fail("backend", f"smolagents: {text[:500]}")

    def _record(self, episode: EpisodeState, agent: Any) -> None:
        messages, prompt_tokens, completion_tokens, calls = memory_transcript(agent)
        episode.messages = messages
        episode.prompt_tokens += prompt_tokens
        episode.completion_tokens += completion_tokens
        episode.model_calls += calls


def _context_overflow(exc: BaseException) -> bool:
    """Whether a model call failed because the conversation outgrew the model's context: an
    HTTP 400 saying so, raised by the client or wrapped by smolagents."""
    from isg_gym.eval.backends.openai_compat import is_context_overflow

    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:  # the exception and its causes
        seen.add(id(error))
        status = getattr(error, "status_code", None)
        if status in (None, 400) and is_context_overflow(str(error)):
            return True
        error = error.__cause__ or error.__context__
    return False


def _default_templates(name: str) -> dict[str, Any]:
    import importlib.resources

    import yaml

    text = importlib.resources.files("smolagents.prompts").joinpath(name).read_text()
    return yaml.safe_load(text)


@lru_cache(maxsize=1)
def _tool_agent_class() -> type:
    smolagents = _smolagents()
    from smolagents.agents import ToolOutput
    from smolagents.tools import validate_tool_arguments

    class EnvToolCallingAgent(smolagents.ToolCallingAgent):
        """A ``ToolCallingAgent`` that lets the env judge the calls smolagents would reject, and
        keeps each call's observation for the transcript."""

        def __init__(self, *args: Any, session: EnvSession, **kwargs: Any) -> None:
            self.session = session
            self.call_outputs: dict[tuple[int, str], str] = {}  # (step, call id): observation
            super().__init__(*args, **kwargs)

        def process_tool_calls(self, chat_message: Any, memory_step: Any) -> Any:
            for item in super().process_tool_calls(chat_message, memory_step):
                if isinstance(item, ToolOutput):
                    key = (memory_step.step_number, str(item.id))
                    self.call_outputs[key] = item.observation
                yield item

        def execute_tool_call(self, tool_name: str, arguments: Any) -> Any:
            tool = self.tools.get(tool_name)
            if tool_name in self.managed_agents:
                return super().execute_tool_call(tool_name, arguments)
            try:
                if tool is None:
                    raise ValueError(tool_name)
                validate_tool_arguments(tool, arguments)
            except (ValueError, TypeError):
                try:  # an unknown tool or unfit arguments: the env answers (and records) it
                    return self.session.run_tool(tool_name, arguments)
                except Exception as exc:
                    raise smolagents.utils.AgentToolCallError(str(exc), self.logger) from exc
            return super().execute_tool_call(tool_name, arguments)

    return EnvToolCallingAgent


# --- transcript and token counts from the agent's memory -------------------------------------


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return (
            "".join(str(part.get("text", "")) for part in content if isinstance(part, dict)) or None
        )
    return str(content)


def _arguments_json(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, default=str)


def _step_calls(step: Any) -> list[dict[str, Any]]:
    """The step's tool calls in the OpenAI shape (as smolagents executed them)."""
    if getattr(step, "code_action", None) is not None:
        code = step.code_action
        call_id = step.tool_calls[0].id if step.tool_calls else f"call_{step.step_number}"
        return [_openai_call(call_id, RUN_PYTHON_CODE, {"code": code})]
    if step.tool_calls:
        return [_openai_call(c.id, c.name, c.arguments) for c in step.tool_calls]
    message = step.model_output_message
    if message is not None and message.tool_calls:
        return [
            _openai_call(c.id, c.function.name, c.function.arguments) for c in message.tool_calls
        ]
    return []


def _openai_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {
        "id": str(call_id),
        "type": "function",
        "function": {"name": str(name), "arguments": _arguments_json(arguments)},
    }


def memory_transcript(agent: Any) -> tuple[list[Message], int, int, int]:
    """(messages in the OpenAI chat shape, prompt tokens, completion tokens, model calls) of
    an agent's memory; tokens are smolagents' counts (0 when the model reports none)."""
    from smolagents.memory import ActionStep, PlanningStep, TaskStep
    from smolagents.utils import AgentMaxStepsError

    outputs: dict[tuple[int, str], str] = getattr(agent, "call_outputs", {})
    messages: list[Message] = [
        {"role": "system", "content": agent.memory.system_prompt.system_prompt}
    ]
    prompt_tokens = completion_tokens = calls = 0
    for step in agent.memory.steps:
        usage = getattr(step, "token_usage", None)
        if usage is not None:
            prompt_tokens += int(usage.input_tokens or 0)
            completion_tokens += int(usage.output_tokens or 0)
        if isinstance(step, TaskStep):
            messages.append({"role": "user", "content": f"New task:\n{step.task}"})
        elif isinstance(step, PlanningStep):
            calls += 1
            messages.append({"role": "assistant", "content": step.plan})
            messages.append({"role": "user", "content": "Now proceed and carry out this plan."})
        elif isinstance(step, ActionStep):
            if isinstance(step.error, AgentMaxStepsError):  # smolagents' last-resort answer
                calls += 1
                messages.append({"role": "assistant", "content": _text(step.action_output)})
                continue
            if step.model_input_messages is not None:
                calls += 1
            messages.extend(_step_messages(step, outputs))
    return messages, prompt_tokens, completion_tokens, calls


def _step_messages(step: Any, outputs: dict[tuple[int, str], str]) -> list[Message]:
    message = step.model_output_message
    text = _text(step.model_output) if step.model_output is not None else None
    if text is None and message is not None:
        text = _text(message.content)
    calls = _step_calls(step)
    out: list[Message] = []
    if message is None and not calls and step.error is None:
        return out
    if message is not None or calls:
        assistant: Message = {"role": "assistant", "content": text}
        if calls:
            assistant["tool_calls"] = calls
        out.append(assistant)
    error = f"Error:\n{step.error}" if step.error is not None else None
    for call in calls:
        content = outputs.get((step.step_number, call["id"]))
        if content is None:
            content = step.observations if len(calls) == 1 and step.observations else None
        if content is None:
            content = error or "[not executed]"
        out.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    if error is not None and not calls:
        out.append({"role": "user", "content": error})
    return out
