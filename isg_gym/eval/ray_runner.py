"""``evaluate(..., ray=...)`` / ``isg eval --ray``: the episodes of a run in Ray actors.

Each of ``actors`` Ray actors owns ``actor_concurrency`` envs of the run's registered env (made
there with the run's env arguments, sandbox workers included). Where the policy runs:

- a policy with ``on_driver = False`` (scripted baselines, episode policies) is sent to every
  actor, which plays whole episodes (the local runner's loop, one episode per call) and returns
  each finished episode's record;
- a policy with ``on_driver = True`` (:class:`~isg_gym.eval.policy.ChatPolicy`: a model behind
  a server, or vLLM on the driver's GPU) stays here: the local runner's loop runs on the
  driver over :class:`~isg_gym.rl.ray_pool.RemoteEnv` handles, so one batched model call per
  round covers the live episodes of every actor, and only the env steps run in the actors.

Either way the driver alone writes ``episodes.jsonl`` (through the runner's writer, fail-fast
guard and resume), one record as each episode finishes. An actor that dies (killed, out of
memory, its node lost) or fails ends only its in-flight episodes, recorded as infrastructure
failures (``sandbox_error``: never an answer; ``--resume`` retries them); a new actor replaces
it for the remaining episodes, at most ``max_replacements`` times.
"""

from __future__ import annotations

import queue
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from isg_gym.envs.registry import EnvEntry
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policy import EpisodeState, Policy
from isg_gym.eval.records import build_record
from isg_gym.eval.runner import episode_env_kwargs, play
from isg_gym.rl.ray_pool import (
    ActorGroup,
    EnvWorker,
    RemoteEnvPool,
    connect,
    failure_text,
    is_actor_loss,
    require_ray,
)

__all__ = ["EpisodeWorker", "RayOptions", "run_on_ray"]


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide a Ray run is. ``address``: None follows Ray's rules (``RAY_ADDRESS``,
    the cluster last started here, else a new local instance), ``"local"`` a new local
    instance, else a cluster address (see :func:`isg_gym.rl.ray_pool.connect`)."""

    address: str | None = None
    actors: int = 2
    actor_concurrency: int = 2
    actor_cpus: float = 1.0
    max_replacements: int | None = None  # default: 2 * actors

    def __post_init__(self) -> None:
        if self.actors < 1 or self.actor_concurrency < 1:
            raise ValueError(f"ray_actors and ray_actor_concurrency must be >= 1, got "
                             f"{self.actors} and {self.actor_concurrency}")  # fmt: skip

    @classmethod
    def of(cls, ray: str | bool, actors: int, actor_concurrency: int) -> RayOptions:
        """From ``evaluate``'s arguments (``ray=True`` means Ray's default address)."""
        address = None if ray is True else str(ray)
        return cls(address=address, actors=actors, actor_concurrency=actor_concurrency)

    @property
    def replacements(self) -> int:
        return 2 * self.actors if self.max_replacements is None else self.max_replacements

    def run_info(self) -> dict[str, Any]:
        """What ``run.json`` records of it (``concurrency``: the episodes live at once)."""
        return {"concurrency": self.actors * self.actor_concurrency, "ray": asdict(self)}


class EpisodeWorker(EnvWorker):
    """An :class:`~isg_gym.rl.ray_pool.EnvWorker` that also plays whole episodes with its own
    copy of the policy (:meth:`play`, up to ``slots`` at once, one env each)."""

    def __init__(
        self,
        entry: EnvEntry,
        env_kwargs: dict[str, Any],
        slots: int,
        policy: Policy,
        question_version: int,
    ) -> None:
        super().__init__(entry, env_kwargs, slots)
        self.policy = policy
        self.question_version = question_version
        self._free: queue.SimpleQueue[int] = queue.SimpleQueue()
        for slot in range(slots):
            self._free.put(slot)

    def play(self, index: int, question_id: str) -> dict[str, Any]:
        """Play one episode (the local runner's loop on one env); its record."""
        slot = self._free.get()
        try:
            finished: list[EpisodeState] = []
            play(self.policy, [(index, question_id)], [self.env(slot)], finished.append)
            return build_record(finished[0], self.question_version)
        finally:
            self._free.put(slot)

    def close(self) -> None:
        try:
            self.policy.close()
        finally:
            super().close()


def run_on_ray(
    policy: Policy,
    todo: list[tuple[int, str]],
    entry: EnvEntry,
    env_kwargs: dict[str, Any],
    finish: Callable[[EpisodeState], None],
    write: Callable[[dict[str, Any]], None],
    options: RayOptions,
) -> None:
    """Play ``todo`` in Ray actors: records of finished episodes go to ``write`` (episodes
    played on the driver, to ``finish``). Ray is connected first (and shut down after when this
    call started it)."""
    ray = require_ray()
    started = connect(options.address)
    try:
        if policy.on_driver:
            _drive_remote_envs(policy, todo, entry, env_kwargs, finish, options)
        else:
            _play_in_actors(policy, todo, entry, env_kwargs, write, options)
    finally:
        if started:
            ray.shutdown()


def _drive_remote_envs(
    policy: Policy,
    todo: list[tuple[int, str]],
    entry: EnvEntry,
    env_kwargs: dict[str, Any],
    finish: Callable[[EpisodeState], None],
    options: RayOptions,
) -> None:
    """The policy here, the envs in the actors: the local loop over remote env handles."""
    pool = RemoteEnvPool(
        entry,
        num_envs=min(options.actors * options.actor_concurrency, len(todo)),
        num_actors=options.actors,
        env_kwargs=episode_env_kwargs(env_kwargs),
        autoreset_mode="disabled",
        actor_cpus=options.actor_cpus,
        max_replacements=options.replacements,
    )
    try:
        play(policy, todo, pool.envs, finish)
    finally:
        pool.close()


def _play_in_actors(
    policy: Policy,
    todo: list[tuple[int, str]],
    entry: EnvEntry,
    env_kwargs: dict[str, Any],
    write: Callable[[dict[str, Any]], None],
    options: RayOptions,
) -> None:
    """The policy in the actors: hand out one episode per free env slot; write each record
    as it comes back; a lost episode is recorded as an infrastructure failure."""
    ray = require_ray()
    actors = min(options.actors, len(todo))
    group = ActorGroup(
        EpisodeWorker,
        (entry, episode_env_kwargs(env_kwargs), options.actor_concurrency, policy,
         entry.question_version),
        actors, slots=options.actor_concurrency, actor_cpus=options.actor_cpus,
        max_replacements=options.replacements,
    )  # fmt: skip
    pending = deque(todo)
    in_flight: dict[Any, tuple[int, int, int, str]] = {}  # ref -> actor, generation, episode
    load: Counter[tuple[int, int]] = Counter()
    try:
        while pending or in_flight:
            for a in range(actors):
                handle, generation = group.current(a)
                while handle is not None and pending and load[a, generation] < (
                    options.actor_concurrency
                ):
                    index, question_id = pending.popleft()
                    in_flight[handle.play.remote(index, question_id)] = (a, generation, index,
                                                                         question_id)  # fmt: skip
                    load[a, generation] += 1
            if not in_flight:
                reasons = "; ".join(f"actor {a}: {r}" for a, r in sorted(group.lost.items()))
                raise InfrastructureError(
                    f"every Ray actor died and the {group.max_replacements} replacements are "
                    f"used up ({reasons}); {len(pending)} episodes not played: fix the "
                    "infrastructure and rerun with --resume"
                )
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            a, generation, index, question_id = in_flight.pop(ref)
            load[a, generation] -= 1
            try:
                record = ray.get(ref)
            except ray.exceptions.RayError as exc:
                if is_actor_loss(exc):
                    group.replace(a, generation, failure_text(exc))
                record = _lost(index, question_id, exc, entry.question_version)
            write(record)
    finally:
        group.close(timeout=60.0 if not pending and not in_flight else 0.0)


def _lost(index: int, question_id: str, exc: BaseException, question_version: int) -> dict:
    """The record of an episode its actor did not finish: an infrastructure failure."""
    episode = EpisodeState(index, question_id, env=None, observation="", info={})
    episode.fail("sandbox", f"the episode's Ray actor failed: {failure_text(exc)}")
    return build_record(episode, question_version)
