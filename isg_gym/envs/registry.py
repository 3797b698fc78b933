"""The registry of isg-gym environments: one :class:`EnvEntry` per Gymnasium id.

An entry says how to make the env (a string entry point: importing the registry imports no
env), its named evaluation splits, its scripted policies (``isg eval --backend scripted --model
NAME``), the version of its task generator (recorded in every run and record), and the optional
extra it needs. ``isg_gym`` registers every entry with Gymnasium; the eval runner, ``isg eval
--env ID`` and the reports take any of them.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

from isg_gym.qa.base import QUESTION_VERSION
from isg_gym.spec.models import SPEC_VERSION

__all__ = ["DEFAULT_ENV", "ENVS", "EnvEntry", "get_env", "parse_env_args", "register_env"]

DEFAULT_ENV = "ISG-v0"


def _load(target: str) -> Any:
    """The object ``"module:attribute"`` names."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


@dataclass(frozen=True)
class EnvEntry:
    """How to make, evaluate and version one environment.

    ``entry_point``: ``"module:Class"``. ``splits``: ``"module:function"`` mapping a split name
    (or a list of question ids) to its question ids, raising ValueError for an unknown one;
    ``split_names``: the named splits, ``default_split`` first. ``policies``: scripted policy
    name -> ``"module:Class"``. ``question_version``: the version of the env's task generator
    (question ids mean what they mean under one version only; runs and records carry it).
    ``data_version``: the version of the worlds it generates (ISG-v0: the spec version, whose
    bump changes repositories and so what a question id asks); ``run.json`` carries it and a
    resume refuses another.
    ``extra``: the pip extra the env needs (``isg-gym[extra]``), or None.
    """

    id: str
    entry_point: str
    description: str
    splits: str
    split_names: tuple[str, ...]
    policies: Mapping[str, str] = field(default_factory=dict)
    question_version: int = 1
    data_version: int = 1
    extra: str | None = None

    @property
    def default_split(self) -> str:
        return self.split_names[0]

    def env_class(self) -> type:
        try:
            return _load(self.entry_point)
        except ImportError as exc:
            hint = f"; run: pip install 'isg-gym[{self.extra}]'" if self.extra else ""
            raise ImportError(f"{self.id} needs a package that is missing ({exc}){hint}") from exc

    def make(self, **kwargs: Any) -> Any:
        """A new env (not wrapped by Gymnasium's checkers)."""
        return self.env_class()(**kwargs)

    def resolve_split(self, split: Any) -> list[str]:
        """The question ids of a split of this env."""
        resolver: Callable[[Any], list[str]] = _load(self.splits)
        return resolver(split)

    def policy(self, name: str, **kwargs: Any) -> Any:
        """A scripted policy of this env by name."""
        if name not in self.policies:
            raise ValueError(
                f"unknown scripted policy {name!r} for {self.id}; known: "
                f"{', '.join(sorted(self.policies))}"
            )
        cls = _load(self.policies[name])
        accepted = inspect.signature(cls).parameters
        return cls(**{k: v for k, v in kwargs.items() if k in accepted})

    def arguments(self) -> list[str]:
        """The keyword arguments of the env's constructor (with those of the base classes it
        passes ``**kwargs`` on to)."""
        names: list[str] = []
        for cls in self.env_class().__mro__:
            if "__init__" not in cls.__dict__ or cls.__module__.startswith("gymnasium"):
                continue
            params = inspect.signature(cls.__dict__["__init__"]).parameters.values()
            names += [p.name for p in params if p.name != "self" and p.name not in names
                      and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]  # fmt: skip
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
        return names


ENVS: dict[str, EnvEntry] = {}


def register_env(entry: EnvEntry) -> EnvEntry:
    """Add an entry (and register it with Gymnasium when that is installed)."""
    ENVS[entry.id] = entry
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:
        return entry
    if entry.id not in registry:
        register(id=entry.id, entry_point=entry.entry_point)
    return entry


def get_env(env_id: str) -> EnvEntry:
    """The entry of ``env_id``; ValueError naming the known ids."""
    if env_id not in ENVS:
        raise ValueError(f"unknown env {env_id!r}; known: {', '.join(sorted(ENVS))}")
    return ENVS[env_id]


def parse_env_args(entry: EnvEntry, pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` strings as constructor arguments of the env (VALUE is read as JSON when
    it parses, else kept as text); ValueError for a malformed pair or an unknown key."""
    accepted = entry.arguments()
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--env-arg {pair!r} is not KEY=VALUE")
        if key not in accepted:
            raise ValueError(
                f"--env-arg {key!r} is not an argument of {entry.id}; accepted: "
                f"{', '.join(accepted)}"
            )
        try:
            kwargs[key] = json.loads(text)
        except ValueError:
            kwargs[key] = text
    return kwargs


register_env(
    EnvEntry(
        id="ISG-v0",
        entry_point="isg_gym.envs.env:ISGEnv",
        description="answer one question about a procedurally generated scientific repository",
        splits="isg_gym.eval.splits:resolve_split",
        split_names=("isg-500", "isg-test-500"),
        policies={
            "oracle": "isg_gym.eval.policies.oracle:OraclePolicy",
            "abstain": "isg_gym.eval.policies.baselines:AbstainPolicy",
            "random": "isg_gym.eval.policies.baselines:RandomPolicy",
        },
        question_version=QUESTION_VERSION,
        data_version=SPEC_VERSION,
    )
)

register_env(
    EnvEntry(
        id="ISG-Orbits-v0",
        entry_point="isg_gym.envs.orbits:OrbitsEnv",
        description="infer a binary star system's physics from observations under a budget",
        splits="isg_gym.orbits.splits:resolve_split",
        split_names=("orbits-200", "orbits-test-200"),
        policies={
            "expert": "isg_gym.eval.policies.orbits:OrbitsExpertPolicy",
            "abstain": "isg_gym.eval.policies.baselines:AbstainPolicy",
            "random": "isg_gym.eval.policies.orbits:OrbitsRandomPolicy",
        },
        question_version=2,  # isg_gym.orbits.sampling.QUESTION_VERSION (a test keeps them equal)
        extra="orbits",
    )
)

register_env(
    EnvEntry(
        id="ISG-Discovery-v0",
        entry_point="isg_gym.envs.discovery:DiscoveryEnv",
        description="find which recorded variables affect a repository's outcomes, graded "
        "against the program that generated it",
        splits="isg_gym.discovery.splits:resolve_split",
        split_names=("discovery-200", "discovery-test-200"),
        policies={
            "oracle": "isg_gym.eval.policies.discovery:DiscoveryOraclePolicy",
            "analyst": "isg_gym.eval.policies.discovery:AnalystPolicy",
            "empty": "isg_gym.eval.policies.discovery:EmptyClaimsPolicy",
            "random": "isg_gym.eval.policies.discovery:RandomClaimsPolicy",
        },
        question_version=1,  # isg_gym.envs.discovery.DISCOVERY_VERSION (tested equal)
        data_version=SPEC_VERSION,  # a Discovery world transforms the procedural Spec
    )
)
