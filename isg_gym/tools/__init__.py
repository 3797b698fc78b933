"""The agent's tools: schemas, filesystem tools over a virtual repository, and the sandbox.

The sandbox (:mod:`isg_gym.tools.sandbox`) is imported lazily by the environment, not here.
"""

from isg_gym.tools.filesystem import ToolError, list_directory, read_text_file
from isg_gym.tools.schemas import TOOL_NAMES, describe_tools, tool_schema, tool_schemas

__all__ = [
    "TOOL_NAMES",
    "ToolError",
    "describe_tools",
    "list_directory",
    "read_text_file",
    "tool_schema",
    "tool_schemas",
]
