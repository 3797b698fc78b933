"""``isg doctor``: which sandbox backend would run model code here, why, and a short self-test.

The self-test starts the chosen backend once and runs a handful of the attack catalogue's key
attacks (host secrets, the host home, writes outside scratch, the network, fork/exec, the
``isg_gym`` source, state surviving into the next call) plus two positive checks (the repository
is readable and pandas works; a :class:`~isg_gym.tools.files.FileSource` is served read-only,
through the lazy FUSE view where it runs), printing PASS or FAIL for each. The diagnosis says
how repositories reach the sandbox ("file source: lazy FUSE view" or "materialised copies").
Exit status 0 only when every check passes; 1 when one fails or no backend can run; 2 on bad
options (argparse).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from isg_gym.tools import sandbox as sb
from isg_gym.tools.files import DictFiles
from isg_gym.tools.sandbox import ExecResult, SandboxError, SandboxLimits
from isg_gym.tools.sandbox.landlock import landlock_probe

__all__ = ["add_command", "checks", "diagnose", "run_doctor"]

LIMITS = SandboxLimits(cpu_seconds=3, wall_seconds=5, memory_mb=512, output_chars=2000)
BLOCKED = "'blocked'"


def _try(expr: str) -> str:
    """A cell evaluating to 'blocked' when ``expr`` raises, else to a short repr."""
    return (
        f"import os\ntry:\n    _r = {expr}\nexcept BaseException:\n    _r = 'blocked'\n"
        "_r if _r == 'blocked' else f'NOT blocked ({type(_r).__name__}, {len(str(_r))} chars)'"
    )


@dataclass
class Context:
    """Host-side material the checks use: a repository, planted secrets, a listener."""

    repo: Path
    outside: Path  # a host directory outside the sandbox, with a canary file
    marker: Path  # must never be created
    home: Path
    port: int
    connections: list[Any] = field(default_factory=list)
    lazy: bool = False  # FileSources are served by the lazy FUSE view
    sandbox: Any = None


@dataclass(frozen=True)
class Check:
    name: str
    cells: tuple[str, ...]  # run in order; the last result is judged
    judge: Callable[[list[ExecResult], Context], str | None]  # None: PASS, else why FAIL
    files: Any = None  # what the cells see at /data: None for the context's repository


SOURCE = DictFiles("isg-doctor:source", {"x.csv": b"a,b\n1,2\n3,4\n", "sub/y.txt": b"hello\n"})
SOURCE_CELL = (
    "import os, pandas as pd\ntry:\n    open('x.csv', 'a').write('pwned')\n    w = 'written'\n"
    "except OSError:\n    w = 'blocked'\n"
    "(float(pd.read_csv('x.csv')['a'].mean()), sorted(os.listdir('.')),\n"
    " open('sub/y.txt').read(), w)"
)
SOURCE_SEEN = repr((2.0, ["sub", "x.csv"], "hello\n", "blocked"))


def _all_blocked(results: list[ExecResult], ctx: Context) -> str | None:
    for res in results:
        if res.value != BLOCKED:
            return str(res.value or res.error).strip("'")
    return None


def _install_ancestors() -> set[str]:
    """Names a sandbox may show in the host home: the path to the Python installation."""
    names = set()
    home = Path.home().resolve()
    for prefix in {sys.prefix, sys.base_prefix}:
        path = Path(prefix).resolve()
        if path.is_relative_to(home) and path != home:
            names.add(path.relative_to(home).parts[0])
    return names


def checks(ctx: Context) -> list[Check]:
    """The self-test, built for one context."""
    package = Path(sb.__file__).resolve().parents[2]  # .../isg_gym
    home_entries = sorted(_install_ancestors())

    def no_write(results: list[ExecResult], c: Context) -> str | None:
        if c.marker.exists():
            return f"{c.marker} was created on the host"
        if (c.repo / "x.csv").read_text() != "a,b\n1,2\n3,4\n":
            return "the repository file was changed"
        return _all_blocked(results, c)

    def home(results: list[ExecResult], c: Context) -> str | None:
        value = results[0].value
        if value in (BLOCKED, repr(home_entries)):  # at most the Python installation's top
            return None
        if value and value.startswith("["):
            return f"NOT blocked: listed {value.count(',') + 1} entries"
        return f"got {value or results[0].error!r}"

    def network(results: list[ExecResult], c: Context) -> str | None:
        time.sleep(0.05)
        if c.connections:
            return f"the host listener accepted {len(c.connections)} connection(s)"
        return _all_blocked(results, c)

    def no_state(results: list[ExecResult], c: Context) -> str | None:
        first, second = results
        if first.value != "True":
            return f"could not even write scratch: {first.value or first.error!r}"
        return None if second.value == "([], False)" else f"next call saw {second.value!r}"

    def sane(results: list[ExecResult], c: Context) -> str | None:
        res = results[0]
        return None if res.value == "(2.0, 'x.csv')" else f"got {res.value or res.error!r}"

    def served(results: list[ExecResult], c: Context) -> str | None:
        res = results[0]
        if res.value != SOURCE_SEEN:
            return f"got {res.value or res.error!r}"
        if c.lazy and getattr(c.sandbox, "_lazy", None) is None:
            return "the sandbox did not use the lazy view"
        if c.lazy and res.files_read != ("sub/y.txt", "x.csv"):
            return f"the view recorded {res.files_read!r} as opened"
        return None

    return [
        Check(
            "repository readable, pandas works (sanity)",
            (
                "import os, pandas as pd\n"
                "(float(pd.read_csv('x.csv')['a'].mean()), sorted(os.listdir('.'))[0])",
            ),
            sane,
        ),
        Check("read /etc/shadow", (_try("open('/etc/shadow').read()"),), _all_blocked),
        Check(
            f"read the host home ({ctx.home})",
            (
                f"import os\ntry:\n    _r = sorted(os.listdir({str(ctx.home)!r}))\n"
                "except BaseException:\n    _r = 'blocked'\n_r",
            ),
            home,
        ),
        Check(
            "read a host file outside the sandbox",
            (_try(f"open({str(ctx.outside / 'canary.txt')!r}).read()"),),
            _all_blocked,
        ),
        Check(
            "write outside scratch (repository, host directory)",
            (
                _try("open('x.csv', 'a').write('pwned')"),
                _try(f"open({str(ctx.marker)!r}, 'w').write('pwned')"),
            ),
            no_write,
        ),
        Check(
            "network connect to a host port",
            (
                _try(
                    "__import__('socket').create_connection(('127.0.0.1', "
                    f"{ctx.port}), timeout=1)"
                ),
            ),
            network,
        ),
        Check(
            "fork / exec",
            (
                _try("(lambda p: os._exit(0) if p == 0 else p)(os.fork())"),
                _try("__import__('subprocess').run(['/bin/true']).returncode"),
            ),
            _all_blocked,
        ),
        Check(
            "read the isg_gym source / import isg_gym",
            (
                _try(f"open({str(package / '__init__.py')!r}).read()"),
                _try("__import__('isg_gym').__file__"),
            ),
            _all_blocked,
        ),
        Check(
            "state survives into the next call",
            (
                "import os, sys, tempfile\nopen(os.path.join(tempfile.gettempdir(), 'left'), "
                "'w').write('x')\nsys.modules['os'].LEFT = 1\nos.path.exists(os.path.join("
                "tempfile.gettempdir(), 'left'))",
                "import os, tempfile\n(os.listdir(tempfile.gettempdir()), hasattr(os, 'LEFT'))",
            ),
            no_state,
        ),
        Check(  # last: the worker restarts once, from a directory to the source
            "a FileSource is served read-only ("
            + ("lazy FUSE view" if ctx.lazy else "materialised copies")
            + ")",
            (SOURCE_CELL,),
            served,
            SOURCE,
        ),
    ]


def diagnose(backend: str = "auto") -> tuple[list[str], str | None, str | None]:
    """(lines describing this machine, the backend that would run, why none can)."""
    lines = []
    bwrap = shutil.which("bwrap")
    problem = sb.backend_problem("bwrap")
    lines.append(
        f"bubblewrap: usable ({bwrap})" if problem is None else f"bubblewrap: not usable: {problem}"
    )
    probe = landlock_probe()
    problem = sb.backend_problem("landlock")
    lines.append(
        f"landlock: usable (kernel ABI {probe.get('abi')})"
        if problem is None
        else f"landlock: not usable: {problem}"
    )
    userns = probe.get("userns")
    lines.append(
        "user namespaces: allowed (landlock adds user, net, ipc, pid, uts, mount namespaces)"
        if userns is None
        else f"user namespaces: refused ({userns})"
    )
    machine = os.uname().machine
    lines.append(
        f"seccomp: filter for {machine} (confirmed by the worker below)"
        if machine == "x86_64"
        else f"seccomp: no filter for {machine}: children run without syscall filtering"
    )
    try:
        mode, why = sb.files_mode()
        lines.append(
            "file source: lazy FUSE view" if mode == "lazy" else f"file source: materialised "
            f"copies ({why})"
        )
    except (sb.SandboxUnavailable, ValueError) as exc:
        lines.append(f"file source: cannot run: {exc}")
    try:
        chosen = sb.resolve_backend(backend)
    except (sb.SandboxUnavailable, ValueError) as exc:
        lines.append(f"backend {backend!r}: cannot run: {exc}")
        return lines, None, str(exc)
    if backend == "auto":
        why = (
            "bubblewrap works here"
            if chosen == "bwrap"
            else "bubblewrap is not usable, the kernel has Landlock"
        )
        lines.append(f"backend: {chosen} (auto: {why})")
    else:
        warn = "  (NO isolation: model code can read and write what you can)"
        lines.append(f"backend: {chosen} (asked for)" + (warn if chosen == "none" else ""))
    return lines, chosen, None


def _context(base: Path) -> Context:
    repo = base / "repo"
    repo.mkdir()
    (repo / "x.csv").write_text("a,b\n1,2\n3,4\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "canary.txt").write_text("host canary\n")
    return Context(repo, outside, outside / "marker", Path.home(), 0)


def run_doctor(backend: str = "auto", out: TextIO | None = None, self_test: bool = True) -> int:
    """Print the diagnosis and (optionally) the self-test; return the exit status."""
    out = out or sys.stdout
    started = time.monotonic()
    lines, chosen, _ = diagnose(backend)
    print("isg doctor: the sandbox for run_python_code on this machine", file=out)
    for line in lines:
        print(f"  {line}", file=out)
    if chosen is None:
        return 1
    if not self_test:
        return 0
    base = Path(tempfile.mkdtemp(prefix="isg-doctor-"))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stop = threading.Event()
    thread: threading.Thread | None = None
    sandbox = None
    failures = 0
    try:
        ctx = _context(base)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.settimeout(0.1)
        ctx.port = listener.getsockname()[1]

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, addr = listener.accept()
                except OSError:
                    continue
                ctx.connections.append(addr)
                conn.close()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        sandbox = sb.get_sandbox(chosen, LIMITS)
        ctx.sandbox = sandbox
        ctx.lazy = sandbox.files_mode == "lazy"
        print(f"self-test under {chosen}:", file=out)
        for check in checks(ctx):
            files = str(ctx.repo) if check.files is None else check.files
            try:
                results = [sandbox.run(cell, files) for cell in check.cells]
                why = check.judge(results, ctx)
            except (SandboxError, OSError) as exc:
                why = f"sandbox error: {exc}"
            failures += why is not None
            status = "PASS" if why is None else "FAIL"
            print(f"  {status}  {check.name}" + (f": {why}" if why else ""), file=out)
        info = getattr(sandbox, "worker_info", {}) or {}
        seccomp = "active" if info.get("seccomp") else f"NOT active ({info.get('seccomp_problem')})"
        print(f"  worker: seccomp {seccomp}", file=out)
        describe = getattr(sandbox, "description", None)
        if callable(describe):
            print(f"  worker: {describe()}", file=out)
        total = len(checks(ctx))
    except (SandboxError, OSError) as exc:
        print(f"  FAIL  the {chosen} sandbox could not start: {exc}", file=out)
        return 1
    finally:
        if sandbox is not None:
            sandbox.close()
        stop.set()
        if thread is not None:
            thread.join(2)
        listener.close()
        shutil.rmtree(base, ignore_errors=True)
    elapsed = time.monotonic() - started
    print(f"{total - failures}/{total} checks passed ({elapsed:.1f} s)", file=out)
    return 0 if failures == 0 else 1


def add_command(sub: Any) -> None:
    """Register ``isg doctor`` on the ``isg`` command's subparsers."""
    s = sub.add_parser("doctor", help="which sandbox runs model code here, and a self-test")
    s.add_argument(
        "--backend",
        default="auto",
        choices=sb.backend_names(),
        help="backend to diagnose and test (default: auto)",
    )
    s.add_argument("--no-self-test", action="store_true", help="only print the diagnosis")
    s.set_defaults(run=_cmd_doctor)


def _cmd_doctor(args: argparse.Namespace) -> None:
    status = run_doctor(args.backend, self_test=not args.no_self_test)
    if status:
        raise SystemExit(status)
