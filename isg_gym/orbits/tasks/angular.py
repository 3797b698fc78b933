"""Angular momentum: the areal velocity of the relative orbit (Kepler's second law: constant
for any central force, not under drag) and the orbital angular momentum (needs the masses)."""

from __future__ import annotations

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, UNKNOWN_STRENGTH, union


@register
class ArealVelocity(OrbitTask):
    name = "areal_velocity"
    family = "angular_momentum"
    unit = "m^2/s"
    undefined = DECAYING
    templates = (
        "At what rate does the line from star 1 to star 2 sweep out area, in {unit}?",
        "What is the areal velocity of the relative orbit (area swept per unit time by the "
        "separation vector), in {unit}?",
    )

    def value(self, facts, params):
        return facts.specific_angular_momentum / 2


@register
class AngularMomentum(OrbitTask):
    name = "angular_momentum"
    family = "angular_momentum"
    unit = "kg m^2/s"
    undefined = union(DECAYING, UNKNOWN_STRENGTH)
    templates = (
        "What is the magnitude of the binary's orbital angular momentum about its centre of "
        "mass, in {unit}?",
        "Determine the total orbital angular momentum of the two stars in the centre-of-mass "
        "frame, in {unit}.",
    )

    def value(self, facts, params):
        return facts.reduced_mass * facts.specific_angular_momentum
