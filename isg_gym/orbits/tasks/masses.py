"""Masses: each star, the total and the reduced mass (not possible under the modified force
law, whose strength constant is unknown)."""

from __future__ import annotations

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import UNKNOWN_STRENGTH


@register
class StarMass(OrbitTask):
    name = "star_mass"
    family = "masses"
    unit = "kg"
    per_star = True
    undefined = UNKNOWN_STRENGTH
    templates = (
        "What is the mass of star {star}, in {unit}?",
        "Determine the mass of star {star}. Give it in {unit}.",
    )

    def value(self, facts, params):
        return facts.masses[params["star"] - 1]


@register
class TotalMass(OrbitTask):
    name = "total_mass"
    family = "masses"
    unit = "kg"
    undefined = UNKNOWN_STRENGTH
    templates = (
        "What is the total mass of the two stars, in {unit}?",
        "Determine the combined mass of the binary, in {unit}.",
    )

    def value(self, facts, params):
        return facts.total_mass


@register
class ReducedMass(OrbitTask):
    name = "reduced_mass"
    family = "masses"
    unit = "kg"
    undefined = UNKNOWN_STRENGTH
    templates = (
        "What is the reduced mass m1 m2 / (m1 + m2) of the binary, in {unit}?",
        "Determine the system's reduced mass, m1 m2 / (m1 + m2), in {unit}.",
    )

    def value(self, facts, params):
        return facts.reduced_mass
