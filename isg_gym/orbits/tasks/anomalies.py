"""Departures from a Kepler orbit: the drag timescale, the force-law exponent, and whether the
line of apsides precesses."""

from __future__ import annotations

from typing import ClassVar

from isg_gym.orbits.tasks.base import OrbitTask, register
from isg_gym.orbits.tasks.reasons import DECAYING, UNBOUND, Undefined, union
from isg_gym.orbits.truth import OrbitClass, Reason


@register
class DragTimescale(OrbitTask):
    name = "drag_timescale"
    family = "anomalies"
    unit = "s"
    undefined: ClassVar[Undefined] = {
        "bound": Reason.NO_DRAG,
        "unbound": Reason.NO_DRAG,
        "modified": Reason.NO_DRAG,
    }
    templates = (
        "The stars may feel a linear drag, a = -v / tau, besides gravity. What is tau, in "
        "{unit}? If there is no drag, answer 'not possible'.",
        "If each star feels a drag acceleration -v / tau (v: its velocity), what is the "
        "timescale tau in {unit}? Answer 'not possible' if there is no drag.",
    )

    def value(self, facts, params):
        return facts.drag_tau


@register
class GravityExponent(OrbitTask):
    name = "gravity_exponent"
    family = "anomalies"
    undefined: ClassVar[Undefined] = {
        "bound": Reason.INVERSE_SQUARE,
        "unbound": Reason.INVERSE_SQUARE,
        "drag": Reason.INVERSE_SQUARE,
    }
    templates = (
        "The attraction between the stars may deviate from the inverse-square law as "
        "F ~ r^-(2 + alpha). What is alpha? If the force follows the inverse-square law, "
        "answer 'not possible'.",
        "Suppose gravity here scales as r^-(2 + alpha) with the separation r. Determine alpha; "
        "answer 'not possible' if gravity follows the inverse-square law.",
    )

    def value(self, facts, params):
        return facts.alpha


@register
class ApsidalPrecession(OrbitTask):
    name = "apsidal_precession"
    family = "anomalies"
    kind = "yes_no"
    undefined = union(UNBOUND, DECAYING)
    answers: ClassVar[dict[OrbitClass, bool]] = {"bound": False, "modified": True}
    templates = (
        "Does the orbit's line of apsides precess, i.e. does the direction of closest approach "
        "turn from one orbit to the next? Answer yes or no.",
        "Answer yes or no: do successive closest approaches of the stars happen in different "
        "directions (apsidal precession)?",
    )
