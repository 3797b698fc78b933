"""Worker-side confinement for the ``"landlock"`` sandbox backend (stdlib and ctypes only).

The sandbox worker runs as ``python -I -S worker.py`` and never imports ``isg_gym``; it loads
this file by path and calls :func:`confine` before it imports anything else. ``confine``:

1. where unprivileged user namespaces are allowed, moves the worker into new user, network, IPC,
   PID, UTS and mount namespaces (the worker becomes PID 1 of its namespace; the process that
   started it only waits), binds the repository view read-only at ``view_at``, mounts a
   size-capped tmpfs at ``/tmp`` as scratch, covers ``/proc`` and ``/dev/shm`` with empty
   read-only tmpfs, sets the host name to ``sandbox`` and drops every capability; where they
   are refused it goes on without (and says so in the returned report);
2. restricts the filesystem with Landlock (inherited by every child, irreversible) to the rules
   the host computed: read+execute the Python installation and system libraries, read-only the
   repository view, read-write the scratch directory, nothing else; with the highest ABI the
   kernel offers: ABI 2 ``REFER``, ABI 3 ``TRUNCATE``, ABI 4 all TCP bind/connect denied,
   ABI 5 ``IOCTL_DEV``, ABI 6 abstract-unix-socket and signal scoping. Older ABIs handle fewer
   rights (best effort), which the report lists.

Run as a script (``python -I -S landlock_rules.py probe``) it prints a JSON report of what this
kernel allows (ABI, whether a restriction really denies a read, user namespaces).
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import stat
import sys
from typing import Any

SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1 << 0
LANDLOCK_RULE_PATH_BENEATH = 1

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

FS_ABI1 = (1 << 13) - 1
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
ACCESS = {  # rule kinds the host asks for
    "rx": FS_EXECUTE | FS_READ_FILE | FS_READ_DIR,
    "ro": FS_READ_FILE | FS_READ_DIR,
    "list": FS_READ_DIR,
    "rw": (1 << 16) - 1,
    "dev": FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV,
}

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACES = {
    "user": CLONE_NEWUSER,
    "net": CLONE_NEWNET,
    "ipc": CLONE_NEWIPC,
    "pid": CLONE_NEWPID,
    "uts": CLONE_NEWUTS,
    "mount": CLONE_NEWNS,
}
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE = 1 << 14, 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    version = _LIBC.syscall(
        ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


def handled_rights(abi: int) -> tuple[int, int, int]:
    """(filesystem, network, scope) rights a ruleset handles under ``abi`` (best effort)."""
    fs = FS_ABI1
    if abi >= 2:
        fs |= FS_REFER
    if abi >= 3:
        fs |= FS_TRUNCATE
    if abi >= 5:
        fs |= FS_IOCTL_DEV
    net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return fs, net, scoped


def restrict(rules: list[tuple[str, str]], abi: int | None = None) -> dict[str, Any]:
    """Restrict the calling process (and its future children) to ``rules``: (path, kind) with
    kind in :data:`ACCESS`. Paths that do not exist are skipped. Returns a report."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not supported by this kernel")
    fs, net, scoped = handled_rights(abi)
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _check(
        _LIBC.syscall(
            ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET),
            ctypes.byref(attr),
            ctypes.c_size_t(size),
            ctypes.c_uint32(0),
        ),
        "landlock_create_ruleset",
    )
    added, skipped = 0, []
    try:
        for path, kind in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                skipped.append(path)
                continue
            try:
                allowed = ACCESS[kind] & fs
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    allowed &= FILE_RIGHTS
                if not allowed:
                    skipped.append(path)
                    continue
                rule = _PathBeneathAttr(allowed, fd)
                _check(
                    _LIBC.syscall(
                        ctypes.c_long(SYS_LANDLOCK_ADD_RULE),
                        ctypes.c_int(ruleset),
                        ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"landlock_add_rule({path})",
                )
                added += 1
            finally:
                os.close(fd)
        _check(_LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
        _check(
            _LIBC.syscall(
                ctypes.c_long(SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)
            ),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)
    return {
        "abi": abi,
        "rules": added,
        "skipped": skipped,
        "tcp_denied": bool(net),
        "scoped": bool(scoped),
        "refer": bool(fs & FS_REFER),
        "truncate": bool(fs & FS_TRUNCATE),
        "ioctl_dev": bool(fs & FS_IOCTL_DEV),
    }


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(
        _LIBC.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount({target})",
    )


def enter_namespaces() -> None:
    """Unshare every namespace in :data:`NAMESPACES` and fork: the calling process only waits
    for the new PID 1 and exits with its status; the new process returns. Raises OSError (and
    changes nothing) when the kernel refuses."""
    uid, gid = os.geteuid(), os.getegid()
    flags = 0
    for flag in NAMESPACES.values():
        flags |= flag
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    pid = os.fork()
    if pid:  # the launcher: hold nothing, wait, pass the status on
        os.closerange(0, 65536)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
    _check(_LIBC.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PDEATHSIG)")


def drop_capabilities() -> None:
    """Empty the effective, permitted and inheritable sets (held in the new user namespace)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()
    _check(_LIBC.capset(ctypes.byref(Header(0x20080522, 0)), data), "capset")


def confine(cfg: dict[str, Any]) -> dict[str, Any]:
    """Apply the backend's confinement to this (single-threaded) worker; see the module doc.

    ``cfg``: ``rules`` (list of [path, kind]), ``scratch`` (directory), ``scratch_mb`` (tmpfs
    size), ``namespaces`` (bool). Returns a JSON-able report; raises only when Landlock itself
    cannot be applied (the worker must then not serve calls)."""
    report: dict[str, Any] = {"namespaces": [], "namespaces_problem": None, "scratch_tmpfs": False}
    if cfg.get("namespaces", True):
        try:
            enter_namespaces()
            report["namespaces"] = sorted(NAMESPACES)
        except OSError as exc:
            report["namespaces_problem"] = str(exc)
    rules = [(str(p), str(k)) for p, k in cfg["rules"]]
    if report["namespaces"]:
        try:
            moved = private_paths(cfg)
            rules = [(moved.get(p, p), k) for p, k in rules]
            report["scratch_tmpfs"] = True
            if cover("/dev/shm"):
                rules.append(("/dev/shm", "ro"))  # listable and empty, as under bubblewrap
            cover("/proc")  # last: the maps above were written through it
            report["cfg"] = {"data_dir": moved.get(cfg["view"], cfg["view"]),
                             "scratch": moved[cfg["scratch"]]}  # fmt: skip
        except OSError as exc:
            report["namespaces_problem"] = f"private mounts: {exc}"
        try:
            name = b"sandbox"
            _check(_LIBC.sethostname(name, ctypes.c_size_t(len(name))), "sethostname")
        except OSError as exc:  # pragma: no cover
            report["namespaces_problem"] = f"hostname: {exc}"
        drop_capabilities()
    report.update(restrict(rules))
    return report


def private_paths(cfg: dict[str, Any]) -> dict[str, str]:
    """In the worker's own mount namespace: the repository view bound read-only at
    ``cfg["view_at"]`` (an existing empty host directory such as ``/mnt``, hidden by the bind)
    and a size-capped tmpfs at ``/tmp`` as scratch (hiding host ``/tmp``). Returns the host
    paths that moved: {host view: view_at, host scratch: "/tmp"}."""
    view, scratch, view_at = cfg["view"], cfg["scratch"], cfg.get("view_at")
    size = int(cfg.get("scratch_mb", 64))
    tmpfs = f"size={size}m,mode=1777"
    _mount("none", "/", None, MS_REC | MS_PRIVATE, None)
    if not view_at:  # no place for the view: tmpfs on the host scratch path, nothing moves
        _mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
        return {scratch: scratch}
    fd = os.open(view, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # before /tmp hides it
    try:
        _mount(f"/proc/self/fd/{fd}", view_at, None, MS_BIND | MS_REC, None)
    finally:
        os.close(fd)
    _mount("none", view_at, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmpfs)
    return {view: view_at, scratch: "/tmp"}


def cover(path: str) -> bool:
    """Hide ``path`` (the host's ``/dev/shm``, ``/proc``) under an empty read-only tmpfs in the
    worker's mount namespace: not even ``stat`` sees host processes or shared memory."""
    if not os.path.isdir(path):
        return False
    flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    _mount("tmpfs", path, "tmpfs", flags, "size=4k,nr_inodes=1,mode=555")
    return True


def probe() -> dict[str, Any]:
    """What this kernel allows, each test in a throwaway child (nothing changes here)."""
    out: dict[str, Any] = {"abi": abi_version(), "restrict": None, "userns": None}

    def in_child(fn: Any) -> str | None:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                msg = fn() or "ok"
            except BaseException as exc:
                msg = str(exc) or repr(exc)
            os.write(w, msg.encode()[:2000])
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 4096):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        text = data.decode(errors="replace") or "probe child died"
        return None if text == "ok" else text

    def try_restrict() -> str | None:
        restrict([("/proc", "list")], out["abi"])  # only /proc listable: everything else denied
        try:
            with open(sys.executable, "rb"):
                return "a read outside the rules was not denied"
        except PermissionError:
            return None

    def try_userns() -> str | None:
        enter_namespaces()  # the launcher half exits with the new PID 1's status
        return None

    out["restrict"] = in_child(try_restrict) if out["abi"] >= 1 else "Landlock is not supported"
    out["userns"] = in_child(try_userns)
    return out


if __name__ == "__main__":
    if sys.argv[1:] != ["probe"]:
        sys.exit("usage: landlock_rules.py probe")
    print(json.dumps(probe()))
