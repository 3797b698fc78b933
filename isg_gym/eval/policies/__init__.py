"""Scripted policies: the oracle (privileged, 100%) and the floor baselines."""

from __future__ import annotations

from typing import Any

from isg_gym.eval.policies.baselines import AbstainPolicy, RandomPolicy
from isg_gym.eval.policies.oracle import OraclePolicy
from isg_gym.eval.policy import StepPolicy

SCRIPTED: dict[str, type[StepPolicy]] = {
    "oracle": OraclePolicy,
    "abstain": AbstainPolicy,
    "random": RandomPolicy,
}


def make_scripted(name: str, **kwargs: Any) -> StepPolicy:
    """A scripted policy by registry name (``oracle``, ``abstain``, ``random``)."""
    if name not in SCRIPTED:
        raise ValueError(f"unknown scripted policy {name!r}; known: {', '.join(sorted(SCRIPTED))}")
    return SCRIPTED[name](**kwargs)


__all__ = ["SCRIPTED", "AbstainPolicy", "OraclePolicy", "RandomPolicy", "make_scripted"]
