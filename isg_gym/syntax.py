"""``ast.parse`` safe to call from several threads at once.

CPython 3.11 keeps the recursion depth of its AST constructor in state shared by the threads of
a process; two threads parsing at once (``isg eval --concurrency K`` plays episodes in threads)
can fail with ``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905).
Every parse of the package goes through one lock.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source, mode=mode)`` under the process-wide parse lock."""
    with _LOCK:
        return ast.parse(source, mode=mode)
