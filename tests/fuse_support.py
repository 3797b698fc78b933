"""Shared by the lazy-view tests: FUSE must work under CI (which installs fuse3), may be
missing elsewhere (the tests then skip, saying why), and no test may leave a mount behind."""

from __future__ import annotations

import os

import pytest

from isg_gym.tools.sandbox.lazyview import lazy_view_problem, live_mounts

ON_CI = os.environ.get("CI", "").lower() == "true"


def require_fuse() -> None:
    """Skip (fail under CI=true) when a lazy view cannot be mounted here."""
    problem = lazy_view_problem()
    if problem is None:
        return
    message = f"the lazy FUSE view cannot run here: {problem}"
    if ON_CI:
        pytest.fail(f"{message} (CI must install fuse3 and mfusepy)")
    pytest.skip(message)


def own_mounts() -> list[str]:
    """Lazy-view mounts served by this process."""
    return live_mounts(os.getpid())
