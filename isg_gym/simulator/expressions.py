"""Compose dependent-variable expressions from an archetype's causal sketch.

Every term maps its input to a spread of about one unit (standardised by the input's centre and
scale), is weighted by the effect's strength and signed by its direction; the weighted sum is
scaled so that the dependent spans its typical range. Forms are written so that no term can hit
a domain error: ``saturating`` and ``log`` are used only on non-negative inputs (else they fall
back to ``tanh``/linear), and ``log`` is shifted away from zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from isg_gym.simulator.lexicon import Effect


@dataclass(frozen=True)
class InputScale:
    """Where an input lives: centre, spread, whether it is never negative, and (for
    non-negative inputs) the mean and spread of ``log(x + shift)``."""

    centre: float
    scale: float
    nonnegative: bool
    log_centre: float = 0.0
    log_spread: float = 1.0

    @property
    def shift(self) -> float:
        return max(0.1 * self.centre, 1e-3)

    @classmethod
    def from_samples(cls, x: np.ndarray, centre: float | None = None, scale: float | None = None):
        """Scale from representative values (the lexicon's path values or a fixed sample)."""
        centre = float(x.mean()) if centre is None else centre
        scale = (float(x.std()) or 1.0) if scale is None else scale
        nonneg = bool(x.min() >= 0)
        if not nonneg:
            return cls(centre, scale, False)
        logs = np.log(x + max(0.1 * centre, 1e-3))
        return cls(centre, scale, True, float(logs.mean()), max(float(logs.std()), 0.05))


def num(x: float) -> str:
    """A number as it appears in an expression: 6 significant digits, no exponent surprises."""
    text = f"{x:.6g}"
    return f"({text})" if text.startswith("-") else text


def _std(name: str, s: InputScale) -> str:
    return f"(({name} - {num(s.centre)})/{num(s.scale)})"


def term(
    effect: Effect, scales: dict[str, InputScale], shares: dict[str, dict[str, float]],
    rng: np.random.Generator,
) -> str:  # fmt: skip
    """One effect as a sub-expression with a spread of about one unit, centred on zero."""
    x, s = effect.input, scales.get(effect.input)
    match effect.form:
        case "level":
            share = shares.get(x, {}).get(effect.level, 0.5)
            return f"2*(({x} == {effect.level!r}) - {num(share)})"
        case "linear":
            return _std(x, s)
        case "saturating" if s.nonnegative:
            k = max(s.centre, 1e-3)
            return f"(2*{x}/({x} + {num(k)}) - 1)"
        case "saturating":
            return f"tanh{_std(x, s)}"
        case "optimum":
            opt = s.centre + rng.uniform(-0.5, 0.5) * s.scale
            return f"(2*exp(-(({x} - {num(opt)})/{num(1.5 * s.scale)})**2) - 1)"
        case "threshold":
            cut = s.centre + rng.uniform(-0.5, 0.5) * s.scale
            return f"(2*({x} > {num(cut)}) - 1)"
        case "log" if s.nonnegative:
            return f"((log({x} + {num(s.shift)}) - {num(s.log_centre)})/{num(s.log_spread)})"
        case "log":
            return _std(x, s)
        case "interaction":
            return f"({_std(x, s)}*{_std(effect.other, scales[effect.other])})"
    raise ValueError(f"unknown effect form {effect.form!r}")


def compose(
    effects: list[Effect],
    scales: dict[str, InputScale],
    shares: dict[str, dict[str, float]],
    low: float,
    high: float,
    rng: np.random.Generator,
) -> str:
    """``mid + half * sum(w_i d_i term_i) / norm`` as an expression string.

    ``shares`` gives each categorical input's share per level, so level effects are centred.
    """
    mid, half = (low + high) / 2, (high - low) / 2
    weights = [e.strength * rng.uniform(0.7, 1.3) for e in effects]
    norm = 1.5 * math.sqrt(sum(w * w for w in weights))
    out = num(mid)
    for effect, w in zip(effects, weights, strict=True):
        coef = effect.direction * half * w / norm
        out += f" {'-' if coef < 0 else '+'} {num(abs(coef))}*{term(effect, scales, shares, rng)}"
    return out
