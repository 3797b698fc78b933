"""``isg doctor``: diagnosis, self-test, exit status; Landlock when bubblewrap is off the PATH."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

import isg_gym.tools.sandbox as sandbox_pkg
from isg_gym.tools.sandbox import landlock as landlock_mod
from isg_gym.tools.sandbox.doctor import run_doctor

BWRAP = sandbox_pkg.bwrap_available()
LANDLOCK = landlock_mod.landlock_available()
CHECKS = 10


def doctor(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "isg_gym.cli", "doctor", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )


def _passes(out: str) -> int:
    return len(re.findall(r"^  PASS  ", out, flags=re.M))


@pytest.mark.skipif(BWRAP is not None, reason=f"bubblewrap cannot run here: {BWRAP}")
def test_doctor_picks_bubblewrap_and_all_checks_pass() -> None:
    proc = doctor()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  bubblewrap: usable (" in proc.stdout
    assert "  backend: bwrap (auto: bubblewrap works here)" in proc.stdout
    assert _passes(proc.stdout) == CHECKS and "FAIL" not in proc.stdout
    assert f"{CHECKS}/{CHECKS} checks passed" in proc.stdout
    assert re.search(r"^  PASS  a FileSource is served read-only \(", proc.stdout, flags=re.M)


@pytest.mark.skipif(LANDLOCK is not None, reason=f"Landlock cannot run here: {LANDLOCK}")
def test_doctor_without_bwrap_on_path_picks_landlock() -> None:
    proc = doctor(path="/nonexistent")  # shutil.which("bwrap") honours the patched PATH
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "  bubblewrap: not usable: bubblewrap (bwrap) is not installed" in proc.stdout
    assert "  backend: landlock (auto: bubblewrap is not usable, the kernel has Landlock)" in (
        proc.stdout
    )
    assert "self-test under landlock:" in proc.stdout
    assert _passes(proc.stdout) == CHECKS and "FAIL" not in proc.stdout
    assert "worker: landlock: Landlock ABI" in proc.stdout


def test_doctor_none_backend_fails_the_containment_checks() -> None:
    """The self-test can fail: without isolation the file checks do."""
    out = io.StringIO()
    with pytest.warns(RuntimeWarning, match="NOT a security boundary"):
        status = run_doctor("none", out=out)
    text = out.getvalue()
    assert status == 1, text
    assert "NO isolation" in text
    for name in ("read /etc/shadow", "read a host file outside the sandbox",
                 "write outside scratch", "read the isg_gym source"):  # fmt: skip
        assert re.search(rf"^  FAIL  {re.escape(name)}", text, flags=re.M), text
    assert re.search(r"^  PASS  repository readable", text, flags=re.M)
    assert "host canary" not in text  # FAIL lines say what leaked, never the content


def test_doctor_bad_options_exit_2() -> None:
    proc = doctor("--backend", "docker", "--no-self-test")
    assert proc.returncode == 2
    assert "invalid choice: 'docker'" in proc.stderr and "landlock" in proc.stderr


def test_doctor_when_no_backend_can_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_pkg, "bwrap_available", lambda: "bwrap broken (test)")
    monkeypatch.setattr(landlock_mod, "landlock_available", lambda: "no Landlock (test)")
    out = io.StringIO()
    assert run_doctor("auto", out=out) == 1
    text = out.getvalue()
    assert "bubblewrap: not usable: bwrap broken (test)" in text
    assert "landlock: not usable: no Landlock (test)" in text
    assert "install bubblewrap (apt-get install bubblewrap)" in text
    assert "self-test" not in text


def test_doctor_diagnosis_only() -> None:
    out = io.StringIO()
    expected = 0 if BWRAP is None or LANDLOCK is None else 1
    assert run_doctor("auto", out=out, self_test=False) == expected
    assert "seccomp:" in out.getvalue() and "user namespaces:" in out.getvalue()


def test_doctor_says_how_repositories_reach_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    from isg_gym.tools.sandbox import lazyview

    out = io.StringIO()
    monkeypatch.setenv(sandbox_pkg.FILES_ENV, "materialise")
    run_doctor("auto", out=out, self_test=False)
    assert "  file source: materialised copies (asked for" in out.getvalue()
    monkeypatch.delenv(sandbox_pkg.FILES_ENV)
    monkeypatch.setattr(lazyview, "lazy_view_problem", lambda: "no /dev/fuse (test)")
    out = io.StringIO()
    run_doctor("auto", out=out, self_test=False)
    assert "  file source: materialised copies (no /dev/fuse (test))" in out.getvalue()
    monkeypatch.undo()
    out = io.StringIO()
    run_doctor("auto", out=out, self_test=False)
    expected = "lazy FUSE view" if lazyview.lazy_view_problem() is None else "materialised"
    assert f"  file source: {expected}" in out.getvalue()
