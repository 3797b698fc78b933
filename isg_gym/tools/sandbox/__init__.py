"""Sandbox for model-written Python.

No in-process interpreter is a security boundary, so each call runs in a child process of a
separate worker (``worker.py``, started by exec with a clean environment, never importing
``isg_gym``). The worker's supervisor (which talks to this process) forks, before it reads any
request, a *zygote* that pre-imports numpy, pandas, openpyxl and scipy.stats (and makes pyarrow
unimportable, so that what a cell prints does not depend on the extras installed); each call's
child is forked from the zygote's image, which never held a request or a reply, and reads
only its own cell from a fresh pipe. Each child gets a new session, rlimits, no capabilities,
``no_new_privs`` and a seccomp filter (no execve, no fork, no sockets, no ptrace, no mount, no
SysV/POSIX IPC objects, no ``sysinfo``/``syslog``, signals only to itself). The supervisor caps
what it reads from each child while reading and has a memory limit of its own. A worker that
reports an internal fault or a scratch it could not empty is replaced before the next call.
Backends decide how the worker is started:

- ``"bwrap"``: the worker runs under bubblewrap with a private filesystem view: read-only binds
  of ``/usr`` and the Python installation, the call's repository read-only at ``/data`` (also the
  working directory), a read-only minimal ``/dev``, no ``/proc``, ``/home``, ``/root`` (beyond
  the Python installation, if it lives there) or host ``/tmp``; new user (uid/gid 65534 inside),
  network, pid, ipc and uts namespaces, ``--clearenv``, ``--new-session``, ``--die-with-parent``.
  Each call then runs in namespaces of its own (user, mount, IPC, PID) with a fresh size-capped
  tmpfs at ``/tmp`` and at ``/dev/shm``: nothing a call writes, no IPC object and no pid count
  survive it. Where user namespaces are refused, bubblewrap runs without them (the worker is
  then host root with every capability dropped when the env runs as root) and the supervisor
  empties the shared ``/tmp`` between calls (``worker_info["call_namespaces"]`` says which).
- ``"none"`` (opt-in, **not a security boundary**): the same worker without bubblewrap. Still a
  separate process with rlimits and seccomp, but the child can read (and write) whatever the
  host user can: the checkout, the generator's source, ``/dev/shm``. Constructing it warns
  (``RuntimeWarning`` and a log record), and the repository is *copied* into its view, never
  hard-linked to the shared materialisation cache.
- ``"landlock"`` (root-free, :mod:`isg_gym.tools.sandbox.landlock`) and ``"auto"`` (bubblewrap,
  else Landlock, else :class:`SandboxUnavailable`): see :func:`get_sandbox`.

Usage::

    with get_sandbox("bwrap", SandboxLimits(wall_seconds=5)) as sb:
        res = sb.run("import pandas as pd\\npd.read_csv('x.csv')['a'].mean()", repo_dir)
        res.value, res.stdout, res.error

The worker sees the repository through a private *view* directory of its own (bound at ``/data``
by bubblewrap, the working directory for ``"none"``): a tree of hard links to the files of the
call's ``files_dir`` (copies for ``"none"``). A call with another ``files_dir`` swaps the view
(milliseconds) instead of restarting the worker (about a second); the view only ever holds one
repository. Where hard links are impossible (another filesystem), the worker binds ``files_dir``
itself and restarts when it changes. The view and the worker are removed by ``close``, or when
the sandbox is garbage-collected or the interpreter exits. ``memory_mb`` is the address space a
call may add on top of the zygote's pre-imported libraries. ``ExecResult.files_read`` is the
child's own report: a measurement for evaluation, never trusted for anything else.

``run`` also takes a :class:`~isg_gym.tools.files.FileSource` (a ``Repository``, a ``DictFiles``)
instead of a directory. Then nothing is written to disk first: the worker's ``/data`` is a
read-only FUSE mount served from this process (:mod:`isg_gym.tools.sandbox.lazyview`) that
generates each file when it is first looked up or read; another source is a new generation of
the same mount (the worker keeps running, the kernel's caches of the old one are invalidated),
and ``files_read`` is then the server's record of the files the child opened. Where FUSE cannot
run (no ``/dev/fuse``, no libfuse 3, no ``mfusepy``, mount refused) the source's files are
written into the worker's view instead, with one logged warning; ``files="materialise"`` (or
``ISG_SANDBOX_FILES=materialise``) asks for that, ``files="lazy"`` refuses to fall back, and
``isg doctor`` says which is in use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import logging
import os
import selectors
import shutil
import signal
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isg_gym.tools.files import FileSource, is_file_source, write_source
from isg_gym.tools.sandbox import spawner

__all__ = [
    "DATA_DIR",
    "FILES_ENV",
    "FILES_MODES",
    "SCRATCH_DIR",
    "BubblewrapSandbox",
    "ExecResult",
    "LocalSandbox",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxUnavailable",
    "available_backends",
    "bwrap_available",
    "files_mode",
    "get_sandbox",
    "register_backend",
    "remove_tree",
]

log = logging.getLogger(__name__)

WORKER = Path(__file__).with_name("worker.py")
DATA_DIR = "/data"
SCRATCH_DIR = "/tmp"
_WORKER_IN_SANDBOX = "/sandbox/worker.py"
_STARTUP_TIMEOUT = 60.0
_MAX_REPLY = 16 * 1024 * 1024  # the worker caps each stream; a longer reply is a fault
_PROC_IN_SANDBOX = "/sandbox/proc"  # only the call leaders use it, and hide it from the child
FILES_ENV = "ISG_SANDBOX_FILES"  # default for the ``files`` option of the sandboxes
FILES_MODES = ("auto", "lazy", "materialise")
_SOURCE = "source:"  # prefix of a FileSource's key in Sandbox._files_dir
_CHILD_ENV = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PATH": "/usr/bin:/bin",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MPLBACKEND": "Agg",
}


class SandboxError(RuntimeError):
    """The sandbox itself failed (not the user's code)."""


class SandboxUnavailable(SandboxError):
    """The requested backend cannot run on this machine."""


@dataclass(frozen=True)
class SandboxLimits:
    """Per-call resource limits."""

    cpu_seconds: int = 5
    wall_seconds: float = 10
    memory_mb: int = 1024
    file_size_mb: int = 16
    open_files: int = 64
    output_chars: int = 20000


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one call: captured output, the trailing expression's repr, a short error."""

    stdout: str
    stderr: str
    value: str | None
    error: str | None
    timed_out: bool
    killed: bool
    duration_s: float
    files_read: tuple[str, ...] = ()  # repository files the cell opened (relative paths)

    @property
    def ok(self) -> bool:
        return self.error is None


def _encode(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


class Sandbox:
    """A lazily started worker process plus the protocol to run cells in it.

    Subclasses say how the worker is launched (``_command``) and what the child sees.
    Not thread-safe across calls, but a lock serialises concurrent ``run`` calls.
    """

    backend = "abstract"
    accepts_file_sources = True  # run() takes a FileSource as well as a directory
    copy_view = False  # True: the view holds copies instead of hard links to the shared cache
    # modules the zygote imports once (the rest load per call): scipy.stats alone is ~64 MB
    # resident and ~1 s to import, so it stays preloaded for the statistics questions
    preload: tuple[str, ...] = ("numpy", "pandas", "openpyxl", "scipy.stats")
    # packages model code cannot import (worker.DEFAULT_WITHOUT says why)
    without: tuple[str, ...] = ("pyarrow",)

    def __init__(
        self, limits: SandboxLimits | None = None, *, seccomp: bool = True, files: str | None = None
    ) -> None:
        self.limits = limits or SandboxLimits()
        self.seccomp = seccomp
        self.files_option = _files_option(files)
        self.worker_info: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None
        self._files_dir: str | None = None  # what the worker shows: a directory or "source:KEY"
        self._view: str | None = None  # the worker's private tree of links to _files_dir
        self._lazy: Any = None  # the worker's LazyView, when it shows a FileSource lazily
        self._files_mode: tuple[str, str | None] | None = None
        self._log: Any = None
        self._lock = threading.RLock()
        self._finalizer: weakref.finalize | None = None
        self._owned: list[str] = []  # directories removed with the worker (view, scratch)
        self._closed = False

    # -- subclass hooks --------------------------------------------------------------------

    def _command(self, files_dir: str, config: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def _config(self, files_dir: str) -> dict[str, Any]:
        return {
            "limits": dataclasses.asdict(self.limits),
            "sys_path": _site_paths(),
            "env": dict(_CHILD_ENV),
            "seccomp": self.seccomp,
            "data_dir": DATA_DIR,
            "scratch": SCRATCH_DIR,
            "die_with_parent": True,
            "preload": list(self.preload),
            "without": list(self.without),
        }

    def _cleanup(self) -> None:
        """Backend-specific cleanup after the worker stopped."""

    # -- public API ------------------------------------------------------------------------

    def run(self, code: str, files: str | os.PathLike[str] | FileSource) -> ExecResult:
        """Run ``code`` with ``files`` as the read-only repository at ``/data``: a directory
        (hard-linked or copied into the worker's view) or a :class:`FileSource` (served by the
        lazy view, or written to disk where it cannot run: see :attr:`files_mode`). Never
        raises for user errors (they come back in ``ExecResult.error``)."""
        source = files if is_file_source(files) else None
        directory = None
        if source is None:
            directory = os.path.realpath(files)  # type: ignore[arg-type]
            if not os.path.isdir(directory):
                raise NotADirectoryError(directory)
        with self._lock:
            if self._closed:
                self._closed = False  # a closed sandbox restarts lazily, like a dead worker
            if directory is not None:
                shown = (
                    self.alive
                    and self._lazy is None
                    and (self._files_dir == directory or self._show(directory))
                )
            else:
                shown = self.alive and self._show_source(source)
            if not shown:
                self._stop()
                if directory is not None:
                    self._start(directory)
                else:
                    self._start_source(source)
            lazy = self._lazy
            if lazy is not None:
                lazy.take_opened()  # forget what earlier calls opened
            assert self._proc is not None and self._proc.stdin is not None
            try:
                self._proc.stdin.write(_encode({"code": code}))
                self._proc.stdin.flush()
                reply = self._recv(self._reply_timeout())
            except (OSError, EOFError, TimeoutError, ValueError) as exc:
                detail = self._log_tail()
                self._stop()
                log.warning("sandbox worker died during a call: %r %s", exc, detail)
                return ExecResult(
                    "", "", None, f"SandboxError: worker died ({exc!r})", False, True, 0.0
                )
            if reply.get("worker_fault") or reply.get("clean") is False:
                log.warning(
                    "sandbox worker is not clean (%s); replacing it before the next call",
                    _clean_text(reply.get("error")) or "scratch not emptied",
                )
                self._stop()
            result = _result(reply)
            if lazy is not None:  # the server's record of the files opened: it cannot be forged
                result = dataclasses.replace(result, files_read=lazy.take_opened())
            return result

    def _reply_timeout(self) -> float:
        """Seconds to wait for a call's reply: its wall limit, plus what the lazy view may
        credit to it (worker.py's clock credit), plus slack."""
        wall = float(self.limits.wall_seconds)
        if self._lazy is not None:
            wall *= 1 + _worker_module().CLOCK_CREDIT_FACTOR
        return wall + 15.0

    @property
    def files_mode(self) -> str:
        """How a :class:`FileSource` is shown: ``"lazy"`` (a FUSE view generating files on
        first read) or ``"materialise"`` (every file written to disk first; see
        :attr:`files_fallback` for why)."""
        return self._resolve_files()[0]

    @property
    def files_fallback(self) -> str | None:
        """Why sources are materialised instead of shown lazily (None when they are lazy)."""
        return self._resolve_files()[1]

    def files_description(self) -> str:
        """One line for ``isg doctor``: how this sandbox shows a repository."""
        mode, why = self._resolve_files()
        return "lazy FUSE view" if mode == "lazy" else f"materialised copies ({why})"

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def ping(self, timeout: float = 5.0) -> bool:
        """True when the worker answers (it is not started by this)."""
        with self._lock:
            if not self.alive or self._proc is None or self._proc.stdin is None:
                return False
            try:
                self._proc.stdin.write(_encode({"op": "ping"}))
                self._proc.stdin.flush()
                return bool(self._recv(timeout).get("pong"))
            except (OSError, EOFError, TimeoutError, ValueError):
                return False

    def close(self) -> None:
        """Kill the worker (idempotent)."""
        with self._lock:
            self._stop()
            self._closed = True

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------

    def _show(self, files_dir: str) -> bool:
        """Make the running worker's view hold ``files_dir``; False when it has no view or the
        links cannot be made (the caller then restarts the worker)."""
        if self._view is None:
            return False
        if fill_view(self._view, files_dir, copy=self.copy_view):
            self._files_dir = files_dir
            return True
        return False

    def _resolve_files(self) -> tuple[str, str | None]:
        if self._files_mode is None:
            self._files_mode = files_mode(self.files_option)
        return self._files_mode

    def _show_source(self, source: FileSource) -> bool:
        """Make the running worker show ``source``; False when it cannot (restart instead)."""
        if self._lazy is not None:
            from isg_gym.tools.sandbox.lazyview import LazyViewError

            try:
                self._lazy.show(source)
            except LazyViewError as exc:
                log.warning("sandbox: the lazy view failed (%s); restarting the worker", exc)
                return False
            self._files_dir = _SOURCE + source.key
            return True
        if self._view is None or self.files_mode == "lazy":
            return False
        if self._files_dir != _SOURCE + source.key:
            self._files_dir = None
            self._copy_source(self._view, source)
            self._files_dir = _SOURCE + source.key
        return True

    @staticmethod
    def _copy_source(view: str, source: FileSource) -> None:
        """The materialising fallback: every file of ``source`` written into ``view``."""
        _empty(view)
        try:
            write_source(source, view)
        except BaseException:
            _empty(view)
            raise

    def _start(self, files_dir: str) -> None:
        self._owned = []
        view = tempfile.mkdtemp(prefix="isg-sandbox-view-")
        if fill_view(view, files_dir, copy=self.copy_view):
            self._view = view
            self._owned.append(view)
        else:
            os.rmdir(view)
        self._launch(self._view or files_dir, files_dir)

    def _start_source(self, source: FileSource) -> None:
        self._owned = []
        if self.files_mode == "lazy":
            from isg_gym.tools.sandbox.lazyview import LazyView, LazyViewError

            try:
                view = LazyView()
            except LazyViewError as exc:
                if self.files_option == "lazy":
                    raise SandboxUnavailable(f"the lazy repository view cannot run: {exc}") from exc
                self._files_mode = ("materialise", f"the lazy view failed: {exc}")
                _warn_fallback(self._files_mode[1])
            else:
                self._lazy = view
                try:
                    view.show(source)
                    self._launch(view.mountpoint, _SOURCE + source.key)
                except BaseException:
                    self._stop()
                    raise
                return
        view_dir = tempfile.mkdtemp(prefix="isg-sandbox-view-")
        self._view = view_dir
        self._owned.append(view_dir)
        try:
            self._copy_source(view_dir, source)
        except BaseException:
            self._stop()
            raise
        self._launch(view_dir, _SOURCE + source.key)

    def _launch(self, worker_dir: str, shown: str) -> None:
        """Start the worker on ``worker_dir`` (its ``/data``), which shows ``shown``."""
        config = self._config(worker_dir)
        clock = self._lazy.clock_fd if self._lazy is not None else -1
        if clock >= 0:  # the view credits its time to the call's wall clock (worker.py)
            config["clock_fd"] = clock
        cmd = self._command(worker_dir, config)
        self._log = tempfile.TemporaryFile(prefix="isg-sandbox-")  # noqa: SIM115
        self._proc = spawner.popen(  # forked from a thread that outlives the caller's
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=self._launcher_env(),
            cwd="/",
            close_fds=True,
            pass_fds=(clock,) if clock >= 0 else (),
            start_new_session=True,
        )
        self._finalizer = weakref.finalize(self, _teardown, self._proc, self._owned, self._lazy)
        self._files_dir = shown
        try:
            info = self._recv(_STARTUP_TIMEOUT)
        except (OSError, EOFError, TimeoutError, ValueError) as exc:
            detail = self._log_tail()
            self._stop()
            raise SandboxError(f"{self.backend} worker failed to start: {exc!r}\n{detail}") from exc
        if not info.get("ready"):
            self._stop()
            raise SandboxError(f"unexpected worker greeting {info!r}")
        self.worker_info = info
        if self.seccomp and not info.get("seccomp"):
            msg = (
                f"SANDBOX WARNING: seccomp filter unavailable ({info.get('seccomp_problem')}); "
                "children run without syscall filtering"
            )
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            log.error(msg)

    def _launcher_env(self) -> dict[str, str]:
        return {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}

    def _recv(self, timeout: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        header = _read_exact(fd, 4, deadline)
        (n,) = struct.unpack(">I", header)
        if n > _MAX_REPLY:
            raise ValueError(f"oversized reply ({n} bytes)")
        reply = json.loads(_read_exact(fd, n, deadline))
        if not isinstance(reply, dict):
            raise ValueError("reply is not an object")
        return reply

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        finalizer, self._finalizer = self._finalizer, None
        lazy, self._lazy = self._lazy, None
        if finalizer is not None:
            finalizer()  # kills the worker, unmounts the lazy view, removes the view (once)
        else:
            if proc is not None:
                _kill(proc)
            if lazy is not None:
                lazy.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        self._files_dir = None
        view, self._view = self._view, None
        if view is not None:
            remove_tree(view)
        self._cleanup()

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._log.seek(0)
            return self._log.read()[-4000:].decode(errors="replace")
        return ""


def _read_exact(fd: int, n: int, deadline: float) -> bytes:
    out = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while len(out) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sel.select(remaining):
                raise TimeoutError("sandbox worker did not answer in time")
            chunk = os.read(fd, n - len(out))
            if not chunk:
                raise EOFError("sandbox worker closed its pipe")
            out += chunk
    return bytes(out)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        proc.kill()
    for stream in (proc.stdin, proc.stdout):
        with contextlib.suppress(OSError):
            if stream is not None:
                stream.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _teardown(proc: subprocess.Popen[bytes], paths: list[str], lazy: Any = None) -> None:
    """Kill the worker, then unmount its lazy view and remove its directories (also run by
    ``weakref.finalize`` when a sandbox is garbage-collected or at interpreter exit)."""
    _kill(proc)
    if lazy is not None:
        lazy.close()
    for path in paths:
        remove_tree(path)


def _files_option(files: str | None) -> str:
    """The ``files`` option, or the ``ISG_SANDBOX_FILES`` environment variable, validated."""
    where = "files"
    if files is None:
        files, where = os.environ.get(FILES_ENV) or "auto", FILES_ENV
    choice = "materialise" if files == "materialize" else files
    if choice not in FILES_MODES:
        raise ValueError(
            f"unknown sandbox files mode {files!r} (from {where}); accepted: "
            f"{', '.join(FILES_MODES)}"
        )
    return choice


def files_mode(option: str | None = None) -> tuple[str, str | None]:
    """How a sandbox with ``files=option`` shows a :class:`FileSource` here: ``("lazy", None)``
    or ``("materialise", why)``. ``"auto"`` (default, or ``$ISG_SANDBOX_FILES``) is the lazy
    FUSE view where it works (probed once per process), else materialised copies (logged once);
    ``"lazy"`` raises :class:`SandboxUnavailable` where it cannot run; ``"materialise"``
    always writes files to disk."""
    choice = _files_option(option)
    if choice == "materialise":
        return "materialise", f"asked for ({FILES_ENV} or files='materialise')"
    from isg_gym.tools.sandbox.lazyview import lazy_view_problem

    problem = lazy_view_problem()
    if problem is None:
        return "lazy", None
    if choice == "lazy":
        raise SandboxUnavailable(
            f"the lazy repository view cannot run here: {problem}; install fuse3 and mfusepy, "
            "or use files='materialise'"
        )
    _warn_fallback(problem)
    return "materialise", problem


_FALLBACK_WARNED: list[str] = []


def _warn_fallback(reason: str | None) -> None:
    if not _FALLBACK_WARNED:
        _FALLBACK_WARNED.append(str(reason))
        log.warning(
            "sandbox: the lazy repository view cannot run here (%s); every repository is written "
            "to disk before its first run_python_code (slow for large repositories)",
            reason,
        )


def remove_tree(path: str) -> None:
    """Remove ``path`` whatever is inside (mode-000 directories, deep chains, read-only files):
    the worker's iterative, permission-fixing wipe, then the directory itself."""
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) and not os.path.islink(path):
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IRWXU)
        _worker_module().wipe(path, budget_s=60.0)
        with contextlib.suppress(OSError):
            os.rmdir(path)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _worker_module() -> Any:
    from isg_gym.tools.sandbox import worker

    return worker


def _clean_text(value: Any) -> str | None:
    """A str that encodes to UTF-8 (lone surrogates escaped), or None."""
    if value is None:
        return None
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def _files_read(value: Any) -> tuple[str, ...]:
    """The child's report of repository files it opened, as a measurement only: relative,
    normalised paths inside the repository, at most 1,000."""
    if not isinstance(value, list):
        return ()
    out = []
    for item in value[:1000]:
        if not isinstance(item, str):
            continue
        path = os.path.normpath(_clean_text(item) or "")
        if path and not path.startswith(("/", "..")) and path != ".":
            out.append(path)
    return tuple(out)


def _result(reply: dict[str, Any]) -> ExecResult:
    try:
        duration = float(reply.get("duration_s") or 0.0)
    except (TypeError, ValueError):
        duration = 0.0
    return ExecResult(
        stdout=_clean_text(reply.get("stdout")) or "",
        stderr=_clean_text(reply.get("stderr")) or "",
        value=_clean_text(reply.get("value")),
        error=_clean_text(reply.get("error")),
        timed_out=bool(reply.get("timed_out")),
        killed=bool(reply.get("killed")),
        duration_s=duration,
        files_read=_files_read(reply.get("files_read")),
    )


def _python() -> str:
    return os.path.realpath(sys.executable)


def _site_paths() -> list[str]:
    """Directories holding numpy, pandas, scipy, openpyxl (never the isg_gym checkout)."""
    paths = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    for name in ("numpy", "pandas", "scipy", "openpyxl"):
        # find_spec locates a package without importing it into the env's process
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin:
                paths.add(str(Path(spec.origin).resolve().parent.parent))
    here = Path(__file__).resolve().parents[3]  # the checkout holding isg_gym
    return sorted(p for p in paths if os.path.isdir(p) and Path(p).resolve() != here)


NONE_WARNING = (
    "SANDBOX WARNING: backend 'none' is NOT a security boundary: model code can read and write "
    "whatever this user can (the checkout, the generator's source, /dev/shm); use it only for "
    "trusted code"
)


class LocalSandbox(Sandbox):
    """Backend ``"none"``: the worker runs without bubblewrap (opt-in, not a security boundary;
    see module docs). Subclasses that do isolate (e.g. Landlock) set ``warn_unisolated`` False."""

    backend = "none"
    copy_view = True
    warn_unisolated = True

    def __init__(
        self, limits: SandboxLimits | None = None, *, seccomp: bool = True, files: str | None = None
    ) -> None:
        super().__init__(limits, seccomp=seccomp, files=files)
        self._scratch_root: str | None = None
        if self.warn_unisolated:
            warnings.warn(NONE_WARNING, RuntimeWarning, stacklevel=2)
            log.warning(NONE_WARNING)

    def _config(self, files_dir: str) -> dict[str, Any]:
        config = super()._config(files_dir)
        self._scratch_root = tempfile.mkdtemp(prefix="isg-sandbox-scratch-")
        self._owned.append(self._scratch_root)
        config["data_dir"] = files_dir
        config["scratch"] = self._scratch_root
        # per-call user/mount/IPC/PID namespaces when this kernel lets us (else per-call wipe)
        config["call_namespaces"] = True
        config["proc_dir"] = "/proc"
        return config

    def _command(self, files_dir: str, config: dict[str, Any]) -> list[str]:
        return [_python(), "-I", "-S", str(WORKER), json.dumps(config)]

    def _launcher_env(self) -> dict[str, str]:
        return dict(_CHILD_ENV)

    def _cleanup(self) -> None:
        if self._scratch_root is not None:
            remove_tree(self._scratch_root)
            self._scratch_root = None


class BubblewrapSandbox(Sandbox):
    """Backend ``"bwrap"``: the worker runs in a bubblewrap private filesystem view."""

    backend = "bwrap"

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        seccomp: bool = True,
        bwrap: str | None = None,
        files: str | None = None,
    ) -> None:
        super().__init__(limits, seccomp=seccomp, files=files)
        found = bwrap or shutil.which("bwrap")
        if found is None:
            raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
        self.bwrap = found
        self.userns = bwrap_userns_problem(found) is None

    def _config(self, files_dir: str) -> dict[str, Any]:
        config = super()._config(files_dir)
        config["sys_path"] = [inside for _, inside in site_mounts()]
        config["call_namespaces"] = self.userns
        config["proc_dir"] = _PROC_IN_SANDBOX
        return config

    def _command(self, files_dir: str, config: dict[str, Any]) -> list[str]:
        return [
            *bwrap_args(self.bwrap, files_dir, self.limits, userns=self.userns),
            _python(),
            "-I",
            "-S",
            _WORKER_IN_SANDBOX,
            json.dumps(config),
        ]


def fill_view(view: str, source: str, *, copy: bool = False) -> bool:
    """Replace the content of ``view`` with hard links to (``copy``: read-only copies of) the
    files of ``source`` (directories recreated); False, with ``view`` left empty, when a link
    or copy cannot be made."""
    _empty(view)
    try:
        for root, dirs, files in os.walk(source):
            target = os.path.join(view, os.path.relpath(root, source))
            for name in dirs:
                os.mkdir(os.path.join(target, name))
            for name in files:
                src, dst = os.path.join(root, name), os.path.join(target, name)
                if copy:
                    shutil.copyfile(src, dst)
                    os.chmod(dst, 0o444)
                else:
                    os.link(src, dst)
    except OSError:
        _empty(view)
        return False
    return True


def _empty(directory: str) -> None:
    if not _worker_module().wipe(directory, budget_s=60.0):
        raise SandboxError(f"could not empty the sandbox view {directory}")


OWN_PACKAGE_PATTERNS = ("isg_gym", "isg_gym-*", "isg_gym.*", "isg_gym_*", "__editable__*isg_gym*",
                        "*isg_gym*.pth", "*isg_gym*.egg-link", "isg-gym*")  # fmt: skip


def own_package_entries(site: Path) -> list[Path]:
    """isg_gym's entries in a site directory: an installed copy of the package (its source
    would let model code rebuild any repository's answers), its metadata, and the hooks of an
    editable install that point at a checkout. The sandboxes hide every one of them."""
    found: dict[Path, None] = {}
    for pattern in OWN_PACKAGE_PATTERNS:
        for entry in sorted(site.glob(pattern)):
            found[entry] = None
    return list(found)


def site_mounts() -> list[tuple[str, str]]:
    """(host path, path inside the sandbox) of each site directory.

    Site directories under the scratch path (e.g. a virtual environment in /tmp) are mounted
    elsewhere, so that the per-call scratch at /tmp stays empty.
    """
    return [
        (path, f"/sandbox/site{i}" if _under(path, SCRATCH_DIR) else path)
        for i, path in enumerate(_site_paths())
    ]


def bwrap_args(
    bwrap: str, files_dir: str, limits: SandboxLimits, *, userns: bool = False
) -> list[str]:
    """The bubblewrap command line (up to and including ``--``) for one repository; ``userns``:
    in a new user namespace as uid/gid 65534, with a proc mount for the per-call namespaces."""
    args = [bwrap]
    if userns:
        args += ["--unshare-user", "--uid", "65534", "--gid", "65534"]
    args += [
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
    ]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for path in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    # Scratch first: an installation under /tmp (e.g. a virtual environment) is bound on top.
    scratch_bytes = max(4 * limits.file_size_mb, 64) * 1024 * 1024
    args += ["--size", str(scratch_bytes), "--tmpfs", SCRATCH_DIR]
    mounted = ["/usr"]
    masked: dict[str, bool] = {}  # isg_gym's installed files and hooks -> is a directory
    install = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(_python()))}
    for path in sorted(os.path.realpath(p) for p in install):
        if (
            os.path.isdir(path)
            and not _under(path, SCRATCH_DIR)
            and not any(_under(path, m) for m in mounted)
        ):
            args += ["--ro-bind", path, path]
            mounted.append(path)
            for site in Path(path).glob("lib/python3*/*-packages"):
                for entry in own_package_entries(site):
                    masked[str(entry)] = entry.is_dir()
    for host, inside in site_mounts():
        if inside != host or not any(_under(host, m) for m in mounted):
            args += ["--ro-bind", host, inside]
            mounted.append(inside)
        for entry in own_package_entries(Path(host)):
            masked[f"{inside}/{entry.name}"] = entry.is_dir()
    for hidden, is_dir in masked.items():
        if is_dir:  # an installed copy of the package: an empty read-only directory instead
            args += ["--tmpfs", hidden, "--remount-ro", hidden]
        else:
            args += ["--ro-bind", "/dev/null", hidden]
    args += ["--dev", "/dev", "--remount-ro", "/dev", "--dir", "/sandbox"]
    if userns:
        args += ["--proc", _PROC_IN_SANDBOX]
    args += ["--ro-bind", str(WORKER), _WORKER_IN_SANDBOX]
    args += ["--ro-bind", files_dir, DATA_DIR, "--remount-ro", "/", "--chdir", DATA_DIR]
    for key, value in _CHILD_ENV.items():
        args += ["--setenv", key, value]
    args += ["--setenv", "HOME", SCRATCH_DIR, "--setenv", "TMPDIR", SCRATCH_DIR]
    return [*args, "--"]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


_BWRAP_OK: dict[str, str | None] = {}


def bwrap_available() -> str | None:
    """None when bubblewrap can build our sandbox here, else the reason it cannot (cached)."""
    if "result" in _BWRAP_OK:
        return _BWRAP_OK["result"]
    exe = shutil.which("bwrap")
    reason: str | None
    if exe is None:
        reason = "bubblewrap (bwrap) is not installed"
    else:
        reason = _bwrap_probe(exe, userns=False)
    _BWRAP_OK["result"] = reason
    return reason


def _bwrap_probe(exe: str, userns: bool) -> str | None:
    """Start ``python -c 0`` in our bubblewrap sandbox (in a user namespace with ``userns``);
    None when it ran, else why not."""
    what = "bwrap --unshare-user" if userns else "bwrap"
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [*bwrap_args(exe, tmp, SandboxLimits(), userns=userns), _python(), "-I", "-S",
               "-c", "0"]  # fmt: skip
        try:
            proc = subprocess.run(
                cmd, capture_output=True, timeout=30, check=False, env={"PATH": "/usr/bin:/bin"}
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{what} failed: {exc!r}"
    if proc.returncode == 0:
        return None
    return f"{what} failed ({proc.returncode}): {proc.stderr.decode(errors='replace').strip()}"


_USERNS_OK: dict[str, str | None] = {}


def bwrap_userns_problem(exe: str) -> str | None:
    """None when bubblewrap can run our worker in a user namespace here, else why not
    (cached per executable)."""
    if exe in _USERNS_OK:
        return _USERNS_OK[exe]
    reason = _bwrap_probe(exe, userns=True)
    if reason is not None:
        log.warning("sandbox: %s; bubblewrap runs without a user namespace", reason)
    _USERNS_OK[exe] = reason
    return reason


SandboxFactory = Callable[..., Sandbox]
_BACKENDS: dict[str, SandboxFactory] = {"bwrap": BubblewrapSandbox, "none": LocalSandbox}


def register_backend(name: str, factory: SandboxFactory) -> None:
    """Add a backend (e.g. Docker or a remote service) under ``name``."""
    _BACKENDS[name] = factory


def available_backends() -> list[str]:
    """Registered backend names (whether or not they can run here); see :func:`backend_names`."""
    return sorted(_BACKENDS)


# --- backend selection (engineer B) -----------------------------------------------------------

ISOLATING_BACKENDS = ("bwrap", "landlock")  # in the order "auto" tries them
SANDBOX_FIX = (
    "install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock (>= 5.13), "
    "or pass sandbox='none' to run model code without isolation"
)


def backend_names() -> list[str]:
    """Every name :func:`get_sandbox` accepts: ``"auto"`` and the registered backends."""
    return ["auto", *available_backends()]


def backend_problem(backend: str) -> str | None:
    """None when ``backend`` can run on this machine, else why not (probes are cheap, cached
    per process, and start no worker). Backends without a probe are assumed to run."""
    if backend == "bwrap":
        return bwrap_available()
    if backend == "landlock":
        from isg_gym.tools.sandbox.landlock import landlock_available

        return landlock_available()
    return None


def isolating_backends() -> list[str]:
    """The isolating backends (:data:`ISOLATING_BACKENDS`) that can run on this machine."""
    return [b for b in ISOLATING_BACKENDS if backend_problem(b) is None]


def resolve_backend(backend: str = "auto") -> str:
    """The backend :func:`get_sandbox` would start for ``backend``: ``"auto"`` is bubblewrap
    when it works here, else Landlock when the kernel supports it, never ``"none"``.

    Raises ValueError for an unknown name and :class:`SandboxUnavailable` (naming the fix)
    when the backend cannot run here."""
    if not isinstance(backend, str) or backend not in backend_names():
        raise ValueError(
            f"unknown sandbox backend {backend!r}; accepted: {', '.join(backend_names())}"
        )
    if backend == "auto":
        reasons = {b: backend_problem(b) for b in ISOLATING_BACKENDS}
        for name, reason in reasons.items():
            if reason is None:
                return name
        why = "; ".join(f"{name}: {reason}" for name, reason in reasons.items())
        raise SandboxUnavailable(f"no isolating sandbox can run on this machine ({why}); "
                                 f"{SANDBOX_FIX}")  # fmt: skip
    reason = backend_problem(backend)
    if reason is not None:
        raise SandboxUnavailable(
            f"sandbox backend {backend!r} cannot run on this machine ({reason}); {SANDBOX_FIX}"
        )
    return backend


def get_sandbox(
    backend: str = "auto", limits: SandboxLimits | None = None, **kwargs: Any
) -> Sandbox:
    """A sandbox for ``backend``: ``"auto"`` (bubblewrap, else Landlock, else
    :class:`SandboxUnavailable` naming the fix), ``"bwrap"``, ``"landlock"``, ``"none"``
    (opt-in, no filesystem isolation) or a registered name. Never falls back to ``"none"``.

    ``"landlock"`` (root-free, Linux >= 5.13, :mod:`isg_gym.tools.sandbox.landlock`): before any
    import the worker confines itself with Landlock (read+execute of the Python installation and
    system libraries, read-only of the repository view, read-write of its scratch, nothing else;
    TCP denied from ABI 4, signal and abstract-socket scoping from ABI 6) and, where user
    namespaces are allowed, new user, network, IPC, PID, UTS and mount namespaces (the view at
    ``/mnt``, a capped tmpfs at ``/tmp``, empty ``/proc`` and ``/dev/shm``). ``isg doctor``
    prints which backend would run and why, and self-tests it.

    What each backend stops (the attack catalogue runs under bwrap and landlock; its
    ``NOT_UNDER`` lists the differences; "LL" = Landlock, "sc" = seccomp)::

        attack                               bwrap  landlock+userns  landlock, no userns  none
        read host files, home, checkout      yes    yes              yes                  NO
        list host dirs / stat host paths     yes    yes              lists: yes, stat: NO NO
        write outside scratch, to the repo   yes    yes              yes                  NO
        network (TCP, unix, raw)             yes    yes (netns, LL)  yes (LL ABI>=4, sc)  sc
        fork, exec, ptrace, mount            yes    yes (sc)         yes (sc)             sc
        signal host processes                yes    yes (pidns, LL)  yes (sc, LL ABI>=6)  sc
        see host pids (/proc)                yes    yes (empty)      NO (stat /proc/PID)  NO
        scratch size cap                     yes    yes (tmpfs)      NO (per-file only)   NO
        pid counter across calls/episodes    yes    NO               NO                   NO
        SysV/POSIX IPC kept across calls     yes    yes (sc)         yes (sc)             sc
        memory of earlier calls (zygote)     yes    yes              yes                  yes
        CPU, memory, output, wall limits     yes    yes              yes                  yes
    """
    return _BACKENDS[resolve_backend(backend)](limits, **kwargs)


from isg_gym.tools.sandbox import landlock as _landlock  # noqa: E402,F401  registers "landlock"
