"""The physical facts of a system that the tasks ask about, from the simulator's parameters.

Every quantity is SI. Orbit quantities are those of the relative orbit of star 2 about star 1;
speeds, momenta and accelerations of a star are in the centre-of-mass frame; extremes are over
the whole orbit (not only the observation window). Where a quantity does not exist for the
system's physics, the task reports a :class:`Reason` instead (see :mod:`isg_gym.orbits.tasks`).

The tests recompute these facts independently from the dense simulated trajectory.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal

from isg_gym.orbits import kepler
from isg_gym.orbits.system import System
from isg_gym.orbits.units import G_SI

OrbitClass = Literal["bound", "unbound", "drag", "modified"]
ORBIT_CLASSES: tuple[OrbitClass, ...] = ("bound", "unbound", "drag", "modified")


class Reason(enum.StrEnum):
    """Why a question about a system has no answer (machine-readable)."""

    UNBOUND = "unbound_orbit"  # no period, apoastron, axes, area or minimum (never reached)
    DECAYING = "decaying_orbit"  # drag: the orbit shrinks, its quantities are not constant
    NOT_INVERSE_SQUARE = "not_inverse_square"  # not a Kepler conic
    UNKNOWN_STRENGTH = "unknown_force_strength"  # masses and energies under the modified law
    NO_DRAG = "no_drag"  # a drag timescale of a system without drag
    INVERSE_SQUARE = "inverse_square_gravity"  # a deviation exponent of Newtonian gravity


def orbit_class(system: System) -> OrbitClass:
    """``bound`` / ``unbound`` (Newtonian), ``drag`` or ``modified``."""
    if system.physics == "newtonian":
        return "bound" if system.bound else "unbound"
    return system.physics


def eggleton(mass_ratio: float) -> float:
    """Roche lobe radius over the separation for a star of mass ratio ``m_star / m_other``
    (Eggleton 1983)."""
    q23 = mass_ratio ** (2 / 3)
    return 0.49 * q23 / (0.6 * q23 + math.log(1 + mass_ratio ** (1 / 3)))


@dataclass(frozen=True)
class Facts:
    """The system's quantities (SI); ``inf`` marks a quantity that does not exist."""

    orbit: OrbitClass
    masses: tuple[float, float]
    eccentricity: float
    periastron: float  # closest separation
    apoastron: float  # farthest separation (inf when unbound)
    period: float  # time between closest approaches (inf when unbound)
    specific_angular_momentum: float  # |r x v| of the relative orbit
    strength: float  # k in the relative acceleration k / r^(2 + alpha)
    alpha: float
    drag_tau: float  # inf without drag

    @property
    def total_mass(self) -> float:
        return self.masses[0] + self.masses[1]

    @property
    def reduced_mass(self) -> float:
        return self.masses[0] * self.masses[1] / self.total_mass

    def fraction(self, star: int) -> float:
        """The share of the relative motion a star makes about the centre of mass:
        ``m_other / (m1 + m2)``."""
        return self.masses[2 - star] / self.total_mass

    @property
    def semi_major_axis(self) -> float:
        return (self.periastron + self.apoastron) / 2

    @property
    def semi_minor_axis(self) -> float:
        return self.semi_major_axis * math.sqrt(1 - self.eccentricity**2)

    def relative_speed(self, r: float) -> float:
        """Speed of the relative orbit at separation ``r`` (angular momentum and energy)."""
        if math.isinf(r):  # the asymptotic speed of an unbound orbit
            return math.sqrt(self.strength * (self.eccentricity - 1) / self.periastron)
        h = self.specific_angular_momentum
        v_peri = h / self.periastron
        potential = kepler.power_law_potential(self.strength, self.alpha, self.periastron)
        energy = v_peri**2 / 2 + potential
        return math.sqrt(2 * (energy - kepler.power_law_potential(self.strength, self.alpha, r)))

    def relative_acceleration(self, r: float) -> float:
        return self.strength / r ** (2 + self.alpha)

    @property
    def orbital_energy(self) -> float:
        """Kinetic plus Newtonian potential energy in the centre-of-mass frame (J)."""
        return self.reduced_mass * (self.relative_speed(self.periastron) ** 2 / 2
                                    - self.strength / self.periastron)  # fmt: skip


def facts(system: System) -> Facts:
    """The facts of ``system`` from its parameters (drag systems: at time 0)."""
    q, e = system.periastron_m, system.eccentricity
    k, alpha = system.strength, system.alpha
    if system.physics == "modified":
        h, _ = kepler.power_law_orbit(k, alpha, q, system.apoastron_m)
    else:
        h = math.sqrt(system.mu * q * (1 + e))
    return Facts(
        orbit=orbit_class(system),
        masses=(system.mass1_kg, system.mass2_kg),
        eccentricity=e,
        periastron=q,
        apoastron=system.apoastron_m,
        period=system.period_s(),
        specific_angular_momentum=h,
        strength=k,
        alpha=alpha,
        drag_tau=system.drag_tau_s if system.drag_tau_s is not None else math.inf,
    )


__all__ = ["G_SI", "ORBIT_CLASSES", "Facts", "OrbitClass", "Reason", "eggleton", "facts",
           "orbit_class"]  # fmt: skip
