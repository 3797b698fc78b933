"""The dense trajectory: quintic Hermite interpolation against direct integration, Newtonian
knots against the analytic Kepler orbit, the force law at the knots, and the cache."""

from __future__ import annotations

import math

import numpy as np
import pytest
from orbits_support import require_rebound

from isg_gym.orbits import kepler
from isg_gym.orbits.system import build_system

# Interpolated positions agree with a direct integration to this fraction of the orbit's size.
INTERPOLATION_TOLERANCE = 5e-8
SEEDS = {"bound": (0, 2, 4, 9), "unbound": (8,), "drag": (1, 3), "modified": (11,)}


@pytest.fixture(scope="module", autouse=True)
def _rebound() -> None:
    require_rebound()


def _direct(system, times: np.ndarray) -> np.ndarray:
    """Positions (n, 2, 3) from a fresh IAS15 integration stopping exactly at each time."""
    from isg_gym.orbits.simulate import _add_forces, _scales, _simulation

    length, unit_time, _ = _scales(system)
    sim = _simulation(system, length, unit_time)
    if system.physics == "newtonian":
        sim.integrator = "ias15"
    else:
        _add_forces(sim, system, length, unit_time)
    out, buf = [], np.empty((2, 3))
    for t in times:
        sim.integrate(t / unit_time, exact_finish_time=1)
        sim.serialize_particle_data(xyz=buf)
        out.append(buf * length)
    return np.array(out)


@pytest.mark.parametrize("seed", [s for seeds in SEEDS.values() for s in seeds])
def test_interpolation_matches_direct_integration(seed: int) -> None:
    from isg_gym.orbits.simulate import trajectory

    system = build_system(seed)
    tr = trajectory(system)
    mids = (tr.t[:-1] + tr.t[1:]) / 2  # farthest from the knots
    pick = mids[np.linspace(0, len(mids) - 1, min(150, len(mids))).astype(int)]
    pos, _ = tr.at(pick)
    assert np.abs(pos - _direct(system, pick)).max() <= INTERPOLATION_TOLERANCE * system.size_m


def _kepler_relative(system, times: np.ndarray) -> np.ndarray:
    """Analytic relative positions: solve Kepler's equation from the initial anomaly."""
    e, q, mu = system.eccentricity, system.periastron_m, system.mu
    n = kepler.mean_motion(mu, q, e)
    mean = kepler.true_to_mean(e, system.anomaly) + n * times
    a = q / abs(1 - e)
    big = mean.copy() if e < 1 else np.arcsinh(mean / e)
    for _ in range(100):
        if e < 1:
            big -= (big - e * np.sin(big) - mean) / (1 - e * np.cos(big))
        else:
            big -= (e * np.sinh(big) - big - mean) / (e * np.cosh(big) - 1)
    if e < 1:
        x, y = a * (np.cos(big) - e), a * math.sqrt(1 - e * e) * np.sin(big)
    else:
        x, y = a * (e - np.cosh(big)), a * math.sqrt(e * e - 1) * np.sinh(big)
    rot = kepler.rotation(system.inclination, system.node, system.argument)
    return np.column_stack([x, y, np.zeros_like(x)]) @ rot.T


@pytest.mark.parametrize("seed", SEEDS["bound"] + SEEDS["unbound"])
def test_newtonian_trajectory_is_the_kepler_orbit(seed: int) -> None:
    from isg_gym.orbits.simulate import trajectory

    system = build_system(seed)
    tr = trajectory(system)
    times = np.linspace(0, system.window_s, 333)
    pos, _ = tr.at(times)
    rel = pos[:, 1] - pos[:, 0]
    assert np.abs(rel - _kepler_relative(system, times)).max() <= 1e-7 * system.size_m
    # the centre of mass moves in a straight line at the proper motion
    f1 = system.mass1_kg / system.total_mass_kg
    com = (1 - f1) * pos[:, 1] + f1 * pos[:, 0]
    want = np.array(system.com_position_m) + np.outer(times, system.com_velocity_m_s)
    assert np.abs(com - want).max() <= 1e-8 * system.size_m


def test_knots_carry_the_force_law() -> None:
    """The stored accelerations are the numerical second derivative of the positions."""
    from isg_gym.orbits.simulate import trajectory

    for seed in (0, 1, 11):
        system = build_system(seed)
        tr = trajectory(system)
        k = len(tr.t) // 2
        dt = 1e-4 * (tr.t[k + 1] - tr.t[k])
        _, vel = tr.at([tr.t[k] - dt, tr.t[k] + dt])
        numeric = (vel[1] - vel[0]) / (2 * dt)
        assert np.abs(numeric - tr.acc[k]).max() <= 1e-5 * np.abs(tr.acc[k]).max()


def test_trajectory_is_cached_and_read_only() -> None:
    from isg_gym.orbits.simulate import trajectory

    system = build_system(2)
    assert trajectory(system) is trajectory(build_system(2))
    with pytest.raises(ValueError):
        trajectory(system).pos[0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="within"):
        trajectory(system).at([system.window_s * 1.01])
