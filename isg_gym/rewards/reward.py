"""Scalar rewards for RL: a weighted sum of named components."""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.qa.base import Question
from isg_gym.rewards.extract import extract
from isg_gym.rewards.rubric import grade


@dataclass(frozen=True)
class RewardConfig:
    """Weights of the reward components.

    ``correctness``: :func:`~isg_gym.rewards.rubric.grade`'s value (0 or 1). ``format``: 1.0 when
    an answer could be extracted in one of the accepted forms (JSON ``{"answer": ...}``,
    ``\\boxed{...}`` or a plain value), else 0.0.
    """

    correctness: float = 1.0
    format: float = 0.0


def reward(
    question: Question, answer_text: str, config: RewardConfig | None = None
) -> tuple[float, dict[str, float]]:
    """``(total, components)``: total is the config-weighted sum of the named components."""
    config = config or RewardConfig()
    components = {
        "correctness": grade(question, answer_text).value,
        "format": 1.0 if extract(answer_text).form is not None else 0.0,
    }
    total = config.correctness * components["correctness"] + config.format * components["format"]
    return total, components
