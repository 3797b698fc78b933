"""What an observer sees: both stars' positions at chosen times, in the system's units.

Times are in the system's time unit within the window ``[0, window_end(system)]`` (the end as
shown to the agent, 10 significant figures; the simulated window is mapped onto it exactly).
Positions are the dense trajectory's, plus Gaussian noise when the system has it (drawn from
``derive(seed, "orbits-noise", VERSION, time)``, so an observation does not depend on what
else was asked or in which order), with z dropped when the system is projected on the sky.
"""

from __future__ import annotations

import io

import numpy as np

from isg_gym.orbits.simulate import trajectory
from isg_gym.orbits.system import System
from isg_gym.orbits.units import unit_system
from isg_gym.seeding import derive

NOISE_VERSION = 1
FULL_ROWS = 2000  # rows of the full-mode trajectory file


def window_end(system: System) -> float:
    """The window's end in the system's time unit, as shown (10 significant figures)."""
    return float(f"{system.window_s / unit_system(system.units).seconds_per_time:.10g}")


def columns(system: System) -> list[str]:
    axes = ("x", "y") if system.projected else ("x", "y", "z")
    return ["time", *(f"star{s}_{a}" for s in (1, 2) for a in axes)]


def observe(system: System, times: np.ndarray | list[float]) -> np.ndarray:
    """Rows ``(len(times), len(columns))``: each time followed by the positions (system
    units). ``times`` must lie within the window (the caller checks and explains)."""
    times = np.asarray(times, dtype=float)
    end = window_end(system)
    if times.size and (times.min() < 0 or times.max() > end):
        raise ValueError(f"observation times must lie within [0, {end:.10g}]")
    pos, _ = trajectory(system).at(times / end * system.window_s)
    if system.noise_m > 0:
        noise = np.stack([
            derive(system.seed, "orbits-noise", NOISE_VERSION, float(t).hex()).normal(size=(2, 3))
            for t in times
        ]) if times.size else np.zeros((0, 2, 3))  # fmt: skip
        pos = pos + system.noise_m * noise
    pos = pos / unit_system(system.units).metres_per_length
    if system.projected:
        pos = pos[:, :, :2]
    return np.column_stack([times, pos.reshape(len(times), -1)])


def full_table(system: System, rows: int = FULL_ROWS) -> np.ndarray:
    """The full-mode table: ``rows`` uniformly spaced observations over the window."""
    return observe(system, np.linspace(0.0, window_end(system), rows))


def to_csv(system: System, rows: np.ndarray) -> bytes:
    """Rows as CSV text with a header (15 significant figures)."""
    out = io.StringIO()
    out.write(",".join(columns(system)) + "\n")
    for row in rows:
        out.write(",".join(f"{x:.15g}" for x in row) + "\n")
    return out.getvalue().encode("ascii")
