"""Systems by seed: determinism (golden values, any process), the JSON round trip, the shares
of the physics and the observation windows."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from orbits_support import require_rebound

from isg_gym.orbits.system import (
    SYSTEM_VERSION,
    ObservationOptions,
    System,
    build_system,
)
from isg_gym.orbits.truth import orbit_class

# Golden parameters (SYSTEM_VERSION 1): exact, since they are plain float arithmetic on
# derive() draws; bump SYSTEM_VERSION and these when the draws change.
GOLDEN = {
    0: ("newtonian", "cgs", 1.3981561886079945e31, 0.16278689989931378, 37133390.78401476),
    1: ("drag", "astro", 1.358235525524793e31, 0.5513824264219741, 1041635.429520712),
    8: ("newtonian", "si", 2.4176919612921823e31, 2.725066900420145, 52466.32308471276),
    11: ("modified", "astro", 9.310729461482193e30, 0.27580979055336374, 426700516.3761357),
}
# Star 2's position (m) at 0.37 of the window, from the dense trajectory.
GOLDEN_POSITIONS = {
    0: (-333911528050.995, -813225836239.0157, 435442117907.30804),
    1: (-27019136061.888203, -117566294315.26762, -45599994832.402565),
    8: (-25245078207.610283, -36836760223.774704, 8301090808.969388),
    11: (5411308728895.926, -115419199248.25266, -2255420632193.3545),
}
# The dense trajectory's golden positions: floating tolerance 1e-9 relative to the orbit's
# size (REBOUND and numpy builds may differ in the last bits; the orbit must not).
TRAJECTORY_TOLERANCE = 1e-9


def test_golden_parameters() -> None:
    assert SYSTEM_VERSION == 1
    for seed, (physics, units, mass1, eccentricity, window) in GOLDEN.items():
        system = build_system(seed)
        assert (system.physics, system.units) == (physics, units)
        assert (system.mass1_kg, system.eccentricity, system.window_s) == (
            mass1, eccentricity, window)


def test_golden_trajectory() -> None:
    require_rebound()
    from isg_gym.orbits.simulate import trajectory

    for seed, want in GOLDEN_POSITIONS.items():
        system = build_system(seed)
        pos, _ = trajectory(system).at([system.window_s * 0.37])
        err = np.abs(pos[0, 1] - np.array(want)).max()
        assert err <= TRAJECTORY_TOLERANCE * system.size_m


def test_json_round_trip() -> None:
    for seed in range(30):
        system = build_system(seed)
        again = System.from_json(system.to_json())
        assert again == system
        assert again.to_json() == system.to_json()


def test_bad_seed_is_a_clear_error() -> None:
    for bad in (-1, 1.5, "3", True):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            build_system(bad)


def test_shares_of_physics_and_windows() -> None:
    systems = [build_system(seed) for seed in range(1200)]
    classes = [orbit_class(s) for s in systems]
    share = {c: classes.count(c) / len(classes) for c in set(classes)}
    assert share["bound"] == pytest.approx(0.608, abs=0.045)  # sd 0.014
    assert share["unbound"] == pytest.approx(0.152, abs=0.03)
    assert share["drag"] == pytest.approx(0.12, abs=0.03)
    assert share["modified"] == pytest.approx(0.12, abs=0.03)
    alphas = [s.gravity_alpha for s in systems if s.gravity_alpha is not None]
    assert 0.35 < sum(a > 0 for a in alphas) / len(alphas) < 0.65  # either sign, half each
    bound = [s for s in systems if s.bound]
    cycles = np.array([s.window_s / s.period_s() for s in bound])
    assert ((cycles > 0.35) & (cycles < 0.9)).mean() == pytest.approx(0.3, abs=0.05)
    assert ((cycles >= 1.3) & (cycles <= 3.0)).mean() == pytest.approx(0.7, abs=0.05)
    assert not ((cycles >= 0.9) & (cycles < 1.3)).any()
    for s in systems:
        assert s.units in ("si", "cgs", "astro")
        assert (s.drag_tau_s is not None) == (s.physics == "drag")
        assert (s.gravity_alpha is not None) == (s.physics == "modified")
        if s.physics == "modified":
            assert 0.1 <= abs(s.gravity_alpha) <= 0.5 and 0.2 <= s.eccentricity <= 0.8
        if s.physics == "drag":
            assert 2 <= s.drag_tau_s / s.window_s <= 20
        assert not s.projected and s.noise_m == 0.0  # off by default


def test_observation_options_change_only_the_observation_model() -> None:
    options = ObservationOptions(projection_share=1.0, noise_share=1.0, noise_levels=(1e-3,))
    for seed in range(20):
        plain, observed = build_system(seed), build_system(seed, options)
        assert observed.projected and observed.noise_m == pytest.approx(1e-3 * plain.size_m)
        assert observed.model_copy(update={"projected": False, "noise_m": 0.0}) == plain


def test_relative_state_matches_the_orbit() -> None:
    """The initial state sits on the described orbit: energy and angular momentum agree with
    the periastron distance and eccentricity."""
    for seed in range(200):
        s = build_system(seed)
        pos, vel = s.relative_state()
        r, h = np.linalg.norm(pos), np.linalg.norm(np.cross(pos, vel))
        if s.physics != "modified":
            energy = vel @ vel / 2 - s.mu / r
            e = math.sqrt(1 + 2 * energy * h * h / s.mu**2)
            assert e == pytest.approx(s.eccentricity, abs=1e-9)
            assert h * h / s.mu / (1 + e) == pytest.approx(s.periastron_m, rel=1e-9)
        assert s.periastron_m * (1 - 1e-12) <= r <= s.apoastron_m * (1 + 1e-12)


_CHILD = """
import json, sys
from isg_gym.orbits.system import build_system
from isg_gym.orbits.simulate import trajectory
out = {}
for seed in (0, 1, 11, 8):
    s = build_system(seed)
    tr = trajectory(s)
    pos, vel = tr.at([s.window_s * 0.37])
    out[seed] = [s.to_json(), pos.ravel().tolist(), vel.ravel().tolist(), s.size_m]
print(json.dumps(out))
"""


def test_same_numbers_in_a_fresh_process_under_another_hash_seed() -> None:
    require_rebound()
    runs = []
    for hash_seed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                              text=True, check=True, cwd=os.getcwd())  # fmt: skip
        runs.append(json.loads(done.stdout))
    here = json.loads(subprocess.run([sys.executable, "-c", _CHILD], capture_output=True,
                                     text=True, check=True).stdout)  # fmt: skip
    for seed in runs[0]:
        a, b, c = runs[0][seed], runs[1][seed], here[seed]
        assert a[0] == b[0] == c[0]  # parameters: byte-identical JSON
        size = a[3]
        for x, y, z in zip(a[1] + a[2], b[1] + b[2], c[1] + c[2], strict=True):
            scale = size if abs(x) > 1e3 else 1.0  # velocities: compare absolutely (m/s)
            assert abs(x - y) <= TRAJECTORY_TOLERANCE * max(scale, abs(x))
            assert abs(x - z) <= TRAJECTORY_TOLERANCE * max(scale, abs(x))
