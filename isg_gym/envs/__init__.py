"""Gymnasium environments: ``ISG-v0`` (:class:`ISGEnv`)."""

from isg_gym.envs.env import ISGEnv
from isg_gym.envs.spaces import ToolCallText, UnicodeText

__all__ = ["ISGEnv", "ToolCallText", "UnicodeText"]
