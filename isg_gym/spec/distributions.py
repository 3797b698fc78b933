"""Named sampling distributions for independent columns (plain data, sampled vectorised)."""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Dist(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def moments(self) -> tuple[float, float]:
        """Mean and standard deviation (used to scale expression terms)."""
        raise NotImplementedError

    @property
    def nonnegative(self) -> bool:
        return False


# --- continuous -------------------------------------------------------------------------------


class Normal(_Dist):
    name: Literal["normal"] = "normal"
    mean: float
    sd: float = Field(gt=0)

    def sample(self, rng, n):
        return rng.normal(self.mean, self.sd, n)

    def moments(self):
        return self.mean, self.sd


class Uniform(_Dist):
    name: Literal["uniform"] = "uniform"
    low: float
    high: float

    @model_validator(mode="after")
    def _order(self):
        if not self.low < self.high:
            raise ValueError(f"uniform needs low < high, got low={self.low}, high={self.high}")
        return self

    def sample(self, rng, n):
        return rng.uniform(self.low, self.high, n)

    def moments(self):
        return (self.low + self.high) / 2, (self.high - self.low) / math.sqrt(12)

    @property
    def nonnegative(self):
        return self.low >= 0


class LogNormal(_Dist):
    """exp(Normal(mu, sigma)): mu and sigma are on the log scale."""

    name: Literal["lognormal"] = "lognormal"
    mu: float
    sigma: float = Field(gt=0, le=3)

    def sample(self, rng, n):
        return rng.lognormal(self.mu, self.sigma, n)

    def moments(self):
        mean = math.exp(self.mu + self.sigma**2 / 2)
        var = (math.exp(self.sigma**2) - 1) * math.exp(2 * self.mu + self.sigma**2)
        return mean, math.sqrt(var)

    @property
    def nonnegative(self):
        return True


class Beta(_Dist):
    """Beta(a, b) rescaled to [low, high] (default [0, 1])."""

    name: Literal["beta"] = "beta"
    a: float = Field(gt=0)
    b: float = Field(gt=0)
    low: float = 0.0
    high: float = 1.0

    def sample(self, rng, n):
        return self.low + (self.high - self.low) * rng.beta(self.a, self.b, n)

    def moments(self):
        a, b, span = self.a, self.b, self.high - self.low
        mean = a / (a + b)
        sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        return self.low + span * mean, span * sd

    @property
    def nonnegative(self):
        return self.low >= 0


class Exponential(_Dist):
    name: Literal["exponential"] = "exponential"
    scale: float = Field(gt=0)

    def sample(self, rng, n):
        return rng.exponential(self.scale, n)

    def moments(self):
        return self.scale, self.scale

    @property
    def nonnegative(self):
        return True


# --- integer ----------------------------------------------------------------------------------


class Bernoulli(_Dist):
    name: Literal["bernoulli"] = "bernoulli"
    p: float = Field(gt=0, lt=1)

    def sample(self, rng, n):
        return (rng.random(n) < self.p).astype(np.int64)

    def moments(self):
        return self.p, math.sqrt(self.p * (1 - self.p))

    @property
    def nonnegative(self):
        return True


class Binomial(_Dist):
    name: Literal["binomial"] = "binomial"
    n: int = Field(ge=1, le=100_000)
    p: float = Field(gt=0, lt=1)

    def sample(self, rng, n):
        return rng.binomial(self.n, self.p, n).astype(np.int64)

    def moments(self):
        return self.n * self.p, math.sqrt(self.n * self.p * (1 - self.p))

    @property
    def nonnegative(self):
        return True


class Geometric(_Dist):
    """Number of trials up to and including the first success (support 1, 2, ...)."""

    name: Literal["geometric"] = "geometric"
    p: float = Field(gt=0, lt=1)

    def sample(self, rng, n):
        return rng.geometric(self.p, n).astype(np.int64)

    def moments(self):
        return 1 / self.p, math.sqrt(1 - self.p) / self.p

    @property
    def nonnegative(self):
        return True


class NegativeBinomial(_Dist):
    """Failures before the n-th success (support 0, 1, ...)."""

    name: Literal["negative_binomial"] = "negative_binomial"
    n: float = Field(gt=0)
    p: float = Field(gt=0, lt=1)

    def sample(self, rng, n):
        return rng.negative_binomial(self.n, self.p, n).astype(np.int64)

    def moments(self):
        return self.n * (1 - self.p) / self.p, math.sqrt(self.n * (1 - self.p)) / self.p

    @property
    def nonnegative(self):
        return True


class Poisson(_Dist):
    name: Literal["poisson"] = "poisson"
    lam: float = Field(gt=0, le=1e6)

    def sample(self, rng, n):
        return rng.poisson(self.lam, n).astype(np.int64)

    def moments(self):
        return self.lam, math.sqrt(self.lam)

    @property
    def nonnegative(self):
        return True


ContinuousDistribution = Annotated[
    Normal | Uniform | LogNormal | Beta | Exponential, Field(discriminator="name")
]
IntegerDistribution = Annotated[
    Bernoulli | Binomial | Geometric | NegativeBinomial | Poisson, Field(discriminator="name")
]
