"""Attack catalogue, parametrised over the isolating backends available here.

Classes: escapes (host files, writes, network, processes, the answer); state across calls and
episodes (memory, /dev, IPC, files, modules); resource exhaustion (memory, disk, pipes, wipes);
host-fact leaks; malformed output. Every attack must be contained AND be followed by a call in
the same repository and one in the next episode (another repository) that work and see nothing
of it. To run the catalogue under another backend, add its name to ``ISOLATING_BACKENDS``.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from isg_gym.tools.sandbox import ExecResult, SandboxError, SandboxLimits, get_sandbox

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_mb=512, output_chars=2000)
CANARY = "ISG_SANDBOX_CANARY"
CANARY_VALUE = "canary-7f3a9e-do-not-leak"
# every backend that claims isolation runs the whole catalogue
ISOLATING_BACKENDS = ["bwrap", "landlock"]
MARK = "zq" + "SECRET-previous-call-4b1d"  # written by attacks, never in a probe's source


def backend_problem(name: str) -> str | None:
    """None when ``name`` can run here, else why not (the backend's own probe)."""
    try:
        get_sandbox(name, LIMITS).close()
    except (SandboxError, ValueError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="module", params=ISOLATING_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    problem = backend_problem(request.param)
    if problem is not None:
        pytest.skip(f"backend {request.param!r} cannot run here: {problem}")
    return request.param


@dataclass
class Env:
    sb: object
    repo: Path
    other: Path
    secret: Path
    host_marker: Path
    port: int
    connections: list[object]


@pytest.fixture(scope="module")
def env(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("attacks")
    repo = base / "episode-1"
    repo.mkdir()
    (repo / "x.csv").write_text("a,b\n1,2\n")
    other = base / "episode-2"
    other.mkdir()
    (other / "answer.txt").write_text("the answer is 42\n")
    secret = base / "host-secret.txt"
    secret.write_text("host secret\n")
    os.environ[CANARY] = CANARY_VALUE
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    connections: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = listener.accept()
            except OSError:
                continue
            connections.append(addr)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    sandbox = get_sandbox(backend, LIMITS)
    try:
        yield Env(
            sandbox,
            repo,
            other,
            secret,
            base / "host-marker",
            listener.getsockname()[1],
            connections,
        )
    finally:
        sandbox.close()
        stop.set()
        thread.join(2)
        listener.close()
        os.environ.pop(CANARY, None)


def contained_value(expected: str) -> Callable[[ExecResult, Env], None]:
    def check(res: ExecResult, env: Env) -> None:
        assert res.value == expected, (res.value, res.error, res.stderr)

    return check


def error_contains(*needles: str) -> Callable[[ExecResult, Env], None]:
    def check(res: ExecResult, env: Env) -> None:
        assert res.error is not None, (res.value, res.stdout)
        assert any(n in res.error for n in needles), (res.error, res.stderr)

    return check


def stopped_or_killed(res: ExecResult, env: Env) -> None:
    """The bomb either hit a limit inside the call or the call was killed at the wall limit
    (which of the two depends on machine load)."""
    assert res.value == "True" or (res.timed_out and res.killed), (res.value, res.error)


def killed(res: ExecResult, env: Env) -> None:
    assert res.killed, res
    assert res.duration_s < LIMITS.wall_seconds + 2


def only_self(res: ExecResult, env: Env) -> None:
    """Refused, or the child signalled only itself (as pid 1 of its namespace: ignored)."""
    assert res.killed or res.error is None or "PermissionError" in res.error, res


def no_connection(res: ExecResult, env: Env) -> None:
    assert res.error is not None or res.value in ("'blocked'",), res
    assert env.connections == []


def try_(expr: str) -> str:
    """Cell evaluating to 'blocked' when ``expr`` raises, else to its repr."""
    return (
        f"try:\n    _r = {expr}\nexcept BaseException as _e:\n    _r = 'blocked'\n"
        "_r if _r == 'blocked' else repr(_r)[:200]"
    )


MARKER = "import os\n_m = '/tmp/pwned'\n"
PICKLE_CLASS = (
    "import os, pickle\n"
    "class P:\n"
    "    def __reduce__(self):\n"
    "        return (os.system, ('touch /tmp/pwned {host}',))\n"
)

ATTACKS: dict[str, tuple[str, Callable[[ExecResult, Env], None]]] = {
    # --- host files ----------------------------------------------------------------------
    "etc_passwd": (try_("open('/etc/passwd').read()"), contained_value("'blocked'")),
    "etc_shadow": (try_("open('/etc/shadow').read()"), contained_value("'blocked'")),
    "etc_listing": (
        try_("sorted(os.listdir('/etc'))").replace("try:", "import os\ntry:", 1),
        contained_value("\"['ld.so.cache', 'localtime']\""),
    ),
    "host_secret": (try_("open({secret!r}).read()"), contained_value("'blocked'")),
    "host_secret_dir": (
        try_("__import__('os').listdir({secret_dir!r})"),
        contained_value("'blocked'"),
    ),
    "other_episode_abs": (
        try_("open({other!r} + '/answer.txt').read()"),
        contained_value("'blocked'"),
    ),
    "other_episode_rel": (
        try_("open('../episode-2/answer.txt').read()"),
        contained_value("'blocked'"),
    ),
    "work_checkout": (try_("__import__('os').listdir('/work')"), contained_value("'blocked'")),
    "home": (try_("__import__('os').listdir('/home')"), contained_value("'blocked'")),
    "root_home": ("import os\nsorted(os.listdir('/root'))", contained_value("['.pyenv']")),
    "host_tmp": ("import os\nos.listdir('/tmp')", contained_value("[]")),
    "proc_pids": (try_("__import__('os').listdir('/proc')"), contained_value("'blocked'")),
    "proc_host_pid": (
        "import os\nos.path.exists('/proc/{host_pid}/environ')",
        contained_value("False"),
    ),
    "proc_self_environ": (try_("open('/proc/self/environ').read()"), contained_value("'blocked'")),
    "sys_fs": (try_("__import__('os').listdir('/sys')"), contained_value("'blocked'")),
    "dev_mem": (try_("open('/dev/mem', 'rb').read(1)"), contained_value("'blocked'")),
    "env_canary": (
        "import os\n'{canary}' in repr(dict(os.environ)) or "
        "'{canary_value}' in repr(dict(os.environ))",
        contained_value("False"),
    ),
    "hostname": ("import socket\nsocket.gethostname()", contained_value("'sandbox'")),
    # --- writes --------------------------------------------------------------------------
    "write_data": (try_("open('/data/evil.csv', 'w').write('x')"), contained_value("'blocked'")),
    "write_root": (try_("open('/evil', 'w').write('x')"), contained_value("'blocked'")),
    "write_usr": (try_("open('/usr/lib/evil', 'w').write('x')"), contained_value("'blocked'")),
    "write_site_packages": (
        try_("open(__import__('numpy').__file__, 'a').write('x')"),
        contained_value("'blocked'"),
    ),
    "write_worker": (
        try_("open('/sandbox/worker.py', 'a').write('x')"),
        contained_value("'blocked'"),
    ),
    "big_scratch_file": (
        try_("open('/tmp/big', 'wb').write(b'0' * (64 << 20))"),
        contained_value("'blocked'"),
    ),
    # --- network -------------------------------------------------------------------------
    "socket_connect": (
        try_("__import__('socket').create_connection(('127.0.0.1', {port}), 1)"),
        no_connection,
    ),
    "socket_raw": (try_("__import__('socket').socket(2, 3, 1)"), no_connection),
    "urllib": (
        try_("__import__('urllib.request').request.urlopen('http://127.0.0.1:{port}/', timeout=1)"),
        no_connection,
    ),
    "socket_unix": (try_("__import__('socket').socket(1, 1)"), contained_value("'blocked'")),
    # --- processes -----------------------------------------------------------------------
    "os_system": (
        MARKER + "rc = os.system('touch /tmp/pwned {host}')\n(rc != 0, os.path.exists(_m))",
        contained_value("(True, False)"),
    ),
    "subprocess_run": (
        "import subprocess\nsubprocess.run(['touch', '/tmp/pwned'])",
        error_contains("PermissionError"),
    ),
    "os_execv": (
        "import os\nos.execv('/bin/sh', ['sh', '-c', 'touch /tmp/pwned'])",
        error_contains("PermissionError"),
    ),
    "os_fork": ("import os\nos.fork()", error_contains("PermissionError")),
    "posix_spawn": (
        "import os\nos.posix_spawn('/bin/true', ['true'], {{}})",
        error_contains("PermissionError"),
    ),
    "ctypes_system": (
        MARKER + "import ctypes\nrc = ctypes.CDLL(None).system(b'touch /tmp/pwned')"
        "\n(rc != 0, os.path.exists(_m))",
        contained_value("(True, False)"),
    ),
    "ctypes_execve_syscall": (
        "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.syscall(59, b'/bin/sh', None, None)",
        contained_value("-1"),
    ),
    "ctypes_ptrace": (
        "import ctypes\nctypes.CDLL(None).ptrace(16, 1, 0, 0)",
        contained_value("-1"),
    ),
    "ctypes_mount": (
        "import ctypes\nctypes.CDLL(None).mount(b'none', b'/tmp', b'tmpfs', 0, None)",
        contained_value("-1"),
    ),
    "ctypes_unshare": (
        "import ctypes\nctypes.CDLL(None).unshare(0x10000000)",
        contained_value("-1"),
    ),
    "subclasses_walk": (
        MARKER + "cw = [c for c in ().__class__.__base__.__subclasses__() "
        "if c.__name__ == 'catch_warnings'][0]\n"
        "o = cw()._module.__builtins__['__import__']('os')\n"
        "rc = o.system('touch /tmp/pwned')\n(rc != 0, os.path.exists(_m))",
        contained_value("(True, False)"),
    ),
    "pickle_read_pickle": (
        PICKLE_CLASS + "pickle.dump(P(), open('/tmp/p.pkl', 'wb'))\n"
        "import pandas as pd\nrc = pd.read_pickle('/tmp/p.pkl')\n"
        "(rc != 0, os.path.exists('/tmp/pwned'))",
        contained_value("(True, False)"),
    ),
    "pickle_np_load": (
        PICKLE_CLASS + "import numpy as np\nnp.save('/tmp/a.npy', np.array([P()], dtype=object),"
        " allow_pickle=True)\nrc = np.load('/tmp/a.npy', allow_pickle=True)[0]\n"
        "(rc != 0, os.path.exists('/tmp/pwned'))",
        contained_value("(True, False)"),
    ),
    "fork_bomb": ("import os\nwhile True:\n    os.fork()", error_contains("PermissionError")),
    "thread_bomb": (
        "import threading, time\nn = 0\ntry:\n    while n < 100000:\n"
        "        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
        "        n += 1\nexcept BaseException:\n    pass\nn < 100000",
        stopped_or_killed,
    ),
    "memory_bomb_alloc": ("b = bytearray(50 * 2**30)", error_contains("MemoryError")),
    "memory_bomb_grow": (
        "xs = []\nwhile True:\n    xs.append(bytearray(2**24))",
        error_contains("MemoryError"),
    ),
    "memory_bomb_numpy": (
        "import numpy as np\nnp.ones((2**20, 2**12))",
        error_contains("MemoryError"),
    ),
    "infinite_loop": ("while True:\n    pass", killed),
    "infinite_numpy": (
        "import numpy as np\na = np.random.rand(300, 300)\nwhile True:\n    a = np.tanh(a @ a)",
        killed,
    ),
    "sleep": ("import time\ntime.sleep(100)", killed),
    "output_flood": ("while True:\n    print('x' * 10000)", killed),
    # with a pid namespace per call the child is pid 1 and its parent is invisible (ppid 0):
    # signals can only reach the child itself (ignored by a namespace's init, or it dies)
    "kill_parent": ("import os\nos.kill(os.getppid(), 9)", only_self),
    "kill_all": ("import os\nos.kill(-1, 9)", error_contains("PermissionError")),
    "kill_pid1": ("import os\nos.kill(1, 9)", only_self),
    "killpg_parent": (
        "import os\nos.killpg(os.getpgid(os.getppid()), 9)",
        error_contains("PermissionError"),
    ),
    "killpg_self": ("import os\nos.killpg(0, 9)", only_self),
    "close_all_fds": ("import os\nos.closerange(0, 1024)\n1", error_contains("without a result")),
    "rlimit_raise": (
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (10**6, 10**6))",
        error_contains("ValueError"),
    ),
    "sys_exit": ("import sys\nsys.exit(3)", error_contains("SystemExit")),
    "os_exit": ("import os\nos._exit(0)", error_contains("without a result")),
    # --- the answer / generator ----------------------------------------------------------
    "import_isg_gym": ("import isg_gym", error_contains("ModuleNotFoundError")),
    "editable_finder": (
        "import sys\ntry:\n    import __editable___isg_gym_0_1_0_finder as f\n"
        "    f.install()\nexcept BaseException:\n    pass\n"
        "try:\n    import isg_gym\n    r = 'imported'\nexcept ImportError:\n    r = 'blocked'\nr",
        contained_value("'blocked'"),
    ),
    "find_generator_source": (
        "import os\nhits = []\nfor d, ds, fs in os.walk('/'):\n"
        "    ds[:] = [x for x in ds if x not in ('usr', 'numpy', 'pandas', 'scipy')]\n"
        "    hits += [os.path.join(d, f) for f in fs if 'isg_gym' in os.path.join(d, f)\n"
        "             and f.endswith('.py') and os.path.getsize(os.path.join(d, f)) > 0]\nhits",
        contained_value("[]"),
    ),
    "seed_in_env": (
        "import os\n[k for k in os.environ if 'SEED' in k.upper() or 'ISG' in k]",
        contained_value("[]"),
    ),
}


def test_catalogue_size() -> None:
    assert len(ATTACKS) >= 70 and len(STATE) >= 15


# Attacks a backend does not meet the way bubblewrap does, with why (never skipped silently).
NOT_UNDER: dict[str, dict[str, str]] = {
    "landlock": {
        "etc_listing": "stricter: Landlock makes /etc unlistable (bwrap shows its two files)",
        "root_home": "stricter: Landlock makes /root unlistable (bwrap shows .pyenv)",
        "killpg_parent": "contained differently: the parent's group is outside the worker's "
        "pid namespace, getpgid() gives 0 and killpg(0) kills only the child itself",
        "pid_counter": "NOT stopped: no per-call pid namespace under Landlock (it forbids "
        "mounts), so pids grow across calls and episodes of one worker",
    },
}


def skip_not_under(backend: str, name: str) -> None:
    reason = NOT_UNDER.get(backend, {}).get(name)
    if reason is not None:
        pytest.skip(f"{backend}: {reason}")


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_contained(env: Env, backend: str, name: str) -> None:
    skip_not_under(backend, name)
    template, check = ATTACKS[name]
    code = template.format(
        secret=str(env.secret),
        secret_dir=str(env.secret.parent),
        other=str(env.other),
        port=env.port,
        host=str(env.host_marker),
        host_pid=os.getpid(),
        canary=CANARY,
        canary_value=CANARY_VALUE,
    )
    res = env.sb.run(code, str(env.repo))
    check(res, env)
    assert not env.host_marker.exists()
    assert len(res.stdout) <= LIMITS.output_chars + 200
    assert len(res.stderr) <= LIMITS.output_chars + 200
    assert_clean_after(env)


CLEAN = (
    "import os, sys\n"
    "shm = os.listdir('/dev/shm') if os.path.isdir('/dev/shm') else []\n"
    "(1 + 1, os.listdir('/tmp'), shm, sorted(os.listdir('.')), 'json' in sys.modules)"
)


def assert_clean_after(env: Env) -> None:
    """The next call in the same repository and the first of the next episode (another
    repository) both work and see nothing of what came before."""
    after = env.sb.run(CLEAN, str(env.repo))
    assert after.value == "(2, [], [], ['x.csv'], True)", after
    nxt = env.sb.run(CLEAN, str(env.other))
    assert nxt.value == "(2, [], [], ['answer.txt'], True)", nxt
    for res in (after, nxt):
        assert res.stdout == res.stderr == "" and res.error is None, res


# --- state across calls and episodes: (attack, probe run in the next call and episode) ------

FIND_MARK = (
    "import gc, sys\n"
    "m = 'zq' + 'SECRET-previous-call-4b1d'\n"
    "hits = []\n"
    "f = sys._getframe()\n"
    "while f is not None:\n"
    "    hits += [k for k, v in f.f_locals.items()\n"
    "             if isinstance(v, str) and m in v and v is not m]\n"
    "    f = f.f_back\n"
    "for o in gc.get_objects():\n"
    "    for r in gc.get_referents(o):\n"
    "        if isinstance(r, (str, bytes, bytearray)) and r is not m:\n"
    "            t = r if isinstance(r, str) else bytes(r).decode('latin-1')\n"
    "            if m in t:\n"
    "                hits.append(type(o).__name__)\n"
    "try:\n"
    "    mem = open('/proc/self/mem', 'rb')\n"
    "    hits.append('proc-self-mem-readable')\n"
    "except OSError:\n"
    "    pass\n"
    "sorted(set(hits))"
)
SYSV = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]\n"
)
STATE: dict[str, tuple[str, str, str]] = {
    "memory_previous_reply": (
        f"x = {MARK!r} * 3\nprint(x)\nimport os\nos.listdir('.'), x",
        FIND_MARK,
        "[]",
    ),
    "memory_previous_error": (f"raise ValueError({MARK!r})", FIND_MARK, "[]"),
    "dev_shm_file": (
        "open('/dev/shm/left', 'w').write('x')",
        "import os\nos.listdir('/dev/shm')",
        "[]",
    ),
    "dev_replace_stdout": (
        "import os\ntry:\n    os.unlink('/dev/stdout')\n    os.symlink('/tmp/x', '/dev/stdout')\n"
        "except OSError:\n    pass\nprint('x')",
        "import os\nos.readlink('/dev/stdout'), os.path.exists('/tmp/x')",
        "('/proc/self/fd/1', False)",
    ),
    "dev_write_anywhere": (
        "import os\nfor d in ('/dev', '/dev/pts', '/dev/mqueue'):\n    try:\n"
        "        open(d + '/left', 'w').write('x')\n    except OSError:\n        pass",
        "import os\n[d for d in ('/dev', '/dev/pts', '/dev/mqueue')\n"
        " if os.path.exists(d + '/left')]",
        "[]",
    ),
    "sysv_shm": (
        SYSV + "libc.shmget(0x1234, 600 << 20, 0o1666)",
        SYSV + "libc.shmget(0x1234, 0, 0o666) == -1",
        "True",
    ),
    "sysv_msg": (
        SYSV + "libc.msgget(0x4321, 0o1666)",
        SYSV + "libc.msgget(0x4321, 0o666) == -1",
        "True",
    ),
    "sysv_sem": (
        SYSV + "libc.semget(0x5678, 4, 0o1666)",
        SYSV + "libc.semget(0x5678, 0, 0o666) == -1",
        "True",
    ),
    "posix_mqueue": (
        SYSV + "libc.mq_open(b'/isgq', 0o100 | 2, 0o666, None)",
        SYSV + "libc.mq_open(b'/isgq', 2, 0, None) == -1",
        "True",
    ),
    "tmp_file": ("open('/tmp/left', 'w').write('x')", "import os\nos.listdir('/tmp')", "[]"),
    "tmp_mode_000_dir": (
        "import os\nos.makedirs('/tmp/a/b')\nopen('/tmp/a/b/f', 'w').write('x' * 1000)\n"
        "os.chmod('/tmp/a/b', 0)\nos.chmod('/tmp/a', 0)",
        "import os\nos.listdir('/tmp'), len(open('/tmp/n', 'w').write('y' * 100000) * 'x')",
        "([], 100000)",
    ),
    "tmp_deep_chain": (
        "import os\nos.chdir('/tmp')\nfor i in range(1600):\n    os.mkdir('d')\n    os.chdir('d')\n"
        "open('f', 'w').write('x')",
        "import os\nos.listdir('/tmp')",
        "[]",
    ),
    "tmp_many_files": (
        "import os\nn = 0\ntry:\n    while n < 30000:\n"
        "        open(f'/tmp/f{n}', 'w').close()\n        n += 1\nexcept OSError:\n    pass\nn > 0",
        "import os\nos.listdir('/tmp')",
        "[]",
    ),
    "tmp_file_held_open": (
        "import threading, time\nfh = open('/tmp/held', 'w')\nfh.write('x')\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "time.sleep(30)",
        "import os\nos.listdir('/tmp')",
        "[]",
    ),
    "tmp_fill": (
        "try:\n    fh = open('/tmp/big', 'wb')\n    while True:\n"
        "        fh.write(b'0' * (1 << 20))\nexcept BaseException:\n    pass",
        "import os\nos.listdir('/tmp'), open('/tmp/n', 'wb').write(b'y' * (8 << 20))",
        "([], 8388608)",
    ),
    "tmp_fill_many": (
        "i = 0\ntry:\n    while True:\n        open(f'/tmp/p{i}', 'wb').write(b'0' * (8 << 20))\n"
        "        i += 1\nexcept BaseException:\n    pass",
        "import os\nos.listdir('/tmp'), open('/tmp/n', 'wb').write(b'y' * (8 << 20))",
        "([], 8388608)",
    ),
    "modules_patched": (
        "import json, builtins, sys\njson.dumps = lambda *a, **k: 'pwned'\nbuiltins.len = None\n"
        "sys.modules['pandas'] = None\nsys.path.insert(0, '/tmp')\n"
        "open('/tmp/pandas.py', 'w').write('raise SystemExit')",
        "import json, pandas as pd\n(json.dumps([1]), len('ab'), pd.__name__)",
        "('[1]', 2, 'pandas')",
    ),
    "pid_counter": (
        "import threading, time\nfor _ in range(300):\n"
        "    t = threading.Thread(target=time.sleep, args=(0,))\n    t.start()\n    t.join()",
        "import os\nos.getpid()",
        "1",
    ),
}


@pytest.mark.parametrize("name", sorted(STATE))
def test_state_does_not_cross_calls_or_episodes(env: Env, backend: str, name: str) -> None:
    skip_not_under(backend, name)
    attack, probe, expected = STATE[name]
    env.sb.run(attack, str(env.repo))
    worker = env.sb._proc
    same = env.sb.run(probe, str(env.repo))
    assert same.value == expected, same
    env.sb.run(attack, str(env.repo))
    nxt = env.sb.run(probe, str(env.other))
    assert nxt.value == expected, nxt
    assert env.sb._proc is worker or name in WORKER_MAY_BE_REPLACED
    assert_clean_after(env)


# an attack whose clean-up takes longer than the wipe budget may only cost a worker restart
WORKER_MAY_BE_REPLACED: set[str] = set()


# --- resource exhaustion, host facts, malformed output ---------------------------------------

MORE: dict[str, tuple[str, Callable[[ExecResult, Env], None]]] = {
    "result_pipe_1gib": (
        "import os\nchunk = b'x' * (1 << 20)\nfor _ in range(1024):\n    os.write(3, chunk)",
        error_contains("OutputLimitExceeded"),
    ),
    "stdout_pipe_1gib_raw": (
        "import os\nchunk = b'x' * (1 << 20)\nfor _ in range(1024):\n    os.write(1, chunk)",
        error_contains("OutputLimitExceeded"),
    ),
    "result_pipe_malformed": (
        "import os\nos.write(3, b'{not json')\nos._exit(0)",
        error_contains("malformed result"),
    ),
    "result_pipe_forged": (
        "import os, json\nos.write(3, json.dumps({'value': 'forged', 'files_read': "
        "['../../etc/shadow', '/abs', 7, 'x.csv'] * 2}).encode())\nos._exit(0)",
        lambda res, env: assert_forged(res),
    ),
    "dev_shm_fill": (
        "try:\n    fh = open('/dev/shm/big', 'wb')\n    while True:\n"
        "        fh.write(b'0' * (1 << 20))\nexcept BaseException:\n    pass",
        contained_value(None),
    ),
    "sysinfo": (
        "import ctypes\nbuf = ctypes.create_string_buffer(256)\n"
        "ctypes.CDLL(None, use_errno=True).sysinfo(buf), ctypes.get_errno()",
        contained_value("(-1, 1)"),
    ),
    "syslog": (
        "import ctypes\nbuf = ctypes.create_string_buffer(256)\n"
        "ctypes.CDLL(None, use_errno=True).klogctl(3, buf, 256), ctypes.get_errno()",
        contained_value("(-1, 1)"),
    ),
    "loadavg": (try_("__import__('os').getloadavg()"), contained_value("'blocked'")),
    "proc_absent": (
        "import os\nos.path.exists('/proc/self'), os.path.exists('/proc/meminfo')",
        contained_value("(False, False)"),
    ),
    "lone_surrogate_stdout": ("print(chr(0xd800))", lambda res, env: assert_utf8(res)),
    "lone_surrogate_error": (
        "raise ValueError(chr(0xd800))",
        lambda res, env: assert_utf8(res),
    ),
    "lone_surrogate_value": ("chr(0xdfff) * 3", lambda res, env: assert_utf8(res)),
    "invalid_utf8_fd1": (
        "import os\nos.write(1, b'\\xff\\xfe\\xc3(')\nos.write(2, b'\\xed\\xa0\\x80')",
        lambda res, env: assert_utf8(res),
    ),
    "nul_bytes": ("print('a\\x00b')\n'\\x00'", lambda res, env: assert_utf8(res)),
}


def assert_utf8(res: ExecResult) -> None:
    for text in (res.stdout, res.stderr, res.value or "", res.error or ""):
        assert isinstance(text, str)
        text.encode("utf-8")  # strict: a lone surrogate would raise here


def assert_forged(res: ExecResult) -> None:
    """The child's report is a measurement only: paths outside the repository are dropped."""
    assert res.value == "forged"
    assert set(res.files_read) == {"x.csv"}, res.files_read


ATTACKS.update(MORE)
