"""Floor baselines: always abstain, and a seeded random agent.

Neither reads privileged info: they see only the prompt and the observations.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from isg_gym.eval.policy import EpisodeState, PerEpisodePolicy, StepPolicy, Turn, calls_message
from isg_gym.numbers import format_sig
from isg_gym.seeding import derive

ABSTAIN = "not possible"
TRIVIAL_CODE = (
    "print(1 + 1)",
    "import os\nprint(sorted(os.listdir('.')))",
    "import math\nprint(math.pi)",
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _send(episode: EpisodeState, call: dict[str, Any]) -> Turn:
    """Record ``call`` as an assistant message and return it as the episode's action."""
    message = calls_message([call], len(episode.steps) + 1)
    episode.messages.append(message)
    return Turn(action=message["tool_calls"])


def _final(answer: str) -> dict[str, Any]:
    return {"name": "final_answer", "arguments": {"answer": answer}}


class AbstainPolicy(StepPolicy):
    """Answers "not possible" at once: right exactly on the unanswerable questions."""

    name = "scripted-abstain"
    model = "scripted-abstain"

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        return [_send(ep, _final(ABSTAIN)) for ep in episodes]


class RandomPolicy(PerEpisodePolicy):
    """A seeded random agent: 0..``max_tool_calls`` random tool calls, then a random answer.

    The calls are a listing of "/" at a random depth, a read of a file seen in a listing (or
    README.md), or a trivial ``run_python_code``. The answer has a random shape: an integer in
    0..100, a float at 3 significant figures, yes/no, a word seen in a listing (or the question),
    or, with probability ``abstain_p``, "not possible". Each episode draws from
    ``derive(seed, "random-policy", question_id)``, so runs are reproducible whatever the
    batching or concurrency.
    """

    name = "scripted-random"
    model = "scripted-random"

    def __init__(self, seed: int = 0, max_tool_calls: int = 3, abstain_p: float = 0.05) -> None:
        if max_tool_calls < 0:
            raise ValueError(f"max_tool_calls must be >= 0, got {max_tool_calls}")
        if not 0.0 <= abstain_p <= 1.0:
            raise ValueError(f"abstain_p must be within [0, 1], got {abstain_p}")
        self.seed = seed
        self.max_tool_calls = max_tool_calls
        self.abstain_p = abstain_p

    def _turn(self, episode: EpisodeState) -> Turn:
        state = episode.memory.get("random")
        if state is None:
            stream = derive(self.seed, "random-policy", episode.question_id)
            calls = int(stream.integers(self.max_tool_calls + 1))
            state = {"rng": stream, "calls_left": calls, "files": [], "words": []}
            episode.memory["random"] = state
        else:
            self._learn(state, episode)
        rng: np.random.Generator = state["rng"]
        if state["calls_left"] > 0:
            state["calls_left"] -= 1
            return _send(episode, self._call(rng, state["files"], episode))
        return _send(episode, _final(self._answer(rng, state["words"], episode)))

    @staticmethod
    def _learn(state: dict[str, Any], episode: EpisodeState) -> None:
        """Collect file paths and words from the last step's listings."""
        if not episode.steps:
            return
        for result in episode.steps[-1].tool_results:
            if result.get("name") != "list_directory" or result.get("error"):
                continue
            for line in str(result.get("output", "")).splitlines()[2:]:
                entry = line.strip()
                if not entry or entry.startswith("[") or " " in entry:
                    continue
                if not entry.endswith("/") and "/" + entry not in state["files"]:
                    state["files"].append("/" + entry)
                for word in _WORD.findall(entry):
                    if word not in state["words"]:
                        state["words"].append(word)

    def _call(
        self, rng: np.random.Generator, files: list[str], episode: EpisodeState
    ) -> dict[str, Any]:
        """One random exploring call (``episode``: for subclasses whose calls depend on it)."""
        kind = int(rng.integers(3))
        if kind == 0:
            depth = int(rng.integers(1, 4))
            return {"name": "list_directory", "arguments": {"path": "/", "depth": depth}}
        if kind == 1:
            paths = files or ["/README.md"]
            return {"name": "read_text_file", "arguments": {"path": str(rng.choice(paths))}}
        code = TRIVIAL_CODE[int(rng.integers(len(TRIVIAL_CODE)))]
        return {"name": "run_python_code", "arguments": {"code": code}}

    def _answer(self, rng: np.random.Generator, words: list[str], episode: EpisodeState) -> str:
        if rng.random() < self.abstain_p:
            return ABSTAIN
        shape = int(rng.integers(4))
        if shape == 0:
            return str(int(rng.integers(101)))
        if shape == 1:
            value = 10.0 ** rng.uniform(-3, 3) * (-1 if rng.random() < 0.2 else 1)
            return format_sig(value, 3)
        if shape == 2:
            return "yes" if rng.random() < 0.5 else "no"
        pool = words or _WORD.findall(str(episode.info.get("prompt", {}).get("user", ""))) or ["x"]
        return str(pool[int(rng.integers(len(pool)))])
