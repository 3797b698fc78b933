"""Evaluating agents on ISG-v0: rollout runner, model backends, policies, splits, reports.

Three lines evaluate a model behind any OpenAI-compatible server::

    from isg_gym.eval import ChatPolicy, evaluate
    from isg_gym.eval.backends.openai_compat import OpenAIBackend
    evaluate(ChatPolicy(OpenAIBackend("Qwen/Qwen3-8B", base_url="http://127.0.0.1:8000/v1")),
             "isg-500", "runs/qwen3-8b")
"""

from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policy import ChatPolicy, EpisodePolicy, EpisodeState, Policy, StepPolicy, Turn
from isg_gym.eval.runner import evaluate
from isg_gym.eval.splits import SPLITS, resolve_split, train_env_kwargs

__all__ = [
    "SPLITS",
    "ChatPolicy",
    "EpisodePolicy",
    "EpisodeState",
    "InfrastructureError",
    "Policy",
    "StepPolicy",
    "Turn",
    "evaluate",
    "resolve_split",
    "train_env_kwargs",
]
