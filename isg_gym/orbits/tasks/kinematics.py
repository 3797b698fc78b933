"""Extremes over the orbit: speeds, momenta and accelerations of a star (centre-of-mass frame)
and the angular velocity of the relative orbit. An unbound orbit never reaches its minima; a
decaying (drag) orbit has no fixed extremes; momenta need the masses."""

from __future__ import annotations

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, UNBOUND, UNKNOWN_STRENGTH, union


def _speed(facts, star: int, r: float) -> float:
    return facts.fraction(star) * facts.relative_speed(r)


@register
class MaxSpeed(OrbitTask):
    name = "max_speed"
    family = "kinematics"
    unit = "m/s"
    per_star = True
    undefined = DECAYING
    templates = (
        "What is the maximum speed of star {star} relative to the centre of mass over its "
        "orbit, in {unit}?",
        "How fast does star {star} move at most, in the centre-of-mass frame? Give it in "
        "{unit}.",
    )

    def value(self, facts, params):
        return _speed(facts, params["star"], facts.periastron)


@register
class MinSpeed(OrbitTask):
    name = "min_speed"
    family = "kinematics"
    unit = "m/s"
    per_star = True
    undefined = union(UNBOUND, DECAYING)
    templates = (
        "What is the minimum speed of star {star} relative to the centre of mass over its "
        "orbit, in {unit}?",
        "How slowly does star {star} move at its slowest, in the centre-of-mass frame? Give "
        "it in {unit}.",
    )

    def value(self, facts, params):
        return _speed(facts, params["star"], facts.apoastron)


@register
class MaxMomentum(OrbitTask):
    name = "max_momentum"
    family = "kinematics"
    unit = "kg m/s"
    per_star = True
    undefined = union(DECAYING, UNKNOWN_STRENGTH)
    templates = (
        "What is the maximum linear momentum of star {star} in the centre-of-mass frame, in "
        "{unit}?",
        "Determine the largest momentum (mass times speed, centre-of-mass frame) star {star} "
        "reaches, in {unit}.",
    )

    def value(self, facts, params):
        star = params["star"]
        return facts.masses[star - 1] * _speed(facts, star, facts.periastron)


@register
class MinMomentum(OrbitTask):
    name = "min_momentum"
    family = "kinematics"
    unit = "kg m/s"
    per_star = True
    undefined = union(UNBOUND, DECAYING, UNKNOWN_STRENGTH)
    templates = (
        "What is the minimum linear momentum of star {star} in the centre-of-mass frame, in "
        "{unit}?",
        "Determine the smallest momentum (mass times speed, centre-of-mass frame) star {star} "
        "reaches, in {unit}.",
    )

    def value(self, facts, params):
        star = params["star"]
        return facts.masses[star - 1] * _speed(facts, star, facts.apoastron)


@register
class MaxAcceleration(OrbitTask):
    name = "max_acceleration"
    family = "kinematics"
    unit = "m/s^2"
    per_star = True
    undefined = DECAYING
    templates = (
        "What is the maximum acceleration of star {star} over its orbit, in {unit}?",
        "Determine the largest magnitude of star {star}'s acceleration, in {unit}.",
    )

    def value(self, facts, params):
        return facts.fraction(params["star"]) * facts.relative_acceleration(facts.periastron)


@register
class MinAcceleration(OrbitTask):
    name = "min_acceleration"
    family = "kinematics"
    unit = "m/s^2"
    per_star = True
    undefined = union(UNBOUND, DECAYING)
    templates = (
        "What is the minimum acceleration of star {star} over its orbit, in {unit}?",
        "Determine the smallest magnitude of star {star}'s acceleration over its orbit, in "
        "{unit}.",
    )

    def value(self, facts, params):
        return facts.fraction(params["star"]) * facts.relative_acceleration(facts.apoastron)


@register
class MaxAngularVelocity(OrbitTask):
    name = "max_angular_velocity"
    family = "kinematics"
    unit = "rad/s"
    undefined = DECAYING
    templates = (
        "What is the maximum angular velocity of star 2 around star 1, in {unit}?",
        "How fast does the line joining the stars rotate at most? Give the angular velocity "
        "in {unit}.",
    )

    def value(self, facts, params):
        return facts.specific_angular_momentum / facts.periastron**2


@register
class MinAngularVelocity(OrbitTask):
    name = "min_angular_velocity"
    family = "kinematics"
    unit = "rad/s"
    undefined = union(UNBOUND, DECAYING)
    templates = (
        "What is the minimum angular velocity of star 2 around star 1, in {unit}?",
        "How slowly does the line joining the stars rotate at its slowest? Give the angular "
        "velocity in {unit}.",
    )

    def value(self, facts, params):
        return facts.specific_angular_momentum / facts.apoastron**2
