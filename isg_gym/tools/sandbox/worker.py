"""Sandbox worker: a standalone script that runs untrusted Python cells in forked children.

Started by exec (``python -I -S worker.py CONFIG_JSON``), normally inside bubblewrap. It never
imports ``isg_gym``: its memory holds no generator, seed or answer. Four kinds of process:

- the *supervisor* (this script's first process) talks to the parent over stdin/stdout. It holds
  every request and reply, so it is never the ancestor of a call's child: right at start-up,
  before it reads anything, it forks
- the *zygote*, which pre-imports the libraries (``preload`` in the config; numpy, pandas,
  openpyxl and scipy.stats by default; the packages named in ``without``, pyarrow by default,
  cannot be imported), freezes what they made out of the garbage collector's reach (a child's
  collections never touch it) and then only ever receives four pipe descriptors per call over a
  socket (never code, never output). For each call it forks, ahead of the call (when it hands
  the previous call to its leader, so that no fork is on a call's path)
- a *call leader*, which, when the config asks for ``call_namespaces``, enters a new user, mount,
  IPC and PID namespace (a fresh size-capped tmpfs at the scratch path and at ``/dev/shm``, no
  SysV/POSIX IPC objects of earlier calls, pid 1 of its own pid namespace) and forks
- the *child*, which waits for the call's four descriptors (passed on by the zygote and the
  leader when the call comes); then a new session, rlimits, no capabilities,
  ``PR_SET_NO_NEW_PRIVS`` and a seccomp filter, then it reads its own cell from a fresh pipe and
  runs it.

Every child is thus a copy of the zygote's image, which never held a request or a reply, and
serves exactly one call: a leader and child forked ahead hold nothing of any call until theirs
comes, and a leader forked ahead that is gone is replaced at the call. The leader reports the
child's pid and exit status to the supervisor, which enforces the wall-clock limit (SIGKILL),
caps what it reads from each pipe while reading (never buffering beyond the cap) and has an
address-space limit of its own. With call namespaces, a child that wrote its whole result and
closed its streams is answered for at once; its exit status (the teardown of a forked image
takes milliseconds) is awaited, under that call's deadline, before the next call starts. Without
call namespaces (no user namespaces; backends other than bubblewrap) the supervisor waits for
every exit and empties the scratch directory before and after each call with an iterative,
permission-fixing removal bounded in time; a wipe that does not finish marks the worker unclean
(``"clean": false`` in the reply) and the parent replaces it.

Protocol on the inherited stdin/stdout pipes: each message is a 4-byte big-endian length followed
by that many bytes of UTF-8 JSON. Requests are ``{"code": str}`` (or ``{"op": "ping"}``); the
worker answers ``{"stdout", "stderr", "value", "error", "timed_out", "killed", "duration_s",
"files_read", "clean", "worker_fault"}``. The first message the worker sends is
``{"ready": true, ...}``.

Clock credit: with ``clock_fd`` in the config (a pipe's read end, held by the supervisor only),
the parent reports time it spent for the running call outside the worker (generating the files
of a lazy repository view) as 4-byte big-endian milliseconds; the supervisor moves the call's
wall-clock deadline by that much, at most ``CLOCK_CREDIT_FACTOR`` times the limit in all.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import errno
import fcntl
import gc
import itertools
import json
import linecache
import os
import resource
import select
import selectors
import signal
import socket
import stat
import struct
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

CELL = "<cell>"
FLOOD_FACTOR = 50  # kill the child once a stream exceeds this many times the output cap
RESULT_FD = 3
MAX_TRACKED_FILES = 1000  # repository files a cell opened, reported back (for evaluation)
MAX_CODE_BYTES = 16 << 20  # a cell's source, read by the child from its own pipe
RESULT_EXTRA = 8 << 20  # result bytes allowed beyond 4 x output_chars (the files_read list)
SUPERVISOR_HEADROOM = 512 << 20  # address space the supervisor may add to its start-up size
SCRATCH_INODES = 20000  # files and directories a call's scratch tmpfs may hold
SHM_BYTES = 64 << 20  # size of a call's /dev/shm tmpfs
CLOCK_CREDIT_FACTOR = 4  # a call's wall limit grows by at most this many times itself
DEFAULT_PRELOAD = ("numpy", "pandas", "openpyxl", "scipy.stats")
# packages model code never imports (``without`` in the config): with pyarrow installed (an
# extra pulls it in) pandas would load it (about 50 MB) and back its strings with it, so the
# same cell would print differently on different installs
DEFAULT_WITHOUT = ("pyarrow",)

# --- seccomp -------------------------------------------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000

BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06

# x86_64 syscall numbers that are always denied with EPERM.
X86_64_DENY = {
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "execveat": 322,
    "ptrace": 101,
    "socket": 41,
    "socketpair": 53,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "unshare": 272,
    "setns": 308,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "finit_module": 313,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "quotactl": 179,
    "acct": 163,
    "settimeofday": 164,
    "clock_settime": 227,
    "adjtimex": 159,
    "clock_adjtime": 305,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "pidfd_open": 434,
    "pidfd_send_signal": 424,
    "pidfd_getfd": 438,
    "tkill": 200,
    "setpgid": 109,
    "setsid": 112,
    "setpriority": 141,
    "sched_setscheduler": 144,
    "sched_setparam": 142,
    "sched_setattr": 314,
    "ioprio_set": 251,
    "migrate_pages": 256,
    "move_pages": 279,
    "process_madvise": 440,
    "mknod": 133,
    "mknodat": 259,
    "fanotify_init": 300,
    "lookup_dcookie": 212,
    "personality": 135,
    "vhangup": 153,
    "move_mount": 429,
    "open_tree": 428,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "landlock_create_ruleset": 444,
    # host facts: uptime, load, the count of all host tasks, the kernel log, filesystem types
    "sysinfo": 99,
    "syslog": 103,
    "ustat": 136,
    "sysfs": 139,
    "_sysctl": 156,
    # SysV IPC and POSIX message queues: objects that would outlive the call and pin memory
    # no rlimit covers (also confined to a per-call IPC namespace where namespaces are available)
    "shmget": 29,
    "semget": 64,
    "msgget": 68,
    "mq_open": 240,
}
X86_64_CLONE = 56
X86_64_CLONE3 = 435  # answered with ENOSYS so glibc falls back to clone(2), which we can inspect
# syscalls whose first argument is a pid: allowed only for the child itself (or 0 = self)
X86_64_SELF_PID = {
    "kill": 62,
    "tgkill": 234,
    "rt_sigqueueinfo": 129,
    "rt_tgsigqueueinfo": 297,
    "prlimit64": 302,
    "sched_setaffinity": 203,
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k & 0xFFFFFFFF)


def build_filter(own_pid: int) -> bytes:
    """The x86_64 seccomp BPF program (list of ``struct sock_filter``) for a child."""
    eperm = SECCOMP_RET_ERRNO | errno.EPERM
    prog = [
        _insn(BPF_LD_W_ABS, 0, 0, 4),  # arch
        _insn(BPF_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
        _insn(BPF_LD_W_ABS, 0, 0, 0),  # nr
        _insn(BPF_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(BPF_RET_K, 0, 0, eperm),
        _insn(BPF_JEQ_K, 0, 1, X86_64_CLONE3),
        _insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
    ]
    for nr in sorted(X86_64_DENY.values()):
        prog += [_insn(BPF_JEQ_K, 0, 1, nr), _insn(BPF_RET_K, 0, 0, eperm)]
    # clone: only threads (CLONE_THREAD in the low word of the flags argument)
    prog += [
        _insn(BPF_JEQ_K, 0, 4, X86_64_CLONE),
        _insn(BPF_LD_W_ABS, 0, 0, 16),
        _insn(BPF_JSET_K, 1, 0, CLONE_THREAD),
        _insn(BPF_RET_K, 0, 0, eperm),
        _insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    # 0 / -pid: own process group (the child is a session leader); as pid 1 of its own pid
    # namespace, -1 would mean "every process": never allowed
    allowed = [0, own_pid] if own_pid == 1 else [0, own_pid, -own_pid]
    n = len(allowed)
    for nr in X86_64_SELF_PID.values():
        prog += [_insn(BPF_JEQ_K, 0, n + 3, nr), _insn(BPF_LD_W_ABS, 0, 0, 16)]
        prog += [_insn(BPF_JEQ_K, n - i, 0, v) for i, v in enumerate(allowed)]
        prog += [_insn(BPF_RET_K, 0, 0, eperm), _insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
        # the jeq above falls through to the next syscall check with nr still loaded
    prog.append(_insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.prctl.argtypes = [
    ctypes.c_int,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
    ctypes.c_ulong,
]


def _prctl(option: int, arg: int = 0) -> None:
    if _LIBC.prctl(option, arg, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")


def install_seccomp() -> None:
    """Set no_new_privs and install the filter in the calling (single-threaded) process."""
    if os.uname().machine != "x86_64":
        raise OSError(errno.ENOSYS, f"no seccomp filter for {os.uname().machine}")
    program = build_filter(os.getpid())
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buf))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if _LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp: {os.strerror(err)}")


def drop_capabilities() -> None:
    """Clear the effective, permitted and inheritable capability sets (a no-op when empty)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()  # two struct __user_cap_data_struct, zeroed
    hdr = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    if _LIBC.capset(ctypes.byref(hdr), data) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"capset: {os.strerror(err)}")


# --- framing -------------------------------------------------------------------------------


def read_exact(fd: int, n: int) -> bytes:
    chunks = []
    while n:
        chunk = os.read(fd, n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def send(fd: int, obj: Any) -> None:
    body = json.dumps(obj).encode()
    write_all(fd, struct.pack(">I", len(body)) + body)


def recv(fd: int) -> Any:
    (n,) = struct.unpack(">I", read_exact(fd, 4))
    return json.loads(read_exact(fd, n))


# --- the child -----------------------------------------------------------------------------


def _strip(te: traceback.TracebackException) -> None:
    """Drop the worker's own leading frames so the user sees their ``<cell>`` frames first."""
    stack = list(te.stack)
    first = next((i for i, f in enumerate(stack) if f.filename == CELL), len(stack))
    own = os.path.abspath(__file__)
    kept = [f for f in stack[first:] if os.path.abspath(f.filename) != own]
    te.stack = traceback.StackSummary.from_list(kept)
    for sub in (te.__cause__, te.__context__):
        if sub is not None:
            _strip(sub)


def run_cell(code: str, value_cap: int) -> dict[str, Any]:
    """Exec the cell's body, eval a trailing expression; return ``{"value", "error"}``."""
    try:
        tree = ast.parse(code, CELL, "exec")
    except (SyntaxError, ValueError) as exc:
        te = traceback.TracebackException.from_exception(exc)
        _strip(te)
        text = "".join(te.format())
        sys.stderr.write(text)
        return {"value": None, "error": text.strip().splitlines()[-1]}
    linecache.cache[CELL] = (len(code), None, code.splitlines(True), CELL)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    opened = track_opened_files(os.getcwd())
    try:
        exec(compile(tree, CELL, "exec"), namespace)
        value = None
        if last is not None:
            result = eval(compile(last, CELL, "eval"), namespace)
            if result is not None:
                value = repr(result)
                if len(value) > value_cap:
                    value = value[:value_cap] + f"... [repr truncated, {len(value)} chars]"
        return {"value": value, "error": None, "files_read": sorted(opened)}
    except BaseException as exc:
        te = traceback.TracebackException.from_exception(exc)
        _strip(te)
        sys.stderr.write("".join(te.format()))
        short = "".join(te.format_exception_only()).strip().splitlines()
        error = short[-1][:500] if short else type(exc).__name__
        return {"value": None, "error": error, "files_read": sorted(opened)}


def track_opened_files(root: str) -> set[str]:
    """Record the files under ``root`` that the cell opens, as paths relative to ``root``.

    An audit hook on the ``open`` event (builtins.open, io.open, and everything built on them:
    pandas, numpy, openpyxl, json). It is a measurement for evaluation (which files the agent
    actually read), not a security boundary. The set is capped at :data:`MAX_TRACKED_FILES`.
    """
    opened: set[str] = set()
    prefix = os.path.join(root, "")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event != "open" or len(opened) >= MAX_TRACKED_FILES:
            return
        try:
            path = args[0]
            if isinstance(path, int):
                return
            path = os.path.abspath(os.fsdecode(path))
            if path.startswith(prefix):
                opened.add(path[len(prefix) :])
        except Exception:
            return

    sys.addaudithook(hook)
    return opened


def _recv_call_fds(chan: socket.socket) -> list[int]:
    """The four descriptors of the call (code, stdout, stderr, result) from ``chan``; exits
    quietly when the sender is gone (the worker is shutting down) or sends anything else."""
    try:
        msg, fds, _, _ = socket.recv_fds(chan, 64, 8)
    except OSError:
        os._exit(0)
    if msg != b"run" or len(fds) != 4:
        os._exit(0)
    return fds


def child_main(cfg: dict[str, Any], chan: socket.socket, baseline_as: int) -> None:
    """Runs in the call's child (forked ahead by the call leader from the zygote's image): waits
    for the call's descriptors on ``chan``, reads its own cell from the first, never returns."""
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        fds = _recv_call_fds(chan)
        chan.close()
        # move the pipes out of the way first: any of them may sit on 0-4
        code_r, out_w, err_w, res_w = (fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in fds)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(res_w, RESULT_FD)
        os.dup2(code_r, RESULT_FD + 1)
        os.closerange(RESULT_FD + 2, 65536)  # the zygote socket, log files, everything else
        raw = bytearray()
        while chunk := os.read(RESULT_FD + 1, 1 << 16):
            raw += chunk
            if len(raw) > MAX_CODE_BYTES:
                raise ValueError(f"cell longer than {MAX_CODE_BYTES} bytes")
        os.close(RESULT_FD + 1)
        code = raw.decode("utf-8", "surrogatepass")
        del raw
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        limits = cfg["limits"]
        mb = 1024 * 1024
        cpu = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = baseline_as + int(limits["memory_mb"]) * mb
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        fsize = int(limits["file_size_mb"]) * mb
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        nofile = int(limits["open_files"])
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))  # not enforced for real uid 0
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        scratch = cfg["scratch"]
        os.chdir(cfg["data_dir"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        os.environ["TMPDIR"] = scratch
        os.environ["HOME"] = scratch
        import tempfile

        tempfile.tempdir = scratch
        drop_capabilities()  # also those of the call's own user namespace
        if cfg["seccomp"]:
            install_seccomp()
        text = {"buffering": 1, "encoding": "utf-8", "errors": "backslashreplace"}
        sys.stdout = open(1, "w", closefd=False, **text)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False, **text)  # noqa: SIM115
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.argv = [""]
        result = run_cell(code, int(limits["output_chars"]))
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        write_all(RESULT_FD, json.dumps(result).encode())
        for fd in (1, 2, RESULT_FD):  # the supervisor need not wait for this image's teardown
            with contextlib.suppress(OSError):
                os.close(fd)
        os._exit(0)
    except BaseException:
        try:
            os.write(2, traceback.format_exc().encode()[-2000:])
        finally:
            os._exit(70)


# --- per-call namespaces (the call leader) -------------------------------------------------

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REC = 0x4000
MS_PRIVATE = 0x40000
_LIBC.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]  # fmt: skip


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    if _LIBC.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def scratch_bytes(limits: dict[str, Any]) -> int:
    """Size cap of a call's scratch tmpfs."""
    return max(4 * int(limits["file_size_mb"]), 64) * 1024 * 1024


def enter_call_namespaces(cfg: dict[str, Any]) -> None:
    """New user, mount, IPC and PID namespaces for one call (children of the caller start in the
    PID namespace), with a fresh tmpfs at the scratch path and at ``/dev/shm`` and the proc
    mount (needed only to write the user namespace's maps) hidden. The mounts copied into the
    new, less privileged mount namespace are locked: read-only stays read-only."""
    uid, gid = os.getuid(), os.getgid()
    if _LIBC.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWPID) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    proc = cfg["proc_dir"]
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):  # fmt: skip
        with open(f"{proc}/self/{name}", "w") as fh:
            fh.write(text)
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "")
    flags = MS_NOSUID | MS_NODEV
    size = scratch_bytes(cfg["limits"])
    tmp = f"size={size},nr_inodes={SCRATCH_INODES},mode=1777"
    _mount("tmpfs", cfg["scratch"], "tmpfs", flags, tmp)
    if os.path.isdir("/dev/shm"):
        shm = f"size={SHM_BYTES},nr_inodes=256,mode=1777"
        _mount("tmpfs", "/dev/shm", "tmpfs", flags | MS_NOEXEC, shm)
    _mount("tmpfs", proc, "tmpfs", MS_RDONLY | flags | MS_NOEXEC, "size=4k,mode=0555")


def call_leader(
    cfg: dict[str, Any], sock: socket.socket, go: socket.socket, baseline_as: int
) -> None:
    """Forked by the zygote ahead of one call: enter the call's namespaces and fork the child;
    when the call's descriptors arrive on ``go``, hand them to the child, then report its pid
    and exit status to the supervisor over ``sock`` (a failure to prepare, only then); never
    returns."""
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        problem = None
        try:
            if cfg.get("call_namespaces"):
                enter_call_namespaces(cfg)
            to_child, chan = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            pid = os.fork()
            if pid == 0:
                go.close()
                to_child.close()
                child_main(cfg, chan, baseline_as)
            chan.close()
        except BaseException:
            problem = traceback.format_exc()[-1500:]
        fds = _recv_call_fds(go)
        with contextlib.suppress(OSError):
            go.send(b"taken")  # the zygote hands the call to another leader until it hears this
        go.close()
        if problem is not None:
            raise RuntimeError(f"the call could not be prepared: {problem}")
        try:
            socket.send_fds(to_child, [b"run"], fds, socket.MSG_NOSIGNAL)
        finally:
            for fd in fds:
                os.close(fd)
            to_child.close()
        sock.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"status": status}).encode())
        os._exit(0)
    except BaseException:
        with contextlib.suppress(BaseException):
            sock.send(json.dumps({"leader_error": traceback.format_exc()[-1500:]}).encode())
        os._exit(71)


# --- the zygote ----------------------------------------------------------------------------


class _Blocker:
    """Meta-path finder refusing the environment package (defence in depth for ``none``)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "isg_gym" or name.startswith("isg_gym."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def _vm_size() -> int:
    """Current address-space size, found without /proc: the lowest RLIMIT_AS that still lets
    a one-page mmap succeed (binary search; the soft limit is restored afterwards)."""
    import mmap

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    page = mmap.PAGESIZE
    lo, hi = 0, 1 << 46
    try:
        while hi - lo > 1 << 20:
            mid = (lo + hi) // 2
            resource.setrlimit(resource.RLIMIT_AS, (mid, hard))
            try:
                mmap.mmap(-1, page).close()
                hi = mid
            except OSError:
                lo = mid
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    return hi


def _probe_in_child(check: Callable[[], str | None]) -> str | None:
    """Run ``check`` in a throwaway forked child; None when it returns None, else what it
    returned or raised (``"probe died"`` when the child said nothing)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            msg = (check() or "ok").encode()
        except BaseException as exc:
            msg = repr(exc).encode() or b"error"
        os.write(w, msg[:2000])
        os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 4096):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return None if out == b"ok" else out.decode(errors="replace") or "probe died"


def _execve_blocked() -> str | None:
    install_seccomp()
    try:
        os.execv("/bin/true", ["true"])
    except OSError as exc:
        return None if exc.errno == errno.EPERM else f"execve gave {exc!r}"
    return "execve was not blocked"  # pragma: no cover


def _probe_seccomp() -> str | None:
    """A throwaway child installs the filter and tries execve; None if it is refused."""
    return _probe_in_child(_execve_blocked)


def _probe_call_namespaces(cfg: dict[str, Any]) -> str | None:
    """A throwaway leader enters the call namespaces; None if that works."""
    return _probe_in_child(lambda: enter_call_namespaces(cfg))


class WithoutPackages:
    """A meta-path finder that makes the named top-level packages (and their modules) fail to
    import, with a message that says why."""

    def __init__(self, names: list[str]) -> None:
        self.names = frozenset(names)

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        top = fullname.partition(".")[0]
        if top in self.names:
            why = " (pandas uses its own string storage)" if top == "pyarrow" else ""
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: the sandbox runs without {top}{why}",
                name=fullname,
            )


def preload(names: list[str], without: Sequence[str] = ()) -> None:
    """Make ``without`` unimportable, import the configured libraries and warm their lazy
    imports."""
    import io

    if without:
        sys.meta_path.insert(0, WithoutPackages(list(without)))
    for name in names:
        __import__(name)
    if "pandas" in sys.modules:
        pd = sys.modules["pandas"]
        pd.read_csv(io.StringIO("a,b\n1,2\n"))["a"].mean()
    if "numpy" in sys.modules:
        np = sys.modules["numpy"]
        np.linalg.norm(np.ones(3))


def freeze_image() -> int:
    """Move every object the imports made into the collector's permanent generation
    (``gc.freeze``); the number of objects frozen.

    A call's child is a fork of this image. A full collection in it (model code calling
    ``gc.collect()``, or enough allocations) would otherwise walk the ~500,000 objects of the
    preloaded libraries and write to each one's header: 50-90 ms, and a private copy of every
    page holding one (~30 MB per call). Frozen objects are never examined; the child's own
    objects are collected as usual."""
    gc.collect()  # what the imports left behind is freed, not frozen
    gc.freeze()
    return gc.get_freeze_count()


MADV_COLLAPSE = 25
_HUGE = 2 << 20


def collapse_to_huge_pages(proc_dir: str) -> int:
    """Back the zygote's anonymous memory (the heap the imports filled) with transparent huge
    pages where the kernel can (``MADV_COLLAPSE``, Linux 6.1+): every call forks this image
    twice, and a fork copies one page-table entry per 4 KiB page but one per 2 MiB huge page
    (a child's first write to a shared huge page still copies 4 KiB). Only mappings at least
    7/8 resident are collapsed (collapsing fills the rest: a sparse one is never touched).
    Best effort: returns the MiB collapsed, 0 where the maps cannot be read or the kernel
    refuses."""
    try:
        with open(f"{proc_dir}/self/smaps") as fh:
            text = fh.read()
        _LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        return collapse_mappings(text, _LIBC.madvise)
    except (OSError, ValueError, AttributeError):  # never a reason not to start
        return 0


def collapse_mappings(smaps: str, madvise: Callable[[int, int, int], int]) -> int:
    """``madvise(start, length, MADV_COLLAPSE)`` over the 2 MiB-aligned part of each writable
    anonymous mapping of ``smaps`` at least 7/8 resident; the MiB it accepted."""
    collapsed = 0
    for low, high, _name, rss in _anonymous_mappings(smaps):
        start, end = (low + _HUGE - 1) & ~(_HUGE - 1), high & ~(_HUGE - 1)
        if end - start < _HUGE or rss * 8 < (end - start) * 7:
            continue
        if madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += (end - start) >> 20
    return collapsed


def _anonymous_mappings(smaps: str) -> list[tuple[int, int, str, int]]:
    """(start, end, name, resident bytes) of the writable anonymous mappings in ``smaps``."""
    out: list[tuple[int, int, str, int]] = []
    current: list[Any] | None = None
    for line in smaps.splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping's header
            name = fields[5] if len(fields) > 5 else ""
            anonymous = fields[1].startswith("rw") and name in ("", "[heap]")
            low, high = (int(x, 16) for x in fields[0].split("-"))
            current = [low, high, name, 0] if anonymous else None
            if current is not None:
                out.append(current)  # type: ignore[arg-type]
        elif current is not None and fields[:1] == ["Rss:"]:
            current[3] = int(fields[1]) * 1024
    return [tuple(m) for m in out]  # type: ignore[misc]


def zygote_main(cfg: dict[str, Any], sock: socket.socket) -> None:
    """The clean image every call's child is forked from; never returns."""
    try:
        preload(list(cfg.get("preload", DEFAULT_PRELOAD)), cfg.get("without", DEFAULT_WITHOUT))
        frozen = freeze_image()
        huge_mb = collapse_to_huge_pages(cfg.get("proc_dir") or "/proc")
        _prctl(PR_SET_DUMPABLE, 0)  # siblings cannot open our /proc/<pid>/mem or ptrace us
        seccomp_problem = _probe_seccomp() if cfg["seccomp"] else "disabled by configuration"
        if seccomp_problem and cfg["seccomp"]:
            cfg["seccomp"] = False
        ns_problem = None
        if cfg.get("call_namespaces"):
            ns_problem = _probe_call_namespaces(cfg)
            if ns_problem:
                cfg["call_namespaces"] = False
        if not cfg.get("call_namespaces"):
            os.makedirs(cfg["scratch"], exist_ok=True)
        baseline_as = _vm_size()
        ready = {
            "ready": True,
            "seccomp": seccomp_problem is None,
            "seccomp_problem": seccomp_problem,
            "call_namespaces": bool(cfg.get("call_namespaces")),
            "call_namespaces_problem": ns_problem,
            "baseline_mb": baseline_as >> 20,
            "huge_pages_mb": huge_mb,
            "frozen_objects": frozen,
            "preload": sorted(cfg.get("preload", DEFAULT_PRELOAD)),
            "without": sorted(cfg.get("without", DEFAULT_WITHOUT)),
            "uid": os.getuid(),
        }
        sock.send(json.dumps(ready).encode())
    except BaseException:
        with contextlib.suppress(BaseException):
            sock.send(json.dumps({"ready": False, "error": traceback.format_exc()}).encode())
        os._exit(72)
    ahead = fork_ahead(cfg, sock, baseline_as)
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 64, 8)
        except OSError:
            os._exit(0)
        if not msg:
            os._exit(0)
        if msg != b"run" or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            continue
        try:
            if not hand_over(ahead, fds):  # the leader forked ahead is gone (killed)
                ahead = fork_ahead(cfg, sock, baseline_as)
                if not hand_over(ahead, fds):
                    with contextlib.suppress(OSError):
                        error = "no call leader could take the call"
                        sock.send(json.dumps({"leader_error": error}).encode())
        finally:
            for fd in fds:
                os.close(fd)
        ahead = fork_ahead(cfg, sock, baseline_as)  # while this call runs
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:  # leaders of finished calls
                pass


def fork_ahead(
    cfg: dict[str, Any], sock: socket.socket, baseline_as: int
) -> tuple[int, socket.socket]:
    """Fork the next call's leader (which forks its child) before the call comes: its pid and
    the socket that will carry the call's descriptors to it."""
    go, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        go.close()
        call_leader(cfg, sock, theirs, baseline_as)
    theirs.close()
    return pid, go


def hand_over(ahead: tuple[int, socket.socket], fds: list[int]) -> bool:
    """Pass the call's descriptors to the leader forked ahead; True once it says it took them
    (a leader that is gone, or silent for 30 s and then killed, took nothing)."""
    pid, go = ahead
    try:
        socket.send_fds(go, [b"run"], fds, socket.MSG_NOSIGNAL)
        go.settimeout(30.0)
        if go.recv(16) == b"taken":
            return True
    except OSError:
        pass
    finally:
        go.close()
    _kill(pid)
    return False


# --- the supervisor ------------------------------------------------------------------------


class WorkerFault(RuntimeError):
    """The worker's own machinery failed (never user code): the parent must replace it."""


def wipe(directory: str, budget_s: float = 5.0) -> bool:
    """Empty ``directory`` without recursion, following no links and fixing permissions as it
    goes (mode-000 directories, read-only files): one descriptor at a time, walking down into
    the first subdirectory and back up through ``..``, so a chain of any depth needs neither
    long paths nor many descriptors. Bounded by ``budget_s``; True when it is empty."""
    deadline = time.monotonic() + budget_s
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    names: list[str] = []  # the path from ``directory`` down to ``fd``
    try:
        while time.monotonic() < deadline:
            sub = None
            for name, is_dir in _entries(fd):
                if is_dir:
                    sub = sub or name
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
            if sub is not None:
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700, dir_fd=fd)
                try:
                    child = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError:
                    return False
                os.close(fd)
                fd = child
                names.append(sub)
                continue
            if _entries(fd, 1):
                continue  # more files than one batch (or some that would not go)
            if not names:
                return True
            parent = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(names.pop(), dir_fd=fd)
            except OSError:
                return False
        return False
    finally:
        os.close(fd)


def _entries(fd: int, limit: int = 4096) -> list[tuple[str, bool]]:
    os.lseek(fd, 0, os.SEEK_SET)
    with os.scandir(fd) as it:
        return [(e.name, e.is_dir(follow_symlinks=False)) for e in itertools.islice(it, limit)]


def _capped(data: bytearray, total: int, cap_chars: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > cap_chars or total > len(data):
        return text[:cap_chars] + f"\n[output truncated: {total} bytes in all]\n"
    return text


def _text(value: Any, cap: int) -> str | None:
    """A str that encodes to UTF-8 (lone surrogates escaped), at most ``cap`` characters."""
    if value is None:
        return None
    text = str(value)[: cap + 200]
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _recv_msg(sock: socket.socket, timeout: float) -> dict[str, Any]:
    """One JSON message from the zygote or a call leader."""
    ready, _, _ = select.select([sock], [], [], max(timeout, 0.0))
    if not ready:
        raise WorkerFault("no message from the zygote in time")
    data = sock.recv(1 << 16)
    if not data:
        raise WorkerFault("the zygote is gone")
    msg = json.loads(data)
    if not isinstance(msg, dict):
        raise WorkerFault("malformed message from the zygote")
    return msg


def _kill(pid: int) -> None:
    for kill in (os.kill, os.killpg):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


class _Credit:
    """Seconds the parent credits to the running call (see "Clock credit" in the module docs):
    what it reported since the last call is dropped, and the total is capped."""

    def __init__(self, fd: int | None, cap: float) -> None:
        self.fd = fd
        self.left = cap
        self.take()  # reports that arrived between calls belong to no call
        self.left = cap

    def take(self) -> float:
        """The credit reported since the last take (0 when none, or when the cap is spent)."""
        if self.fd is None:
            return 0.0
        total = 0
        while True:
            try:
                data = os.read(self.fd, 4096)  # whole records: each was one atomic 4-byte write
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.fd = None
                break
            if not data:
                self.fd = None  # the parent closed it
                break
            total += sum(struct.unpack(f">{len(data) // 4}I", data[: len(data) // 4 * 4]))
        seconds = min(total / 1000.0, self.left)
        self.left -= seconds
        return seconds


def _clock_fd(cfg: dict[str, Any]) -> int | None:
    """The credit pipe of the config, non-blocking; None when absent or not a pipe."""
    fd = cfg.get("clock_fd")
    if not isinstance(fd, int) or fd < 3:
        return None
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, False)
    except OSError:
        return None
    return fd


@dataclass
class _Exiting:
    """A call whose child delivered its whole result and closed its streams, replied to before
    its exit status came (tearing down a forked image takes milliseconds). The status is awaited,
    under the call's own deadline, before the next call starts."""

    pid: int
    deadline: float
    credit: _Credit


_exiting: list[_Exiting] = []  # at most one: the supervisor runs one call at a time


def _await_status(
    sock: socket.socket, pid: int, deadline: float, credit: _Credit
) -> tuple[int, bool]:
    """The call leader's report of its child's exit status, and whether the child had to be
    killed at ``deadline`` (moved by the clock credit) first."""
    timed_out = False
    while True:
        deadline += credit.take()
        remaining = deadline - time.monotonic()
        try:
            msg = _recv_msg(sock, remaining if remaining > 0 else 5.0)
        except WorkerFault:
            if remaining > 0:
                timed_out = True
                _kill(pid)
                continue
            raise
        if "status" not in msg:
            raise WorkerFault(f"unexpected message from the call leader: {str(msg)[:200]}")
        return int(msg["status"]), timed_out


def finish_previous(sock: socket.socket) -> None:
    """Wait for the exit of the previous call's child (see :class:`_Exiting`)."""
    while _exiting:
        call = _exiting.pop()
        _await_status(sock, call.pid, call.deadline, call.credit)


def run_call(code: str, cfg: dict[str, Any], sock: socket.socket) -> dict[str, Any]:
    """Have the zygote fork one child for ``code``, supervise it, and return the response."""
    finish_previous(sock)
    limits = cfg["limits"]
    cap = int(limits["output_chars"])
    keep = cap * 4 + 16
    flood = max(cap * FLOOD_FACTOR, 1 << 20)
    result_cap = 4 * cap + RESULT_EXTRA
    scratch = cfg["scratch"]
    per_call = bool(cfg.get("call_namespaces"))
    clean = per_call or wipe(scratch)
    pipes = [os.pipe() for _ in range(4)]
    (code_r, code_w), (out_r, out_w), (err_r, err_w), (res_r, res_w) = pipes
    start = time.monotonic()
    try:
        socket.send_fds(sock, [b"run"], [code_r, out_w, err_w, res_w])
    finally:
        for fd in (code_r, out_w, err_w, res_w):
            os.close(fd)
    readers = (out_r, err_r, res_r)
    try:
        first = _recv_msg(sock, 30.0)
        if "pid" not in first:
            raise WorkerFault(f"call leader failed: {str(first.get('leader_error'))[-300:]}")
        pid = int(first["pid"])
        wall = float(limits["wall_seconds"])
        deadline = start + wall
        credit = _Credit(cfg.get("clock_fd"), CLOCK_CREDIT_FACTOR * wall)
        bufs = {fd: bytearray() for fd in readers}
        totals = dict.fromkeys(readers, 0)
        pending = memoryview(code.encode("utf-8", "surrogatepass"))
        os.set_blocking(code_w, False)
        sel = selectors.DefaultSelector()
        for fd in readers:
            sel.register(fd, selectors.EVENT_READ)
        sel.register(code_w, selectors.EVENT_WRITE)
        clock = credit.fd  # registered while it is open, never counted as a stream
        if clock is not None:
            sel.register(clock, selectors.EVENT_READ)
        timed_out = flooded = oversized = False
        status: int | None = None
        try:
            while set(sel.get_map()) - {clock}:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(remaining):
                    if key.fd == clock:
                        deadline += credit.take()
                        if credit.fd is None:  # closed by the parent
                            sel.unregister(clock)
                            clock = None
                        continue
                    if key.fd == code_w:
                        try:
                            pending = pending[os.write(code_w, pending[: 1 << 16]) :]
                        except BlockingIOError:
                            continue
                        except OSError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(code_w)
                            os.close(code_w)
                            code_w = -1
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fd)
                        continue
                    totals[key.fd] += len(chunk)
                    buf = bufs[key.fd]
                    room = (result_cap if key.fd == res_r else keep) - len(buf)
                    if room > 0:
                        buf += chunk[:room]
                    if key.fd == res_r and totals[key.fd] > result_cap:
                        oversized = True
                    elif key.fd != res_r and totals[key.fd] > flood:
                        flooded = True
                if flooded or oversized:
                    break
                if code_w == -1 and not set(sel.get_map()) - {clock}:
                    break
        finally:
            sel.close()
            if code_w != -1:
                os.close(code_w)
        if timed_out or flooded or oversized:
            _kill(pid)
        elif per_call and _complete_result(bufs[res_r]):
            # every stream is closed and the result is whole: the child has nothing more to
            # say (its own scratch dies with its namespaces); its exit is awaited later
            _exiting.append(_Exiting(pid, deadline, credit))
            status = 0
        if status is None:  # wait for the exit status (kill at the deadline)
            status, late = _await_status(sock, pid, deadline, credit)
            timed_out = timed_out or late
    finally:
        for fd in readers:
            os.close(fd)
    duration = time.monotonic() - start
    if not per_call:
        clean = wipe(scratch) and clean
    result: dict[str, Any] = {"value": None, "error": None}
    if bufs[res_r] and not oversized:
        try:
            parsed = json.loads(bytes(bufs[res_r]))
            result = parsed if isinstance(parsed, dict) else result
        except ValueError:
            result = {"value": None, "error": "sandbox: malformed result"}
    killed = os.WIFSIGNALED(status)
    if timed_out:
        result["error"] = f"TimeoutError: wall-clock limit of {limits['wall_seconds']} s exceeded"
    elif flooded:
        result["error"] = f"OutputLimitExceeded: more than {flood} bytes of output"
    elif oversized:
        result["error"] = f"OutputLimitExceeded: result larger than {result_cap} bytes"
    elif killed:
        sig = os.WTERMSIG(status)
        reason = {
            signal.SIGXCPU: "CPU time limit exceeded",
            signal.SIGXFSZ: "file size limit exceeded",
            signal.SIGSYS: "forbidden system call",
        }.get(sig, "")
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        result["error"] = f"Killed: {name}" + (f" ({reason})" if reason else "")
    elif not bufs[res_r]:
        result["error"] = f"sandbox: cell exited without a result (status {status})"
    return {
        "stdout": _capped(bufs[out_r], totals[out_r], cap),
        "stderr": _capped(bufs[err_r], totals[err_r], cap),
        "value": _text(result.get("value"), cap),
        "error": _text(result.get("error"), 1000),
        "files_read": _str_list(result.get("files_read")),
        "timed_out": timed_out,
        "killed": killed or timed_out or flooded or oversized,
        "duration_s": duration,
        "clean": clean,
        "worker_fault": False,
    }


def _complete_result(data: bytearray) -> bool:
    """Whether ``data`` is a whole result as the child writes it (a JSON object)."""
    try:
        return isinstance(json.loads(bytes(data)), dict)
    except ValueError:
        return False


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    out = []
    for v in value[:MAX_TRACKED_FILES]:
        if isinstance(v, str) and len(v) <= 4096:
            out.append(v.encode("utf-8", "backslashreplace").decode("utf-8"))
    return out


def _limit_own_memory(headroom: int) -> int:
    """Cap the supervisor's address space at its current size plus ``headroom`` bytes."""
    limit = _vm_size() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return limit


def main() -> None:
    cfg = json.loads(sys.argv[1])
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints from libraries go to the worker log
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a dead child's pipe gives EPIPE, not death
    if cfg.get("die_with_parent"):
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    sys.path[:0] = [p for p in cfg["sys_path"] if p not in sys.path]
    sys.meta_path.insert(0, _Blocker())  # type: ignore[arg-type]
    os.environ.clear()
    os.environ.update(cfg["env"])
    # Restrictions every process of the worker must inherit go here, before the zygote forks.
    # --- landlock (backend "landlock") ---
    # Confine this worker and all its children before any import: namespaces where allowed,
    # then Landlock filesystem/network/scope rules (isg_gym/tools/sandbox/landlock_rules.py,
    # loaded by path: the worker never imports isg_gym).
    if cfg.get("landlock"):
        import importlib.util

        spec = importlib.util.spec_from_file_location("landlock_rules", cfg["landlock"]["module"])
        assert spec is not None and spec.loader is not None
        rules = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(rules)
        cfg["landlock_report"] = rules.confine(cfg["landlock"])
        cfg.update(cfg["landlock_report"].get("cfg") or {})  # the moved data_dir and scratch
    # --- end landlock ---
    cfg["clock_fd"] = _clock_fd(cfg)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    zygote = os.fork()
    if zygote == 0:  # before any request is read: the zygote's image never holds one
        os.close(proto_in)
        os.close(proto_out)
        if cfg["clock_fd"] is not None:
            os.close(cfg["clock_fd"])
            cfg["clock_fd"] = None
        ours.close()
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        zygote_main(cfg, theirs)
    theirs.close()
    _prctl(PR_SET_DUMPABLE, 0)
    try:
        info = _recv_msg(ours, 120.0)
    except (WorkerFault, ValueError) as exc:
        info = {"ready": False, "error": repr(exc)}
    if info.get("ready"):
        cfg["seccomp"] = bool(info.get("seccomp"))
        cfg["call_namespaces"] = bool(info.get("call_namespaces"))
        info["supervisor_as_limit_mb"] = _limit_own_memory(SUPERVISOR_HEADROOM) >> 20
        info["pid"] = os.getpid()
        info["landlock"] = cfg.get("landlock_report")  # backend "landlock": what confine() did
    send(proto_out, info)
    if not info.get("ready"):
        return
    while True:
        try:
            request = recv(proto_in)
        except EOFError:
            break
        if request.get("op") == "ping":
            send(proto_out, {"pong": True})
            continue
        try:
            response = run_call(str(request["code"]), cfg, ours)
        except Exception as exc:  # a worker-side failure, never user code
            response = {
                "stdout": "",
                "stderr": "",
                "value": None,
                "killed": False,
                "error": f"sandbox: worker error {exc!r}"[:1000],
                "timed_out": False,
                "duration_s": 0.0,
                "clean": False,
                "worker_fault": True,
            }
        send(proto_out, response)
        if response.get("worker_fault"):
            break  # the parent replaces a faulty worker; exiting makes sure of it


if __name__ == "__main__":
    main()
