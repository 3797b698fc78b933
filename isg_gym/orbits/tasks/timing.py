"""Timing: the orbital period (time between closest approaches) and Kepler's third-law
constant P^2 / a^3."""

from __future__ import annotations

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, NOT_CONIC, UNBOUND, union


@register
class Period(OrbitTask):
    name = "period"
    family = "timing"
    unit = "s"
    undefined = union(UNBOUND, DECAYING)
    templates = (
        "What is the orbital period of the binary (the time between successive closest "
        "approaches), in {unit}?",
        "How long does one orbit take, from one closest approach of the stars to the next? "
        "Give it in {unit}.",
    )

    def value(self, facts, params):
        return facts.period


@register
class KeplerConstant(OrbitTask):
    name = "kepler_constant"
    family = "timing"
    unit = "s^2/m^3"
    undefined = union(UNBOUND, DECAYING, NOT_CONIC)
    templates = (
        "What is the value of P^2 / a^3 for this orbit (P: the period, a: the semi-major "
        "axis), in {unit}?",
        "Kepler's third law relates the period P and semi-major axis a of the orbit. What is "
        "P^2 / a^3 here, in {unit}?",
    )

    def value(self, facts, params):
        return facts.period**2 / facts.semi_major_axis**3
