"""``evaluate(ray=...)`` / ``isg eval --ray`` and :mod:`isg_gym.rl.ray_pool` on one local Ray
instance (2 CPUs, no dashboard), started once for the module.

Skipped when Ray is not installed, except under ``CI=true``, where a missing Ray fails.
Starting Ray and its actors takes seconds on 2 cores: the default run keeps the behaviours the
issue names (same records as the local runner, with ISG-v0 and another env; resume after a
killed actor; a failing actor's episodes recorded as infrastructure failures) and the pool's
reset/step; a whole split, a chat model on the driver, a killed driver and a killed pool actor
are marked slow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from fake_openai_server import ScriptedChatServer, by_conversation

from isg_gym.cli import main
from isg_gym.envs.env import ISGEnv
from isg_gym.envs.registry import get_env
from isg_gym.eval import EpisodeState, evaluate
from isg_gym.eval.errors import InfrastructureError
from isg_gym.eval.policies.oracle import OraclePolicy
from isg_gym.eval.policy import ChatPolicy
from isg_gym.eval.records import RECORDS_FILE, is_infra_failure, latest_records, read_records
from isg_gym.eval.splits import resolve_split
from isg_gym.tools.sandbox import bwrap_available

TESTS = Path(__file__).resolve().parent
SANDBOX = "bwrap" if bwrap_available() is None else "none"
ENV_KWARGS = {"max_steps": 4, "sandbox": SANDBOX}
IDS = resolve_split("repos:0-6")


def _import_ray() -> Any:
    if os.environ.get("CI") == "true":
        import ray  # CI installs the ray extra: a missing Ray is a failure there

        return ray
    return pytest.importorskip("ray")


@pytest.fixture(scope="module")
def ray_session():
    ray = _import_ray()
    # Workers inherit the environment of the Ray instance this starts: they import isg_gym as
    # this process does, and the test modules (policies below are pickled by reference).
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS), before) if p)
    try:
        # address="local": a new instance even where `ray start` left a cluster address
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 object_store_memory=150 * 1024**2)  # fmt: skip
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = before
    yield ray
    ray.shutdown()


def _same(record: dict[str, Any]) -> dict[str, Any]:
    """A record without its wall time (the only field that may differ between runs)."""
    return {k: v for k, v in record.items() if k != "wall_s"}


def _by_key(out: Path) -> dict[tuple[int, str], dict[str, Any]]:
    records = latest_records(read_records(out / RECORDS_FILE))
    return {(r["index"], r["question_id"]): _same(r) for r in records}


@pytest.fixture(scope="module")
def local_oracle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The oracle's records with the local runner (the reference): ``local_oracle(n)`` for the
    first ``n`` questions of IDS (played once per module, as far as asked)."""
    out = tmp_path_factory.mktemp("local_oracle")

    def records(n: int = len(IDS)) -> dict[tuple[int, str], dict[str, Any]]:
        evaluate(OraclePolicy(), IDS[:n], out, concurrency=2, env_kwargs=ENV_KWARGS,
                 report=False, resume=True)  # fmt: skip
        return {k: v for k, v in _by_key(out).items() if k[0] < n}

    return records


# --- without Ray ------------------------------------------------------------------------------


def test_nothing_imports_ray() -> None:
    code = ("import sys, isg_gym, isg_gym.cli, isg_gym.eval.runner, isg_gym.eval.ray_runner, "
            "isg_gym.rl.ray_pool; assert 'ray' not in sys.modules, 'ray was imported'")  # fmt: skip
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_ray_missing_is_a_one_line_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    argv = ["eval", "--backend", "scripted", "--model", "oracle", "--split", "repos:0-2",
            "--out", str(tmp_path / "run"), "--ray", "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'isg-gym[ray]'" in err
    assert not (tmp_path / "run").exists()


def test_an_actors_sandbox_worker_outlives_its_episodes() -> None:
    """The body of an episode actor (plain Python here) keeps each env's sandbox worker from
    one episode to the next, though each episode runs in a thread pool of its own (workers are
    forked from the sandbox's spawner thread, not from the short-lived thread that asked)."""
    from isg_gym.eval.ray_runner import EpisodeWorker
    from isg_gym.eval.runner import episode_env_kwargs

    entry = get_env("ISG-v0")
    ids = resolve_split("isg-500")[:3]  # the first one runs Python
    worker = EpisodeWorker(entry, episode_env_kwargs(ENV_KWARGS), 1, OraclePolicy(),
                           entry.question_version)  # fmt: skip
    try:
        pids = []
        for index, qid in enumerate(ids):
            assert worker.play(index, qid)["outcome"] == "correct"
            sandbox = worker.env(0).unwrapped._python._sandbox
            assert sandbox is not None and sandbox.alive
            pids.append(sandbox._proc.pid)
        assert len(set(pids)) == 1, pids
    finally:
        worker.close()


# --- same records as the local runner ---------------------------------------------------------


def test_oracle_through_cli_ray_matches_the_local_runner(
    ray_session, local_oracle: Any, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    argv = ["eval", "--backend", "scripted", "--model", "oracle", "--split", "repos:0-6",
            "--episodes", "2", "--out", str(out), "--max-steps", "4", "--sandbox", SANDBOX,
            "--no-progress", "--ray", "--ray-actors", "1",
            "--ray-actor-concurrency", "2"]  # fmt: skip
    assert main(argv) == 0
    local = local_oracle(2)
    remote = _by_key(out)
    assert remote == local and len(remote) == 2
    assert all(r["outcome"] == "correct" for r in remote.values())
    run = json.loads((out / "run.json").read_text())
    assert run["ray"]["actors"] == 1 and run["concurrency"] == 2


def test_cli_ray_with_another_env_and_several_models_matches_the_local_runner(
    ray_session, tmp_path: Path
) -> None:
    """``--env ISG-Orbits-v0 --model expert,abstain --ray``: one Ray run per model, each the
    same records as the local runner's, and the leaderboard of both."""
    pytest.importorskip("rebound")
    common = ["eval", "--env", "ISG-Orbits-v0", "--backend", "scripted", "--model",
              "expert,abstain", "--episodes", "2", "--no-progress"]  # fmt: skip
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--out", str(tmp_path / "ray"), "--ray", "--ray-actors", "1",
                 "--ray-actor-concurrency", "2"]) == 0  # fmt: skip
    for model in ("expert", "abstain"):
        local, remote = _by_key(tmp_path / "local" / model), _by_key(tmp_path / "ray" / model)
        assert remote == local and len(remote) == 2
        run = json.loads((tmp_path / "ray" / model / "run.json").read_text())
        assert run["env"] == "ISG-Orbits-v0" and run["ray"]["actors"] == 1
    assert Counter(r["correct"] for r in _by_key(tmp_path / "ray" / "expert").values())[True]
    assert (tmp_path / "ray" / "leaderboard.md").exists()


# --- a whole split, a chat model on the driver, failures and resume ----------------------------


@pytest.mark.slow
def test_oracle_in_two_actors_matches_the_local_runner(
    ray_session, local_oracle: Any, tmp_path: Path
) -> None:
    evaluate(OraclePolicy(), IDS, tmp_path, env_kwargs=ENV_KWARGS, report=False, ray=True,
             ray_actors=2, ray_actor_concurrency=2)  # fmt: skip
    assert _by_key(tmp_path) == local_oracle()
    assert len(read_records(tmp_path / RECORDS_FILE)) == len(IDS)


def _chat_script(answers: dict[str, str]) -> Any:
    """Per question (by its text): list the root, run a line of Python, then answer."""

    def reply(user: str, turn: int, body: dict[str, Any]) -> dict[str, Any] | None:
        if turn == 0:
            return {"tool_calls": [{"name": "list_directory", "arguments": {"path": "/"}}]}
        if turn == 1:
            code = "import os\nprint(len(os.listdir('.')))"
            return {"tool_calls": [{"name": "run_python_code", "arguments": {"code": code}}]}
        return {"content": json.dumps({"answer": answers[user]})}

    return by_conversation(reply)


@pytest.mark.slow
def test_chat_backend_on_the_driver_matches_the_local_runner(ray_session, tmp_path) -> None:
    pytest.importorskip("openai")
    from isg_gym.eval.backends.openai_compat import OpenAIBackend

    env = ISGEnv(privileged_info=True, sandbox="none")
    answers = {}
    for n, qid in enumerate(IDS[:4]):  # the gold answer for two, a wrong one for the others
        _, info = env.reset(options={"question": qid})
        answers[info["prompt"]["user"]] = info["answer"] if n % 2 else "41.5"
    env.close()

    def run(out: Path, **ray: Any) -> int:
        with ScriptedChatServer(_chat_script(answers)) as server:
            backend = OpenAIBackend("scripted-model", base_url=server.url, api_key_env="NONE",
                                    concurrency=4, timeout=30.0)  # fmt: skip
            try:
                evaluate(ChatPolicy(backend), IDS[:4], out, concurrency=4,
                         env_kwargs=ENV_KWARGS, report=False, **ray)  # fmt: skip
            finally:
                backend.close()
            assert server.errors == []
            return max(len(body["messages"]) for body, _ in server.exchanges)

    run(tmp_path / "local")
    run(tmp_path / "ray", ray=True, ray_actors=2, ray_actor_concurrency=2)
    local, remote = _by_key(tmp_path / "local"), _by_key(tmp_path / "ray")
    assert remote == local and len(remote) == 4
    assert Counter(r["correct"] for r in remote.values()) == Counter({True: 2, False: 2})
    assert all(r["steps"] == 3 and r["model_calls"] == 3 for r in remote.values())


class KillOwnActorOnce(OraclePolicy):
    """The oracle, except that the first time it begins ``victim`` (a marker file says
    whether it did) it has its own Ray actor killed with ``ray.kill``."""

    def __init__(self, victim: str, marker: str) -> None:
        super().__init__()
        self.victim, self.marker = victim, marker

    def begin(self, episode: EpisodeState) -> None:
        if episode.question_id == self.victim and not os.path.exists(self.marker):
            import ray

            Path(self.marker).touch()
            ray.kill(ray.get_runtime_context().current_actor)
            time.sleep(120)  # killed before this returns
        super().begin(episode)


def test_killed_actor_then_resume_keeps_every_finished_episode_and_repeats_none(
    ray_session, local_oracle: Any, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    policy = KillOwnActorOnce(IDS[1], str(tmp_path / "killed"))
    evaluate(policy, IDS, out, env_kwargs=ENV_KWARGS, report=False, ray=True, ray_actors=2,
             ray_actor_concurrency=2)  # fmt: skip
    first = read_records(out / RECORDS_FILE)
    assert (tmp_path / "killed").exists() and len(first) == len(IDS)
    failed = [r for r in first if is_infra_failure(r)]
    # The victim and at most the one other episode in flight on that actor are lost; the
    # replacement actor and the other actor played the rest.
    assert IDS[1] in {r["question_id"] for r in failed} and 1 <= len(failed) <= 2
    for r in failed:
        assert r["outcome"] == "sandbox_error" and "Ray actor" in r["error"]
        assert not r["correct"] and r["answer"] is None
    finished = {(r["index"], r["question_id"]) for r in first if not is_infra_failure(r)}
    assert all(r["outcome"] == "correct" for r in first if not is_infra_failure(r))

    evaluate(policy, IDS, out, env_kwargs=ENV_KWARGS, report=False, resume=True, ray=True,
             ray_actors=2, ray_actor_concurrency=2)  # fmt: skip
    records = read_records(out / RECORDS_FILE)
    assert records[: len(first)] == first  # nothing written before is touched
    retried = records[len(first) :]
    assert {(r["index"], r["question_id"]) for r in retried} == {
        (r["index"], r["question_id"]) for r in failed
    }  # only the lost episodes ran again: no finished one is repeated
    assert not finished & {(r["index"], r["question_id"]) for r in retried}
    assert _by_key(out) == local_oracle()


@pytest.mark.slow
def test_killed_driver_then_resume_keeps_every_finished_episode_and_repeats_none(
    ray_session, local_oracle: Any, tmp_path: Path
) -> None:
    """A driver process (``isg eval --ray HOST:PORT``, joining this module's Ray instance by
    its address) is killed after two records; ``--resume`` completes the run."""
    out = tmp_path / "run"
    address = ray_session.get_runtime_context().gcs_address
    argv = [sys.executable, "-m", "isg_gym.cli", "eval", "--backend", "scripted", "--model",
            "oracle", "--split", "repos:0-6", "--out", str(out), "--max-steps", "4",
            "--sandbox", SANDBOX, "--no-progress", "--ray", address, "--ray-actors", "1",
            "--ray-actor-concurrency", "1"]  # fmt: skip
    driver = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while len(read_records(out / RECORDS_FILE)) < 2 and driver.poll() is None:
            assert time.monotonic() < deadline, "the driver wrote no two records in 240 s"
            time.sleep(0.2)
    finally:
        driver.kill()
        _, stderr = driver.communicate()
    first = read_records(out / RECORDS_FILE)
    assert driver.returncode == -9, stderr.decode()[-2000:]  # killed, not finished
    assert 2 <= len(first) < len(IDS) and not any(is_infra_failure(r) for r in first)
    evaluate(OraclePolicy(), "repos:0-6", out, env_kwargs=ENV_KWARGS, report=False,
             resume=True, ray=True, ray_actors=1, ray_actor_concurrency=2)  # fmt: skip
    records = read_records(out / RECORDS_FILE)
    assert records[: len(first)] == first and len(records) == len(IDS)  # none repeated
    assert _by_key(out) == local_oracle()


class CrashOn(OraclePolicy):
    """The oracle, except that beginning one of ``victims`` raises in the actor (``"raise"``)
    or ends the actor's process (``"exit"``)."""

    def __init__(self, victims: dict[str, str]) -> None:
        super().__init__()
        self.victims = victims

    def begin(self, episode: EpisodeState) -> None:
        how = self.victims.get(episode.question_id)
        if how == "raise":
            raise RuntimeError("the env could not start")
        if how == "exit":
            os._exit(1)
        super().begin(episode)


def test_failing_actor_episodes_are_infrastructure_failures(ray_session, tmp_path) -> None:
    out = tmp_path / "run"
    policy = CrashOn({IDS[1]: "raise", IDS[2]: "exit"})
    evaluate(policy, IDS[:4], out, env_kwargs=ENV_KWARGS, report=False, ray=True,
             ray_actors=1, ray_actor_concurrency=1)  # fmt: skip
    by_id = {r["question_id"]: r for r in read_records(out / RECORDS_FILE)}
    assert set(by_id) == set(IDS[:4])  # one at a time: only the failed episodes are lost
    for victim, says in ((IDS[1], "RuntimeError"), (IDS[2], "Ray actor")):
        record = by_id[victim]
        assert record["outcome"] == "sandbox_error" and is_infra_failure(record)
        assert says in record["error"] and not record["correct"] and record["answer"] is None
    assert all(by_id[q]["outcome"] == "correct" for q in (IDS[0], IDS[3]))

    # An actor that dies on every episode: its replacements run out, the run stops, and every
    # episode it took is recorded as an infrastructure failure, none as an answer.
    out = tmp_path / "broken"
    with pytest.raises(InfrastructureError, match="replacements"):
        evaluate(CrashOn(dict.fromkeys(IDS, "exit")), IDS, out, env_kwargs=ENV_KWARGS,
                 report=False, ray=True, ray_actors=1, ray_actor_concurrency=1)  # fmt: skip
    records = read_records(out / RECORDS_FILE)
    assert len(records) == 3 and all(r["outcome"] == "sandbox_error" for r in records)


# --- the env pool -----------------------------------------------------------------------------


def _equal(a: Any, b: Any) -> bool:
    """Deep equality of observations and stacked infos (numpy object arrays included)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and _equal(a.tolist(), b.tolist())
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


POOL_KWARGS = {"max_steps": 2, "sandbox": SANDBOX, "privileged_info": True}
LIST = '<tool_call>{"name": "list_directory", "arguments": {"path": "/"}}</tool_call>'
ABSTAIN = {"name": "final_answer", "arguments": {"answer": "not possible"}}


def test_pool_reset_and_step_match_a_local_vector_env(ray_session) -> None:
    from isg_gym.rl.ray_pool import RemoteEnvPool

    local = gym.vector.SyncVectorEnv([lambda: ISGEnv(**POOL_KWARGS) for _ in range(3)])
    pool = RemoteEnvPool("ISG-v0", num_envs=3, num_actors=2, env_kwargs=POOL_KWARGS)
    try:
        assert pool.single_observation_space == local.single_observation_space
        assert _equal(pool.reset(seed=11), local.reset(seed=11))
        # env 1 answers (terminated), env 2 sends junk, then: env 0 answers, env 1 autoresets,
        # env 2 hits the step limit (truncated); then 0 and 2 autoreset.
        for actions in ([LIST, ABSTAIN, "junk"], [ABSTAIN, LIST, LIST], [LIST, LIST, LIST]):
            remote_step, local_step = pool.step(actions), local.step(actions)
            assert _equal(remote_step, local_step)
        assert list(remote_step[2]) == [False, False, False]  # after the autoresets

        ids = IDS[:3]  # one question per env, and one env alone through its handle
        options = [{"question": q} for q in ids]
        _, infos = pool.reset(options=options)
        assert list(infos["question_id"]) == ids
        env = ISGEnv(**POOL_KWARGS)
        assert _equal(pool.envs[1].reset(options=options[1]), env.reset(options=options[1]))
        assert _equal(pool.envs[1].step(LIST), env.step(LIST))
        env.close()
    finally:
        pool.close()
        local.close()


@pytest.mark.slow
def test_pool_envs_of_a_killed_actor_come_back_truncated_then_are_recreated(
    ray_session,
) -> None:
    from isg_gym.rl.ray_pool import RemoteEnvPool

    pool = RemoteEnvPool(get_env("ISG-v0"), num_envs=3, num_actors=2, env_kwargs=POOL_KWARGS,
                         autoreset_mode="disabled")  # fmt: skip
    try:
        pool.reset(options=[{"question": q} for q in IDS[:3]])
        victim, _ = pool.actors.current(0)  # envs 0 and 2
        ray_session.kill(victim)
        _, rewards, terminated, truncated, infos = pool.step([LIST] * 3)
        assert list(truncated) == [True, False, True] and not terminated.any()
        assert list(rewards) == [0.0, 0.0, 0.0]
        assert list(infos["_infra_error"]) == [True, False, True]
        assert "Ray actor" in infos["infra_error"][0]
        assert pool.actors.replaced == 1
        _, infos = pool.reset(options=[{"question": q} for q in IDS[:3]])
        assert list(infos["question_id"]) == IDS[:3]
        _, _, _, truncated, infos = pool.step([LIST] * 3)
        assert not truncated.any() and "infra_error" not in infos
    finally:
        pool.close()
