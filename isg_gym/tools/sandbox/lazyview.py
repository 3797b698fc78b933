"""A lazy, read-only FUSE view of a :class:`~isg_gym.tools.files.FileSource` (the sandbox's
``/data``).

Instead of writing a whole repository to disk before the first ``run_python_code`` (seconds for
thousands of files), the sandbox binds a FUSE mount served from this process: directory listings
come from the source's index, and a file's bytes are generated the first time it is looked up,
stat'ed or read (the source memoises them; a :class:`~isg_gym.repository.Repository` does).

- **Read-only**: mounted ``ro`` with ``default_permissions`` (files ``0444``, directories
  ``0555``, owned by this process's uid/gid); every write, create, rename, link, chmod, chown,
  truncate, xattr change, ... is refused with ``EROFS`` by the kernel and again by the server.
- **One source at a time**: :meth:`LazyView.show` swaps the source in place (the sandbox worker
  keeps running). Each source is a new *generation*: new inode numbers, open handles of the old
  one answered ``ESTALE``, and every name, attribute and page the kernel cached from the old one
  invalidated (``fuse_invalidate_path`` for each path the kernel looked up, then
  ``notify_inval_entry`` for each top-level name, which drops the cached subtrees). Within a
  generation names, attributes and pages are cacheable by the kernel for a day, so a repeated
  read of a file costs no callback; negative lookups are never cached.
- **Robust**: the FUSE loop runs in a daemon thread (``fuse_loop``, one request at a time); every
  handler catches everything and answers an errno, so no request can kill the server. The view
  unmounts on :meth:`~LazyView.close`, when garbage-collected and at interpreter exit; mounts left
  by a process that died (the kernel keeps a dead mount until it is unmounted) are swept when a
  process mounts its first view. A forked child never unmounts its parent's views.
- ``opened`` (:meth:`LazyView.take_opened`) records the files the sandbox child opened: the
  server's own measurement, which the child cannot forge.
- **Clock credit**: time spent answering a request (generating a file's bytes, mostly) is
  time the sandbox child waited, not time it ran; the server reports it on a pipe
  (:attr:`LazyView.clock_fd`, the read end, for the sandbox worker) and the worker moves the
  call's wall-clock deadline by as much (capped there), so a first read of many files is not
  a timeout where the same files written to disk beforehand would not be.

Built on ``mfusepy`` (ctypes bindings for libfuse 3: its struct layouts and the loaded library),
driving libfuse's ``fuse_new``/``fuse_mount``/``fuse_loop`` directly rather than through
``mfusepy.FUSE``, whose ``fuse_main`` would install process-wide SIGTERM/SIGHUP handlers and give
no handle for invalidation. Where FUSE cannot run, :func:`lazy_view_problem` says why and the
sandbox falls back to writing files to disk (:func:`isg_gym.tools.files.write_source`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import stat
import struct
import tempfile
import threading
import time
import weakref
from typing import Any

from isg_gym.tools.files import DictFiles, FileSource

__all__ = [
    "FSTYPE",
    "MOUNT_PREFIX",
    "LazyView",
    "LazyViewError",
    "lazy_view_problem",
    "live_mounts",
]

log = logging.getLogger(__name__)

MOUNT_PREFIX = "isg-lazyview-"
FSNAME = "isg-lazyview"  # the mount's source is "isg-lazyview:<pid>"
SUBTYPE = "isg"
FSTYPE = f"fuse.{SUBTYPE}"
CACHE_SECONDS = 86400.0  # names, attributes and pages within one generation
JOIN_SECONDS = 5.0
MAX_OPENED = 1000  # files recorded per call (like the worker's own report)
MAX_LOGGED_FAULTS = 5
CREDIT_MIN_SECONDS = 0.001  # requests answered faster are not reported to the worker
FILE_MODE = stat.S_IFREG | 0o444
DIR_MODE = stat.S_IFDIR | 0o555
ROOT_ID = 1  # FUSE_ROOT_ID: the kernel's node id of the mount root
MNT_DETACH = 2
_GEN_SHIFT = 32
_READ_ONLY_OPS = (
    "mknod", "mkdir", "unlink", "rmdir", "symlink", "rename", "link", "chmod", "chown",
    "truncate", "write", "setxattr", "removexattr", "create", "utimens", "fallocate",
    "write_buf", "copy_file_range",
)  # fmt: skip


class LazyViewError(OSError):
    """The lazy view could not be mounted or updated."""


# --- the libfuse binding ----------------------------------------------------------------------


class _FuseArgs(ctypes.Structure):
    _fields_ = [
        ("argc", ctypes.c_int),
        ("argv", ctypes.POINTER(ctypes.c_char_p)),
        ("allocated", ctypes.c_int),
    ]


_BINDING: dict[str, Any] = {}


def _binding() -> Any:
    """The ``mfusepy`` module with libfuse 3's entry points typed (raises LazyViewError)."""
    if "mfusepy" in _BINDING:
        return _BINDING["mfusepy"]
    try:
        import mfusepy
    except ImportError as exc:
        raise LazyViewError(f"mfusepy is not installed ({exc}); pip install mfusepy") from None
    except (OSError, AttributeError) as exc:  # mfusepy loads libfuse at import
        raise LazyViewError(f"libfuse cannot be loaded ({exc}); apt-get install fuse3") from None
    if mfusepy.fuse_version_major != 3:
        raise LazyViewError(
            f"libfuse {mfusepy.fuse_version_major}.{mfusepy.fuse_version_minor} found; the lazy "
            "view needs libfuse 3 (apt-get install fuse3)"
        )
    lib = mfusepy._libfuse
    vp, cp, ci = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    for name, restype, argtypes in (
        ("fuse_new_31", vp, [ctypes.POINTER(_FuseArgs), vp, ctypes.c_size_t, vp]),
        ("fuse_opt_free_args", None, [ctypes.POINTER(_FuseArgs)]),
        ("fuse_mount", ci, [vp, cp]),
        ("fuse_unmount", None, [vp]),
        ("fuse_loop", ci, [vp]),
        ("fuse_exit", None, [vp]),
        ("fuse_destroy", None, [vp]),
        ("fuse_get_session", vp, [vp]),
        ("fuse_invalidate_path", ci, [vp, cp]),
        ("fuse_lowlevel_notify_inval_entry", ci, [vp, ctypes.c_uint64, cp, ctypes.c_size_t]),
        ("fuse_lowlevel_notify_inval_inode", ci, [vp, ctypes.c_uint64, ctypes.c_int64,
                                                  ctypes.c_int64]),
    ):  # fmt: skip
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LazyViewError(f"libfuse has no {name}; libfuse >= 3.1 is needed") from None
        fn.restype, fn.argtypes = restype, argtypes
    _BINDING["mfusepy"] = mfusepy
    return mfusepy


# --- one generation: the source shown and what the kernel learnt of it ------------------------


class _Generation:
    """One source as shown: inode numbers and attributes handed to the kernel, memoised."""

    def __init__(self, source: FileSource, number: int) -> None:
        self.source = source
        self.key = source.key
        self.number = number
        self.mtime = time.time()
        self.inodes: dict[str, int] = {"": (number << _GEN_SHIFT) | 1}
        self.attrs: dict[str, tuple[int, int]] = {}  # path -> (mode, size): looked up by kernel

    def ino(self, path: str) -> int:
        ino = self.inodes.get(path)
        if ino is None:
            ino = (self.number << _GEN_SHIFT) | (len(self.inodes) + 1)
            self.inodes[path] = ino
        return ino

    def kind(self, path: str) -> int | None:
        """DIR_MODE, FILE_MODE, or None when nothing (or an unusable name) is there."""
        try:
            if self.source.is_dir(path):
                return DIR_MODE
            if self.source.is_file(path):
                return FILE_MODE
        except Exception:  # e.g. a name the source rejects (backslashes, odd bytes)
            return None
        return None

    def attr(self, path: str) -> tuple[int, int]:
        """(mode, size) of an existing path (its bytes generated once); ENOENT otherwise."""
        found = self.attrs.get(path)
        if found is None:
            mode = self.kind(path)
            if mode is None:
                raise FileNotFoundError(errno.ENOENT, path)
            size = 0 if mode == DIR_MODE else int(self.source.file_size(path))
            found = self.attrs[path] = (mode, size)
        return found


def _relative(path: bytes | None) -> str:
    """``b"/a/b.csv"`` -> ``"a/b.csv"`` (``""`` for the root); ENOENT for undecodable names."""
    if path is None:
        raise FileNotFoundError(errno.ENOENT, "no path")
    try:
        text = path.decode("utf-8")
    except UnicodeDecodeError:
        raise FileNotFoundError(errno.ENOENT, "undecodable name") from None
    return text.strip("/")


# --- the server -------------------------------------------------------------------------------


class _Server:
    """The FUSE file system and its loop thread (no reference to the :class:`LazyView` handle,
    so that a dropped handle can be finalised)."""

    def __init__(self, invalidate: bool) -> None:
        self.invalidate = invalidate
        self.owner_pid = os.getpid()
        self.gen = _Generation(_EMPTY, 1)
        self.opened: set[str] = set()
        self.requests = 0
        self.faults = 0
        self.lock = threading.Lock()  # generation swaps and close
        self.ready = threading.Event()  # set by the kernel's INIT request
        self.closed = False
        self.fuse: int | None = None
        self.thread: threading.Thread | None = None
        self.mountpoint = ""
        self._callbacks: list[Any] = []
        self.clock_lock = threading.Lock()
        self.clock_r, self.clock_w = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self.clock_w, False)  # a full pipe drops a credit, never blocks

    # -- lifecycle ---------------------------------------------------------------------------

    def mount(self) -> None:
        mf = _binding()
        lib = mf._libfuse
        _sweep_stale_mounts()
        ops = mf.fuse_operations()
        prototypes = {field[0]: field[1] for field in mf.fuse_operations._fields_}
        handlers = {
            "getattr": self._getattr,
            "readdir": self._readdir,
            "open": self._open,
            "read": self._read,
            "release": self._release,
            "statfs": self._statfs,
            "init": self._init,
            **dict.fromkeys(_READ_ONLY_OPS, self._refuse),
        }
        for name, handler in handlers.items():
            if name in prototypes:
                callback = prototypes[name](self._guard(name, handler))
                self._callbacks.append(callback)
                setattr(ops, name, callback)
        self._ops = ops
        options = f"ro,default_permissions,fsname={FSNAME}:{os.getpid()},subtype={SUBTYPE}"
        argv_list = [b"isg-lazyview", b"-o", options.encode()]
        argv = (ctypes.c_char_p * len(argv_list))(*argv_list)
        args = _FuseArgs(len(argv_list), argv, 0)
        fuse = lib.fuse_new_31(ctypes.byref(args), ctypes.byref(ops), ctypes.sizeof(ops), None)
        lib.fuse_opt_free_args(ctypes.byref(args))
        if not fuse:
            raise LazyViewError("fuse_new failed (libfuse rejected the options; see stderr)")
        self.mountpoint = tempfile.mkdtemp(prefix=MOUNT_PREFIX)
        if lib.fuse_mount(fuse, self.mountpoint.encode()) != 0:
            lib.fuse_destroy(fuse)
            with contextlib.suppress(OSError):
                os.rmdir(self.mountpoint)
            raise LazyViewError(
                f"the FUSE mount at {self.mountpoint} was refused (needs /dev/fuse and root or "
                "fusermount3; see stderr)"
            )
        self.fuse = fuse
        self.thread = threading.Thread(
            target=self._serve, name=f"isg-lazyview-{os.path.basename(self.mountpoint)}",
            daemon=True,
        )  # fmt: skip
        self.thread.start()
        if not self.ready.wait(JOIN_SECONDS):
            self.close()
            raise LazyViewError(f"the FUSE mount at {self.mountpoint} never started serving")

    def _serve(self) -> None:
        lib = _BINDING["mfusepy"]._libfuse
        rc = lib.fuse_loop(self.fuse)
        if rc != 0 and not self.closed:
            log.error("lazy view %s: the FUSE loop ended (%d)", self.mountpoint, rc)

    def close(self) -> None:
        """Stop serving and unmount (idempotent; a no-op in a forked child)."""
        with self.lock:
            if self.closed or os.getpid() != self.owner_pid:
                return
            self.closed = True
        fuse, self.fuse = self.fuse, None
        if fuse is None:
            self._close_clock()
            return
        lib = _BINDING["mfusepy"]._libfuse
        lib.fuse_exit(fuse)
        lib.fuse_unmount(fuse)  # lazy: a sandbox still holding the mount keeps it alive
        thread = self.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(JOIN_SECONDS)
        if thread is not None and not thread.is_alive():
            lib.fuse_destroy(fuse)
        else:
            log.warning("lazy view %s: still referenced after unmount; its loop is left to end "
                        "on its own", self.mountpoint)  # fmt: skip
        with contextlib.suppress(OSError):
            os.rmdir(self.mountpoint)
        self._close_clock()

    def _close_clock(self) -> None:
        with self.clock_lock:
            for fd in (self.clock_r, self.clock_w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self.clock_r = self.clock_w = -1

    def credit(self, seconds: float) -> None:
        """Report ``seconds`` of server time to the sandbox worker (whole milliseconds)."""
        ms = int(seconds * 1000)
        if ms <= 0:
            return
        with self.clock_lock:
            if self.clock_w >= 0:
                with contextlib.suppress(OSError):  # full (nobody reading): dropped
                    os.write(self.clock_w, struct.pack(">I", min(ms, 0xFFFFFFFF)))

    @property
    def alive(self) -> bool:
        return not self.closed and self.thread is not None and self.thread.is_alive()

    # -- generations ---------------------------------------------------------------------------

    def show(self, source: FileSource) -> bool:
        """Serve ``source`` from now on; False when it is already shown (same key)."""
        with self.lock:
            if self.closed or self.fuse is None:
                raise LazyViewError("the lazy view is closed")
            if self.thread is None or not self.thread.is_alive():
                raise LazyViewError(f"the lazy view's server at {self.mountpoint} has stopped")
            old = self.gen
            if source.key == old.key:
                return False
            self.gen = _Generation(source, old.number + 1)
            self.opened = set()
            if self.invalidate:
                self._forget(old)
            return True

    def _forget(self, old: _Generation) -> None:
        """Invalidate whatever the kernel may have cached of ``old``: each looked-up path's
        attributes and pages, then each top-level name (its cached subtree goes with it)."""
        lib = _BINDING["mfusepy"]._libfuse
        session = lib.fuse_get_session(self.fuse)
        paths = sorted(old.attrs, key=lambda p: p.count("/"), reverse=True)
        for path in paths:
            if path:
                rc = lib.fuse_invalidate_path(self.fuse, ("/" + path).encode())
                _check_notify(rc, path)
        for name in sorted({p.split("/", 1)[0] for p in paths if p}):
            raw = name.encode()
            rc = lib.fuse_lowlevel_notify_inval_entry(session, ROOT_ID, raw, len(raw))
            _check_notify(rc, name)
        _check_notify(lib.fuse_lowlevel_notify_inval_inode(session, ROOT_ID, 0, 0), "/")

    def take_opened(self) -> tuple[str, ...]:
        opened, self.opened = self.opened, set()
        return tuple(sorted(opened))

    # -- handlers ------------------------------------------------------------------------------

    def _guard(self, name: str, handler: Any) -> Any:
        def call(*args: Any) -> Any:
            self.requests += 1
            started = time.perf_counter()
            try:
                return handler(*args)
            except OSError as exc:
                code = exc.errno if isinstance(exc.errno, int) and exc.errno > 0 else errno.EIO
                return None if name == "init" else -code
            except BaseException:  # nothing may cross into libfuse
                self.faults += 1
                if self.faults <= MAX_LOGGED_FAULTS:
                    log.exception("lazy view %s: %s failed", self.mountpoint, name)
                return None if name == "init" else -errno.EIO
            finally:
                spent = time.perf_counter() - started
                if spent >= CREDIT_MIN_SECONDS:
                    self.credit(spent)

        call.__name__ = name
        return call

    def _init(self, conn: Any, config: Any) -> None:
        if config:
            cfg = config.contents
            cfg.entry_timeout = CACHE_SECONDS
            cfg.attr_timeout = CACHE_SECONDS
            cfg.negative_timeout = 0.0
            cfg.use_ino = 1
            cfg.kernel_cache = 1
            cfg.auto_cache = 0
            cfg.direct_io = 0
        self.ready.set()
        return None

    def _getattr(self, path: bytes, st_p: Any, fi: Any) -> int:
        gen = self.gen
        rel = _relative(path)
        mode, size = gen.attr(rel)
        ctypes.memset(st_p, 0, ctypes.sizeof(st_p.contents))
        st = st_p.contents
        st.st_mode = mode
        st.st_ino = gen.ino(rel)
        st.st_nlink = 2 if mode == DIR_MODE else 1
        st.st_uid = os.getuid()
        st.st_gid = os.getgid()
        st.st_size = size
        st.st_blksize = 4096
        st.st_blocks = (size + 511) // 512
        sec, nsec = int(gen.mtime), int((gen.mtime % 1) * 1e9)
        for name in ("st_atimespec", "st_mtimespec", "st_ctimespec"):
            ts = getattr(st, name, None)
            if ts is not None:
                ts.tv_sec, ts.tv_nsec = sec, nsec
        return 0

    def _readdir(self, path: bytes, buf: Any, filler: Any, offset: int, fi: Any,
                 flags: int = 0) -> int:  # fmt: skip
        gen = self.gen
        rel = _relative(path)
        if gen.kind(rel) != DIR_MODE:
            raise NotADirectoryError(errno.ENOTDIR, rel)
        mf = _BINDING["mfusepy"]
        st = mf.c_stat()
        prefix = f"{rel}/" if rel else ""
        entries = [(".", DIR_MODE, gen.ino(rel)), ("..", DIR_MODE, 0)]
        for name in gen.source.listdir(rel):
            is_dir = name.endswith("/")
            bare = name[:-1] if is_dir else name
            entries.append((bare, DIR_MODE if is_dir else FILE_MODE, gen.ino(prefix + bare)))
        for name, mode, ino in entries:
            st.st_mode, st.st_ino = mode, ino
            try:
                raw = name.encode("utf-8")
            except UnicodeEncodeError:
                continue
            if filler(buf, raw, st, 0, 0) != 0:
                break
        return 0

    def _open(self, path: bytes, fi_p: Any) -> int:
        gen = self.gen
        rel = _relative(path)
        fi = fi_p.contents
        if fi.flags & (os.O_ACCMODE | os.O_TRUNC | os.O_CREAT | os.O_APPEND) != os.O_RDONLY:
            raise OSError(errno.EROFS, rel)
        mode, _ = gen.attr(rel)
        if mode != FILE_MODE:
            raise IsADirectoryError(errno.EISDIR, rel)
        fi.fh = gen.number
        if len(self.opened) < MAX_OPENED:
            self.opened.add(rel)
        return 0

    def _read(self, path: bytes, buf: Any, size: int, offset: int, fi_p: Any) -> int:
        gen = self.gen
        if fi_p.contents.fh != gen.number:  # a handle of an earlier generation
            raise OSError(errno.ESTALE, "stale handle")
        rel = _relative(path)
        if offset < 0 or size < 0:
            raise OSError(errno.EINVAL, rel)
        data = gen.source.read_bytes(rel)
        chunk = data[offset : offset + size]
        if chunk:
            ctypes.memmove(buf, chunk, len(chunk))
        return len(chunk)

    def _release(self, path: bytes, fi_p: Any) -> int:
        return 0

    def _statfs(self, path: bytes, stv_p: Any) -> int:
        ctypes.memset(stv_p, 0, ctypes.sizeof(stv_p.contents))
        stv = stv_p.contents
        stv.f_bsize = stv.f_frsize = 4096
        stv.f_namemax = 255
        stv.f_flag = os.ST_RDONLY | os.ST_NOSUID
        return 0

    def _refuse(self, *args: Any) -> int:
        return -errno.EROFS


def _check_notify(rc: int, what: str) -> None:
    """0 or -ENOENT (the kernel holds nothing of it) is fine; anything else is a fault."""
    if rc not in (0, -errno.ENOENT):
        raise LazyViewError(f"could not invalidate {what!r} in the lazy view ({os.strerror(-rc)})")


_EMPTY = DictFiles("isg-lazyview:empty", {})


# --- the public handle ------------------------------------------------------------------------


class LazyView:
    """A mounted read-only view; :meth:`show` a source, bind :attr:`mountpoint`, :meth:`close`.

    ``invalidate=False`` keeps the kernel's caches of an old source after a swap (tests use it
    to show that the invalidation is needed; never in production).
    """

    def __init__(self, *, invalidate: bool = True) -> None:
        self._server = _Server(invalidate)
        try:
            self._server.mount()
        except BaseException:
            self._server._close_clock()
            raise
        self._finalizer = weakref.finalize(self, self._server.close)

    @property
    def mountpoint(self) -> str:
        return self._server.mountpoint

    @property
    def alive(self) -> bool:
        return self._server.alive

    @property
    def key(self) -> str:
        """The key of the source shown."""
        return self._server.gen.key

    @property
    def generation(self) -> int:
        return self._server.gen.number

    @property
    def clock_fd(self) -> int:
        """The read end of the clock-credit pipe, for the sandbox worker (-1 once closed)."""
        return self._server.clock_r

    @property
    def requests(self) -> int:
        """FUSE requests served so far (a measurement)."""
        return self._server.requests

    @property
    def faults(self) -> int:
        """Requests whose handler raised unexpectedly (answered EIO)."""
        return self._server.faults

    def show(self, source: FileSource) -> bool:
        """Serve ``source`` (a new generation, the old one invalidated); False when its key is
        already shown. Raises :class:`LazyViewError` when the view is closed or broken."""
        return self._server.show(source)

    def take_opened(self) -> tuple[str, ...]:
        """The files opened since the last call (sorted, at most :data:`MAX_OPENED`), and reset."""
        return self._server.take_opened()

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> LazyView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LazyView({self.mountpoint!r}, {self.key!r}, generation {self.generation})"


# --- availability and housekeeping ------------------------------------------------------------

_PROBE: dict[str, str | None] = {}
_PROBE_LOCK = threading.Lock()


def lazy_view_problem() -> str | None:
    """None when a lazy view can be mounted and serves a file here, else why not (probed once
    per process: /dev/fuse, mfusepy, libfuse 3, a real mount and read)."""
    with _PROBE_LOCK:
        if "result" not in _PROBE:
            _PROBE["result"] = _probe()
        return _PROBE["result"]


def _probe() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (the kernel's FUSE device; load the fuse module or pass --device)"
    try:
        _binding()
        with LazyView() as view:
            view.show(DictFiles("isg-lazyview:probe", {"probe/ok.txt": b"ok\n"}))
            with open(os.path.join(view.mountpoint, "probe", "ok.txt"), "rb") as fh:
                data = fh.read()
        if data != b"ok\n":
            return f"the probe mount served {data!r} instead of b'ok\\n'"
    except OSError as exc:
        return str(exc) if isinstance(exc, LazyViewError) else f"probe failed: {exc!r}"
    return None


def live_mounts(pid: int | None = None) -> list[str]:
    """Mount points of lazy views in this mount namespace: those served by process ``pid``, or
    every process's (dead ones included) when None."""
    wanted = None if pid is None else f"{FSNAME}:{pid}"
    return [mp for mp, source in _lazy_mounts() if wanted is None or source == wanted]


def _lazy_mounts() -> list[tuple[str, str]]:
    out = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) >= 5 and len(rest) >= 2 and rest[0] == FSTYPE:
            mountpoint = fields[4].replace("\\040", " ").replace("\\011", "\t")
            mountpoint = mountpoint.replace("\\012", "\n").replace("\\134", "\\")
            out.append((mountpoint, rest[1]))
    return out


_SWEPT: set[int] = set()


def _sweep_stale_mounts() -> None:
    """Unmount (lazily) and remove lazy views whose serving process is gone (once per process)."""
    if os.getpid() in _SWEPT:
        return
    _SWEPT.add(os.getpid())
    for mountpoint, source in _lazy_mounts():
        name, _, pid_text = source.partition(":")
        if name != FSNAME or not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        if not os.path.basename(mountpoint).startswith(MOUNT_PREFIX):
            continue
        if _umount(mountpoint):
            with contextlib.suppress(OSError):
                os.rmdir(mountpoint)
            log.info("lazy view: removed a stale mount of dead process %s at %s", pid_text,
                     mountpoint)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _umount(mountpoint: str) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.umount2(mountpoint.encode(), MNT_DETACH) == 0:
        return True
    import shutil
    import subprocess

    exe = shutil.which("fusermount3")
    if exe is None:
        return False
    proc = subprocess.run([exe, "-u", "-z", mountpoint], capture_output=True, check=False)
    return proc.returncode == 0
