"""The lazy FUSE view (isg_gym.tools.sandbox.lazyview) seen from the host, and the sandbox and
environment serving FileSources through it (or through the materialising fallback)."""

from __future__ import annotations

import errno
import gc
import mmap
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuse_support import ON_CI, own_mounts, require_fuse

import isg_gym.tools.sandbox as sandbox_pkg
from isg_gym.repository import Repository
from isg_gym.tools.files import DictFiles, is_file_source, walk, write_source
from isg_gym.tools.sandbox import SandboxLimits, SandboxUnavailable, files_mode, get_sandbox
from isg_gym.tools.sandbox import lazyview as lazyview_mod
from isg_gym.tools.sandbox.lazyview import LazyView, live_mounts

A = DictFiles(
    "test:a",
    {
        "x.csv": b"a,b\n1,2\n3,4\n",
        "sub/y.txt": b"hello\n",
        "sub/deep/er/z.json": b'[{"a": 1}]',
        "only_a/deep/secret.txt": b"A's answer is 41\n",
        "same.txt": b"AAAA",
    },
)
B = DictFiles("test:b", {"x.csv": b"a,b\n5,6\n", "same.txt": b"BBBB", "b_only.txt": b"b\n"})
LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=5, memory_mb=512, output_chars=2000)


@pytest.fixture(autouse=True, scope="module")
def no_mount_left_by_the_module() -> Iterator[None]:
    yield
    gc.collect()
    assert own_mounts() == [], "the module left a lazy-view mount behind"


@pytest.fixture(autouse=True)
def no_mount_left_behind() -> Iterator[None]:
    before = set(own_mounts())  # a module-scoped sandbox's view may be there already
    yield
    gc.collect()
    assert set(own_mounts()) <= before, "a test left a lazy-view mount behind"


@pytest.fixture
def view() -> Iterator[LazyView]:
    require_fuse()
    with LazyView() as v:
        v.show(A)
        yield v


def at(view: LazyView, path: str) -> str:
    return os.path.join(view.mountpoint, path)


# --- serving ---------------------------------------------------------------------------------


def test_listings_bytes_modes_and_owner(view: LazyView) -> None:
    assert sorted(os.listdir(view.mountpoint)) == ["only_a", "same.txt", "sub", "x.csv"]
    with os.scandir(at(view, "sub")) as it:
        kinds = {e.name: e.is_dir(follow_symlinks=False) for e in it}
    assert kinds == {"deep": True, "y.txt": False}
    for path in walk(A):
        assert Path(at(view, path)).read_bytes() == A.read_bytes(path), path
        st = os.stat(at(view, path))
        assert stat.S_IMODE(st.st_mode) == 0o444 and stat.S_ISREG(st.st_mode)
        assert st.st_size == len(A.read_bytes(path))
        assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    for directory in ("", "sub", "sub/deep", "only_a"):
        st = os.stat(at(view, directory))
        assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o555
    found = sorted(
        os.path.relpath(os.path.join(r, f), view.mountpoint)
        for r, _, fs in os.walk(view.mountpoint)
        for f in fs
    )
    assert found == sorted(walk(A))
    assert os.statvfs(view.mountpoint).f_flag & os.ST_RDONLY


def test_repository_bytes_are_generated_only_when_looked_up(view: LazyView) -> None:
    repo = Repository.from_seed(3)
    view.show(repo)
    listed = sorted(
        os.path.relpath(os.path.join(r, f), view.mountpoint)
        for r, _, fs in os.walk(view.mountpoint)
        for f in fs
    )
    assert listed == sorted(repo.files())
    assert repo._bytes.misses == 0  # a whole walk generated nothing
    path = repo.data_files[len(repo.data_files) // 2]
    data = Path(at(view, path)).read_bytes()
    assert data == repo.read_bytes(path)
    assert repo._bytes.misses == 1  # one file, generated once
    readme = Path(at(view, "README.md")).read_text()
    assert readme == repo.readme


def test_pread_offsets_past_eof_and_mmap(view: LazyView) -> None:
    fd = os.open(at(view, "x.csv"), os.O_RDONLY)
    try:
        assert os.pread(fd, 4, 2) == A.read_bytes("x.csv")[2:6]
        assert os.pread(fd, 1 << 20, 0) == A.read_bytes("x.csv")
        assert os.pread(fd, 10, 10**6) == b""
        assert os.pread(fd, 10, 2**62) == b""
        with pytest.raises(OSError) as exc:
            os.pread(fd, 10, -1)
        assert exc.value.errno == errno.EINVAL
        with mmap.mmap(fd, 0, prot=mmap.PROT_READ) as mm:
            assert mm[:] == A.read_bytes("x.csv")
    finally:
        os.close(fd)
    assert view.alive and view.faults == 0


WRITES = {
    "open_write": lambda p: os.open(p("x.csv"), os.O_WRONLY),
    "open_append": lambda p: os.open(p("x.csv"), os.O_WRONLY | os.O_APPEND),
    "create": lambda p: os.open(p("new.txt"), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
    "o_trunc": lambda p: os.open(p("x.csv"), os.O_RDONLY | os.O_TRUNC),
    "mkdir": lambda p: os.mkdir(p("newdir")),
    "rmdir": lambda p: os.rmdir(p("sub/deep/er")),
    "unlink": lambda p: os.unlink(p("x.csv")),
    "rename": lambda p: os.rename(p("x.csv"), p("moved.csv")),
    "link": lambda p: os.link(p("x.csv"), p("hard.csv")),
    "symlink": lambda p: os.symlink("/etc/passwd", p("evil")),
    "chmod": lambda p: os.chmod(p("x.csv"), 0o777),
    "chown": lambda p: os.chown(p("x.csv"), 1, 1),
    "truncate": lambda p: os.truncate(p("x.csv"), 0),
    "utime": lambda p: os.utime(p("x.csv"), (0, 0)),
    "mknod": lambda p: os.mkfifo(p("fifo")),
    "setxattr": lambda p: os.setxattr(p("x.csv"), "user.x", b"1"),
    "removexattr": lambda p: os.removexattr(p("x.csv"), "user.x"),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_every_change_is_refused(view: LazyView, name: str) -> None:
    """Even the env's own (root) process cannot change the view."""
    with pytest.raises(OSError) as exc:
        WRITES[name](lambda path: at(view, path))
    assert exc.value.errno in (errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOTSUP), exc.value
    assert Path(at(view, "x.csv")).read_bytes() == A.read_bytes("x.csv")
    assert sorted(os.listdir(view.mountpoint)) == ["only_a", "same.txt", "sub", "x.csv"]
    assert view.alive and view.faults == 0


@pytest.mark.parametrize(
    "name",
    ["a\\b", "x" * 255, "y" * 1024, "z" * 5000, "\n", " ", "x.csv ", "ünïcode", "\x7f\x01\x1b",
     "/".join(["d"] * 500) + "/x", "sub/deep/er/z.json/more", "only_a/deep/secret.txt/.."],
)  # fmt: skip
def test_odd_names_find_nothing_and_do_no_harm(view: LazyView, name: str) -> None:
    path = os.path.join(view.mountpoint, name)
    with pytest.raises(OSError) as exc:
        os.stat(path)
    assert exc.value.errno in (errno.ENOENT, errno.ENAMETOOLONG, errno.ENOTDIR), exc.value
    assert not os.path.exists(path)
    assert view.alive and view.faults == 0
    assert Path(at(view, "x.csv")).read_bytes() == A.read_bytes("x.csv")


def test_dot_dot_is_resolved_by_the_kernel_never_by_the_server(view: LazyView) -> None:
    assert Path(at(view, "sub/deep/../../x.csv")).read_bytes() == A.read_bytes("x.csv")
    assert os.path.realpath(at(view, "..")) == os.path.dirname(view.mountpoint)
    assert view.alive and view.faults == 0


def test_undecodable_name_is_not_found(view: LazyView) -> None:
    with pytest.raises(FileNotFoundError):
        os.stat(os.fsencode(view.mountpoint) + b"/\xff\xfe.csv")
    assert view.alive and view.faults == 0


class Faulty:
    """A source whose file generation fails and whose lookups raise for some names."""

    key = "test:faulty"

    def is_dir(self, path: str) -> bool:
        if path == "raise":
            raise RuntimeError("lookup bug")
        return path == ""

    def is_file(self, path: str) -> bool:
        return path in ("bad.csv", "good.csv")

    def listdir(self, path: str = "") -> list[str]:
        return ["bad.csv", "good.csv"]

    def read_bytes(self, path: str) -> bytes:
        if path == "bad.csv":
            raise ValueError("generator bug")
        return b"ok\n"

    def file_size(self, path: str) -> int:
        return len(self.read_bytes(path))


def test_a_failing_source_gives_errnos_never_a_dead_server(view: LazyView) -> None:
    assert is_file_source(Faulty())
    view.show(Faulty())
    with pytest.raises(OSError) as exc:
        os.stat(at(view, "bad.csv"))
    assert exc.value.errno == errno.EIO
    with pytest.raises(FileNotFoundError):
        os.stat(at(view, "raise"))
    assert Path(at(view, "good.csv")).read_bytes() == b"ok\n"
    assert view.alive and view.faults == 1  # the generator's bug, logged and answered EIO
    view.show(A)
    assert Path(at(view, "x.csv")).read_bytes() == A.read_bytes("x.csv")


def test_opened_files_are_recorded_not_stat_ones(view: LazyView) -> None:
    view.take_opened()
    os.stat(at(view, "sub/y.txt"))
    os.listdir(at(view, "sub"))
    Path(at(view, "x.csv")).read_bytes()
    Path(at(view, "sub/deep/er/z.json")).read_bytes()
    Path(at(view, "x.csv")).read_bytes()
    assert view.take_opened() == ("sub/deep/er/z.json", "x.csv")
    assert view.take_opened() == ()


def test_a_repeated_read_is_served_from_the_kernel_cache(view: LazyView) -> None:
    first = view.requests
    Path(at(view, "sub/deep/er/z.json")).read_bytes()
    cold = view.requests - first
    again = view.requests
    Path(at(view, "sub/deep/er/z.json")).read_bytes()
    warm = view.requests - again
    assert warm <= 2 < cold  # lookups, attributes and pages cached: an open and a release


# --- generations -----------------------------------------------------------------------------


def seen_before_swap(view: LazyView) -> dict[str, object]:
    """Make the kernel cache names, attributes and pages of source A."""
    return {
        "same": Path(at(view, "same.txt")).read_bytes(),
        "secret": Path(at(view, "only_a/deep/secret.txt")).read_bytes(),
        "ino": os.stat(at(view, "same.txt")).st_ino,
        "x": Path(at(view, "x.csv")).read_bytes(),
    }


def test_a_swap_shows_nothing_of_the_old_source(view: LazyView) -> None:
    before = seen_before_swap(view)
    assert before["same"] == b"AAAA"
    assert view.show(B) is True
    assert Path(at(view, "same.txt")).read_bytes() == b"BBBB"  # same size, new bytes
    assert Path(at(view, "x.csv")).read_bytes() == B.read_bytes("x.csv")
    assert not os.path.exists(at(view, "only_a/deep/secret.txt"))
    assert not os.path.exists(at(view, "only_a"))
    assert sorted(os.listdir(view.mountpoint)) == ["b_only.txt", "same.txt", "x.csv"]
    assert os.stat(at(view, "same.txt")).st_ino != before["ino"]  # a new generation
    assert view.show(B) is False  # same key: nothing to do
    assert view.show(A) is True
    assert Path(at(view, "same.txt")).read_bytes() == b"AAAA"
    assert view.faults == 0


def test_without_the_invalidation_the_old_source_would_show() -> None:
    """The control for the test above: with the invalidation switched off, the kernel's caches
    keep serving the old source's names and bytes, so that test would fail."""
    require_fuse()
    with LazyView(invalidate=False) as view:
        view.show(A)
        seen_before_swap(view)
        view.show(B)
        assert Path(at(view, "same.txt")).read_bytes() == b"AAAA"
        assert os.path.exists(at(view, "only_a/deep/secret.txt"))


def test_a_handle_of_an_old_generation_is_stale(view: LazyView) -> None:
    with open(at(view, "x.csv"), "rb", buffering=0) as fh:
        view.show(B)
        with pytest.raises(OSError) as exc:
            fh.read()
        assert exc.value.errno == errno.ESTALE
    assert view.faults == 0


def test_concurrent_views_serve_their_own_sources() -> None:
    require_fuse()
    errors: list[str] = []

    def worker(i: int) -> None:
        mine = [DictFiles(f"t{i}:{j}", {"f.txt": f"{i}-{j}".encode()}) for j in range(2)]
        with LazyView() as v:
            for round_ in range(30):
                source = mine[round_ % 2]
                v.show(source)
                got = Path(v.mountpoint, "f.txt").read_bytes()
                if got != source.read_bytes("f.txt"):
                    errors.append(f"view {i} round {round_}: {got!r}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


# --- unmounting ------------------------------------------------------------------------------


def test_close_and_garbage_collection_unmount() -> None:
    require_fuse()
    view = LazyView()
    mountpoint = view.mountpoint
    assert mountpoint in own_mounts()
    view.close()
    view.close()  # idempotent
    assert mountpoint not in live_mounts() and not os.path.exists(mountpoint)
    view = LazyView()
    mountpoint = view.mountpoint
    del view
    gc.collect()
    assert mountpoint not in live_mounts() and not os.path.exists(mountpoint)


SCRIPT = """
import os, signal, sys
from isg_gym.tools.files import DictFiles
from isg_gym.tools.sandbox.lazyview import LazyView
v = LazyView()
v.show(DictFiles("k", {"a.txt": b"a"}))
print(v.mountpoint, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _child(mode: str) -> tuple[str, int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                          timeout=120, env=env, check=False)  # fmt: skip
    return proc.stdout.strip(), proc.returncode


def test_interpreter_exit_unmounts_and_a_killed_server_is_swept_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_fuse()
    mountpoint, rc = _child("exit")
    assert rc == 0 and mountpoint.startswith("/") and mountpoint not in live_mounts()
    mountpoint, rc = _child("kill")
    assert rc == -signal.SIGKILL
    try:
        assert mountpoint in live_mounts()  # the kernel keeps a dead server's mount
        with pytest.raises(OSError) as exc:
            os.listdir(mountpoint)
        assert exc.value.errno == errno.ENOTCONN
        monkeypatch.setattr(lazyview_mod, "_SWEPT", set())  # as in a process's first mount:
        LazyView().close()  # mounting sweeps the dead server's mount
        assert mountpoint not in live_mounts() and not os.path.exists(mountpoint)
    finally:
        if mountpoint in live_mounts():
            lazyview_mod._umount(mountpoint)
            os.rmdir(mountpoint)


# --- the sandbox and the environment ---------------------------------------------------------

CELL = (
    "import os, pandas as pd\n"
    "(os.getcwd() in ('/data', '/mnt'), float(pd.read_csv('x.csv')['a'].mean()), "
    "sorted(os.listdir('.')))"
)


@pytest.fixture(params=["bwrap", "landlock"])
def lazy_sandbox(request: pytest.FixtureRequest) -> Iterator:
    require_fuse()
    try:
        sandbox = get_sandbox(request.param, LIMITS, files="lazy")
    except SandboxUnavailable as exc:
        pytest.skip(f"backend {request.param!r} cannot run here: {exc}")
    with sandbox:
        yield sandbox


def test_sandbox_serves_sources_lazily_and_swaps_without_a_restart(lazy_sandbox) -> None:
    sb = lazy_sandbox
    res = sb.run(CELL, A)
    assert res.value == "(True, 2.0, ['only_a', 'same.txt', 'sub', 'x.csv'])", res
    assert sb.files_mode == "lazy" and sb.files_description() == "lazy FUSE view"
    assert res.files_read == ("x.csv",)  # the server's record
    worker, view = sb._proc, sb._lazy
    assert view is not None and view.mountpoint in own_mounts()
    res = sb.run(CELL, B)
    assert res.value == "(True, 5.0, ['b_only.txt', 'same.txt', 'x.csv'])", res
    res = sb.run("open('same.txt').read(), __import__('os').path.exists('only_a')", B)
    assert res.value == "('BBBB', False)", res
    assert sb._proc is worker and sb._lazy is view  # no restart, no remount
    res = sb.run("import os\nos.listdir('.')", "/")  # a directory again: restart, unmount
    assert res.error is None and sb._lazy is None and view.mountpoint not in live_mounts()
    assert sb.run(CELL, A).value == "(True, 2.0, ['only_a', 'same.txt', 'sub', 'x.csv'])"


class Slow:
    """Ten files, each taking ``delay`` seconds to generate (twice: size, then bytes)."""

    def __init__(self, key: str, delay: float) -> None:
        self.key, self.delay = key, delay

    def is_dir(self, path: str) -> bool:
        return path == ""

    def is_file(self, path: str) -> bool:
        return path in self.listdir()

    def listdir(self, path: str = "") -> list[str]:
        return [f"f{i}" for i in range(10)]

    def read_bytes(self, path: str) -> bytes:
        time.sleep(self.delay)
        return b"x" * 10

    def file_size(self, path: str) -> int:
        return len(self.read_bytes(path))


READ_ALL = (
    "import os\nn = 0\nfor f in sorted(os.listdir('.')):\n    n += len(open(f).read())\n"
    "    print(f, flush=True)\nn"
)


def test_generation_time_is_credited_to_the_call_up_to_a_cap() -> None:
    """The server's time is not the code's: 10 files x 0.3 s of generation fit in a 2 s wall
    limit (credited), a 3 s sleep does not, and credit stops at 4x the limit."""
    require_fuse()
    if sandbox_pkg.bwrap_available() is not None:
        pytest.skip("bubblewrap cannot run here")
    limits = SandboxLimits(cpu_seconds=2, wall_seconds=2, memory_mb=512)
    with get_sandbox("bwrap", limits, files="lazy") as sb:
        res = sb.run(READ_ALL, Slow("slow:0.15", 0.15))  # 3 s of generation
        assert res.value == "100" and not res.timed_out, res
        res = sb.run("import time\ntime.sleep(3)", Slow("slow:0.15", 0.15))
        assert res.timed_out, res  # the code's own time is never credited
        res = sb.run(READ_ALL, Slow("slow:0.6", 0.6))  # 12 s of generation: past 2 + 4 x 2
        assert res.timed_out and 0 < res.stdout.count("\n") < 10, res
        assert sb.run("1 + 1", A).value == "2"


def test_materialising_fallback_shows_the_same(tmp_path: Path) -> None:
    if sandbox_pkg.bwrap_available() is not None:
        pytest.skip("bubblewrap cannot run here")
    with get_sandbox("bwrap", LIMITS, files="materialise") as sb:
        assert sb.files_mode == "materialise"
        assert sb.files_description().startswith("materialised copies (asked for")
        assert sb.run(CELL, A).value == "(True, 2.0, ['only_a', 'same.txt', 'sub', 'x.csv'])"
        view = sb._view
        assert sb._lazy is None and view is not None and os.path.isfile(f"{view}/sub/y.txt")
        worker = sb._proc
        res = sb.run("open('same.txt').read(), __import__('os').path.exists('only_a')", B)
        assert res.value == "('BBBB', False)" and sb._proc is worker
    assert not os.path.exists(view)


def test_files_mode_option_env_var_and_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox_pkg.FILES_ENV, "materialise")
    assert files_mode() == ("materialise", "asked for (ISG_SANDBOX_FILES or files='materialise')")
    monkeypatch.setenv(sandbox_pkg.FILES_ENV, "bogus")
    with pytest.raises(ValueError, match=r"unknown sandbox files mode 'bogus'.*auto, lazy"):
        files_mode()
    monkeypatch.delenv(sandbox_pkg.FILES_ENV)
    monkeypatch.setattr(lazyview_mod, "lazy_view_problem", lambda: "no /dev/fuse (test)")
    assert files_mode("auto") == ("materialise", "no /dev/fuse (test)")
    with pytest.raises(SandboxUnavailable, match="no /dev/fuse"):
        files_mode("lazy")
    with pytest.raises(ValueError, match="accepted: auto, lazy, materialise"):
        get_sandbox("none", LIMITS, files="sometimes")


def test_write_source_writes_read_only_copies(tmp_path: Path) -> None:
    assert write_source(A, tmp_path) == 5
    for path in walk(A):
        assert (tmp_path / path).read_bytes() == A.read_bytes(path)
        assert stat.S_IMODE((tmp_path / path).stat().st_mode) == 0o444
    assert stat.S_IMODE((tmp_path / "sub" / "deep").stat().st_mode) == 0o555
    for p in tmp_path.rglob("*"):
        if p.is_dir():
            p.chmod(0o755)


def test_dict_files_rejects_bad_paths() -> None:
    for bad in ("", "/abs", "a//b", "a/../b", "./a", "a\\b", "a\x00b"):
        with pytest.raises(ValueError, match=r"bad path|non-empty"):
            DictFiles("k", {bad: b""})
    with pytest.raises(ValueError, match="both a file and a directory"):
        DictFiles("k", {"a": b"", "a/b": b""})
    with pytest.raises(TypeError):
        DictFiles("k", {"a": "text"})  # type: ignore[dict-item]


def test_repository_key_names_its_bytes() -> None:
    one, again, other = Repository.from_seed(3), Repository.from_seed(3), Repository.from_seed(4)
    assert one.key == again.key != other.key
    changed = Repository(one.spec.model_copy(update={"archetype": one.spec.archetype + "-x"}))
    assert changed.seed == one.seed and changed.key != one.key


def test_env_runs_python_through_the_lazy_view() -> None:
    require_fuse()
    if not sandbox_pkg.isolating_backends():
        pytest.skip("no isolating sandbox backend can run here")
    from isg_gym.envs.env import ISGEnv

    env = ISGEnv(start_repository=3, num_repositories=1, sandbox_limits=LIMITS)
    try:
        env.reset(seed=0)
        repo = env._repo
        path = repo.data_files[0]
        code = f"open({'/data/' + path!r}, 'rb').read() == {repo.read_bytes(path)!r}"
        _, _, _, _, info = env.step({"name": "run_python_code", "arguments": {"code": code}})
        assert "True" in info["tool_results"][0]["output"], info["tool_results"]
        assert info["files_read"] == [path]
        assert env._python.sandbox().files_mode == "lazy"
        assert env._leases.held() == {}  # nothing on disk
    finally:
        env.close()
    assert not ON_CI or own_mounts() == []
