"""Every task's ground truth against an independent recomputation from the dense trajectory.

The gold answers come from the simulator's parameters and closed forms
(:mod:`isg_gym.orbits.truth`). Here the same quantities are measured on the simulated
trajectory instead, as an observer with perfect data would: masses from the stars'
accelerations, extremes by searching the trajectory (long windows) or from the conserved
energy and angular momentum of the state at time 0, the period from successive closest
approaches, tau from the decay of the angular momentum, alpha from the slope of the
acceleration against the separation. The unanswerability reasons are checked as physics too
(an unbound orbit has positive energy, drag makes the angular momentum decay, the modified law
is not inverse-square). Every gold answer must score 1 under the grader.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from orbits_support import require_rebound
from scipy.optimize import brentq, minimize_scalar

from isg_gym.orbits.grading import grade
from isg_gym.orbits.sampling import make_question
from isg_gym.orbits.system import System, build_system
from isg_gym.orbits.tasks import TASKS, format_answer
from isg_gym.orbits.truth import eggleton, orbit_class
from isg_gym.orbits.units import G_SI

TOLERANCE = 2e-5  # relative: measured on the trajectory vs closed-form gold
WANTED = {"bound-long": 6, "bound-short": 3, "unbound": 4, "drag": 4, "modified-long": 4,
          "modified-short": 2}  # fmt: skip


def _kind(system: System) -> str:
    cls = orbit_class(system)
    if cls in ("bound", "modified"):
        return f"{cls}-{'long' if system.window_s > 1.2 * system.period_s() else 'short'}"
    return cls


@cache
def _seeds() -> tuple[int, ...]:
    left, seeds = dict(WANTED), []
    for seed in range(500):
        kind = _kind(build_system(seed))
        if left.get(kind, 0) > 0:
            left[kind] -= 1
            seeds.append(seed)
    assert not any(left.values()), left
    return tuple(seeds)


class Measured:
    """Quantities measured on a system's dense trajectory."""

    def __init__(self, system: System, samples: int = 20001) -> None:
        from isg_gym.orbits.simulate import trajectory

        self.system = system
        self.tr = trajectory(system)
        self.t = np.linspace(0, system.window_s, samples)
        self.pos, self.vel = self.tr.at(self.t)
        step = 1e-3 * system.window_s / samples
        inner = np.clip(self.t, step, system.window_s - step)
        _, lo = self.tr.at(inner - step)
        _, hi = self.tr.at(inner + step)
        self.acc = (hi - lo) / (2 * step)  # numerical derivative of the velocity
        self.rel = self.pos[:, 1] - self.pos[:, 0]
        self.rel_v = self.vel[:, 1] - self.vel[:, 0]
        self.sep = np.linalg.norm(self.rel, axis=1)
        m1, m2 = system.mass1_kg, system.mass2_kg
        self.com_v = (m1 * self.vel[:, 0] + m2 * self.vel[:, 1]) / (m1 + m2)
        self.h = np.linalg.norm(np.cross(self.rel, self.rel_v), axis=1)

    # --- masses from accelerations (Newtonian gravity, drag removed) ------------------------

    def masses(self) -> tuple[float, float]:
        tau = self.system.drag_tau_s
        acc = self.acc if tau is None else self.acc + self.vel / tau
        r2 = self.sep**2
        m2 = np.median(np.linalg.norm(acc[:, 0], axis=1) * r2 / G_SI)
        m1 = np.median(np.linalg.norm(acc[:, 1], axis=1) * r2 / G_SI)
        return float(m1), float(m2)

    def force_slope(self) -> float:
        """d log |a_rel| / d log r (-2 for an inverse-square force)."""
        acc = np.linalg.norm(self.acc[:, 1] - self.acc[:, 0], axis=1)
        keep = slice(10, -10)
        return float(np.polyfit(np.log(self.sep[keep]), np.log(acc[keep]), 1)[0])

    # --- extremes by searching the trajectory ---------------------------------------------

    def extreme(self, values, which: str) -> float:
        """Refined max / min over the window of ``values(times)``."""
        sign = 1.0 if which == "min" else -1.0
        i = int(np.argmin(sign * values(self.t)))
        lo, hi = self.t[max(i - 1, 0)], self.t[min(i + 1, len(self.t) - 1)]
        tol = 1e-12 * self.system.window_s
        found = minimize_scalar(lambda x: sign * values(np.array([x]))[0], bounds=(lo, hi),
                                method="bounded", options={"xatol": tol})  # fmt: skip
        return float(sign * found.fun)

    def separation(self, times):
        pos, _ = self.tr.at(times)
        return np.linalg.norm(pos[:, 1] - pos[:, 0], axis=1)

    def speed(self, star: int):
        def values(times):
            _, vel = self.tr.at(times)
            m1, m2 = self.system.mass1_kg, self.system.mass2_kg
            com = (m1 * vel[:, 0] + m2 * vel[:, 1]) / (m1 + m2)
            return np.linalg.norm(vel[:, star - 1] - com, axis=1)

        return values

    def angular_velocity(self, times):
        pos, vel = self.tr.at(times)
        rel, rel_v = pos[:, 1] - pos[:, 0], vel[:, 1] - vel[:, 0]
        return np.linalg.norm(np.cross(rel, rel_v), axis=1) / np.sum(rel**2, axis=1)

    def acceleration(self, star: int):
        def values(times):
            step = 1e-7 * self.system.window_s
            times = np.clip(times, step, self.system.window_s - step)
            _, lo = self.tr.at(times - step)
            _, hi = self.tr.at(times + step)
            return np.linalg.norm((hi - lo)[:, star - 1] / (2 * step), axis=1)

        return values

    def periastron_times(self) -> list[float]:
        """Times of the closest approaches inside the window (refined)."""
        sep = self.sep
        idx = [i for i in range(1, len(sep) - 1) if sep[i] < sep[i - 1] and sep[i] <= sep[i + 1]]
        out = []
        for i in idx:
            found = minimize_scalar(lambda x: self.separation(np.array([x]))[0],
                                    bounds=(self.t[i - 1], self.t[i + 1]), method="bounded",
                                    options={"xatol": 1e-13 * self.system.window_s})  # fmt: skip
            out.append(float(found.x))
        return out

    def integrated_period(self) -> float:
        """Time between the first two closest approaches of the relative orbit integrated
        from the state at time 0 with scipy (for windows too short to show two)."""
        from scipy.integrate import solve_ivp

        k, alpha = self.system.strength, self.system.alpha

        def rhs(_t, y):
            r = y[:3]
            return np.concatenate([y[3:], -k * r / np.linalg.norm(r) ** (3 + alpha)])

        def approach(_t, y):
            return float(y[:3] @ y[3:])

        approach.direction = 1.0  # r . v crosses zero upwards at a closest approach
        y0 = np.concatenate([self.rel[0], self.rel_v[0]])
        sol = solve_ivp(rhs, (0, 4 * self.system.window_s / 0.3), y0, method="DOP853",
                        rtol=1e-12, atol=1e-3, events=approach)  # fmt: skip
        times = sol.t_events[0]
        return float(times[1] - times[0])

    # --- conserved quantities from the state at time 0 ------------------------------------

    def energy_and_h(self, k: float, alpha: float) -> tuple[float, float]:
        r, v = self.rel[0], self.rel_v[0]
        d = float(np.linalg.norm(r))
        energy = v @ v / 2 - k / ((1 + alpha) * d ** (1 + alpha))
        return float(energy), float(np.linalg.norm(np.cross(r, v)))

    def turning_points(self) -> tuple[float, float]:
        """Closest and farthest separations from energy and angular momentum at time 0."""
        k, alpha = self.system.strength, self.system.alpha
        energy, h = self.energy_and_h(k, alpha)

        def gap(r):
            return h * h / (2 * r * r) - k / ((1 + alpha) * r ** (1 + alpha)) - energy

        r0 = float(np.linalg.norm(self.rel[0]))
        low = brentq(gap, r0 * 1e-4, min(r0, (h * h / k) ** (1 / (1 - alpha))) * (1 + 1e-9))
        if energy >= 0:
            return low, math.inf
        return low, brentq(gap, max(r0, (h * h / k) ** (1 / (1 - alpha))) * (1 - 1e-9), r0 * 1e4)


def _measure_answer(m: Measured, task: str, star: int | None):
    """The quantity ``task`` asks for, measured on the trajectory."""
    system = m.system
    long = system.bound and system.window_s > 1.2 * system.period_s()
    m1, m2 = m.masses() if system.physics != "modified" else (system.mass1_kg, system.mass2_kg)
    total, reduced = m1 + m2, m1 * m2 / (m1 + m2)
    if task == "star_mass":
        return (m1, m2)[star - 1]
    if task == "total_mass":
        return total
    if task == "reduced_mass":
        return reduced
    if task == "drag_timescale":
        return -1 / np.polyfit(m.t, np.log(m.h), 1)[0]
    if task == "gravity_exponent":
        return -m.force_slope() - 2
    if task == "is_bound":
        return m.energy_and_h(G_SI * total, 0.0)[0] < 0
    r_min, r_max = m.turning_points()
    if long:  # the window shows them: measure directly as well
        assert m.extreme(m.separation, "min") == pytest.approx(r_min, rel=TOLERANCE)
        assert m.extreme(m.separation, "max") == pytest.approx(r_max, rel=TOLERANCE)
    fraction = (m2 / total, m1 / total)[star - 1] if star else None
    if task == "apsidal_precession":
        assert long, "precession is checked on long windows only"
        times = m.periastron_times()
        pos, _ = m.tr.at(times)
        rel = pos[:, 1] - pos[:, 0]
        cosines = np.sum(rel[1:] * rel[:-1], axis=1) / np.prod(np.linalg.norm(rel, axis=1)[:2])
        return bool(np.min(cosines) < math.cos(0.05))
    if task == "period":
        if long:
            times = m.periastron_times()
            return float(np.mean(np.diff(times)))
        return m.integrated_period()
    a = (r_min + r_max) / 2
    energy, h = m.energy_and_h(system.strength, system.alpha)
    if system.physics == "newtonian":
        mu = G_SI * total
        e_vec = np.cross(m.rel_v[0], np.cross(m.rel[0], m.rel_v[0])) / mu - m.rel[0] / m.sep[0]
        e = float(np.linalg.norm(e_vec))
        b = a * math.sqrt(abs(1 - e * e))
    simple = {"eccentricity": lambda: e, "semi_major_axis": lambda: a,
              "semi_minor_axis": lambda: b, "periastron": lambda: r_min,
              "apoastron": lambda: r_max, "orbit_area": lambda: math.pi * a * b,
              "kepler_constant": lambda: 4 * math.pi**2 / (G_SI * total),
              "areal_velocity": lambda: float(np.median(m.h)) / 2,
              "angular_momentum": lambda: reduced * float(np.median(m.h)),
              "roche_lobe_radius": lambda: a * eggleton((m1, m2)[star - 1] / (m2, m1)[star - 1]),
              }  # fmt: skip
    if task in simple:
        return simple[task]()
    if task == "total_energy":
        ke = 0.5 * m1 * np.sum((m.vel[:, 0] - m.com_v) ** 2, axis=1)
        ke += 0.5 * m2 * np.sum((m.vel[:, 1] - m.com_v) ** 2, axis=1)
        values = ke - G_SI * m1 * m2 / m.sep
        assert np.ptp(values) <= 1e-4 * abs(np.mean(values))  # conserved (velocities: ~1e-6)
        return float(np.mean(values))
    which = task.split("_", 1)[0]
    r_ext = r_min if which == "max" else r_max
    k, alpha = system.strength, system.alpha
    seen = long or (not system.bound and which == "max")  # the window holds the extreme
    rel_speed = math.sqrt(2 * (energy + k / ((1 + alpha) * r_ext ** (1 + alpha))))
    if task.endswith("angular_velocity"):
        value = h / r_ext**2
        if seen:
            assert m.extreme(m.angular_velocity, which) == pytest.approx(value, rel=TOLERANCE)
        return value
    if task.endswith("speed") or task.endswith("momentum"):
        value = fraction * rel_speed
        if seen:
            assert m.extreme(m.speed(star), which) == pytest.approx(value, rel=TOLERANCE)
        return value * ((m1, m2)[star - 1] if task.endswith("momentum") else 1.0)
    if task.endswith("acceleration"):
        value = fraction * k / r_ext ** (2 + alpha)
        if seen:
            assert m.extreme(m.acceleration(star), which) == pytest.approx(value, rel=1e-4)
        return value
    raise AssertionError(f"no measurement for {task}")


@pytest.fixture(scope="module")
def measured() -> dict[int, Measured]:
    require_rebound()
    return {seed: Measured(build_system(seed)) for seed in _seeds()}


def test_the_sample_covers_every_class(measured) -> None:
    kinds = {_kind(m.system) for m in measured.values()}
    assert kinds == set(WANTED)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_gold_matches_the_trajectory(task: str, measured) -> None:
    checked = 0
    for seed, m in measured.items():
        question = make_question(m.system, task, 0)
        assert grade(question, format_answer(question)).correct  # gold scores 1
        if not question.answerable:
            continue
        if task == "apsidal_precession" and not m.system.window_s > 1.2 * m.system.period_s():
            continue
        value = _measure_answer(m, task, question.params.get("star"))
        if question.answer_kind == "yes_no":
            assert value == question.answer, (seed, task)
        else:
            assert value == pytest.approx(question.answer, rel=TOLERANCE), (seed, task)
        checked += 1
    assert checked >= 3


def test_unanswerable_reasons_are_physics(measured) -> None:
    """The physics behind each reason, measured on the trajectory."""
    for m in measured.values():
        cls = orbit_class(m.system)
        total = m.system.mass1_kg + m.system.mass2_kg
        energy = m.energy_and_h(G_SI * total, 0.0)[0]
        decay = np.log(m.h[-1] / m.h[0])
        slope = m.force_slope()
        if cls == "unbound":
            assert energy > 0
        else:
            assert energy < 0 or cls == "modified"
        if cls == "drag":
            assert decay < -0.04  # the angular momentum decays: no constant orbit
        else:
            assert abs(decay) < 1e-6  # conserved by any central force
        if cls == "modified":
            assert abs(slope + 2) > 0.09  # not inverse-square
        elif cls != "drag":
            assert slope == pytest.approx(-2, abs=1e-5)
