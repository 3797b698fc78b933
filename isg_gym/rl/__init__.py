"""RL glue: ISG-v0 as a TRL ``environment_factory``, a SkyRL-Gym env (:mod:`isg_gym.rl.skyrl`,
needs ``skyrl-gym``) and the tool schemas for other trainers.

Nothing imported here imports TRL, SkyRL, vLLM or torch; the trainers import them themselves.
"""

from isg_gym.rl.schemas import export_tools, openai_tools, system_prompt
from isg_gym.rl.trl import TOOL_METHODS, ISGToolEnv, isg_reward, make_dataset_rows

__all__ = [
    "TOOL_METHODS",
    "ISGToolEnv",
    "export_tools",
    "isg_reward",
    "make_dataset_rows",
    "openai_tools",
    "system_prompt",
]
