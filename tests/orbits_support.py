"""Shared helpers of the orbit tests: REBOUND is an optional extra, so its tests skip without
it locally, but fail under ``CI=true`` (where the extra must be installed)."""

from __future__ import annotations

import os

import pytest


def require_rebound() -> None:
    try:
        import rebound  # noqa: F401
    except ImportError:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("rebound is not installed (pip install 'isg-gym[orbits]'); CI needs it")
        pytest.skip("rebound is not installed (pip install 'isg-gym[orbits]')")
