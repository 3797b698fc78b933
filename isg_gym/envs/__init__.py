"""Gymnasium environments: ``ISG-v0`` (:class:`ISGEnv`)."""

# The env's pair-statistic questions need scipy.stats (about 1 s and 60 MB to import). isg_gym
# imports it on first use; an env imports it up front, so that no reset pays for it.
import scipy.stats  # noqa: F401

from isg_gym.envs.env import ISGEnv
from isg_gym.envs.spaces import ToolCallText, UnicodeText

__all__ = ["ISGEnv", "ToolCallText", "UnicodeText"]
