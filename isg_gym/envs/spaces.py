"""Text spaces that accept any Unicode string (Gymnasium's ``Text`` rejects most prose).

Gymnasium's ``AsyncVectorEnv(shared_memory=True)`` (its default) cannot carry them: its shared
memory for ``Text`` is decoded once, at construction, so every later observation would be the
same 1,048,576-character placeholder. Building a shared-memory buffer for these spaces is
therefore an error that says to pass ``shared_memory=False``.
"""

from __future__ import annotations

import json
import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text
from gymnasium.vector.utils import create_shared_memory

_SAMPLE_ALPHABET = string.ascii_letters + string.digits + string.punctuation + " \n"


class UnicodeText(Text):
    """Any ``str`` of ``min_length`` to ``max_length`` characters (all of Unicode allowed).

    It subclasses :class:`gymnasium.spaces.Text` only so that vector environments batch it like
    text; ``charset`` there is used for sampling, never for membership.

    ``gym.vector.AsyncVectorEnv`` needs ``shared_memory=False`` with these spaces (its default
    ``True`` raises :class:`SharedMemoryTextError` at construction: Gymnasium's shared memory
    for text would return a placeholder string on every step). ``SyncVectorEnv`` needs nothing.
    """

    def __init__(
        self, max_length: int = 1 << 20, min_length: int = 0, seed: int | None = None
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_ALPHABET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Random printable ASCII text (masks are not supported)."""
        rng = self.np_random  # the space's own seeded generator (Space.seed)
        length = int(rng.integers(self.min_length, min(self.max_length, 64) + 1))
        chars = rng.choice(list(_SAMPLE_ALPHABET), size=length)
        return "".join(chars)

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.min_length, self.max_length))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.min_length}, {self.max_length})"


class ToolCallText(UnicodeText):
    """The action space: any assistant message; :meth:`sample` returns a valid tool call.

    Samples are filesystem tool calls (``list_directory`` / ``read_text_file`` of the README)
    in Hermes format, so they never need the sandbox and never end an episode.
    """

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        rng: np.random.Generator = self.np_random
        kind = int(rng.integers(3))
        if kind == 0:
            call = {"name": "list_directory", "arguments": {"path": "/"}}
        elif kind == 1:
            depth = int(rng.integers(1, 4))
            call = {"name": "list_directory", "arguments": {"path": "/", "depth": depth}}
        else:
            head = int(rng.integers(1, 20))
            call = {"name": "read_text_file", "arguments": {"path": "README.md", "head": head}}
        text = f"<tool_call>{json.dumps(call)}</tool_call>"
        return text if len(text) <= self.max_length else text[: self.max_length]


SHARED_MEMORY_MESSAGE = (
    "ISG-v0 observations are free text, which Gymnasium's shared memory cannot carry (every "
    "step would return the same placeholder string): pass shared_memory=False, e.g. "
    "gym.vector.AsyncVectorEnv(env_fns, shared_memory=False) or gym.make_vec(\"ISG-v0\", "
    "num_envs, vectorization_mode=\"async\", vector_kwargs={\"shared_memory\": False})"
)


class SharedMemoryTextError(ValueError):
    """``AsyncVectorEnv(shared_memory=True)`` over a :class:`UnicodeText` space."""


@create_shared_memory.register(UnicodeText)
def _refuse_shared_memory(space: UnicodeText, n: int = 1, ctx: Any = None) -> Any:
    raise SharedMemoryTextError(SHARED_MEMORY_MESSAGE)
