"""Physical constants and the unit systems observations are reported in.

Answers are always asked in SI (as in Gravity-Bench); observations come in the system's own
units: SI (m, s), cgs (cm, s) or astronomical (AU, yr). Only lengths and times are ever shown,
so the mass unit of a unit system never appears in an observation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

G_SI = 6.674e-11  # m^3 kg^-1 s^-2, as stated to the agent
M_SUN = 1.98847e30  # kg (IAU 2015 nominal GM_sun / G with the G above, rounded)
AU = 1.495978707e11  # m (IAU 2012, exact)
YEAR = 31_557_600.0  # s (Julian year, exact)

UnitName = Literal["si", "cgs", "astro"]
UNIT_NAMES: tuple[UnitName, ...] = ("si", "cgs", "astro")


@dataclass(frozen=True)
class UnitSystem:
    """How a length and a time are written in one unit system (value in SI = shown * factor)."""

    name: UnitName
    length: str
    time: str
    metres_per_length: float
    seconds_per_time: float
    description: str


UNIT_SYSTEMS: dict[str, UnitSystem] = {
    "si": UnitSystem("si", "m", "s", 1.0, 1.0, "metres and seconds"),
    "cgs": UnitSystem("cgs", "cm", "s", 0.01, 1.0, "centimetres and seconds"),
    "astro": UnitSystem("astro", "AU", "yr", AU, YEAR, "astronomical units and Julian years"),
}


def unit_system(name: str) -> UnitSystem:
    """The unit system named ``name`` (``si``, ``cgs`` or ``astro``)."""
    try:
        return UNIT_SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown unit system {name!r}; known: {', '.join(UNIT_NAMES)}") from None
