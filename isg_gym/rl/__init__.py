"""RL glue: ISG-v0 as a TRL ``environment_factory`` and the tool schemas for other trainers.

Nothing here imports TRL, vLLM or torch; the trainers import them themselves.
"""

from isg_gym.rl.schemas import export_tools, openai_tools, system_prompt
from isg_gym.rl.trl import TOOL_METHODS, ISGToolEnv, make_dataset_rows

__all__ = [
    "TOOL_METHODS",
    "ISGToolEnv",
    "export_tools",
    "make_dataset_rows",
    "openai_tools",
    "system_prompt",
]
