"""Geometry of the relative orbit: eccentricity, semi-major and semi-minor axes, closest and
farthest separations, the area of the orbit and the Roche lobe radius of a star."""

from __future__ import annotations

import math

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, NOT_CONIC, UNBOUND, union
from isg_gym.orbits.truth import eggleton

ELLIPSE_ONLY = union(UNBOUND, DECAYING, NOT_CONIC)


@register
class Eccentricity(OrbitTask):
    name = "eccentricity"
    family = "geometry"
    undefined = union(DECAYING, NOT_CONIC)
    templates = (
        "What is the eccentricity of the orbit?",
        "Determine the orbital eccentricity of the binary.",
    )

    def value(self, facts, params):
        return facts.eccentricity


@register
class SemiMajorAxis(OrbitTask):
    name = "semi_major_axis"
    family = "geometry"
    unit = "m"
    undefined = ELLIPSE_ONLY
    templates = (
        "What is the semi-major axis of the orbit, in {unit}?",
        "Determine the semi-major axis of the relative orbit of the stars, in {unit}.",
    )

    def value(self, facts, params):
        return facts.semi_major_axis


@register
class SemiMinorAxis(OrbitTask):
    name = "semi_minor_axis"
    family = "geometry"
    unit = "m"
    undefined = ELLIPSE_ONLY
    templates = (
        "What is the semi-minor axis of the orbit, in {unit}?",
        "Determine the semi-minor axis of the relative orbit of the stars, in {unit}.",
    )

    def value(self, facts, params):
        return facts.semi_minor_axis


@register
class Periastron(OrbitTask):
    name = "periastron"
    family = "geometry"
    unit = "m"
    undefined = DECAYING
    templates = (
        "What is the periastron distance (the closest separation of the stars), in {unit}?",
        "How close do the two stars come to each other? Give the smallest separation in "
        "{unit}.",
    )

    def value(self, facts, params):
        return facts.periastron


@register
class Apoastron(OrbitTask):
    name = "apoastron"
    family = "geometry"
    unit = "m"
    undefined = union(UNBOUND, DECAYING)
    templates = (
        "What is the apoastron distance (the largest separation of the stars), in {unit}?",
        "How far apart do the two stars get? Give the largest separation in {unit}.",
    )

    def value(self, facts, params):
        return facts.apoastron


@register
class OrbitArea(OrbitTask):
    name = "orbit_area"
    family = "geometry"
    unit = "m^2"
    undefined = ELLIPSE_ONLY
    templates = (
        "What is the area enclosed by the relative orbit, in {unit}?",
        "Determine the area of the ellipse traced by star 2 around star 1, in {unit}.",
    )

    def value(self, facts, params):
        return math.pi * facts.semi_major_axis * facts.semi_minor_axis


@register
class RocheLobe(OrbitTask):
    name = "roche_lobe_radius"
    family = "geometry"
    unit = "m"
    per_star = True
    undefined = ELLIPSE_ONLY
    templates = (
        "What is the Roche lobe radius of star {star}, from Eggleton's formula with the "
        "semi-major axis, in {unit}?",
        "Using Eggleton's approximation r_L = a 0.49 q^(2/3) / (0.6 q^(2/3) + ln(1 + q^(1/3))) "
        "with q the mass of star {star} over the other star's mass, what is the Roche lobe "
        "radius of star {star}, in {unit}?",
    )

    def value(self, facts, params):
        star = params["star"]
        ratio = facts.masses[star - 1] / facts.masses[2 - star]
        return facts.semi_major_axis * eggleton(ratio)
