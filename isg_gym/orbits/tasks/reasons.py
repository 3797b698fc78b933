"""Shorthands: the orbit classes in which a quantity does not exist, and why."""

from __future__ import annotations

from isg_gym.orbits.truth import OrbitClass, Reason

Undefined = dict[OrbitClass, Reason]

UNBOUND: Undefined = {"unbound": Reason.UNBOUND}
DECAYING: Undefined = {"drag": Reason.DECAYING}
NOT_CONIC: Undefined = {"modified": Reason.NOT_INVERSE_SQUARE}
UNKNOWN_STRENGTH: Undefined = {"modified": Reason.UNKNOWN_STRENGTH}


def union(*parts: Undefined) -> Undefined:
    out: Undefined = {}
    for part in parts:
        out.update(part)
    return out
