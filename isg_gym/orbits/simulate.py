"""Simulating a :class:`~isg_gym.orbits.system.System` with REBOUND (an optional extra).

Newtonian systems run with WHFast (for two bodies its Kepler drift is exact); drag and the
modified force law run with IAS15 and a Python ``additional_forces`` callback. The integration
is done in natural units (length: the orbit's size, mass: the total mass, G = 1) and every
step is kept as a knot of the dense :class:`~isg_gym.orbits.trajectory.Trajectory`, whose
accelerations are the force law evaluated at the knots. ``trajectory(system)`` caches the last
:data:`CACHE_SIZE` systems in memory.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from isg_gym.orbits.system import System
from isg_gym.orbits.trajectory import Trajectory
from isg_gym.orbits.units import G_SI

CACHE_SIZE = 64
# Knot spacing for WHFast: a fraction of the periastron time scale sqrt(q^3 / mu), so that
# quintic Hermite interpolation stays far below 1e-7 of the orbit's size.
PERIASTRON_STEP = 0.2
IAS15_MAX_STEP = 0.02  # of the window, so that long quiet stretches still get knots
MAX_KNOTS = 200_000
INSTALL_HINT = "ISG-Orbits needs REBOUND: pip install 'isg-gym[orbits]' (or pip install rebound)"


def _rebound():
    try:
        import rebound
    except ImportError as exc:  # an optional extra
        raise ImportError(INSTALL_HINT) from exc
    return rebound


def accelerations(system: System, pos: np.ndarray, vel: np.ndarray) -> np.ndarray:
    """The force law of ``system``: accelerations ``(n, 2, 3)`` at states ``(n, 2, 3)`` (SI)."""
    rel = pos[:, 1] - pos[:, 0]
    r = np.linalg.norm(rel, axis=1)[:, None]
    pull = rel / r ** (3 + system.alpha)  # unit vector / r^(2 + alpha)
    scale = system.strength / system.total_mass_kg  # G r0^alpha (G when Newtonian)
    acc = np.empty_like(pos)
    acc[:, 0] = scale * system.mass2_kg * pull
    acc[:, 1] = -scale * system.mass1_kg * pull
    if system.physics == "drag":
        acc -= vel / system.drag_tau_s
    return acc


def initial_state(system: System) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities ``(2, 3)`` of both stars at time 0 (SI, observer frame)."""
    rel_pos, rel_vel = system.relative_state()
    f1, f2 = system.mass1_kg / system.total_mass_kg, system.mass2_kg / system.total_mass_kg
    com_pos, com_vel = np.array(system.com_position_m), np.array(system.com_velocity_m_s)
    pos = np.stack([com_pos - f2 * rel_pos, com_pos + f1 * rel_pos])
    vel = np.stack([com_vel - f2 * rel_vel, com_vel + f1 * rel_vel])
    return pos, vel


def _scales(system: System) -> tuple[float, float, float]:
    """(length, time, mass) units of the integration: G = 1, total mass 1, size 1."""
    length = system.size_m
    time = math.sqrt(length**3 / (G_SI * system.total_mass_kg))
    return length, time, system.total_mass_kg


def _simulation(system: System, length: float, time: float):
    rebound = _rebound()
    sim = rebound.Simulation()
    sim.G = 1.0
    pos, vel = initial_state(system)
    pos, vel = pos / length, vel * time / length
    for star in range(2):
        mass = (system.mass1_kg, system.mass2_kg)[star] / system.total_mass_kg
        x, y, z = pos[star]
        vx, vy, vz = vel[star]
        sim.add(m=mass, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz)
    return sim


def _add_forces(sim, system: System, length: float, time: float) -> None:
    """IAS15 with the drag or modified-gravity force as a Python callback."""
    sim.integrator = "ias15"
    p1, p2 = sim.particles[0], sim.particles[1]  # fixed: the particle array never grows
    if system.physics == "drag":
        rate = time / system.drag_tau_s

        def drag(_sim) -> None:
            p1.ax -= rate * p1.vx
            p1.ay -= rate * p1.vy
            p1.az -= rate * p1.vz
            p2.ax -= rate * p2.vx
            p2.ay -= rate * p2.vy
            p2.az -= rate * p2.vz

        sim.additional_forces = drag
        sim.force_is_velocity_dependent = 1
        return
    sim.gravity = "none"
    # k / (G M) in natural units: (r0 / length)^alpha, so that a = k' / r^(2 + alpha)
    strength = (system.gravity_length_m / length) ** system.alpha
    power = 3 + system.alpha
    m1, m2 = p1.m, p2.m

    def modified(_sim) -> None:
        dx, dy, dz = p2.x - p1.x, p2.y - p1.y, p2.z - p1.z
        c = strength / (dx * dx + dy * dy + dz * dz) ** (power / 2)
        p1.ax = m2 * c * dx
        p1.ay = m2 * c * dy
        p1.az = m2 * c * dz
        p2.ax = -m1 * c * dx
        p2.ay = -m1 * c * dy
        p2.az = -m1 * c * dz

    sim.additional_forces = modified


def _knot_step(system: System, time: float) -> float:
    """WHFast step (natural units) from the periastron time scale."""
    q = system.periastron_m / system.size_m
    return PERIASTRON_STEP * math.sqrt(q**3)


def simulate(system: System) -> Trajectory:
    """Integrate ``system`` over its window and return the dense trajectory (not cached)."""
    length, time, _ = _scales(system)
    end = system.window_s / time
    sim = _simulation(system, length, time)
    buf = np.empty((2, 3))
    times, states = [], []

    def record() -> None:
        sim.serialize_particle_data(xyz=buf)
        x = buf.copy()
        sim.serialize_particle_data(vxvyvz=buf)
        times.append(sim.t)
        states.append((x, buf.copy()))

    record()
    if system.physics == "newtonian":
        sim.integrator = "whfast"
        steps = max(64, math.ceil(end / _knot_step(system, time)))
        if steps > MAX_KNOTS:
            raise RuntimeError(f"system {system.seed}: {steps} knots needed (max {MAX_KNOTS})")
        sim.dt = end / steps
        for k in range(1, steps + 1):
            sim.integrate(k * end / steps, exact_finish_time=1)
            record()
    else:
        _add_forces(sim, system, length, time)
        max_step = IAS15_MAX_STEP * end
        while sim.t < end:
            if len(times) > MAX_KNOTS:
                raise RuntimeError(f"system {system.seed}: more than {MAX_KNOTS} knots")
            sim.dt = min(sim.dt, max_step, end - sim.t)
            sim.steps(1)
            record()
    t = np.array(times) * time
    t[0], t[-1] = 0.0, system.window_s  # exact ends (the last step lands on the end)
    pos = np.array([s[0] for s in states]) * length
    vel = np.array([s[1] for s in states]) * (length / time)
    return Trajectory(t=t, pos=pos, vel=vel, acc=accelerations(system, pos, vel))


@lru_cache(maxsize=CACHE_SIZE)
def trajectory(system: System) -> Trajectory:
    """The dense trajectory of ``system``, cached (same system -> same object)."""
    return simulate(system)
