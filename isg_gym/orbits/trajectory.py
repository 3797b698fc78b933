"""A dense trajectory: knots of both stars' positions, velocities and accelerations, with
quintic Hermite interpolation between them (exact in position, velocity and acceleration at
every knot; its error is checked against direct integration in the tests)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Knots at increasing times ``t`` (s) of ``pos``, ``vel``, ``acc`` (SI), each of shape
    ``(n, 2, 3)`` (knot, star, axis). The window of the system is ``[t[0], t[-1]]``."""

    t: np.ndarray
    pos: np.ndarray
    vel: np.ndarray
    acc: np.ndarray

    def __post_init__(self) -> None:
        for name in ("t", "pos", "vel", "acc"):
            getattr(self, name).setflags(write=False)

    @property
    def start(self) -> float:
        return float(self.t[0])

    @property
    def end(self) -> float:
        return float(self.t[-1])

    def at(self, times: np.ndarray | list[float]) -> tuple[np.ndarray, np.ndarray]:
        """Positions and velocities (each ``(len(times), 2, 3)``) at ``times`` within the window."""
        times = np.asarray(times, dtype=float)
        if times.size and (times.min() < self.start or times.max() > self.end):
            raise ValueError(f"times must lie within [{self.start}, {self.end}]")
        i = np.clip(np.searchsorted(self.t, times, side="right") - 1, 0, len(self.t) - 2)
        h = (self.t[i + 1] - self.t[i])[:, None, None]
        s = ((times - self.t[i]) / (self.t[i + 1] - self.t[i]))[:, None, None]
        y0, y1 = self.pos[i], self.pos[i + 1]
        v0, v1 = self.vel[i] * h, self.vel[i + 1] * h
        a0, a1 = self.acc[i] * h * h, self.acc[i + 1] * h * h
        s2, s3 = s * s, s * s * s
        s4, s5 = s3 * s, s3 * s2
        pos = (
            (1 - 10 * s3 + 15 * s4 - 6 * s5) * y0
            + (s - 6 * s3 + 8 * s4 - 3 * s5) * v0
            + 0.5 * (s2 - 3 * s3 + 3 * s4 - s5) * a0
            + (10 * s3 - 15 * s4 + 6 * s5) * y1
            + (-4 * s3 + 7 * s4 - 3 * s5) * v1
            + 0.5 * (s3 - 2 * s4 + s5) * a1
        )
        dpos = (
            (-30 * s2 + 60 * s3 - 30 * s4) * y0
            + (1 - 18 * s2 + 32 * s3 - 15 * s4) * v0
            + 0.5 * (2 * s - 9 * s2 + 12 * s3 - 5 * s4) * a0
            + (30 * s2 - 60 * s3 + 30 * s4) * y1
            + (-12 * s2 + 28 * s3 - 15 * s4) * v1
            + 0.5 * (3 * s2 - 8 * s3 + 5 * s4) * a1
        )
        return pos, dpos / h

    def sample(self, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``count`` uniformly spaced times over the window, with positions and velocities."""
        times = np.linspace(self.start, self.end, count)
        pos, vel = self.at(times)
        return times, pos, vel
