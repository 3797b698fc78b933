"""Energy: the orbital energy in the centre-of-mass frame and whether the system is bound."""

from __future__ import annotations

from typing import ClassVar

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, UNKNOWN_STRENGTH, union
from isg_gym.orbits.truth import OrbitClass


@register
class TotalEnergy(OrbitTask):
    name = "total_energy"
    family = "energy"
    unit = "J"
    undefined = union(DECAYING, UNKNOWN_STRENGTH)
    templates = (
        "What is the total orbital energy of the binary (kinetic energy in the centre-of-mass "
        "frame plus gravitational potential energy -G m1 m2 / r), in {unit}?",
        "Determine the binary's orbital energy, kinetic (centre-of-mass frame) plus potential "
        "(-G m1 m2 / r), in {unit}.",
    )

    def value(self, facts, params):
        return facts.orbital_energy


@register
class IsBound(OrbitTask):
    name = "is_bound"
    family = "energy"
    kind = "yes_no"
    undefined = UNKNOWN_STRENGTH
    answers: ClassVar[dict[OrbitClass, bool]] = {"bound": True, "unbound": False, "drag": True}
    templates = (
        "Is the binary gravitationally bound, i.e. is its orbital energy (kinetic in the "
        "centre-of-mass frame plus -G m1 m2 / r) negative? Answer yes or no.",
        "Answer yes or no: is the total orbital energy of the two stars (centre-of-mass kinetic "
        "energy plus -G m1 m2 / r) negative, so that they are bound?",
    )
