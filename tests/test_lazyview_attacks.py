"""Attack catalogue of the lazy FUSE view: sandbox code against the server in the env's process,
under each isolating backend (bubblewrap, Landlock).

Paths (traversal, very long and odd names, deep missing paths), offsets and sizes (huge,
negative, past the end), mmap, every kind of change, handle and request floods, and what a swap
to another repository leaves behind (old names, cached pages, inode numbers). After each attack:
the server is alive and met no unexpected fault, the next call works in the same source and in
another repository (same worker, same mount), and the env's own process still reads the mount.
"""

from __future__ import annotations

import ast
import gc
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fuse_support import own_mounts, require_fuse

from isg_gym.repository import Repository
from isg_gym.tools.files import DictFiles
from isg_gym.tools.sandbox import ExecResult, SandboxError, SandboxLimits, get_sandbox
from isg_gym.tools.sandbox.lazyview import LazyView

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_mb=512, output_chars=2000)
BACKENDS = ["bwrap", "landlock"]
A = DictFiles(
    "attack:a",
    {
        "x.csv": b"a,b\n1,2\n3,4\n",
        "same.txt": b"AAAA",
        "only_a/deep/secret.txt": b"the answer of A is 41\n",
        "sub/y.txt": b"hello\n",
    },
)
B = DictFiles("attack:b", {"x.csv": b"a,b\n5,6\n", "same.txt": b"BBBB"})
OTHER_SEED = 5  # "another repository": a real one


@dataclass
class Env:
    sb: Any
    repo: Repository
    repo_file: str


@pytest.fixture(scope="module", params=BACKENDS)
def env(request: pytest.FixtureRequest) -> Iterator[Env]:
    require_fuse()
    try:
        sandbox = get_sandbox(request.param, LIMITS, files="lazy")
    except (SandboxError, ValueError, OSError) as exc:
        pytest.skip(f"backend {request.param!r} cannot run here: {exc}")
    repo = Repository.from_seed(OTHER_SEED)
    try:
        yield Env(sandbox, repo, repo.data_files[len(repo.data_files) // 2])
    finally:
        sandbox.close()
    gc.collect()
    assert own_mounts() == [], "the attack catalogue left a mount behind"


PROBE_A = (
    "import os\n(sorted(os.listdir('.')), open('x.csv').read(), open('sub/y.txt').read(), "
    "os.listdir('/tmp'))"
)
EXPECTED_A = repr((["only_a", "same.txt", "sub", "x.csv"], "a,b\n1,2\n3,4\n", "hello\n", []))


def assert_served_after(env: Env) -> None:
    """The server survived, and the next calls in A and in another repository work."""
    sb = env.sb
    view, worker = sb._lazy, sb._proc
    assert view is not None and view.alive and view.faults == 0
    after = sb.run(PROBE_A, A)
    assert after.value == EXPECTED_A, after
    digest = hashlib.sha256(env.repo.read_bytes(env.repo_file)).hexdigest()
    nxt = sb.run(
        f"import hashlib\nhashlib.sha256(open({env.repo_file!r}, 'rb').read()).hexdigest()",
        env.repo,
    )
    assert nxt.value == repr(digest), nxt
    assert sb._lazy is view and sb._proc is worker and view.alive and view.faults == 0
    host = Path(view.mountpoint, env.repo_file).read_bytes()  # the env's process reads it too
    assert hashlib.sha256(host).hexdigest() == digest


def value(expected: str) -> Callable[[ExecResult], None]:
    def check(res: ExecResult) -> None:
        assert res.value == expected, (res.value, res.error, res.stderr[-500:])

    return check


def killed(res: ExecResult) -> None:
    assert res.killed, res


def timed_out(res: ExecResult) -> None:
    assert res.timed_out and res.killed, res


def errnos(*calls: str) -> str:
    """A cell giving, for each call, the errno name it raised (or 'ok: <repr>' if it did not)."""
    body = "".join(
        f"try:\n    _r.append('ok: ' + repr({call})[:60])\n"
        f"except OSError as _e:\n    _r.append(errno.errorcode.get(_e.errno, str(_e.errno)))\n"
        for call in calls
    )
    return "import errno, os\n_r = []\n" + body + "_r"


LONG = [255, 1024, 4000, 5000]
CHANGES = [
    "open('x.csv', 'w')",
    "open('x.csv', 'a')",
    "open('new.txt', 'x')",
    "os.open('x.csv', os.O_RDONLY | os.O_TRUNC)",
    "os.open('n', os.O_WRONLY | os.O_CREAT)",
    "os.mkdir('d')",
    "os.rmdir('sub')",
    "os.unlink('x.csv')",
    "os.rename('x.csv', 'y.csv')",
    "os.link('x.csv', 'h.csv')",
    "os.symlink('/etc/passwd', 'evil')",
    "os.chmod('x.csv', 0o777)",
    "os.chown('x.csv', 0, 0)",
    "os.truncate('x.csv', 0)",
    "os.utime('x.csv', (0, 0))",
    "os.mkfifo('fifo')",
    "os.setxattr('x.csv', 'user.x', b'1')",
    "os.removexattr('x.csv', 'user.x')",
    "os.chmod('.', 0o777)",
]
MMAP = (
    "import mmap, os\nfd = os.open('x.csv', os.O_RDONLY)\n"
    "ro = mmap.mmap(fd, 0, prot=mmap.PROT_READ)[:]\n"
    "try:\n    mmap.mmap(fd, 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)\n"
    "    shared = 'writable'\nexcept OSError as e:\n    shared = e.errno\n"
    "cow = mmap.mmap(fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)\n"
    "cow[0:1] = b'Z'\n(ro, shared == __import__('errno').EACCES, cow[:], open('x.csv').read())"
)
MMAP_PAST_EOF = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, "
    "ctypes.c_int, ctypes.c_long]\n"
    "fd = os.open('x.csv', os.O_RDONLY)\np = libc.mmap(None, 1 << 20, 1, 2, fd, 0)\n"
    "ctypes.string_at(p + 8192, 1)"
)
FLOOD = (
    "import os\nnames = ['x.csv', 'missing', 'sub/y.txt', 'only_a/deep/nope', 'x' * 300]\n"
    "while True:\n    for n in names:\n        try:\n            os.stat(n)\n"
    "            os.close(os.open(n, os.O_RDONLY))\n        except OSError:\n            pass\n"
    "    os.listdir('.'); os.listdir('sub')"
)
MANY_MMAPS = (
    "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mmap.restype = ctypes.c_void_p\n"
    "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, "
    "ctypes.c_int, ctypes.c_long]\nmaps = []\nfor _ in range(5000):\n"
    "    fd = os.open('x.csv', os.O_RDONLY)\n    maps.append(libc.mmap(None, 4096, 1, 1, fd, 0))\n"
    "    os.close(fd)\nlen(set(maps)), ctypes.string_at(maps[-1], 3)"
)
THREADS = (
    "import os, threading, time\ncount = [0]\nstop = time.time() + 1.5\n"
    "def hammer():\n    while time.time() < stop:\n        for n in ('x.csv', 'nope', 'sub'):\n"
    "            try:\n                os.stat(n)\n"
    "            except OSError:\n                pass\n"
    "        count[0] += 1\n"
    "ts = []\nfor _ in range(16):\n    t = threading.Thread(target=hammer)\n    try:\n"
    "        t.start()\n        ts.append(t)\n    except RuntimeError:\n        break\n"
    "hammer()\n[t.join() for t in ts]\ncount[0] > 0"
)

ATTACKS: dict[str, tuple[str, Callable[[ExecResult], None]]] = {
    # --- paths ----------------------------------------------------------------------------
    "dotdot_shadow": (
        errnos("open('../../../../etc/shadow').read()", "open('/data/../etc/shadow').read()"),
        lambda res: none_ok(res, 2, {"ENOENT", "EACCES"}),  # which: per backend
    ),
    "dotdot_inside": (
        "open('sub/../x.csv').read() == open('./sub/./../x.csv').read() == 'a,b\\n1,2\\n3,4\\n'",
        value("True"),
    ),
    "long_names": (
        errnos(*[f"os.stat('x' * {n})" for n in LONG]),
        value("['ENOENT', 'ENOENT', 'ENOENT', 'ENAMETOOLONG']"),
    ),
    "odd_names": (
        errnos(
            "os.stat(b'\\xff\\xfe.csv')",
            "os.stat('a\\\\b')",
            "os.stat('\\n')",
            "os.stat('\\x7f\\x1b[31m')",
            "os.stat('x.csv ')",
            "os.stat('ünï')",
            "os.stat('x.csv/..')",
            "os.stat('x.csv/y')",
        ),
        value("['ENOENT', 'ENOENT', 'ENOENT', 'ENOENT', 'ENOENT', 'ENOENT', 'ENOTDIR', 'ENOTDIR']"),
    ),
    "deep_missing": (
        errnos("os.stat('/'.join(['d'] * 1000) + '/x')", "os.listdir('/'.join(['sub'] * 500))"),
        value("['ENOENT', 'ENOENT']"),
    ),
    # --- offsets, sizes, mappings ---------------------------------------------------------
    "pread_offsets": (
        "import os, errno\nfd = os.open('x.csv', os.O_RDONLY)\nr = [os.pread(fd, 100, 0), "
        "os.pread(fd, 10, 2**62), os.pread(fd, 10, 10**9), os.pread(fd, 3, 10)]\n"
        "for off in (-1, -2**63):\n    try:\n        os.pread(fd, 1, off)\n"
        "    except OSError as e:\n        r.append(errno.errorcode[e.errno])\n"
        "try:\n    os.pread(fd, 2**31, 0)\nexcept MemoryError:\n    r.append('MemoryError')\n"
        "os.lseek(fd, 2**62, 0)\nr.append(os.read(fd, 5))\nr",
        value(repr([b"a,b\n1,2\n3,4\n", b"", b"", b"4\n", "EINVAL", "EINVAL", "MemoryError", b""])),
    ),
    "read_past_eof": (
        "f = open('same.txt', 'rb')\nf.seek(10**12)\n(f.read(), f.seek(0), f.read(), f.read())",
        value("(b'', 0, b'AAAA', b'')"),
    ),
    "fadvise_huge": (
        "import os\nfd = os.open('x.csv', os.O_RDONLY)\n"
        "os.posix_fadvise(fd, 0, 2**62, os.POSIX_FADV_WILLNEED)\n"
        "os.posix_fadvise(fd, 2**62, 0, os.POSIX_FADV_DONTNEED)\nos.pread(fd, 3, 0)",
        value("b'a,b'"),
    ),
    "mmap": (MMAP, value(repr((b"a,b\n1,2\n3,4\n", True, b"Z,b\n1,2\n3,4\n", "a,b\n1,2\n3,4\n")))),
    "mmap_past_eof": (MMAP_PAST_EOF, killed),  # SIGBUS in the child only
    "o_direct_and_ioctl": (
        "import os, fcntl, termios\nfd = os.open('x.csv', os.O_RDONLY | os.O_DIRECT)\n"
        "try:\n    fcntl.ioctl(fd, termios.FIONREAD, b'\\0' * 4)\nexcept OSError:\n    pass\n"
        "os.pread(fd, 3, 0)",
        value("b'a,b'"),
    ),
    "statvfs_and_locks": (
        "import os, fcntl\nst = os.statvfs('.')\nfd = os.open('x.csv', os.O_RDONLY)\n"
        "fcntl.flock(fd, fcntl.LOCK_SH)\n(bool(st.f_flag & os.ST_RDONLY), st.f_namemax)",
        value("(True, 255)"),
    ),
    # --- changes ---------------------------------------------------------------------------
    "every_change": (
        errnos(*CHANGES),
        lambda res: all_refused(res, len(CHANGES)),
    ),
    "name_to_handle_at": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "buf = ctypes.create_string_buffer(128)\nmid = ctypes.c_int()\n"
        "rc = libc.syscall(303, -100, b'x.csv', buf, ctypes.byref(mid), 0)\n"
        "(rc, ctypes.get_errno())",
        value("(-1, 1)"),  # EPERM: seccomp (no handles, so no open_by_handle_at of old inodes)
    ),
    "no_server_descriptor": (  # e.g. the clock-credit pipe: only the supervisor holds it
        "import os\nopen_fds = []\nfor fd in range(5, 4096):\n    try:\n        os.fstat(fd)\n"
        "        open_fds.append(fd)\n    except OSError:\n        pass\nopen_fds",
        value("[]"),
    ),
    # --- floods ----------------------------------------------------------------------------
    "many_opens": (
        "import errno\nfs = []\ntry:\n    while len(fs) < 100000:\n"
        "        fs.append(open('x.csv', 'rb'))\nexcept OSError as e:\n    r = e.errno\n"
        "(r == errno.EMFILE, len(fs) < 100)",
        value("(True, True)"),
    ),
    "many_mmaps": (MANY_MMAPS, value("(5000, b'a,b')")),  # handles kept after close
    "request_flood": (FLOOD, timed_out),  # stat/open/listdir for the whole wall limit
    "threaded_flood": (THREADS, value("True")),
}


def none_ok(res: ExecResult, n: int, allowed: set[str]) -> None:
    """Each of the ``n`` calls of an :func:`errnos` cell raised an errno in ``allowed``."""
    assert res.value is not None, res
    got = ast.literal_eval(res.value)
    assert len(got) == n and set(got) <= allowed, got


def all_refused(res: ExecResult, n: int) -> None:
    none_ok(res, n, {"EROFS", "EACCES", "EPERM", "ENOTSUP"})


def test_catalogue_size() -> None:
    assert len(ATTACKS) >= 18 and len(SWAPS) >= 4


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_contained(env: Env, name: str) -> None:
    code, check = ATTACKS[name]
    check(env.sb.run(code, A))
    assert_served_after(env)


# --- what a swap leaves behind: (attack run in A, probe run in B, expected) ------------------

SWAPS: dict[str, tuple[str, str, str]] = {
    "old_path": (
        "open('only_a/deep/secret.txt').read()",
        errnos(
            "open('only_a/deep/secret.txt').read()",
            "os.listdir('only_a')",
            "os.stat('only_a/deep')",
        ),
        "['ENOENT', 'ENOENT', 'ENOENT']",
    ),
    "cached_pages_same_size": (
        "import mmap\nf = open('same.txt', 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)"
        "\n(f.read(), m[:])",
        "import mmap\nf = open('same.txt', 'rb')\nm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)"
        "\n(f.read(), m[:], open('x.csv').read())",
        repr((b"BBBB", b"BBBB", "a,b\n5,6\n")),
    ),
    "held_open_until_killed": (
        "import threading, time\nf = open('same.txt', 'rb')\nf.read(1)\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\ntime.sleep(60)",
        "open('same.txt', 'rb').read(), sorted(__import__('os').listdir('.'))",
        repr((b"BBBB", ["same.txt", "x.csv"])),
    ),
    "stat_everything_first": (
        "import os\n[os.stat(os.path.join(r, f)).st_size for r, _, fs in os.walk('.') for f in fs]",
        "import os\nsorted((os.path.join(r, f), os.stat(os.path.join(r, f)).st_size) "
        "for r, _, fs in os.walk('.') for f in fs)",
        repr([("./same.txt", 4), ("./x.csv", 8)]),
    ),
}


@pytest.mark.parametrize("name", sorted(SWAPS))
def test_a_swap_leaves_nothing_of_the_old_repository(env: Env, name: str) -> None:
    attack, probe, expected = SWAPS[name]
    env.sb.run(attack, A)
    res = env.sb.run(probe, B)
    assert res.value == expected, res
    assert_served_after(env)


def test_inode_numbers_change_with_the_repository(env: Env) -> None:
    cell = "import os\n(os.stat('x.csv').st_ino, os.stat('.').st_ino)"
    first = ast.literal_eval(env.sb.run(cell, A).value)
    second = ast.literal_eval(env.sb.run(cell, B).value)
    again = ast.literal_eval(env.sb.run(cell, B).value)
    assert first[0] != second[0] and first[1] != second[1]  # a new generation
    assert second == again  # stable within one
    assert_served_after(env)


def test_another_envs_view_is_out_of_reach(env: Env) -> None:
    """Two envs in one process each have a mount; code in one cannot reach the other's."""
    assert env.sb.run("1", A).value == "1"  # the sandbox's own view is mounted
    with LazyView() as other:
        other.show(B)
        cell = errnos(
            f"open({other.mountpoint + '/same.txt'!r}).read()",
            f"os.listdir({other.mountpoint!r})",
            f"os.listdir({env.sb._lazy.mountpoint!r})",
        )
        res = env.sb.run(cell, A)
        got = ast.literal_eval(res.value)
        assert len(got) == 3 and not any(x.startswith("ok") for x in got), got
        assert Path(other.mountpoint, "same.txt").read_bytes() == b"BBBB"
    assert_served_after(env)


def test_swapping_back_and_forth_many_times(env: Env) -> None:
    cell = "open('same.txt').read()"
    for i in range(6):
        source, want = (A, "'AAAA'") if i % 2 == 0 else (B, "'BBBB'")
        assert env.sb.run(cell, source).value == want
    assert env.sb._lazy.generation >= 7
    assert_served_after(env)


def test_walking_a_whole_repository_generates_no_file(env: Env) -> None:
    repo = Repository.from_seed(OTHER_SEED + 1)  # never shown before: the view swaps to it
    res = env.sb.run("import os\nsum(len(fs) for _, _, fs in os.walk('.'))", repo)
    assert env.sb._lazy.key == repo.key
    assert res.value == str(len(repo.files()))
    assert repo._bytes.misses == 0  # directory lookups only
    assert_served_after(env)


def test_host_paths_are_not_readable_through_the_view(env: Env, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    res = env.sb.run(f"open({str(secret)!r}).read()", A)
    assert res.error is not None and "host secret" not in (res.value or "")
    assert os.path.exists(secret)
    assert_served_after(env)
