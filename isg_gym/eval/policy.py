"""Policies: what plays an episode. Step policies act on a batch of live episodes at once
(chat models, scripted baselines); episode policies drive one env to the end themselves
(smolagents agents).

Every policy keeps the episode's transcript in :attr:`EpisodeState.messages`, in the OpenAI chat
shape, whether or not a chat model is involved: system and user prompt, then assistant turns
(``content`` and ``tool_calls``) answered by one ``tool`` message per structured call, or by a
``user`` message with the env's observation when the calls were parsed from text.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from isg_gym.envs.actions import safe_text
from isg_gym.eval.backends.base import ChatBackend, Completion, Message
from isg_gym.tools.schemas import FINAL_ANSWER


@dataclass
class StepLog:
    """What one ``env.step`` did, as the evaluation records it."""

    tool_results: list[dict[str, Any]]
    parse_error: str | None
    files_read: list[str]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]


@dataclass
class EpisodeState:
    """One live episode: its env, the reset info a policy may read (the public part, or all of
    it for ``privileged`` policies), the answer key kept for the record, the transcript, token
    counts and the log of env steps. ``memory`` is the policy's own."""

    index: int
    question_id: str
    env: Any
    observation: str
    info: dict[str, Any]
    gold: dict[str, Any] = field(default_factory=dict)  # the answer key: for the record only
    messages: list[Message] = field(default_factory=list)
    steps: list[StepLog] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    error: str | None = None  # a backend, sandbox or policy failure that ended the episode
    error_kind: str | None = None  # "backend" | "sandbox" | "policy" | "model" with error
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None  # when it ended (its record may be written later)
    memory: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.error is not None or bool(
            self.steps and (self.steps[-1].terminated or self.steps[-1].truncated)
        )

    @property
    def final_info(self) -> dict[str, Any]:
        return self.steps[-1].info if self.steps else {}

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """``env.step(action)``, logged."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.observation = observation
        self.steps.append(
            StepLog(
                tool_results=list(info.get("tool_results", [])),
                parse_error=info.get("parse_error"),
                files_read=list(info.get("files_read", [])),
                reward=float(reward),
                terminated=bool(terminated),
                truncated=bool(truncated),
                info=info,
            )
        )
        if info.get("infra_error"):  # the environment failed: not an answer, ends the episode
            self.fail("sandbox", str(info["infra_error"]))
        if self.done and self.ended is None:
            self.ended = time.perf_counter()
        return observation, reward, terminated, truncated, info

    def fail(self, kind: str, message: str) -> None:
        """End the episode with an infrastructure or policy failure (the first one counts)."""
        if self.error is None:
            self.error, self.error_kind = message, kind
        if self.ended is None:
            self.ended = time.perf_counter()


@dataclass
class Turn:
    """A policy's move in one episode: the action for ``env.step`` (assistant text, or a list of
    tool-call dicts), or ``error`` to end the episode without an answer."""

    action: Any = None
    error: str | None = None
    # "backend" (the model's server failed), "policy" (a policy bug), or "model" (the model
    # overflowed its context: its own failure, graded as a wrong answer)
    error_kind: str = "backend"


class Policy:
    """Base of all policies. ``privileged`` says whether the policy reads the gold-side info
    (``params``, ``sig_figs``); only scripted baselines such as the oracle may."""

    name: str = "policy"
    model: str = ""
    privileged: bool = False
    # Under ``evaluate(ray=...)``: False ships the policy to the Ray actors, which play whole
    # episodes (scripted baselines); True keeps it on the driver, stepping envs in the actors
    # (a model behind a server or on the driver's GPU).
    on_driver: bool = False

    def begin(self, episode: EpisodeState) -> None:
        """Start an episode: the transcript opens with the env's system and user prompt."""
        prompt = episode.info.get("prompt") or {"system": "", "user": episode.observation}
        episode.messages = [
            {"role": "system", "content": prompt["system"]},
            {"role": "user", "content": prompt["user"]},
        ]

    def close(self) -> None:
        """Release the policy's resources (model, connections)."""


class StepPolicy(Policy, ABC):
    """Acts on every live episode once per round (one batched model call per round)."""

    @abstractmethod
    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        """One turn per episode, same order."""

    def observe(self, episode: EpisodeState, observation: str, info: dict[str, Any]) -> None:
        """Append the env's answer to the transcript (tool messages or a user message)."""
        last = episode.messages[-1] if episode.messages else {}
        calls = last.get("tool_calls") if last.get("role") == "assistant" else None
        if not calls:
            episode.messages.append({"role": "user", "content": observation})
            return
        results = info.get("tool_results", [])
        for i, call in enumerate(calls):
            content = results[i]["output"] if i < len(results) else "[not executed]"
            episode.messages.append(
                {"role": "tool", "tool_call_id": call.get("id", f"call_{i}"), "content": content}
            )


class EpisodePolicy(Policy, ABC):
    """Plays a whole episode itself through :meth:`EpisodeState.step` (one thread each)."""

    @abstractmethod
    def play(self, episode: EpisodeState) -> None:
        """Drive the episode until the env ends it (or set ``episode.error``)."""


class PerEpisodePolicy(StepPolicy, EpisodePolicy, ABC):
    """A policy whose turn in one episode depends on that episode only (the scripted policies):
    :meth:`_turn` per episode. It is both kinds: batched rounds through :meth:`act`, or whole
    episodes through :meth:`play`, which the runner prefers (no episode waits for the slowest
    of a round)."""

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        return [self._turn(episode) for episode in episodes]

    def play(self, episode: EpisodeState) -> None:
        while not episode.done:
            turn = self._turn(episode)
            if turn.error is not None:
                episode.fail(turn.error_kind, turn.error)
                return
            observation, _, _, _, info = episode.step(turn.action)
            self.observe(episode, observation, info)

    @abstractmethod
    def _turn(self, episode: EpisodeState) -> Turn:
        """The next turn of ``episode``."""


def calls_message(calls: list[dict[str, Any]], step: int, text: str = "") -> Message:
    """An assistant message carrying ``{"name", "arguments"}`` calls in the OpenAI shape."""
    tool_calls = [
        {
            "id": f"call_{step}_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
        }
        for i, c in enumerate(calls)
    ]
    # content "" rather than None: some OpenAI-compatible servers (llama.cpp's) refuse null.
    return {"role": "assistant", "content": text or "", "tool_calls": tool_calls}


def _safe_call(call: Any) -> Any:
    """A model's tool call with every string made encodable (see ``safe_text``)."""
    if isinstance(call, str):
        return safe_text(call)
    if isinstance(call, dict):
        return {k: _safe_call(v) for k, v in call.items()}
    if isinstance(call, list):
        return [_safe_call(v) for v in call]
    return call


class ChatPolicy(StepPolicy):
    """A chat model behind a :class:`ChatBackend`: every round sends the transcripts of all live
    episodes as one batch and turns each completion into an action.

    With ``native_tools`` the env's tool schemas go to the backend: an API returns structured
    tool calls, llama.cpp decodes text under a grammar built from them. Otherwise the model
    writes Hermes ``<tool_call>`` blocks as free text. Either way text is parsed by the env.

    ``answer_on_last_step`` (with ``native_tools``): on an episode's last env step only the
    ``final_answer`` tool is offered, so a model that has not answered by then must answer
    (graded as usual) rather than run out of steps.
    """

    on_driver = True  # one batched model call per round for the episodes of every actor

    def __init__(
        self, backend: ChatBackend, native_tools: bool = True, answer_on_last_step: bool = False
    ) -> None:
        self.backend = backend
        self.native_tools = native_tools
        self.answer_on_last_step = answer_on_last_step
        self.name = backend.name
        self.model = backend.model

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        if not episodes:
            return []
        tools = episodes[0].info.get("tools", []) if self.native_tools else []
        final = [t for t in tools if t.get("function", {}).get("name") == FINAL_ANSWER] or tools
        offered = [final if self._last_step(ep) else tools for ep in episodes]
        completions: list[Completion | None] = [None] * len(episodes)
        for group in ({id(t): t for t in offered}).values():  # one batch per tool set
            index = [i for i, t in enumerate(offered) if t is group]
            out = self.backend.complete([episodes[i].messages for i in index], group)
            if len(out) != len(index):
                raise RuntimeError(
                    f"backend {self.name!r} returned {len(out)} completions for "
                    f"{len(index)} conversations"
                )
            for i, completion in zip(index, out, strict=True):
                completions[i] = completion
        return [self._turn(ep, c) for ep, c in zip(episodes, completions, strict=True)]

    def _last_step(self, episode: EpisodeState) -> bool:
        """Whether ``answer_on_last_step`` applies: the episode's next step is its last."""
        if not self.answer_on_last_step:
            return False
        limit = getattr(getattr(episode.env, "unwrapped", episode.env), "max_steps", None)
        return limit is not None and len(episode.steps) >= int(limit) - 1

    @staticmethod
    def _turn(episode: EpisodeState, completion: Completion | None) -> Turn:
        assert completion is not None  # act() fills every slot
        episode.model_calls += 1
        episode.prompt_tokens += completion.prompt_tokens
        episode.completion_tokens += completion.completion_tokens
        if completion.error is not None:
            return Turn(error=completion.error, error_kind=completion.error_kind)
        # Model text goes back to the server in the next request: no lone surrogates (they do
        # not encode), and content "" rather than None (llama.cpp's server refuses null).
        text = safe_text(completion.text or "")
        message: Message = {"role": "assistant", "content": text}
        if completion.tool_calls:
            calls = [_safe_call(c) for c in completion.tool_calls]
            message["tool_calls"] = calls
            episode.messages.append(message)
            return Turn(action=calls)
        episode.messages.append(message)
        return Turn(action=text)

    def close(self) -> None:
        self.backend.close()
