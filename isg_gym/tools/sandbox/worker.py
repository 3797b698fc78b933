"""Sandbox worker: a standalone script that runs untrusted Python cells in forked children.

Started by exec (``python -I -S worker.py CONFIG_JSON``), normally inside bubblewrap. It never
imports ``isg_gym``: its memory holds no generator, seed or answer. It pre-imports numpy, pandas,
scipy and openpyxl once, then forks one child per request. Each child starts a new session,
applies rlimits, drops capabilities, sets ``PR_SET_NO_NEW_PRIVS`` and installs a seccomp filter
before it runs the cell. The worker enforces the wall-clock limit (it kills the child's process
group) and caps the output.

Protocol on the inherited stdin/stdout pipes: each message is a 4-byte big-endian length followed
by that many bytes of UTF-8 JSON. Requests are ``{"code": str}`` (or ``{"op": "ping"}``); the
worker answers ``{"stdout", "stderr", "value", "error", "timed_out", "killed", "duration_s"}``.
The first message the worker sends is ``{"ready": true, ...}``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import errno
import json
import linecache
import os
import resource
import selectors
import shutil
import signal
import struct
import sys
import time
import traceback
from typing import Any

CELL = "<cell>"
FLOOD_FACTOR = 50  # kill the child once a stream exceeds this many times the output cap
RESULT_FD = 3
MAX_TRACKED_FILES = 1000  # repository files a cell opened, reported back (for evaluation)

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
    allowed = [0, own_pid, -own_pid]  # 0 / -pid: own process group (the child is a leader)
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


def child_main(
    code: str, cfg: dict[str, Any], fds: tuple[int, int, int], scratch: str, baseline_as: int
) -> None:
    """Runs in the forked child; never returns."""
    out_w, err_w, res_w = fds
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.dup2(res_w, RESULT_FD)
        os.closerange(RESULT_FD + 1, 65536)  # protocol pipes, log files, everything else
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
        os.chdir(cfg["data_dir"])
        os.environ.clear()
        os.environ.update(cfg["env"])
        os.environ["TMPDIR"] = scratch
        os.environ["HOME"] = scratch
        import tempfile

        tempfile.tempdir = scratch
        if os.getuid() == 0 or os.geteuid() == 0:
            drop_capabilities()
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
        os._exit(0)
    except BaseException:
        try:
            os.write(2, traceback.format_exc().encode()[-2000:])
        finally:
            os._exit(70)


# --- the worker ----------------------------------------------------------------------------


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


def wipe(directory: str) -> None:
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _capped(data: bytearray, total: int, cap_chars: int) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(text) > cap_chars or total > len(data):
        return text[:cap_chars] + f"\n[output truncated: {total} bytes in all]\n"
    return text


def run_call(code: str, cfg: dict[str, Any], scratch: str, baseline_as: int) -> dict[str, Any]:
    """Fork one child for ``code``, supervise it, and return the response message."""
    limits = cfg["limits"]
    cap = int(limits["output_chars"])
    keep = cap * 4 + 16
    flood = max(cap * FLOOD_FACTOR, 1 << 20)
    wipe(scratch)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        child_main(code, cfg, (out_w, err_w, res_w), scratch, baseline_as)
    for fd in (out_w, err_w, res_w):
        os.close(fd)
    deadline = start + float(limits["wall_seconds"])
    bufs = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray()}
    totals = dict.fromkeys(bufs, 0)
    sel = selectors.DefaultSelector()
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    timed_out = flooded = False
    status = None
    while sel.get_map():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for key, _ in sel.select(remaining):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                continue
            totals[key.fd] += len(chunk)
            buf = bufs[key.fd]
            if key.fd == res_r or len(buf) < keep:
                buf += chunk if key.fd == res_r else chunk[: keep - len(buf)]
            if key.fd != res_r and totals[key.fd] > flood:
                flooded = True
        if flooded:
            break
    while status is None and not (timed_out or flooded):
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
        elif time.monotonic() >= deadline:
            timed_out = True
        else:
            time.sleep(0.002)
    if status is None:
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    duration = time.monotonic() - start
    sel.close()
    for fd in bufs:
        os.close(fd)
    wipe(scratch)
    result: dict[str, Any] = {"value": None, "error": None}
    if bufs[res_r]:
        try:
            result = json.loads(bytes(bufs[res_r]))
        except ValueError:
            result = {"value": None, "error": "sandbox: malformed result"}
    killed = os.WIFSIGNALED(status)
    if timed_out:
        result["error"] = f"TimeoutError: wall-clock limit of {limits['wall_seconds']} s exceeded"
    elif flooded:
        result["error"] = f"OutputLimitExceeded: more than {flood} bytes of output"
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
        "value": result.get("value"),
        "error": result.get("error"),
        "files_read": _str_list(result.get("files_read")),
        "timed_out": timed_out,
        "killed": killed or timed_out or flooded,
        "duration_s": duration,
    }


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v for v in value[:MAX_TRACKED_FILES] if isinstance(v, str)]


def _probe_seccomp() -> str | None:
    """Fork a throwaway child that installs the filter and tries execve; None if it works."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        msg = b""
        try:
            install_seccomp()
            try:
                os.execv("/bin/true", ["true"])
            except OSError as exc:
                if exc.errno != errno.EPERM:
                    msg = f"execve gave {exc!r}".encode()
            else:  # pragma: no cover
                msg = b"execve was not blocked"
        except BaseException as exc:
            msg = repr(exc).encode() or b"error"
        os.write(w, msg or b"ok")
        os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 4096):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return None if out == b"ok" else out.decode(errors="replace") or "probe died"


def main() -> None:
    cfg = json.loads(sys.argv[1])
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints from libraries go to the worker log
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if cfg.get("die_with_parent"):
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    sys.path[:0] = [p for p in cfg["sys_path"] if p not in sys.path]
    sys.meta_path.insert(0, _Blocker())  # type: ignore[arg-type]
    os.environ.clear()
    os.environ.update(cfg["env"])
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
    # --- end landlock ---
    import io

    import numpy as np
    import openpyxl  # noqa: F401
    import pandas as pd
    import scipy
    import scipy.stats  # noqa: F401

    pd.read_csv(io.StringIO("a,b\n1,2\n"))["a"].mean()  # warm lazy imports
    np.linalg.norm(np.ones(3))
    _prctl(PR_SET_DUMPABLE, 0)  # siblings cannot open our /proc/<pid>/mem or ptrace us
    scratch = cfg["scratch"]
    os.makedirs(scratch, exist_ok=True)
    seccomp_problem = _probe_seccomp() if cfg["seccomp"] else "disabled by configuration"
    if seccomp_problem and cfg["seccomp"]:
        cfg["seccomp"] = False
    baseline_as = _vm_size()
    send(
        proto_out,
        {
            "ready": True,
            "seccomp": seccomp_problem is None,
            "seccomp_problem": seccomp_problem,
            "baseline_mb": baseline_as >> 20,
            "pid": os.getpid(),
            "landlock": cfg.get("landlock_report"),  # backend "landlock": what confine() did
        },
    )
    while True:
        try:
            request = recv(proto_in)
        except EOFError:
            break
        if request.get("op") == "ping":
            send(proto_out, {"pong": True})
            continue
        try:
            response = run_call(str(request["code"]), cfg, scratch, baseline_as)
        except Exception as exc:  # a worker-side failure, never user code
            response = {
                "stdout": "",
                "stderr": "",
                "value": None,
                "killed": False,
                "error": f"sandbox: worker error {exc!r}",
                "timed_out": False,
                "duration_s": 0.0,
            }
        send(proto_out, response)


if __name__ == "__main__":
    main()
