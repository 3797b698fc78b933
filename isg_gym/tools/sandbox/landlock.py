"""Backend ``"landlock"``: a root-free sandbox for machines without a usable bubblewrap.

The worker (the same ``worker.py``, started as ``python -I -S``) loads
:mod:`~isg_gym.tools.sandbox.landlock_rules` by path and, before it imports anything, confines
itself and every child it will fork:

- Landlock (Linux >= 5.13; the highest ABI the kernel offers) limits the filesystem to
  read+execute of the Python installation (prefixes, stdlib, the site directories in use),
  ``/usr``, ``/lib*``, ``/etc/ld.so.cache`` and ``/etc/localtime``; read of ``/dev/null``,
  ``/dev/zero`` and ``/dev/(u)random``; read-only of the repository view (the working
  directory); read-write of a per-worker scratch directory (``TMPDIR`` and ``HOME``). Nothing
  else can be opened: not ``/home``, ``/root``, ``/proc``, ``/sys``, host ``/tmp`` or the
  ``isg_gym`` checkout (which is carved out of every grant, as are ``isg_gym`` entries of the
  site directories). ABI 4 denies every TCP bind and connect; ABI 6 scopes abstract unix
  sockets and signals to the sandbox.
- Where unprivileged user namespaces are allowed: new user, network, IPC, PID, UTS and mount
  namespaces (no network at all, no host PIDs, no capabilities); in its mount namespace the
  worker sees the repository view read-only at ``/mnt`` (the working directory, like bwrap's
  ``/data``), a size-capped tmpfs at ``/tmp`` as scratch, and empty read-only ``/proc`` and
  ``/dev/shm``. Where they are refused the worker still runs (Landlock, seccomp, rlimits) at
  the host paths of the view and of its scratch (``TMPDIR``), with ``stat`` of host paths still
  possible (Landlock controls opening, not looking up), and
  :meth:`LandlockSandbox.description` says what is missing.
- The children get the worker's usual rlimits and seccomp filter. Landlock forbids mounts, so
  there are no per-call namespaces: the pid counter grows across calls of one worker.
- When the env runs as root the worker is uid 0 mapped to host uid 0 in its user namespace,
  with every capability dropped (Landlock confines root too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from isg_gym.tools.sandbox import (
    _CHILD_ENV,
    LocalSandbox,
    SandboxLimits,
    SandboxUnavailable,
    _python,
    _site_paths,
    register_backend,
)

__all__ = ["RULES_MODULE", "LandlockSandbox", "landlock_available", "landlock_probe", "rules_for"]

RULES_MODULE = Path(__file__).with_name("landlock_rules.py")
SYSTEM_RX = ("/usr", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/mime.types")  # mime: openpyxl
DEVICES = (("/dev/null", "dev"), ("/dev/zero", "ro"), ("/dev/urandom", "ro"), ("/dev/random", "ro"))
VIEW_AT = "/mnt"  # where the worker's mount namespace shows the repository (as bwrap's /data)
_PROBE: dict[str, dict[str, Any]] = {}


def landlock_probe() -> dict[str, Any]:
    """What this kernel allows: ``abi`` (0: none), ``restrict`` (None when a restriction really
    denies a read, else why not), ``userns`` (None when new user/net/ipc/pid namespaces can be
    made, else why not). Run once in a throwaway ``python -I -S`` process and cached."""
    if "result" not in _PROBE:
        cmd = [_python(), "-I", "-S", str(RULES_MODULE), "probe"]
        try:
            proc = subprocess.run(
                cmd, capture_output=True, timeout=30, check=False, env=dict(_CHILD_ENV), cwd="/"
            )
            result = json.loads(proc.stdout)
        except (OSError, subprocess.TimeoutExpired, ValueError) as exc:
            result = {"abi": 0, "restrict": f"probe failed: {exc!r}", "userns": "not probed"}
        _PROBE["result"] = result
    return _PROBE["result"]


def landlock_available() -> str | None:
    """None when the Landlock backend can run here, else the reason it cannot (cached)."""
    probe = landlock_probe()
    if int(probe.get("abi") or 0) < 1:
        return "the kernel has no Landlock (needs Linux >= 5.13 with Landlock enabled)"
    if probe.get("restrict"):
        return f"Landlock is present (ABI {probe['abi']}) but refused: {probe['restrict']}"
    return None


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _excluded() -> list[str]:
    """Paths no grant may cover: the isg_gym checkout (or installed package) and the site
    directories' isg_gym entries (editable-install hooks, metadata)."""
    package = Path(__file__).resolve().parents[2]  # .../isg_gym
    root = package.parent
    out = [str(root if (root / "pyproject.toml").exists() else package)]
    for site in _site_paths():
        for pattern in ("isg_gym*", "__editable__*isg_gym*"):
            out += [os.path.realpath(p) for p in Path(site).glob(pattern)]
    return out


def _grant(path: str, kind: str, excluded: list[str], depth: int = 0) -> list[tuple[str, str]]:
    """Rules giving ``kind`` on ``path`` minus the excluded paths (whose ancestors are only
    listable and whose siblings get ``kind`` one by one)."""
    real = os.path.realpath(path)
    if not os.path.exists(real) or any(_under(real, e) for e in excluded):
        return []
    if not any(_under(e, real) for e in excluded):
        return [(real, kind)]
    if depth > 12:  # pragma: no cover - pathological nesting: grant nothing rather than too much
        return []
    rules = [(real, "list")]
    for entry in os.scandir(real):
        if not entry.is_symlink():  # a link's target is granted (or not) as its own entry
            rules += _grant(entry.path, kind, excluded, depth + 1)
    return rules


def rules_for(view: str, scratch: str) -> list[tuple[str, str]]:
    """The Landlock rules of a worker: (path, kind) pairs for ``landlock_rules.restrict``."""
    excluded = _excluded()
    installs = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.dirname(_python()))}
    roots = [*SYSTEM_RX, *sorted(installs), *_site_paths()]
    rules: list[tuple[str, str]] = []
    for root in roots:
        rules += _grant(root, "rx", excluded)
    rules += [(p, "ro") for p in SYSTEM_FILES if os.path.exists(p)]
    rules += [(p, kind) for p, kind in DEVICES if os.path.exists(p)]
    rules += [(view, "ro"), (scratch, "rw")]
    seen: set[tuple[str, str]] = set()
    return [r for r in rules if not (r in seen or seen.add(r))]


class LandlockSandbox(LocalSandbox):
    """Backend ``"landlock"`` (see the module docs)."""

    backend = "landlock"
    copy_view = False  # hard links are safe: the view is read-only under Landlock
    warn_unisolated = False

    def __init__(
        self,
        limits: SandboxLimits | None = None,
        *,
        seccomp: bool = True,
        namespaces: bool = True,
        files: str | None = None,
    ) -> None:
        reason = landlock_available()
        if reason is not None:
            raise SandboxUnavailable(reason)
        super().__init__(limits, seccomp=seccomp, files=files)
        self.namespaces = namespaces

    def _config(self, files_dir: str) -> dict[str, Any]:
        config = super()._config(files_dir)
        scratch = config["scratch"]
        # Landlock forbids mounting, so no per-call mount namespaces: the worker-wide ones
        # (landlock_rules.confine) and the supervisor's per-call wipe of scratch instead.
        config["call_namespaces"] = False
        config["landlock"] = {
            "module": str(RULES_MODULE),
            "rules": rules_for(files_dir, scratch),
            "scratch": scratch,
            "view": files_dir,
            "view_at": VIEW_AT if os.path.isdir(VIEW_AT) and not os.path.islink(VIEW_AT) else None,
            "scratch_mb": max(4 * self.limits.file_size_mb, 64),
            "namespaces": self.namespaces,
        }
        return config

    def description(self) -> str:
        """What confines this backend's code here (the running worker's report when started)."""
        report = self.worker_info.get("landlock") if self.worker_info else None
        probe = landlock_probe()
        if report:
            abi = report.get("abi")
            spaces = report.get("namespaces") or []
            problem = report.get("namespaces_problem")
        else:
            abi = probe.get("abi")
            spaces = [] if probe.get("userns") else ["user", "net", "ipc", "pid", "uts", "mount"]
            problem = probe.get("userns")
        if not self.namespaces:
            spaces, problem = [], "disabled by configuration"
        parts = [f"Landlock ABI {abi} (filesystem" + (", TCP denied" if (abi or 0) >= 4 else "")]
        parts[0] += ", signal/abstract-socket scoping)" if (abi or 0) >= 6 else ")"
        parts.append("seccomp" if self.seccomp else "NO seccomp")
        parts.append("rlimits")
        if spaces:
            parts.append("namespaces: " + ", ".join(spaces))
        if problem:
            parts.append(
                f"namespaces refused ({problem}): network, IPC and PIDs are shared with the "
                "host (seccomp still blocks sockets), scratch is not size-capped"
            )
        return "landlock: " + "; ".join(parts)


register_backend("landlock", LandlockSandbox)
