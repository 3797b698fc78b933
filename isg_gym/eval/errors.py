"""Errors of evaluation runs that are not the model's doing."""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """The run's first episodes all failed for a reason outside the model (an unreachable
    server, a wrong model name, a broken sandbox): the run stops instead of recording more."""
