"""Two-body formulas: Kepler orbits (elliptic and hyperbolic) and the modified power-law force.

Everything here works in consistent units with ``mu = G * (m1 + m2)`` (or ``k`` for the
modified law); :mod:`isg_gym.orbits.system` and :mod:`isg_gym.orbits.truth` call it in SI.
The relative orbit is that of star 2 about star 1.
"""

from __future__ import annotations

import math

import numpy as np


def rotation(inclination: float, node: float, argument: float) -> np.ndarray:
    """The 3x3 matrix taking orbital-plane coordinates (x towards periastron, z along the
    angular momentum) to the observer frame (standard 3-1-3 Euler angles)."""
    co, so = math.cos(node), math.sin(node)
    ci, si = math.cos(inclination), math.sin(inclination)
    cw, sw = math.cos(argument), math.sin(argument)
    return np.array(
        [
            [co * cw - so * sw * ci, -co * sw - so * cw * ci, so * si],
            [so * cw + co * sw * ci, -so * sw + co * cw * ci, -co * si],
            [sw * si, cw * si, ci],
        ]
    )


def conic_state(mu: float, q: float, e: float, f: float) -> tuple[np.ndarray, np.ndarray]:
    """In-plane position and velocity on a Kepler conic with periastron distance ``q``,
    eccentricity ``e`` (elliptic or hyperbolic) at true anomaly ``f``."""
    p = q * (1 + e)
    r = p / (1 + e * math.cos(f))
    pos = np.array([r * math.cos(f), r * math.sin(f), 0.0])
    s = math.sqrt(mu / p)
    vel = np.array([-s * math.sin(f), s * (e + math.cos(f)), 0.0])
    return pos, vel


def true_to_mean(e: float, f: float) -> float:
    """Mean anomaly (elliptic) or hyperbolic mean anomaly at true anomaly ``f``."""
    if e < 1:
        half = math.sqrt(1 - e) * math.sin(f / 2), math.sqrt(1 + e) * math.cos(f / 2)
        big_e = 2 * math.atan2(*half)
        return big_e - e * math.sin(big_e)
    big_f = 2 * math.atanh(math.sqrt((e - 1) / (e + 1)) * math.tan(f / 2))
    return e * math.sinh(big_f) - big_f


def mean_motion(mu: float, q: float, e: float) -> float:
    """``n`` with ``M = n (t - t_peri)``, elliptic or hyperbolic (``|a|`` in either case)."""
    a = q / abs(1 - e)
    return math.sqrt(mu / a**3)


def power_law_potential(k: float, alpha: float, r: np.ndarray | float) -> np.ndarray | float:
    """Potential per unit reduced mass of the acceleration ``k / r**(2 + alpha)``."""
    return -k / ((1 + alpha) * np.power(r, 1 + alpha))


def power_law_orbit(k: float, alpha: float, r_min: float, r_max: float) -> tuple[float, float]:
    """Specific angular momentum and energy of the bound orbit turning at ``r_min``, ``r_max``."""
    v_min = power_law_potential(k, alpha, r_min)
    v_max = power_law_potential(k, alpha, r_max)
    h2 = 2 * (v_max - v_min) / (1 / r_min**2 - 1 / r_max**2)
    energy = h2 / (2 * r_min**2) + v_min
    return math.sqrt(h2), energy


def power_law_radial_speed(k: float, alpha: float, h: float, energy: float, r: float) -> float:
    """|dr/dt| at separation ``r`` (0 at the turning points)."""
    v2 = 2 * (energy - power_law_potential(k, alpha, r)) - h**2 / r**2
    return math.sqrt(max(v2, 0.0))


def power_law_radial_period(
    k: float, alpha: float, r_min: float, r_max: float, nodes: int = 96
) -> float:
    """Time from one closest approach to the next, by Gauss-Legendre quadrature in ``u`` with
    ``r = c - d cos u`` (which removes the inverse-square-root end singularities)."""
    h, energy = power_law_orbit(k, alpha, r_min, r_max)
    c, d = (r_max + r_min) / 2, (r_max - r_min) / 2
    x, w = np.polynomial.legendre.leggauss(nodes)
    u = (x + 1) * math.pi / 2
    r = c - d * np.cos(u)
    vr2 = 2 * (energy - power_law_potential(k, alpha, r)) - h**2 / r**2
    # vr2 = (r - r_min)(r_max - r) g(r) with g > 0 and (r - r_min)(r_max - r) = d^2 sin^2 u,
    # so dt = dr / vr = du / sqrt(g): a smooth integrand (Gauss nodes avoid the ends).
    g = vr2 / ((r - r_min) * (r_max - r))
    return float(2 * np.sum(w / np.sqrt(g)) * math.pi / 2)
