"""Checking a tool call's arguments: each helper returns the value or raises :class:`ToolError`
with a message for the agent naming the argument, what was wrong and what is accepted."""

from __future__ import annotations

import math
from typing import Any

from isg_gym.tools.filesystem import ToolError

__all__ = ["MAX_ARG_CHARS", "ToolError", "as_float_list", "as_int", "as_str", "cap", "check_args"]

MAX_ARG_CHARS = 10_000


def check_args(arguments: dict[str, Any], allowed: tuple[str, ...], required: tuple[str, ...]):
    """Refuse unknown and missing arguments."""
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ToolError(f"unknown arguments {unknown}; allowed: {list(allowed)}")
    missing = [name for name in required if name not in arguments]
    if missing:
        raise ToolError(f"missing required arguments {missing}")


def as_int(value: Any, name: str, *, optional: bool = True) -> int | None:
    """An integer argument (a float with an integral value is accepted; None when optional)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ToolError(f"`{name}` must be an integer, got {type(value).__name__}")
    return value


def as_str(value: Any, name: str, limit: int = MAX_ARG_CHARS) -> str:
    """A string argument of at most ``limit`` characters."""
    if not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise ToolError(f"`{name}` is too long ({len(value)} characters; at most {limit})")
    return value


def as_float_list(value: Any, name: str, limit: int) -> list[float]:
    """A list of at most ``limit`` numbers (a single number is a list of one). Non-finite
    values are kept: the tool decides what they mean."""
    items = value if isinstance(value, list) else [value]
    if len(items) > limit:
        raise ToolError(f"`{name}` has {len(items)} values; at most {limit} per call")
    numbers = []
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise ToolError(f"`{name}` must be a number or a list of numbers, got "
                            f"{type(item).__name__}")  # fmt: skip
        try:
            numbers.append(float(item))
        except OverflowError:  # an int too large for a float
            numbers.append(math.copysign(math.inf, item))
    return numbers


def cap(text: str, limit: int, what: str = "output") -> str:
    """A safety net: the tools cap their own output (with an exact note) below ``limit``."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[{what} cut by the environment: {len(text) - limit} more characters]"
