"""The Landlock backend: key containment checks, each layer on its own, and backend selection."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

import isg_gym
import isg_gym.tools.sandbox as sandbox_pkg
from isg_gym.envs.env import ISGEnv
from isg_gym.tools.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    get_sandbox,
    landlock_rules,
    resolve_backend,
)
from isg_gym.tools.sandbox import landlock as landlock_mod
from isg_gym.tools.sandbox.landlock import LandlockSandbox, landlock_available, rules_for

LIMITS = SandboxLimits(cpu_seconds=3, wall_seconds=5, memory_mb=512, output_chars=2000)
PROBLEM = landlock_available()
needs_landlock = pytest.mark.skipif(PROBLEM is not None, reason=f"Landlock: {PROBLEM}")
CHECKOUT = Path(isg_gym.__file__).resolve().parent
USERNS = landlock_mod.landlock_probe().get("userns") is None


def blocked(expr: str) -> str:
    """A cell evaluating to 'blocked' when ``expr`` raises, else to its repr."""
    return (
        f"import os\ntry:\n    _r = {expr}\nexcept BaseException as _e:\n    _r = 'blocked'\n"
        "_r if _r == 'blocked' else repr(_r)[:200]"
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("landlock")
    (base / "repo" / "sub").mkdir(parents=True)
    (base / "repo" / "x.csv").write_text("a,b\n1,2\n3,4\n")
    (base / "repo" / "sub" / "y.txt").write_text("hello\n")
    (base / "secret.txt").write_text("host secret\n")
    return base / "repo"


@pytest.fixture(scope="module")
def sb() -> Iterator[LandlockSandbox]:
    if PROBLEM is not None:
        pytest.skip(f"Landlock: {PROBLEM}")
    sandbox = get_sandbox("landlock", LIMITS)
    assert isinstance(sandbox, LandlockSandbox)
    yield sandbox
    sandbox.close()


@needs_landlock
def test_repository_view_readable_and_pandas_works(sb: LandlockSandbox, repo: Path) -> None:
    res = sb.run(
        "import os, pandas as pd, scipy.stats\n"
        "(float(pd.read_csv('x.csv')['a'].mean()), open('sub/y.txt').read(), sorted(os.listdir()))",
        str(repo),
    )
    assert res.value == "(2.0, 'hello\\n', ['sub', 'x.csv'])", res
    assert res.files_read == ("sub/y.txt", "x.csv")
    report = sb.worker_info["landlock"]
    assert report["abi"] == landlock_rules.abi_version() and report["rules"] > 0
    assert sb.description().startswith("landlock: Landlock ABI")


@needs_landlock
@pytest.mark.parametrize(
    "path",
    ["/etc/shadow", "/etc/passwd", "/proc/self/environ", "/root/.bashrc", "/sys/kernel/notes"],
)
def test_cannot_read_host_files(sb: LandlockSandbox, repo: Path, path: str) -> None:
    assert sb.run(blocked(f"open({path!r}, 'rb').read()"), str(repo)).value == "'blocked'"


@needs_landlock
def test_cannot_list_host_directories(sb: LandlockSandbox, repo: Path) -> None:
    for path in ("/", "/root", "/home", str(Path.home()), "/proc", str(repo.parent)):
        res = sb.run(blocked(f"os.listdir({path!r})"), str(repo))
        assert res.value == "'blocked'", (path, res)
    # /tmp is the worker's own tmpfs scratch (mount namespace) or not listable at all
    tmp = sb.run(blocked("os.listdir('/tmp')"), str(repo)).value
    assert tmp == ("'[]'" if USERNS else "'blocked'")


@needs_landlock
def test_cannot_read_the_checkout_or_its_hooks(sb: LandlockSandbox, repo: Path) -> None:
    targets = [CHECKOUT / "__init__.py", CHECKOUT / "qa" / "__init__.py", CHECKOUT.parent / "x"]
    targets += [CHECKOUT.parent / "pyproject.toml", repo.parent / "secret.txt"]
    for site in sandbox_pkg._site_paths():
        targets += [p for p in Path(site).glob("__editable__*isg_gym*") if p.is_file()]
    for target in targets:
        res = sb.run(blocked(f"open({str(target)!r}).read()"), str(repo))
        assert res.value == "'blocked'", (target, res)
    assert sb.run(blocked("__import__('isg_gym')"), str(repo)).value == "'blocked'"


def test_rules_never_grant_the_checkout(tmp_path: Path) -> None:
    rules = rules_for(str(tmp_path / "view"), str(tmp_path / "scratch"))
    root = str(CHECKOUT.parent if (CHECKOUT.parent / "pyproject.toml").exists() else CHECKOUT)
    for path, kind in rules:
        assert kind in landlock_rules.ACCESS
        under = path == root or path.startswith(root + "/")
        assert not under, (path, kind)
        if root.startswith(path.rstrip("/") + "/"):  # an ancestor of the checkout
            assert kind == "list", (path, kind)
    assert (str(tmp_path / "scratch"), "rw") in rules and (str(tmp_path / "view"), "ro") in rules
    assert [p for p, k in rules if k == "rw"] == [str(tmp_path / "scratch")]


@needs_landlock
def test_cannot_write_outside_scratch(sb: LandlockSandbox, repo: Path) -> None:
    host = repo.parent / "written-by-sandbox"
    for target in ("x.csv", "new.txt", str(host), "/dev/shm/isg-pwn", str(CHECKOUT / "pwned.py")):
        res = sb.run(blocked(f"open({target!r}, 'a').write('pwned')"), str(repo))
        assert res.value == "'blocked'", (target, res)
    for expr in (
        "os.mkdir('d')",
        "os.symlink('/etc', 'etc')",
        "os.link('x.csv', __import__('tempfile').gettempdir() + '/x')",  # no REFER on the view
        "os.truncate('x.csv', 0)",
        "os.rename('x.csv', 'z.csv')",
    ):
        assert sb.run(blocked(expr), str(repo)).value == "'blocked'", expr
    sb.run("open('/tmp/isg-landlock-pwned', 'w').write('x')", str(repo))  # scratch, or denied
    assert not host.exists() and not Path("/tmp/isg-landlock-pwned").exists()
    assert not (CHECKOUT / "pwned.py").exists()
    assert (repo / "x.csv").read_text() == "a,b\n1,2\n3,4\n"


@needs_landlock
def test_scratch_is_tmpdir_and_wiped_between_calls(sb: LandlockSandbox, repo: Path) -> None:
    write = (
        "import os, tempfile\nd = tempfile.gettempdir()\nopen(os.path.join(d, 'left'), 'w')"
        ".write('x')\nos.makedirs(os.path.join(d, 'a', 'b'))\n"
        "(d == os.environ['TMPDIR'] == os.environ['HOME'], sorted(os.listdir(d)))"
    )
    assert sb.run(write, str(repo)).value == "(True, ['a', 'left'])"
    after = sb.run("import os, tempfile\nos.listdir(tempfile.gettempdir())", str(repo))
    assert after.value == "[]", after


@needs_landlock
def test_cannot_connect(sb: LandlockSandbox, repo: Path) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    port = listener.getsockname()[1]
    try:
        res = sb.run(
            blocked(f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=1)"),
            str(repo),
        )
        assert res.value == "'blocked'", res
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


@needs_landlock
@pytest.mark.skipif(not USERNS, reason="unprivileged user namespaces are refused here")
def test_namespaces_hide_the_host(sb: LandlockSandbox, repo: Path) -> None:
    report = sb.worker_info["landlock"]
    assert report["namespaces"] == ["ipc", "mount", "net", "pid", "user", "uts"]
    assert report["scratch_tmpfs"] is True
    res = sb.run(blocked(f"os.kill({os.getpid()}, 0)"), str(repo))
    assert res.value == "'blocked'", res
    host = sb.run("import os\n(os.uname().nodename, os.getpid() < 100)", str(repo))
    assert host.value == "('sandbox', True)", host


@needs_landlock
@pytest.mark.skipif(not USERNS, reason="unprivileged user namespaces are refused here")
def test_scratch_is_size_capped(repo: Path) -> None:
    limits = SandboxLimits(cpu_seconds=5, wall_seconds=10, memory_mb=512, file_size_mb=16)
    with get_sandbox("landlock", limits) as sandbox:
        res = sandbox.run(
            "import os, tempfile\nd = tempfile.gettempdir()\nn = 0\ntry:\n"
            "    for i in range(8):\n"
            "        with open(os.path.join(d, str(i)), 'wb') as f:\n"
            "            f.write(b'x' * (15 << 20))\n        n += 1\n"
            "except OSError as e:\n    err = e.errno\n(n, err)",
            str(repo),
        )
        assert res.value == "(4, 28)", res  # 64 MB tmpfs: the fifth 15 MB file hits ENOSPC


@needs_landlock
def test_landlock_alone_without_seccomp_or_namespaces(repo: Path) -> None:
    """Each layer holds on its own: Landlock with seccomp and namespaces both off still denies
    files, TCP (ABI >= 4) and signals to the host (ABI >= 6)."""
    abi = landlock_rules.abi_version()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    sandbox = LandlockSandbox(LIMITS, seccomp=False, namespaces=False)
    try:
        assert sandbox.run("1", str(repo)).value == "1"
        assert sandbox.worker_info["landlock"]["namespaces"] == []
        assert "namespaces refused (disabled by configuration)" in sandbox.description()
        shadow = sandbox.run(blocked("open('/etc/shadow').read()"), str(repo))
        assert shadow.value == "'blocked'", shadow
        code = (
            "import socket, errno\ns = socket.socket()\ntry:\n"
            f"    s.connect(('127.0.0.1', {port}))\n    r = 'connected'\n"
            "except OSError as e:\n    r = errno.errorcode[e.errno]\nr"
        )
        if abi >= 4:
            assert sandbox.run(code, str(repo)).value == "'EACCES'"
        if abi >= 6:
            kill = sandbox.run(blocked(f"os.kill({os.getpid()}, 0)"), str(repo))
            assert kill.value == "'blocked'", kill
    finally:
        sandbox.close()
        listener.close()


@needs_landlock
@pytest.mark.parametrize("abi", [1, 2, 3, 4, 5, 6])
def test_older_abi_rule_sets_still_confine(abi: int, tmp_path: Path) -> None:
    """The best-effort downgrade: a ruleset built for an older ABI is accepted by this kernel
    and still confines reads and writes."""
    if abi > landlock_rules.abi_version():
        pytest.skip(f"kernel ABI {landlock_rules.abi_version()} < {abi}")
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "f").write_text("fine")
    (tmp_path / "no").write_text("secret")
    rules = [[str(tmp_path / "ok"), "ro"], [sys.base_prefix, "rx"], ["/usr", "rx"]]
    code = (
        "import importlib.util, json, sys\n"
        f"spec = importlib.util.spec_from_file_location('r', {str(landlock_rules.__file__)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"rep = m.restrict({rules!r}, abi={abi})\n"
        "def t(f):\n    try:\n        f(); return 'ok'\n    except OSError as e:\n"
        "        return type(e).__name__\n"
        f"ok = t(lambda: open({str(tmp_path / 'ok' / 'f')!r}).read())\n"
        f"no = t(lambda: open({str(tmp_path / 'no')!r}).read())\n"
        f"w = t(lambda: open({str(tmp_path / 'ok' / 'g')!r}, 'w'))\n"
        "print(json.dumps([rep, ok, no, w]))"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    report, ok, no, write = json.loads(proc.stdout)
    assert (ok, no, write) == ("ok", "PermissionError", "PermissionError")
    assert report["refer"] == (abi >= 2) and report["truncate"] == (abi >= 3)
    assert report["tcp_denied"] == (abi >= 4) and report["ioctl_dev"] == (abi >= 5)
    assert report["scoped"] == (abi >= 6)


def test_handled_rights_grow_with_the_abi() -> None:
    seen = [landlock_rules.handled_rights(abi) for abi in range(1, 8)]
    assert seen[0] == (landlock_rules.FS_ABI1, 0, 0)
    assert all(a[0] & ~b[0] == 0 for a, b in itertools.pairwise(seen))
    assert seen[3][1] == landlock_rules.NET_BIND_TCP | landlock_rules.NET_CONNECT_TCP
    assert seen[5][2] == landlock_rules.SCOPE_ABSTRACT_UNIX_SOCKET | landlock_rules.SCOPE_SIGNAL


# --- selection: "auto", refusal, the env's construction ------------------------------------


def _break(monkeypatch: pytest.MonkeyPatch, bwrap: bool, landlock: bool) -> None:
    if bwrap:
        monkeypatch.setattr(sandbox_pkg, "bwrap_available", lambda: "bwrap broken (test)")
    if landlock:
        monkeypatch.setattr(landlock_mod, "landlock_available", lambda: "no Landlock (test)")


@needs_landlock
def test_auto_picks_landlock_without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    _break(monkeypatch, bwrap=True, landlock=False)
    assert resolve_backend("auto") == "landlock"
    assert sandbox_pkg.isolating_backends() == ["landlock"]


def test_auto_refuses_when_no_backend_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    _break(monkeypatch, bwrap=True, landlock=True)
    with pytest.raises(SandboxUnavailable, match=r"install bubblewrap \(apt-get install bubbl"):
        get_sandbox("auto")
    with pytest.raises(SandboxUnavailable, match=r"bwrap broken.*no Landlock.*sandbox='none'"):
        gym.make("ISG-v0")
    with pytest.raises(SandboxUnavailable, match="'landlock' cannot run"):
        ISGEnv(sandbox="landlock")
    env = ISGEnv(sandbox="none")  # explicitly without isolation: still allowed
    env.close()
    env = ISGEnv(sandbox=object.__new__(type("S", (), {"run": lambda *a: None})))
    env.close()


def test_unknown_or_malformed_sandbox_is_an_error_at_construction() -> None:
    with pytest.raises(ValueError, match="accepted: auto, bwrap, landlock, none"):
        ISGEnv(sandbox="docker")
    with pytest.raises(ValueError, match=r"object with run\(code, files_dir\)"):
        ISGEnv(sandbox=42)


def test_construction_starts_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []
    monkeypatch.setattr(sandbox_pkg.Sandbox, "_start", lambda self, d: started.append(d))
    env = ISGEnv()
    env.close()
    assert env.sandbox_spec == "auto" and started == []
