"""The rollout runner: many episodes of any registered env at once, model calls batched,
records as they finish.

:func:`evaluate` keeps ``concurrency`` environments busy. A :class:`~isg_gym.eval.policy.StepPolicy`
is asked for one turn of every live episode per round (one batched model call: a single
``vllm.LLM.chat``, or ``concurrency`` parallel API requests); the envs then step in parallel
threads (tool calls wait on the sandbox, not on the GIL), finished episodes are written to
``episodes.jsonl`` and their slots take the next question. An
:class:`~isg_gym.eval.policy.EpisodePolicy` (smolagents) plays each episode to the end in its own
thread instead. With ``ray`` the episodes run in Ray actors instead
(:mod:`isg_gym.eval.ray_runner`); the records come back here and are written the same way.

Envs run with ``privileged_info=True`` so that records carry the gold answer and the evidence
files; a policy only sees ``info`` if it is marked ``privileged`` (scripted baselines), a chat
model only ever sees the prompt and the observations.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import queue
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from isg_gym.envs.registry import DEFAULT_ENV, EnvEntry, get_env
from isg_gym.envs.tool_env import ToolEnv
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policy import EpisodePolicy, EpisodeState, Policy, StepPolicy, Turn
from isg_gym.eval.records import (
    RECORDS_FILE,
    RecordWriter,
    build_record,
    is_infra_failure,
    latest_records,
    read_records,
)

RUN_FILE = "run.json"
PUBLIC_INFO = ("question_id", "repository", "type", "family", "step", "tools", "prompt")
_RESUME_KEYS = (
    "env", "question_version", "data_version", "backend", "model", "split", "env_kwargs"
)


def evaluate(
    policy: Policy,
    split: str | Sequence[str],
    out_dir: str | Path,
    *,
    episodes: int | None = None,
    concurrency: int = 4,
    resume: bool = False,
    env_kwargs: dict[str, Any] | None = None,
    progress: bool = False,
    report: bool = True,
    run_info: dict[str, Any] | None = None,
    env: str = DEFAULT_ENV,
    ray: str | bool | None = None,
    ray_actors: int = 2,
    ray_actor_concurrency: int = 2,
) -> dict[str, Any]:
    """Play the questions of ``split`` (the first ``episodes`` of them) of the registered env
    ``env`` (:mod:`isg_gym.envs.registry`) and write the results.

    ``out_dir`` receives ``episodes.jsonl`` (one record per episode, appended as each finishes),
    ``run.json`` (what was run) and, with ``report``, ``summary.json``, ``summary.md`` and
    ``plots/``. With ``resume`` the questions already recorded are skipped (an interrupted run
    continues where it stopped); without it an existing non-empty record file is an error.
    Returns the summary (or ``{"n": ...}`` when ``report`` is False).

    ``ray``: run the episodes in ``ray_actors`` Ray actors of ``ray_actor_concurrency`` envs
    each (:mod:`isg_gym.eval.ray_runner`): True or ``"local"`` for a new local Ray instance, an
    address (``"auto"``, ``"HOST:PORT"``, ``"ray://HOST:10001"``) for a cluster; a Ray session
    already initialized in this process is used as it is. ``concurrency`` is then unused.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if not isinstance(policy, EpisodePolicy | StepPolicy):
        raise TypeError(f"{type(policy).__name__} is neither a StepPolicy nor an EpisodePolicy")
    ray_options = None
    if ray is not None and ray is not False:
        from isg_gym.eval.ray_runner import RayOptions

        ray_options = RayOptions.of(ray, ray_actors, ray_actor_concurrency)
    entry = get_env(env)
    questions = entry.resolve_split(split)
    if episodes is not None:
        if episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        questions = questions[:episodes]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    env_kwargs = dict(env_kwargs or {})
    run = {
        "env": entry.id,
        "backend": policy.name,
        "model": policy.model,
        "split": split if isinstance(split, str) else "custom",
        "episodes": len(questions),
        "concurrency": concurrency,
        "env_kwargs": env_kwargs,
        "question_version": entry.question_version,
        "data_version": entry.data_version,
        **(ray_options.run_info() if ray_options else {}),
        **(run_info or {}),
    }
    done = _prepare(out, run, resume)
    todo = [(i, q) for i, q in enumerate(questions) if (i, q) not in done]
    previous = [r for r in latest_records(read_records(out / RECORDS_FILE))
                if (r.get("index"), r.get("question_id")) in done]  # fmt: skip
    guard = _FailFast(min(FAIL_FAST_EPISODES, len(todo)))
    with RecordWriter(out / RECORDS_FILE) as writer, _Progress(progress, len(questions)) as bar:
        bar.add(len(done), sum(bool(r.get("correct")) for r in previous))

        def write(record: dict[str, Any]) -> None:
            writer.write(record)
            bar.add(1, record["correct"])
            guard.check(record)

        def finish(episode: EpisodeState) -> None:
            write(build_record(episode, entry.question_version))

        if todo and ray_options is not None:
            from isg_gym.eval.ray_runner import run_on_ray

            run_on_ray(policy, todo, entry, env_kwargs, finish, write, ray_options)
        elif todo:
            envs = [_make_env(entry, env_kwargs) for _ in range(min(concurrency, len(todo)))]
            try:
                play(policy, todo, envs, finish)
            finally:
                for env in envs:
                    env.close()
    if not report:
        return {"n": len(read_records(out / RECORDS_FILE))}
    from isg_gym.eval.report import write_report

    return write_report(out)


def _prepare(out: Path, run: dict[str, Any], resume: bool) -> set[tuple[int, str]]:
    """Check ``run.json`` against an earlier run, write it; the (index, id) pairs done."""
    records = read_records(out / RECORDS_FILE)
    run_file = out / RUN_FILE
    if records and not resume:
        raise FileExistsError(
            f"{out / RECORDS_FILE} already has {len(records)} episodes; pass resume=True "
            "(--resume) to continue that run, or choose another output directory"
        )
    if records and run_file.exists():
        before = json.loads(run_file.read_text(encoding="utf-8"))
        before.setdefault("env", DEFAULT_ENV)  # runs from before the registry were ISG-v0
        changed = [k for k in _RESUME_KEYS if before.get(k) != run.get(k)]
        if changed:
            raise ValueError(
                f"cannot resume {out}: {', '.join(changed)} differ from the earlier run "
                f"({ {k: before.get(k) for k in changed} } vs { {k: run.get(k) for k in changed} })"
            )
        run["started"] = before.get("started")
    run.setdefault("started", None)
    run["started"] = run["started"] or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    run_file.write_text(json.dumps(run, indent=2, sort_keys=True, default=str) + "\n")
    # An infrastructure failure is not done: --resume retries it (its record stays, the retry's
    # record is appended and replaces it in every summary).
    return {(r["index"], r["question_id"]) for r in latest_records(records)
            if not is_infra_failure(r)}  # fmt: skip


FAIL_FAST_EPISODES = 4  # a run whose first episodes all fail this way stops


class _FailFast:
    """Raises :class:`InfrastructureError` when the first ``count`` finished episodes are all
    infrastructure failures."""

    def __init__(self, count: int) -> None:
        self.count, self.seen, self.failed, self.first = count, 0, 0, ""

    def check(self, record: dict[str, Any]) -> None:
        if self.seen >= self.count:
            return
        self.seen += 1
        if is_infra_failure(record):
            self.failed += 1
            first = str(record.get("error") or record.get("outcome"))
            self.first = self.first or " ".join(first.split())  # one line
        if self.seen == self.count and self.failed == self.count:
            raise InfrastructureError(
                f"the first {self.count} episodes all failed ({record.get('outcome')}): "
                f"{self.first[:500]}; nothing is wrong with the answers, fix the "
                "infrastructure and rerun with --resume"
            )


def episode_env_kwargs(env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments of an evaluation env: the run's, with the answer key in the
    info (for the records; policies see it only when privileged)."""
    return {**env_kwargs, "privileged_info": True}


def _make_env(entry: EnvEntry, env_kwargs: dict[str, Any]) -> ToolEnv:
    return entry.make(**episode_env_kwargs(env_kwargs))


def play(
    policy: Policy,
    todo: list[tuple[int, str]],
    envs: Sequence[Any],
    finish: Callable[[EpisodeState], None],
) -> None:
    """Play the (index, question id) pairs of ``todo`` on ``envs`` (one live episode per env;
    envs are Gymnasium-style ``reset``/``step`` objects, local or remote), ``finish`` called
    with each finished episode: step policies a batched round at a time, episode policies one
    thread per env. The env calls run in a thread pool made for this call (sandbox workers
    outlive it: :mod:`isg_gym.tools.sandbox.spawner`).
    """
    pool = ThreadPoolExecutor(max(1, len(envs)))
    try:
        if isinstance(policy, EpisodePolicy):
            _run_episodes(policy, todo, list(envs), finish, pool)
        elif isinstance(policy, StepPolicy):
            _run_steps(policy, todo, list(envs), finish, pool)
        else:
            raise TypeError(f"{type(policy).__name__} is neither a StepPolicy nor an "
                            "EpisodePolicy")  # fmt: skip
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _start(policy: Policy, env: Any, index: int, question_id: str) -> EpisodeState:
    observation, info = env.reset(options={"question": question_id})
    gold = {k: v for k, v in info.items() if k not in PUBLIC_INFO}
    if not policy.privileged:
        info = {k: v for k, v in info.items() if k in PUBLIC_INFO}
    episode = EpisodeState(index, question_id, env, observation, info, gold)
    policy.begin(episode)
    return episode


def _run_steps(
    policy: StepPolicy,
    todo: list[tuple[int, str]],
    envs: list[Any],
    finish: Callable[[EpisodeState], None],
    pool: ThreadPoolExecutor,
) -> None:
    pending = list(reversed(todo))
    free = list(envs)
    live: list[EpisodeState] = []
    while pending or live:
        while pending and free:
            live.append(_start(policy, free.pop(), *pending.pop()))
        try:
            turns = policy.act(live)
        except Exception as exc:  # a policy bug must not lose the run's records
            error = f"policy failed: {type(exc).__name__}: {exc}"
            turns = [Turn(error=error, error_kind="policy")] * len(live)
        list(pool.map(lambda pair: _apply(policy, *pair), zip(live, turns, strict=True)))
        for episode in [e for e in live if e.done]:
            live.remove(episode)
            finish(episode)
            free.append(episode.env)


def _apply(policy: StepPolicy, episode: EpisodeState, turn: Turn) -> None:
    if turn.error is not None:
        episode.fail(turn.error_kind, turn.error)
        return
    observation, _, _, _, info = episode.step(turn.action)
    policy.observe(episode, observation, info)


def _run_episodes(
    policy: EpisodePolicy,
    todo: list[tuple[int, str]],
    envs: list[Any],
    finish: Callable[[EpisodeState], None],
    pool: ThreadPoolExecutor,
) -> None:
    free: queue.SimpleQueue[Any] = queue.SimpleQueue()
    for env in envs:
        free.put(env)

    def play(index: int, question_id: str) -> EpisodeState:
        env = free.get()
        try:
            episode = _start(policy, env, index, question_id)
            try:
                policy.play(episode)
            except Exception as exc:
                episode.fail("policy", f"policy failed: {type(exc).__name__}: {exc}")
            return episode
        finally:
            free.put(env)

    futures = [pool.submit(play, i, q) for i, q in todo]
    try:
        for future in futures:
            finish(future.result())
    except BaseException:  # e.g. InfrastructureError: the episodes not started never run
        for future in futures:
            future.cancel()
        raise


class _Progress:
    """A tqdm bar with the running accuracy (plain lines when tqdm is missing or disabled)."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self.n, self.correct = enabled, total, 0, 0
        self._bar: Any = None
        if enabled:
            with contextlib.suppress(ImportError):
                from tqdm import tqdm

                self._bar = tqdm(total=total, unit="ep", dynamic_ncols=True)

    def add(self, n: int, correct: int) -> None:
        self.n += n
        self.correct += int(correct)
        if not self.enabled or n == 0:
            return
        accuracy = self.correct / self.n if self.n else 0.0
        if self._bar is not None:
            self._bar.update(n)
            self._bar.set_postfix(accuracy=f"{accuracy:.3f}")
        else:
            print(f"{self.n}/{self.total} episodes, accuracy {accuracy:.3f}", file=sys.stderr)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
