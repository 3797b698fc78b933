"""Scripted policies of ISG-Orbits-v0: the expert solver and a random agent (always-abstain
is ISG-v0's :class:`~isg_gym.eval.policies.baselines.AbstainPolicy`).

Neither reads privileged info: they see the prompt, the public info (the task's type) and the
observations, like a model. The expert observes (budget mode: ``calls`` observe calls of
``per_call`` uniformly spaced times covering the window), then runs the analysis of
:mod:`isg_gym.eval.policies.orbits_fit` in the sandbox, sent as source text, over the
observation table (or the full trajectory file), and submits what it prints.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from isg_gym.envs.actions import MAX_CALLS
from isg_gym.eval.policies import orbits_fit
from isg_gym.eval.policies.baselines import ABSTAIN, TRIVIAL_CODE, RandomPolicy
from isg_gym.eval.policy import EpisodeState, PerEpisodePolicy, Turn, calls_message

_UNITS = re.compile(r"1 (\S+) = ([0-9.eE+-]+) m, 1 (\S+) = ([0-9.eE+-]+) s\)")
_WINDOW = re.compile(r"from time 0 to time ([0-9.eE+-]+) ")
_BUDGET = re.compile(r"at most (\d+) times per observe call and (\d+) observations in all")
_NOISE = re.compile(r"standard deviation of ([0-9.eE+-]+) ")
_STAR = re.compile(r"\bstar ([12])\b")
_ANSWER = re.compile(r"^ANSWER: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Setup:
    """What the prompt says about an episode."""

    mode: str  # "budget" or "full"
    metres: float  # per length unit
    seconds: float  # per time unit
    window_end: float
    per_call: int
    budget: int
    noise: float  # per coordinate, metres
    star: int | None

    @classmethod
    def from_episode(cls, episode: EpisodeState) -> Setup:
        prompt = episode.info.get("prompt") or {}
        system, user = str(prompt.get("system", "")), str(prompt.get("user", ""))
        units, window = _UNITS.search(system), _WINDOW.search(system)
        if units is None or window is None:
            raise ValueError("the prompt does not state the units and the observation window")
        budget = _BUDGET.search(system)
        noise = _NOISE.search(system)
        metres = float(units.group(2))
        star = _STAR.search(user)
        return cls(
            mode="budget" if budget else "full",
            metres=metres,
            seconds=float(units.group(4)),
            window_end=float(window.group(1)),
            per_call=int(budget.group(1)) if budget else 0,
            budget=int(budget.group(2)) if budget else 0,
            noise=float(noise.group(1)) * metres if noise else 0.0,
            star=int(star.group(1)) if star else None,
        )


def _send(episode: EpisodeState, calls: list[dict[str, Any]]) -> Turn:
    message = calls_message(calls, len(episode.steps) + 1)
    episode.messages.append(message)
    return Turn(action=message["tool_calls"])


def analysis_code(file: str, task: str, setup: Setup) -> str:
    """The program the expert runs in the sandbox: the fit module's source, then the call."""
    return (
        inspect.getsource(orbits_fit)
        + "\n\nimport pandas as pd\n"
        + f"table = pd.read_csv({file!r})\n"
        + "try:\n"
        + f"    answer = solve(table, {task!r}, {setup.star!r}, {setup.metres!r}, "
        + f"{setup.seconds!r}, {setup.noise!r})\n"
        + "except Exception as exc:  # the fit failed: say so, answer nothing useful\n"
        + "    print('fit failed:', repr(exc))\n"
        + f"    answer = {ABSTAIN!r}\n"
        + "print('ANSWER: ' + answer)\n"
    )


class OrbitsExpertPolicy(PerEpisodePolicy):
    """The expert solver: plans uniform observations, fits them in the sandbox, answers.

    ``calls`` observe calls (default 10, of ``per_call`` times each: 100 uniformly spaced
    observations with the default budget), as many per action as the env parses
    (:data:`~isg_gym.envs.actions.MAX_CALLS`); then one ``run_python_code`` call; then
    ``final_answer``.
    """

    name = "scripted-orbits-expert"
    model = "scripted-orbits-expert"

    def __init__(self, calls: int = 10) -> None:
        if calls < 1:
            raise ValueError(f"calls must be >= 1, got {calls}")
        self.calls = calls

    def _turn(self, episode: EpisodeState) -> Turn:
        state = episode.memory.setdefault("expert", {})
        try:
            if "setup" not in state:
                state["setup"] = setup = Setup.from_episode(episode)
                state["pending"] = self._observations(setup) if setup.mode == "budget" else []
            if state["pending"]:  # at most MAX_CALLS calls per message
                calls, state["pending"] = state["pending"][:MAX_CALLS], state["pending"][MAX_CALLS:]
                return _send(episode, calls)
            setup = state["setup"]
            if not state.get("analysed"):
                state["analysed"] = True
                file = "observations.csv" if setup.mode == "budget" else "trajectory.csv"
                code = analysis_code(file, str(episode.info["type"]), setup)
                return _send(episode, [{"name": "run_python_code", "arguments": {"code": code}}])
            output = str(episode.steps[-1].tool_results[0].get("output", ""))
            found = _ANSWER.findall(output)
            answer = found[-1].strip() if found else ABSTAIN
            return _send(episode, [{"name": "final_answer", "arguments": {"answer": answer}}])
        except (ValueError, KeyError, IndexError) as exc:
            return Turn(error=f"orbits expert: {exc}", error_kind="policy")

    def _observations(self, setup: Setup) -> list[dict[str, Any]]:
        count = min(setup.budget, self.calls * setup.per_call)
        times = np.linspace(0.0, setup.window_end, count)
        chunks = [times[i : i + setup.per_call] for i in range(0, count, setup.per_call)]
        return [{"name": "observe", "arguments": {"times": [float(t) for t in chunk]}}
                for chunk in chunks]  # fmt: skip


class OrbitsRandomPolicy(RandomPolicy):
    """ISG-v0's random agent with the orbit tools: random observe calls (random times in the
    window, sometimes outside it) or trivial Python, then a random answer: yes/no, a number
    log-uniform over 10^-5..10^45 (the span of SI answers), or "not possible"."""

    name = "scripted-orbits-random"
    model = "scripted-orbits-random"

    def _call(self, rng: np.random.Generator, files: list[str], episode: EpisodeState):
        try:
            setup = Setup.from_episode(episode)
        except ValueError:
            setup = None
        if setup is None or setup.mode == "full" or rng.random() < 0.3:
            code = TRIVIAL_CODE[int(rng.integers(len(TRIVIAL_CODE)))]
            return {"name": "run_python_code", "arguments": {"code": code}}
        count = int(rng.integers(1, setup.per_call + 1))
        times = rng.uniform(-0.1, 1.1, size=count) * setup.window_end
        return {"name": "observe", "arguments": {"times": [float(t) for t in times]}}

    def _answer(self, rng: np.random.Generator, words: list[str], episode: EpisodeState) -> str:
        if rng.random() < self.abstain_p:
            return ABSTAIN
        if rng.random() < 0.5:
            return "yes" if rng.random() < 0.5 else "no"
        sign = -1 if rng.random() < 0.1 else 1
        return f"{sign * 10.0 ** rng.uniform(-5, 45):.3g}"
