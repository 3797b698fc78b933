"""Gymnasium environments: ``ISG-v0`` (:class:`ISGEnv`) and the shared :class:`ToolEnv`.

Imported lazily: ``import isg_gym.envs`` loads no environment until one is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ISGEnv": "isg_gym.envs.env",
    "ToolEnv": "isg_gym.envs.tool_env",
    "ToolCallText": "isg_gym.envs.spaces",
    "UnicodeText": "isg_gym.envs.spaces",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
