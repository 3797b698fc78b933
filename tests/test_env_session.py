"""ISG-v0: the process-wide materialisation cache and ``python_session="persistent"``."""

from __future__ import annotations

import gc
import json
import os
import pickle
import stat
import subprocess
import sys

import pytest
from env_fakes import FakeSandbox

from isg_gym.envs import ISGEnv, materialize
from isg_gym.repository import Repository
from isg_gym.tools.sandbox import bwrap_available
from isg_gym.tools.sandbox.replay import replay_program

QID = "118.univariate_statistic.3"
SEED = 118


def call(name: str, **arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def run(env: ISGEnv, code: str) -> str:
    return env.step(call("run_python_code", code=code))[0]


class LastLineFake(FakeSandbox):
    """Like FakeSandbox, but judges a replayed program by its last line (the new cell)."""

    def run(self, code: str, files_dir: str):
        result = super().run(code.rsplit("\n", 1)[-1], files_dir)
        self.calls[-1] = (code, files_dir)
        return result


def make(**kwargs) -> ISGEnv:
    env = ISGEnv(sandbox=kwargs.pop("sandbox", None) or FakeSandbox(), **kwargs)
    return env


@pytest.fixture(autouse=True)
def no_leftovers():
    yield
    gc.collect()
    assert materialize.cached() == {}, "a test left a materialised repository behind"


# --- materialisation cache -----------------------------------------------------------------


def test_envs_in_one_process_share_a_directory():
    a, b = make(), make()
    a.reset(options={"question": QID})
    b.reset(options={"repository": SEED})
    run(a, "x")
    path = a.sandbox_spec.calls[-1][1]
    run(b, "x")
    assert b.sandbox_spec.calls[-1][1] == path
    assert materialize.refcount(SEED) == 2
    a.close()
    assert os.path.isdir(path) and materialize.refcount(SEED) == 1
    run(b, "x")  # still usable
    assert b.sandbox_spec.calls[-1][1] == path
    b.close()
    assert not os.path.exists(path) and materialize.refcount(SEED) == 0
    a.close()  # idempotent
    b.close()


def test_directory_is_read_only():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x")
    path = env.sandbox_spec.calls[-1][1]
    assert os.path.basename(path).startswith("isg-repo-")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o555
    for root, dirs, files in os.walk(path):
        for name in dirs:
            assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o555
        for name in files:
            assert stat.S_IMODE(os.stat(os.path.join(root, name)).st_mode) == 0o444
    env.close()


def test_later_episodes_reuse_and_old_repositories_are_released():
    env = make()
    dirs = []
    for seed in (1, 2, 1, 3, 4):
        env.reset(options={"repository": seed})
        run(env, "x")
        dirs.append(env.sandbox_spec.calls[-1][1])
    assert dirs[0] == dirs[2]  # reused while still among the last two
    assert set(materialize.cached()) == {3, 4}  # an env holds at most two
    assert not os.path.exists(dirs[0]) and not os.path.exists(dirs[1])
    env.close()
    assert materialize.cached() == {}


def test_garbage_collected_env_releases_its_reference():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x")
    path = env.sandbox_spec.calls[-1][1]
    del env
    gc.collect()
    assert not os.path.exists(path)


def test_removed_directory_is_written_again():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x")
    path = env.sandbox_spec.calls[-1][1]
    materialize.remove_tree(path)
    run(env, "listing")
    new = env.sandbox_spec.calls[-1][1]
    assert new != path and os.path.isdir(new) and materialize.refcount(SEED) == 1
    env.close()
    assert not os.path.exists(new)


def test_pickling_does_not_carry_the_cache():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x")
    path = env.sandbox_spec.calls[-1][1]
    assert not any(key.startswith("_leases") for key in env.__getstate__())
    clone = pickle.loads(pickle.dumps(env))
    assert clone._leases is not env._leases and clone._leases.held() == {}
    run(clone, "x")
    assert clone.sandbox_spec.calls[-1][1] == path  # the clone joins the shared directory
    assert materialize.refcount(SEED) == 2
    env.close()
    assert os.path.isdir(path)
    clone.close()
    assert not os.path.exists(path)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_never_removes_the_parents_directory():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x")
    path = env.sandbox_spec.calls[-1][1]
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        ok = materialize.cached() == {}
        env.close()
        materialize.clear()
        os._exit(0 if ok and os.path.isdir(path) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.path.isdir(path) and materialize.refcount(SEED) == 1
    env.close()


def test_interpreter_exit_removes_leftovers(tmp_path):
    code = (
        "from isg_gym.envs import materialize\n"
        "from isg_gym.repository import Repository\n"
        f"print(materialize.acquire(Repository.from_seed({SEED})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path = out.stdout.strip()
    assert path and "isg-repo-" in path and not os.path.exists(path)


def test_acquire_release_counts():
    repo = Repository.from_seed(SEED)
    p1 = materialize.acquire(repo)
    p2 = materialize.acquire(repo)
    assert p1 == p2 and materialize.refcount(SEED) == 2
    materialize.release(SEED, "/not/the/path")  # stale reference: ignored
    assert materialize.refcount(SEED) == 2
    materialize.release(SEED)
    materialize.release(SEED)
    assert not os.path.exists(p1) and materialize.refcount(SEED) == 0
    materialize.release(SEED)  # nothing left: no error


# --- persistent Python session -------------------------------------------------------------


def test_python_session_is_validated():
    with pytest.raises(ValueError, match="python_session"):
        ISGEnv(python_session="sticky")


def test_fresh_mode_sends_the_code_unchanged():
    env = make()
    env.reset(options={"question": QID})
    run(env, "x = 1")
    run(env, "x")
    assert [c for c, _ in env.sandbox_spec.calls] == ["x = 1", "x"]
    env.close()


def test_persistent_mode_replays_successful_cells_and_resets():
    env = make(python_session="persistent", sandbox=LastLineFake())
    env.reset(options={"question": QID})
    run(env, "a = 1")
    run(env, "boom")  # fails: not replayed
    run(env, "b = 2")
    run(env, "a + b")
    sent = [c for c, _ in env.sandbox_spec.calls]
    assert sent[0] == "a = 1"
    assert sent[2] == replay_program(["a = 1"], "b = 2")
    assert sent[3] == replay_program(["a = 1", "b = 2"], "a + b")
    assert env._cells == ["a = 1", "b = 2", "a + b"]
    clone = pickle.loads(pickle.dumps(env))
    assert clone._cells == env._cells
    clone.close()
    env.reset(options={"question": QID})
    assert env._cells == []
    run(env, "c")
    assert env.sandbox_spec.calls[-1][0] == "c"
    env.close()


def test_replay_program_keeps_the_new_cell_last():
    program = replay_program(["x = 1\nprint('old')"], "y = x\ny + 1")
    assert program.count("\n") == 2 and program.endswith("\ny = x\ny + 1")
    assert replay_program([], "1") == "1"


BACKENDS = ["none"] + (["bwrap"] if bwrap_available() is None else [])


@pytest.mark.parametrize("backend", BACKENDS)
def test_real_sandbox_state_persists_only_in_persistent_mode(backend):
    fresh = ISGEnv(sandbox=backend)
    persistent = ISGEnv(sandbox=backend, python_session="persistent")
    try:
        for env in (fresh, persistent):
            env.reset(options={"question": QID})
            first = run(env, "import math\nx = 41\nprint('hello from cell 1')")
            assert "hello from cell 1" in first, first
        obs = run(fresh, "x + 1")
        assert "NameError" in obs, obs
        run(persistent, "y = 1 / 0")  # an error: not kept
        obs = run(persistent, "print('cell 3')\nmath.floor(x + 1.5)")
        assert "[value]\n42" in obs and "cell 3" in obs, obs
        assert "hello from cell 1" not in obs  # earlier output is discarded
        obs = run(persistent, "y")
        assert "NameError" in obs, obs
        obs = run(persistent, "def f():\n    return x * 2\nf()")
        assert "[value]\n82" in obs, obs
        obs = run(persistent, "f() + 1")
        assert "[value]\n83" in obs, obs
        persistent.reset(options={"question": QID})
        obs = run(persistent, "x")
        assert "NameError" in obs, obs
    finally:
        fresh.close()
        persistent.close()
