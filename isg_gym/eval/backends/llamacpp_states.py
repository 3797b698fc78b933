"""KV-cache snapshots of a llama.cpp context, one per conversation, for a backend that
interleaves several conversations on one model.

llama-cpp-python reuses the part of the context whose tokens start the new prompt (prefix
matching), so one conversation played turn after turn only evaluates each turn's new tokens.
With several conversations in turn the context holds the last one's tokens and the others
would be evaluated again from their first differing token. :class:`PrefixStates` keeps a
snapshot of the context after each conversation's turn (llama.cpp's own state copy: the KV
cells in use) and, before a prompt is evaluated, puts back the snapshot that shares the longest
prefix with it when that beats the live context.

A conversation's older snapshot is dropped when its newer one is stored (the newer one extends
it); beyond ``capacity_bytes`` the least recently used snapshots go.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

DEFAULT_CAPACITY_BYTES = 512 << 20


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    """How many leading tokens ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if len(differ) else n


class PrefixStates:
    """Context snapshots of one ``llama_cpp.Llama``, keyed by the tokens they hold."""

    def __init__(self, capacity_bytes: int = DEFAULT_CAPACITY_BYTES) -> None:
        if capacity_bytes < 0:
            raise ValueError("capacity_bytes must be >= 0")
        self.capacity_bytes = int(capacity_bytes)
        self._states: OrderedDict[bytes, tuple[np.ndarray, Any]] = OrderedDict()
        self.restores = 0

    def __len__(self) -> int:
        return len(self._states)

    @property
    def size_bytes(self) -> int:
        return sum(len(data) for _, data in self._states.values())

    def restore(self, llm: Any, prompt: Sequence[int]) -> int:
        """Load the snapshot sharing the longest prefix with ``prompt`` if it shares more than
        the live context does; returns the number of prompt tokens already in the context."""
        tokens = np.asarray(prompt, dtype=np.intc)
        live = common_prefix(np.asarray(llm.input_ids[: llm.n_tokens]), tokens)
        best_key, best = None, live
        for key, (held, _) in self._states.items():
            shared = common_prefix(held, tokens)
            if shared > best:
                best_key, best = key, shared
        if best_key is None:
            return live
        held, data = self._states[best_key]
        self._states.move_to_end(best_key)
        self._load(llm, held, data)
        self.restores += 1
        return best

    def save(self, llm: Any) -> None:
        """Store a snapshot of the live context (replacing the snapshots it extends)."""
        if self.capacity_bytes == 0 or llm.n_tokens == 0:
            return
        import llama_cpp

        held = np.array(llm.input_ids[: llm.n_tokens], dtype=np.intc)
        for key, (older, _) in list(self._states.items()):
            if len(older) <= len(held) and common_prefix(older, held) == len(older):
                del self._states[key]
        ctx = llm._ctx.ctx  # the context handle Llama.save_state copies from
        size = llama_cpp.llama_state_get_size(ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(ctx, buffer, size)
        data = bytes(buffer)[:written]
        if len(data) > self.capacity_bytes:
            return
        self._states[held.tobytes()] = (held, data)
        while self.size_bytes > self.capacity_bytes:
            self._states.popitem(last=False)

    @staticmethod
    def _load(llm: Any, held: np.ndarray, data: bytes) -> None:
        """Put a snapshot back the way ``Llama.load_state`` does, without its logits copy."""
        import llama_cpp

        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if llama_cpp.llama_state_set_data(llm._ctx.ctx, buffer, len(data)) != len(data):
            raise RuntimeError("llama.cpp refused a saved context state")
        llm.input_ids[: len(held)] = held
        llm.n_tokens = len(held)
        llm._requires_eval = True  # the next prompt token is evaluated before sampling

    def clear(self) -> None:
        self._states.clear()
