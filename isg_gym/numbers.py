"""Significant figures: rounding and display shared by questions and the grader."""

from __future__ import annotations

import math

import numpy as np


def round_sig(x: float, sig_figs: int) -> float:
    """``x`` rounded to ``sig_figs`` significant figures (of its exact binary value)."""
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{max(sig_figs - 1, 0)}e}")


def format_sig(x: float, sig_figs: int) -> str:
    """``x`` at ``sig_figs`` significant figures as plain decimal text (no exponent)."""
    return np.format_float_positional(round_sig(x, sig_figs), trim="-")


def half_unit(x: float, sig_figs: int) -> float:
    """Half a unit in the last requested significant figure of ``x``."""
    if x == 0:
        return 0.5 * 10.0 ** (1 - sig_figs)
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(x))) - sig_figs + 1)
