"""The orbit expert's analysis: standalone code (numpy, scipy, pandas only) that the expert
policy sends to the sandbox as source text, where it fits the observations; never imports
isg_gym (the sandbox cannot), so it knows nothing but the observed table.

``solve(table, task, star, metres, seconds, noise)`` takes the observations (columns ``time``,
``star{1,2}_{x,y,z}`` in the system's units, with ``metres`` per length unit and ``seconds``
per time unit) and returns the answer text for one task, in SI:

1. Relative orbit ``r = x2 - x1``. A Kepler conic is fitted without timing first: the plane
   from the singular vectors of ``r``, then the focus-directrix relation
   ``|r| = p - e . r`` by linear least squares (exact for any conic with star 1 at the focus),
   then the mean (or hyperbolic) anomaly against time by a straight line, giving ``n`` and
   ``mu = G M = n^2 |a|^3``.
2. If the conic misses the positions by more than the noise allows, the orbit is not
   Keplerian: velocities and accelerations from splines separate drag (the specific angular
   momentum decays as ``exp(-t / tau)``) from a power-law force (it is conserved), and a
   least-squares fit of the equations of motion, integrated numerically, refines the state,
   the strength and ``tau`` or ``alpha``.
3. The star-1 share of the motion about the centre of mass, ``m2 / M``, from
   ``x1 = c + w g(t) - (m2 / M) r`` (``g = t``, or ``tau (1 - exp(-t / tau))`` under drag) by
   linear least squares.
4. Every asked quantity from the fitted model; "not possible" where the conventions say the
   quantity does not exist for the physics found.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, least_squares

G = 6.674e-11
ABSTAIN = "not possible"


# --- the Kepler conic -----------------------------------------------------------------------


def lstsq(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Least squares with the columns normalised first (they differ by orders of magnitude,
    which would make numpy treat the small ones as rank deficiency)."""
    norms = np.linalg.norm(design, axis=0)
    norms[norms == 0] = 1.0
    solution, *_ = np.linalg.lstsq(design / norms, target, rcond=None)
    return solution / norms


def plane_basis(r: np.ndarray) -> np.ndarray:
    """Rows: in-plane unit vectors u, w and the normal (along the angular momentum)."""
    _, _, vt = np.linalg.svd(r, full_matrices=False)
    u, w, normal = vt[0], vt[1], vt[2]
    spin = np.cross(r[:-1], r[1:]).sum(axis=0)
    if spin @ normal < 0:
        normal = -normal
    w = np.cross(normal, u)
    return np.stack([u, w, normal])


def kepler_anomaly(mean: np.ndarray, e: float) -> np.ndarray:
    """Eccentric (e < 1) or hyperbolic (e > 1) anomaly from the mean anomaly (Newton)."""
    if e < 1:
        big = mean + e * np.sin(mean)
        for _ in range(50):
            big = big - (big - e * np.sin(big) - mean) / (1 - e * np.cos(big))
        return big
    big = np.arcsinh(mean / e)
    for _ in range(60):
        big = big - (e * np.sinh(big) - big - mean) / (e * np.cosh(big) - 1)
    return big


class Conic:
    """A Kepler orbit fitted to the relative positions (SI)."""

    def __init__(self, t: np.ndarray, r: np.ndarray) -> None:
        basis = plane_basis(r)
        xy = r @ basis[:2].T
        dist = np.linalg.norm(r, axis=1)
        design = np.column_stack([np.ones_like(dist), -xy[:, 0], -xy[:, 1]])
        p, ex, ey = lstsq(design, dist)
        self.p, self.e = float(p), float(math.hypot(ex, ey))
        peri = np.array([ex, ey]) / self.e
        self.axes = np.stack([peri @ basis[:2], np.array([-peri[1], peri[0]]) @ basis[:2]])
        f = np.arctan2(xy @ np.array([-peri[1], peri[0]]), xy @ peri)
        e = self.e
        if e < 1:
            big = 2 * np.arctan2(np.sqrt(1 - e) * np.sin(f / 2), np.sqrt(1 + e) * np.cos(f / 2))
            mean = np.unwrap(big - e * np.sin(big))
        else:
            big = 2 * np.arctanh(np.sqrt((e - 1) / (e + 1)) * np.tan(f / 2))
            mean = e * np.sinh(big) - big
        order = np.argsort(t)
        self.n, self.m0 = np.polyfit(t[order], mean[order], 1)
        self.a = self.p / abs(1 - e * e)
        self.mu = float(self.n**2 * self.a**3)
        self.h = math.sqrt(self.mu * self.p)
        self.residual = float(np.sqrt(np.mean(np.sum((self.positions(t) - r) ** 2, axis=1))))

    def positions(self, t: np.ndarray) -> np.ndarray:
        e = self.e
        big = kepler_anomaly(self.n * t + self.m0, e)
        if e < 1:
            x, y = self.a * (np.cos(big) - e), self.a * math.sqrt(1 - e * e) * np.sin(big)
        else:
            x, y = self.a * (e - np.cosh(big)), self.a * math.sqrt(e * e - 1) * np.sinh(big)
        return np.outer(x, self.axes[0]) + np.outer(y, self.axes[1])

    @property
    def periastron(self) -> float:
        return self.p / (1 + self.e)


# --- non-Keplerian orbits ---------------------------------------------------------------------


def local_derivatives(t: np.ndarray, r: np.ndarray, half: int = 3):
    """Velocity and acceleration at the observations from local polynomials through the
    ``2 half + 1`` nearest observations (degree ``2 half``), with an error estimate: the
    relative change of the acceleration when two fewer points are used. Ends get NaN."""
    n = len(t)
    v = np.full_like(r, np.nan)
    a = np.full_like(r, np.nan)
    err = np.full(n, np.inf)
    idx = np.arange(half, n - half)
    if not len(idx):
        return v, a, err

    def fit(width: int):
        offsets = np.arange(-width, width + 1)
        dt = t[idx[:, None] + offsets] - t[idx][:, None]  # (m, k)
        scale = np.abs(dt).max(axis=1, keepdims=True)
        x = dt / scale
        vander = x[:, :, None] ** np.arange(2 * width + 1)  # (m, k, k)
        coeffs = np.linalg.solve(vander, r[idx[:, None] + offsets])  # (m, k, 3)
        return coeffs[:, 1] / scale, 2 * coeffs[:, 2] / scale**2

    v_hi, a_hi = fit(half)
    _, a_lo = fit(half - 1)
    v[idx], a[idx] = v_hi, a_hi
    err[idx] = np.linalg.norm(a_hi - a_lo, axis=1) / np.linalg.norm(a_hi, axis=1)
    return v, a, err


class ForceFit:
    """The relative orbit's force law from accelerations: ``a = -k r / |r|^(3 + alpha)`` (a
    power law, conservative) or ``a = -k r / |r|^3 - v / tau`` (drag), fitted by least
    squares at the observations where the local derivatives are accurate; the model that fits
    better wins."""

    def __init__(self, t: np.ndarray, r: np.ndarray, noise: float = 0.0) -> None:
        v, a, err = local_derivatives(t, r)
        order = np.argsort(err)
        good = err < (1e-5 if noise == 0 else 1e-1)
        if good.sum() < 12:
            good = np.zeros_like(good)
            good[order[: max(12, len(t) // 3)]] = True
        good &= np.isfinite(err)
        self.t, self.r, self.v, self.a = t[good], r[good], v[good], a[good]
        dist = np.linalg.norm(self.r, axis=1)
        # drag: a = -k r / d^3 - v / tau, linear in (k, 1 / tau)
        design = np.stack([-(self.r / dist[:, None] ** 3).ravel(), -self.v.ravel()], axis=1)
        k_drag, rate = lstsq(design, self.a.ravel())
        drag_misfit = np.linalg.norm(design @ np.array([k_drag, rate]) - self.a.ravel())
        # power law: log |a| = log k - (2 + alpha) log d, then the same misfit measure
        slope, intercept = np.polyfit(np.log(dist), np.log(np.linalg.norm(self.a, axis=1)), 1)
        alpha, k_power = -slope - 2, math.exp(intercept)
        model = -k_power * self.r / dist[:, None] ** (3 + alpha)
        power_misfit = np.linalg.norm(model - self.a)
        if drag_misfit <= power_misfit:
            self.kind, self.k, self.alpha, self.tau = "drag", float(k_drag), 0.0, 1 / rate
        else:
            self.kind, self.k, self.alpha, self.tau = "modified", k_power, float(alpha), math.inf
        self.misfit = min(drag_misfit, power_misfit) / np.linalg.norm(self.a)

    def conserved(self) -> tuple[float, float]:
        """Specific angular momentum and energy (power law), medians over the good points."""
        dist = np.linalg.norm(self.r, axis=1)
        h = np.linalg.norm(np.cross(self.r, self.v), axis=1)
        energy = (np.sum(self.v**2, axis=1) / 2
                  - self.k / ((1 + self.alpha) * dist ** (1 + self.alpha)))  # fmt: skip
        return float(np.median(h)), float(np.median(energy))


def lift(r: np.ndarray, plane) -> np.ndarray:
    """Sky-plane positions (x, y) lifted onto the plane ``z = p x + q y``."""
    return np.column_stack([r, r @ np.asarray(plane, dtype=float)])


def focus_misfit(r: np.ndarray, plane) -> np.ndarray:
    """Misfit of ``|r| = p - e . r`` (a conic with star 1 at its focus) on the lifted
    positions, relative to the orbit's size: zero at the true plane of a Kepler orbit."""
    r3 = lift(r, plane)
    dist = np.linalg.norm(r3, axis=1)
    design = np.column_stack([np.ones_like(dist), -r3])
    return (design @ lstsq(design, dist) - dist) / np.median(dist)


def deproject(t: np.ndarray, r: np.ndarray, noise: float = 0.0) -> tuple[float, float]:
    """The orbital plane ``z = p x + q y`` of a relative orbit seen projected on the sky.

    Every force law here is central and keeps the plane, which passes through star 1, so the
    projected acceleration is ``-f(|r|) (x, y) - (vx, vy) / tau`` with the unseen
    ``|r| = |(x, y, p x + q y)|``. Gravity, drag and the power law are fitted with (p, q) to the
    well-measured accelerations; the best fit's plane is returned (up to the mirror
    ``z -> -z``, which changes none of the asked quantities)."""
    v, a, err = local_derivatives(t, r)
    finite = np.isfinite(err)
    good = finite & (err < (1e-5 if noise == 0 else 1e-1))
    if good.sum() < 12:
        good = finite & (err <= np.sort(err[finite])[min(finite.sum() - 1, max(11, len(t) // 3))])
    x, y = (r[good] / np.median(np.linalg.norm(r[good], axis=1))).T
    vel = v[good] / np.median(np.linalg.norm(v[good], axis=1))
    acc = a[good] / np.median(np.linalg.norm(a[good], axis=1))

    def residuals(params: np.ndarray, kind: str) -> np.ndarray:
        p, q, log_k = params[:3]
        dist = np.sqrt(x * x + y * y + (p * x + q * y) ** 2)
        power = 3 + (params[3] if kind == "modified" else 0.0)
        model = -math.exp(log_k) * np.column_stack([x, y]) / dist[:, None] ** power
        if kind == "drag":
            model = model - params[3] * vel
        return (model - acc).ravel()

    best = (math.inf, 0.0, 0.0)
    for kind in ("newtonian", "drag", "modified"):
        for start in ((0.0, 0.0), (1.0, 0.0), (0.0, 1.0), (-1.0, 1.0), (2.0, 2.0)):
            x0 = [*start, 0.0] + ([] if kind == "newtonian" else [0.0])
            fit = least_squares(residuals, x0, args=(kind,), method="lm")
            if fit.cost < best[0]:
                best = (fit.cost, float(fit.x[0]), float(fit.x[1]))
    return best[1], best[2]


# --- the centre of mass ---------------------------------------------------------------------


def companion_share(t, x1, r, tau: float = math.inf) -> float:
    """m2 / (m1 + m2) from x1 = c + w g(t) - share * r (g = t, or the drag's decaying drift)."""
    g = t - t[0] if math.isinf(tau) else tau * (1 - np.exp(-(t - t[0]) / tau))
    rows, rhs = [], []
    for axis in range(r.shape[1]):
        block = np.zeros((len(t), 2 * r.shape[1] + 1))
        block[:, 2 * axis] = 1.0
        block[:, 2 * axis + 1] = g
        block[:, -1] = -r[:, axis]
        rows.append(block)
        rhs.append(x1[:, axis])
    return float(lstsq(np.vstack(rows), np.concatenate(rhs))[-1])


# --- the model and its quantities -----------------------------------------------------------


class Model:
    """The fitted system: ``orbit`` is bound / unbound / drag / modified."""

    def __init__(self, table, metres: float, seconds: float, noise: float = 0.0) -> None:
        t = table["time"].to_numpy(float) * seconds
        order = np.argsort(t)
        axes = [a for a in ("x", "y", "z") if f"star1_{a}" in table.columns]
        x1 = table[[f"star1_{a}" for a in axes]].to_numpy(float)[order] * metres
        x2 = table[[f"star2_{a}" for a in axes]].to_numpy(float)[order] * metres
        t = t[order]
        r = x2 - x1
        size = float(np.median(np.linalg.norm(r, axis=1)))
        tolerance = max(1e-6 * size, 4 * noise)
        if r.shape[1] == 2:  # projected on the sky: recover the orbital plane first
            plane = deproject(t, r, noise)
            conic_plane = least_squares(lambda pq: focus_misfit(r, pq), plane, method="lm").x
            self.conic = Conic(t, lift(r, conic_plane))
            r = lift(r, conic_plane if self.conic.residual <= tolerance else plane)
        self.conic = Conic(t, r)
        self.orbit = "bound" if self.conic.e < 1 else "unbound"
        self.tau = math.inf
        self.fit = None
        if self.conic.residual > tolerance:
            self.fit = ForceFit(t, r, noise)
            self.orbit = self.fit.kind
            self.tau = self.fit.tau
        self.mu = self.fit.k if self.fit is not None else self.conic.mu
        share = companion_share(t, x1, r[:, : x1.shape[1]], self.tau)  # observed axes only
        self.masses = ((1 - share) * self.mu / G, share * self.mu / G)
        self._turning_points()

    def _turning_points(self) -> None:
        """Closest and farthest separations, specific angular momentum and period."""
        c = self.conic
        if self.fit is None:
            self.alpha, self.k, self.h = 0.0, self.mu, c.h
            self.e = c.e
            self.r_min = c.periastron
            self.r_max = c.p / (1 - c.e) if c.e < 1 else math.inf
            self.period = 2 * math.pi / c.n if c.e < 1 else math.inf
            return
        self.alpha, self.k = self.fit.alpha, self.fit.k
        self.h, energy = self.fit.conserved()
        if self.orbit == "drag":
            self.e, self.r_min, self.r_max, self.period = (math.nan,) * 4
            return
        alpha, k, h = self.alpha, self.k, self.h

        def gap(x):
            return h * h / (2 * x * x) + self.potential(x) - energy

        r_circ = (h * h / k) ** (1 / (1 - alpha))  # minimum of the effective potential
        self.r_min = brentq(gap, r_circ * 1e-6, r_circ)
        self.r_max = brentq(gap, r_circ, r_circ * 1e6)
        self.e = math.nan
        x, w = np.polynomial.legendre.leggauss(96)
        u = (x + 1) * math.pi / 2
        mid, half = (self.r_max + self.r_min) / 2, (self.r_max - self.r_min) / 2
        rr = mid - half * np.cos(u)
        vr2 = 2 * (energy - self.potential(rr)) - h * h / rr**2
        g = vr2 / ((rr - self.r_min) * (self.r_max - rr))
        self.period = float(2 * np.sum(w / np.sqrt(g)) * math.pi / 2)

    def potential(self, r):
        return -self.k / ((1 + self.alpha) * r ** (1 + self.alpha))

    # --- quantities (SI) --------------------------------------------------------------------

    def share(self, star: int) -> float:
        """m_other / M: the star's share of the relative motion."""
        return self.masses[2 - star] / sum(self.masses)

    def relative_speed(self, r: float) -> float:
        if math.isinf(r):
            return math.sqrt(self.mu * (self.e - 1) / self.r_min)
        v_peri = self.h / self.r_min
        energy = v_peri**2 / 2 + self.potential(self.r_min)
        return math.sqrt(2 * (energy - self.potential(r)))

    def answer(self, task: str, star: int | None = None) -> str:
        value = self.value(task, star)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "yes" if value else "no"
        return f"{value:.6g}"

    def value(self, task: str, star: int | None):
        orbit = self.orbit
        decaying = orbit == "drag"
        modified = orbit == "modified"
        unbound = orbit == "unbound"
        m1, m2 = self.masses
        total = m1 + m2
        reduced = m1 * m2 / total
        if task in ("star_mass", "total_mass", "reduced_mass"):
            if modified:
                return ABSTAIN
            return {"star_mass": self.masses[(star or 1) - 1], "total_mass": total,
                    "reduced_mass": reduced}[task]  # fmt: skip
        if task == "drag_timescale":
            return self.tau if decaying else ABSTAIN
        if task == "gravity_exponent":
            return self.alpha if modified else ABSTAIN
        if task == "is_bound":
            return ABSTAIN if modified else not unbound
        if task == "apsidal_precession":
            return ABSTAIN if unbound or decaying else modified
        if decaying:
            return ABSTAIN
        ellipse = orbit == "bound"
        a = (self.r_min + self.r_max) / 2
        never_reached = unbound and task.startswith("min_")
        if never_reached:
            return ABSTAIN
        if task == "eccentricity":
            return ABSTAIN if modified else self.e
        if task in ("semi_major_axis", "semi_minor_axis", "orbit_area", "roche_lobe_radius",
                    "kepler_constant"):  # fmt: skip
            if not ellipse:
                return ABSTAIN
            b = a * math.sqrt(1 - self.e**2)
            if task == "roche_lobe_radius":
                q = self.masses[star - 1] / self.masses[2 - star]
                return a * 0.49 * q ** (2 / 3) / (0.6 * q ** (2 / 3) + math.log(1 + q ** (1 / 3)))
            return {"semi_major_axis": a, "semi_minor_axis": b, "orbit_area": math.pi * a * b,
                    "kepler_constant": self.period**2 / a**3}[task]  # fmt: skip
        if task == "period":
            return ABSTAIN if unbound else self.period
        if task == "periastron":
            return self.r_min
        if task == "apoastron":
            return ABSTAIN if unbound else self.r_max
        if task == "areal_velocity":
            return self.h / 2
        if task == "angular_momentum":
            return ABSTAIN if modified else reduced * self.h
        if task == "total_energy":
            return ABSTAIN if modified else reduced * (self.relative_speed(self.r_min) ** 2 / 2
                                                       - self.mu / self.r_min)  # fmt: skip
        extreme = self.r_min if task.startswith("max_") else self.r_max
        if task.endswith("angular_velocity"):
            return self.h / extreme**2
        if task.endswith("_speed"):
            return self.share(star) * self.relative_speed(extreme)
        if task.endswith("_momentum"):
            if modified:
                return ABSTAIN
            return self.masses[star - 1] * self.share(star) * self.relative_speed(extreme)
        if task.endswith("_acceleration"):
            return self.share(star) * self.k / extreme ** (2 + self.alpha)
        raise ValueError(f"unknown task {task!r}")


def solve(table, task: str, star: int | None, metres: float, seconds: float,
          noise: float = 0.0) -> str:  # fmt: skip
    """The answer text for ``task`` (about ``star`` where it asks about one)."""
    return Model(table, metres, seconds, noise).answer(task, star)
