"""A fake sandbox for the environment tests (the real one lives in isg_gym.tools.sandbox)."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass
class FakeResult:
    stdout: str = ""
    stderr: str = ""
    value: object = None
    error: str | None = None
    timed_out: bool = False
    killed: bool = False
    duration_s: float = 0.0
    files_read: tuple[str, ...] = ()


class FakeSandbox:
    """Records calls; "listing" lists the files dir, anything else echoes the code."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.closed = 0

    def run(self, code: str, files_dir: str) -> FakeResult:
        self.calls.append((code, files_dir))
        if code == "listing":
            names = sorted(
                os.path.relpath(os.path.join(root, f), files_dir)
                for root, _, files in os.walk(files_dir)
                for f in files
            )
            return FakeResult(stdout="\n".join(names) + "\n", value=len(names))
        if code == "boom":
            return FakeResult(stderr="Traceback ...", error="ZeroDivisionError: division by zero")
        if code == "raise":
            raise RuntimeError("worker died")
        return FakeResult(stdout=code[:50], value=None)

    def close(self) -> None:
        self.closed += 1
