"""A binary-star system by seed: pure data (a pydantic model with a JSON round trip).

``build_system(seed)`` draws every parameter from :func:`isg_gym.seeding.derive` streams, so
the same seed gives the same system in any process. All stored quantities are SI. The system
is described at the start of its observation window (time 0):

- two stars with masses ``mass1_kg``, ``mass2_kg`` (0.1-20 solar masses each, log-uniform);
- the relative orbit of star 2 about star 1 as a conic through its periastron distance
  ``periastron_m`` and ``eccentricity`` (for the modified force law: the shape whose closest
  and farthest separations are ``periastron_m`` and ``periastron_m (1+e)/(1-e)``), oriented by
  ``inclination``, ``node`` and ``argument`` and started at true anomaly ``anomaly``;
- the centre of mass at ``com_position_m`` moving at ``com_velocity_m_s`` (proper motion);
- the physics: ``newtonian`` (bound or unbound), ``drag`` (every star feels ``a = -v / tau``
  with ``tau = drag_tau_s``, on top of Newtonian gravity) or ``modified`` (the attraction is
  ``G m1 m2 r0^alpha / r^(2 + alpha)`` with ``alpha = gravity_alpha`` and a hidden length
  ``r0 = gravity_length_m``, so the strength constant is unknown to an observer);
- the unit system observations are shown in, the observation window ``[0, window_s]``,
  and the observation model: sky-plane projection (only x and y are seen) and Gaussian
  position noise of ``noise_m`` per coordinate (both off unless the options ask for them).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from isg_gym.orbits import kepler
from isg_gym.orbits.units import AU, G_SI, M_SUN, UnitName
from isg_gym.seeding import check_seed, derive

# Bump when the parameters drawn for a seed change (golden values in tests pin them).
SYSTEM_VERSION = 1
Physics = Literal["newtonian", "drag", "modified"]
Vector = tuple[float, float, float]

# Shares of the physics: 76% Newtonian (a fifth of them unbound), 12% drag, 12% modified.
PHYSICS_SHARES: dict[str, float] = {"newtonian": 0.76, "drag": 0.12, "modified": 0.12}
UNBOUND_SHARE = 0.2  # of the Newtonian systems
SHORT_WINDOW_SHARE = 0.3  # windows under one period (bound systems)
MASS_RANGE_MSUN = (0.1, 20.0)
SIZE_RANGE_AU = (0.05, 50.0)
ALPHA_RANGE = (0.1, 0.5)  # |alpha|, either sign
DRAG_RANGE = (2.0, 20.0)  # tau / window, log-uniform
ECCENTRICITY_RANGES = {"newtonian": (0.0, 0.9), "drag": (0.0, 0.7), "modified": (0.2, 0.8)}


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ObservationOptions(Model):
    """How often systems are observed projected on the sky or with noise (off by default).

    ``noise_levels`` are standard deviations per coordinate relative to the orbit's size
    (its semi-major axis, or periastron distance when unbound)."""

    projection_share: float = Field(0.0, ge=0.0, le=1.0)
    noise_share: float = Field(0.0, ge=0.0, le=1.0)
    noise_levels: tuple[float, ...] = (1e-3,)


class System(Model):
    """One binary-star system (see the module docstring). SI throughout."""

    version: int = SYSTEM_VERSION
    seed: int
    units: UnitName
    physics: Physics
    mass1_kg: float = Field(gt=0)
    mass2_kg: float = Field(gt=0)
    eccentricity: float = Field(ge=0)
    periastron_m: float = Field(gt=0)
    inclination: float
    node: float
    argument: float
    anomaly: float
    com_position_m: Vector
    com_velocity_m_s: Vector
    drag_tau_s: float | None = None
    gravity_alpha: float | None = None
    gravity_length_m: float | None = None
    window_s: float = Field(gt=0)
    projected: bool = False
    noise_m: float = Field(0.0, ge=0)

    def to_json(self) -> str:
        return self.model_dump_json()

    @classmethod
    def from_json(cls, text: str) -> System:
        return cls.model_validate_json(text)

    # --- derived (pure functions of the fields) --------------------------------------------

    @property
    def total_mass_kg(self) -> float:
        return self.mass1_kg + self.mass2_kg

    @property
    def mu(self) -> float:
        """``G (m1 + m2)``: the Newtonian strength of the relative orbit (m^3 s^-2)."""
        return G_SI * self.total_mass_kg

    @property
    def strength(self) -> float:
        """``k`` in the relative acceleration ``k / r^(2 + alpha)`` (``mu`` when Newtonian)."""
        if self.physics == "modified":
            return self.mu * self.gravity_length_m**self.gravity_alpha
        return self.mu

    @property
    def alpha(self) -> float:
        return self.gravity_alpha if self.physics == "modified" else 0.0

    @property
    def bound(self) -> bool:
        return self.eccentricity < 1

    @property
    def apoastron_m(self) -> float:
        """Farthest separation of the initial orbit (inf when unbound)."""
        if not self.bound:
            return math.inf
        return self.periastron_m * (1 + self.eccentricity) / (1 - self.eccentricity)

    @property
    def size_m(self) -> float:
        """The orbit's size scale: semi-major axis (mean of the turning points), or the
        periastron distance when unbound."""
        if not self.bound:
            return self.periastron_m
        return (self.periastron_m + self.apoastron_m) / 2

    def relative_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Position and velocity of star 2 relative to star 1 at time 0 (observer frame)."""
        rot = kepler.rotation(self.inclination, self.node, self.argument)
        q, e, f = self.periastron_m, self.eccentricity, self.anomaly
        if self.physics != "modified":
            pos, vel = kepler.conic_state(self.mu, q, e, f)
            return rot @ pos, rot @ vel
        k, alpha, r_max = self.strength, self.alpha, self.apoastron_m
        h, energy = kepler.power_law_orbit(k, alpha, q, r_max)
        r = q * (1 + e) / (1 + e * math.cos(f))
        v_r = math.copysign(kepler.power_law_radial_speed(k, alpha, h, energy, r), math.sin(f))
        radial = np.array([math.cos(f), math.sin(f), 0.0])
        along = np.array([-math.sin(f), math.cos(f), 0.0])
        return rot @ (r * radial), rot @ (v_r * radial + (h / r) * along)

    def period_s(self) -> float:
        """Kepler period, or the radial period of the modified law (inf when unbound); for
        drag, the osculating period at time 0."""
        if not self.bound:
            return math.inf
        if self.physics == "modified":
            return kepler.power_law_radial_period(
                self.strength, self.alpha, self.periastron_m, self.apoastron_m
            )
        return 2 * math.pi * math.sqrt(self.size_m**3 / self.mu)


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(math.exp(rng.uniform(math.log(low), math.log(high))))


def _unit_vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def build_system(seed: int, options: ObservationOptions | None = None) -> System:
    """The system of ``seed`` (deterministic). ``options`` only change the observation model
    (projection, noise), never the physics, which is drawn from its own streams."""
    seed = check_seed(seed)
    options = options or ObservationOptions()
    rng = derive(seed, "orbits-system", SYSTEM_VERSION)
    physics: Physics = rng.choice(list(PHYSICS_SHARES), p=list(PHYSICS_SHARES.values())).item()
    unbound = physics == "newtonian" and rng.random() < UNBOUND_SHARE
    units = ("si", "cgs", "astro")[int(rng.integers(3))]
    m1 = _log_uniform(rng, *MASS_RANGE_MSUN) * M_SUN
    m2 = _log_uniform(rng, *MASS_RANGE_MSUN) * M_SUN
    size = _log_uniform(rng, *SIZE_RANGE_AU) * AU
    mu = G_SI * (m1 + m2)
    fields: dict = {}
    if unbound:
        e = float(rng.uniform(1.1, 3.0))
        q = size
    else:
        e = float(rng.uniform(*ECCENTRICITY_RANGES[physics]))
        q = size * (1 - e)
    if physics == "drag":
        pass  # tau is set below from the window
    elif physics == "modified":
        alpha = float(rng.uniform(*ALPHA_RANGE)) * (1 if rng.random() < 0.5 else -1)
        fields["gravity_alpha"] = alpha
        fields["gravity_length_m"] = size * 10 ** float(rng.uniform(-1, 1))
    inclination = math.acos(float(rng.uniform(-1, 1)))
    node, argument = (float(x) for x in rng.uniform(0, 2 * math.pi, size=2))
    com_position = rng.uniform(-5, 5, size=3) * size
    v_scale = math.sqrt(mu / size)
    speed = 0.0 if rng.random() < 0.25 else float(rng.uniform(0, 0.5)) * v_scale
    com_velocity = _unit_vector(rng) * speed
    window_rng = derive(seed, "orbits-window", SYSTEM_VERSION)
    if unbound:
        f_inf = math.acos(-1 / e)
        anomaly = -float(window_rng.uniform(0.4, 0.9)) * f_inf
        f_end = float(window_rng.uniform(0.4, 0.9)) * f_inf
        n = kepler.mean_motion(mu, q, e)
        window = (kepler.true_to_mean(e, f_end) - kepler.true_to_mean(e, anomaly)) / n
    else:
        anomaly = float(window_rng.uniform(-math.pi, math.pi))
        short = window_rng.random() < SHORT_WINDOW_SHARE
        cycles = float(window_rng.uniform(0.35, 0.9) if short else window_rng.uniform(1.3, 3.0))
        draft = System(
            seed=seed, units=units, physics=physics, mass1_kg=m1, mass2_kg=m2, eccentricity=e,
            periastron_m=q, inclination=inclination, node=node, argument=argument,
            anomaly=anomaly, com_position_m=(0.0, 0.0, 0.0), com_velocity_m_s=(0.0, 0.0, 0.0),
            window_s=1.0, **fields,
        )  # fmt: skip
        window = cycles * draft.period_s()
    if physics == "drag":
        fields["drag_tau_s"] = window * _log_uniform(window_rng, *DRAG_RANGE)
    obs_rng = derive(seed, "orbits-observation", SYSTEM_VERSION)
    projected = bool(obs_rng.random() < options.projection_share)
    noisy = obs_rng.random() < options.noise_share
    level = options.noise_levels[int(obs_rng.integers(len(options.noise_levels)))]
    return System(
        seed=seed,
        units=units,
        physics=physics,
        mass1_kg=m1,
        mass2_kg=m2,
        eccentricity=e,
        periastron_m=q,
        inclination=inclination,
        node=node,
        argument=argument,
        anomaly=anomaly,
        com_position_m=tuple(float(x) for x in com_position),
        com_velocity_m_s=tuple(float(x) for x in com_velocity),
        window_s=float(window),
        projected=projected,
        noise_m=float(level * size) if noisy else 0.0,
        **fields,
    )
