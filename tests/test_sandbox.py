"""Functional tests of the Python sandbox (bubblewrap backend; a few for backend "none")."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from isg_gym.tools.sandbox import (
    ExecResult,
    SandboxLimits,
    available_backends,
    bwrap_available,
    get_sandbox,
)

LIMITS = SandboxLimits(cpu_seconds=2, wall_seconds=3, memory_mb=512, output_chars=2000)
BWRAP_PROBLEM = bwrap_available()
needs_bwrap = pytest.mark.skipif(
    BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repo")
    (root / "x.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
    (root / "sub").mkdir()
    (root / "sub" / "y.txt").write_text("hello\n")
    return root


@pytest.fixture(scope="module")
def sb() -> Iterator:
    if BWRAP_PROBLEM is not None:
        pytest.skip(f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
    with get_sandbox("bwrap", LIMITS) as sandbox:
        yield sandbox


def run(sb, code: str, repo: Path) -> ExecResult:
    return sb.run(code, str(repo))


@needs_bwrap
def test_print_and_value(sb, repo: Path) -> None:
    res = run(sb, "print('hi')\nx = 20\nx + 22", repo)
    assert res.stdout == "hi\n"
    assert res.value == "42"
    assert res.error is None and not res.timed_out and not res.killed
    assert res.duration_s >= 0


@needs_bwrap
def test_no_trailing_expression_gives_none(sb, repo: Path) -> None:
    assert run(sb, "x = 1", repo).value is None
    assert run(sb, "None", repo).value is None


@needs_bwrap
def test_pandas_reads_data_dir(sb, repo: Path) -> None:
    res = run(
        sb,
        "import os, pandas as pd\n(os.getcwd(), pd.read_csv('x.csv')['a'].mean(), "
        "open('/data/sub/y.txt').read())",
        repo,
    )
    assert res.error is None, res.stderr
    assert res.value == "('/data', np.float64(3.0), 'hello\\n')"


@needs_bwrap
def test_numpy_scipy_openpyxl(sb, repo: Path) -> None:
    code = (
        "import numpy as np, scipy.stats as st, openpyxl\n"
        "wb = openpyxl.Workbook(); wb.active['A1'] = 5; wb.save('/tmp/t.xlsx')\n"
        "import pandas as pd\n"
        "v = pd.read_excel('/tmp/t.xlsx', header=None).iloc[0, 0]\n"
        "r = st.pearsonr(np.arange(10), np.arange(10) ** 2)[0]\n"
        "(int(v), round(float(r), 4), float(np.linalg.det(np.eye(3))))"
    )
    res = run(sb, code, repo)
    assert res.error is None, res.stderr
    assert res.value == "(5, 0.9627, 1.0)"


@needs_bwrap
def test_traceback_shows_user_frames_only(sb, repo: Path) -> None:
    res = run(sb, "def f(x):\n    return 1 / x\n\nf(0)", repo)
    assert res.error == "ZeroDivisionError: division by zero"
    assert 'File "<cell>", line 4' in res.stderr
    assert 'File "<cell>", line 2, in f' in res.stderr
    assert "worker.py" not in res.stderr and "sandbox" not in res.stderr.lower()


@needs_bwrap
def test_syntax_error(sb, repo: Path) -> None:
    res = run(sb, "x = (1,\n", repo)
    assert res.error is not None and res.error.startswith("SyntaxError")
    assert "worker.py" not in res.stderr


@needs_bwrap
def test_state_does_not_persist(sb, repo: Path) -> None:
    assert (
        run(
            sb, "import builtins; builtins.LEAK = 1; y = 5; open('/tmp/f', 'w').write('x')", repo
        ).error
        is None
    )
    res = run(
        sb,
        "import builtins, os\n(hasattr(builtins, 'LEAK'), 'y' in globals(), "
        "os.path.exists('/tmp/f'), os.listdir('/tmp'))",
        repo,
    )
    assert res.value == "(False, False, False, [])"


@needs_bwrap
def test_timeout_then_worker_still_alive(sb, repo: Path) -> None:
    res = run(sb, "import time\nprint('before', flush=True)\ntime.sleep(30)", repo)
    assert res.timed_out and res.killed
    assert res.stdout == "before\n"
    assert 2.5 < res.duration_s < 6
    assert sb.ping()
    assert run(sb, "1 + 1", repo).value == "2"


@needs_bwrap
def test_other_files_dir_restarts_worker(sb, repo: Path, tmp_path: Path) -> None:
    (tmp_path / "z.csv").write_text("a\n7\n")
    assert run(sb, "import os; sorted(os.listdir('.'))", tmp_path).value == "['z.csv']"
    assert run(sb, "import os; sorted(os.listdir('.'))", repo).value == "['sub', 'x.csv']"


@needs_bwrap
def test_close_idempotent_and_restart(repo: Path) -> None:
    sandbox = get_sandbox("bwrap", LIMITS)
    assert not sandbox.alive  # started lazily
    assert sandbox.run("2 * 3", str(repo)).value == "6"
    assert sandbox.alive
    sandbox.close()
    sandbox.close()
    assert not sandbox.alive
    assert sandbox.run("2 * 4", str(repo)).value == "8"  # restarts transparently
    assert sandbox._proc is not None
    sandbox._proc.kill()  # the worker died
    sandbox._proc.wait()
    assert sandbox.run("2 * 5", str(repo)).value == "10"
    sandbox.close()


def test_backends_registry() -> None:
    assert {"bwrap", "none"} <= set(available_backends())
    with pytest.raises(ValueError, match="unknown sandbox backend"):
        get_sandbox("nope")


def test_limits_defaults() -> None:
    limits = SandboxLimits()
    assert (
        limits.cpu_seconds,
        limits.wall_seconds,
        limits.memory_mb,
        limits.file_size_mb,
        limits.open_files,
        limits.output_chars,
    ) == (5, 10, 1024, 16, 64, 20000)
    with pytest.raises(AttributeError):
        limits.cpu_seconds = 1  # type: ignore[misc]


def test_backend_none_runs_with_seccomp(repo: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.warns(RuntimeWarning, match="NOT a security boundary"):
        sandbox = get_sandbox("none", LIMITS)
    assert any("NOT a security boundary" in r.getMessage() for r in caplog.records)
    with sandbox:
        here = str(Path(repo).resolve())
        code = (
            f"import os, pandas as pd\n(os.path.samefile('x.csv', {here!r} + '/x.csv'), "
            "pd.read_csv('x.csv')['a'].sum())"
        )
        res = sandbox.run(code, str(repo))
        # the view holds copies: no hard link to the shared (materialisation cache) files
        assert res.value == "(False, np.int64(9))", res.stderr
        tamper = "import os\nos.chmod('x.csv', 0o644)\nopen('x.csv', 'a').write('9,9')"
        sandbox.run(tamper, str(repo))
        assert (repo / "x.csv").read_text() == "a,b\n1,2\n3,4\n5,6\n"
        assert sandbox.worker_info["seccomp"] is True
        res = sandbox.run("import os\nos.system('true')", str(repo))
        assert res.value not in (None, "0")
        res = sandbox.run("import subprocess\nsubprocess.run(['true'])", str(repo))
        assert res.error is not None and "PermissionError" in res.error
        assert sandbox.run("import isg_gym", str(repo)).error.startswith("ModuleNotFoundError")


@needs_bwrap
def test_other_files_dir_swaps_the_view_without_a_restart(repo: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    (other / "deep").mkdir(parents=True)
    (other / "deep" / "z.csv").write_text("a\n7\n")
    listing = "import os; sorted(os.path.join(r, f) for r, _, fs in os.walk('.') for f in fs)"
    with get_sandbox("bwrap", LIMITS) as sandbox:
        assert sandbox.run(listing, str(repo)).value == "['./sub/y.txt', './x.csv']"
        worker = sandbox._proc
        assert sandbox.run(listing, str(other)).value == "['./deep/z.csv']"
        res = sandbox.run("import pandas as pd; int(pd.read_csv('/data/deep/z.csv')['a'][0])",
                          str(other))  # fmt: skip
        assert res.value == "7" and res.files_read == ("deep/z.csv",)
        assert sandbox._proc is worker  # same worker: only the view's links changed
        assert sandbox.run(listing, str(repo)).value == "['./sub/y.txt', './x.csv']"
        view = sandbox._view
        assert view is not None and Path(view).is_dir()
    assert not Path(view).exists()  # removed with the worker


def test_remove_tree_handles_hostile_trees(tmp_path: Path) -> None:
    """Mode-000 directories, a 1,600-deep chain and many files: emptied without recursion."""
    from isg_gym.tools.sandbox import remove_tree
    from isg_gym.tools.sandbox.worker import wipe

    root = tmp_path / "scratch"
    (root / "locked" / "inner").mkdir(parents=True)
    (root / "locked" / "inner" / "f").write_text("x")
    os.chmod(root / "locked" / "inner", 0)
    os.chmod(root / "locked", 0)
    fd = os.open(root, os.O_RDONLY)
    for _ in range(1600):
        os.mkdir("d", dir_fd=fd)
        sub = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.close(fd)
    for i in range(3000):
        (root / f"f{i}").write_bytes(b"")
    assert wipe(str(root), budget_s=120.0) is True  # host /tmp here: ~3 ms per rmdir
    assert os.listdir(root) == []
    (root / "again").mkdir()
    os.chmod(root / "again", 0)
    remove_tree(str(root))
    assert not root.exists()


@needs_bwrap
def test_unclosed_sandbox_leaves_no_view_behind(repo: Path) -> None:
    """A sandbox that is never closed: its worker and view go at interpreter exit."""
    code = (
        "import sys\nfrom isg_gym.tools.sandbox import get_sandbox\n"
        f"sb = get_sandbox('bwrap')\nassert sb.run('1', {str(repo)!r}).value == '1'\n"
        "print(sb._view)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    view = out.stdout.strip().splitlines()[-1]
    assert view.startswith("/") and not os.path.exists(view)


@needs_bwrap
def test_worker_runs_unprivileged_in_its_own_namespaces(sb, repo: Path) -> None:
    if not sb.worker_info.get("call_namespaces"):
        pytest.skip(f"no per-call namespaces here: {sb.worker_info.get('call_namespaces_problem')}")
    res = run(sb, "import os\n(os.getuid(), os.getgid(), os.getpid())", repo)
    assert res.value == "(65534, 65534, 1)", res


def test_an_installed_copy_of_isg_gym_is_hidden(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A regular (non-editable) install puts isg_gym's source in site-packages, next to numpy:
    with it, model code could rebuild any repository and its answers. Its files, metadata and
    hooks are hidden from model code, while the libraries beside them stay importable."""
    import isg_gym.tools.sandbox as sandbox

    site = Path("/var/tmp") / tmp_path_factory.mktemp("site").name  # not under the /tmp scratch
    site.mkdir(parents=True, exist_ok=True)
    try:
        (site / "isg_gym").mkdir()
        (site / "isg_gym" / "__init__.py").write_text("SECRET = 'answer key'\n")
        (site / "isg_gym-0.1.0.dist-info").mkdir()
        (site / "isg_gym-0.1.0.dist-info" / "RECORD").write_text("isg_gym/__init__.py\n")
        (site / "isg_gym.pth").write_text(str(site) + "\n")
        (site / "other_lib.py").write_text("VALUE = 7\n")
        real = sandbox._site_paths
        monkeypatch.setattr(sandbox, "_site_paths", lambda: [*real(), str(site)])
        with get_sandbox("bwrap", SandboxLimits(wall_seconds=20)) as sb:
            res = sb.run(
                "import os, sys\n"
                f"sys.path.append({str(site)!r})\n"
                "import other_lib\n"
                f"print(sorted(os.listdir({str(site / 'isg_gym')!r})), other_lib.VALUE)\n"
                "try:\n    import isg_gym\n    print('IMPORTED', isg_gym.SECRET)\n"
                "except ImportError:\n    print('no isg_gym')\n"
                "try:\n"
                f"    print(repr(open({str(site / 'isg_gym.pth')!r}).read()))\n"
                "except OSError as exc:\n    print(type(exc).__name__)",
                repo,
            )
        assert res.error is None, res.error
        lines = res.stdout.splitlines()
        assert lines[:2] == ["[] 7", "no isg_gym"] and lines[2] in ("''", "PermissionError")
    finally:
        subprocess.run(["rm", "-rf", str(site)], check=False)


# --- calls forked ahead, exits awaited after the reply -------------------------------------


def _descendants(root: int) -> dict[int, tuple[int, str, str]]:
    """Descendants of ``root``: pid -> (parent pid, comm, state), from the host's /proc."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        state, ppid = stat[stat.rindex(")") + 2 :].split()[:2]
        table[int(entry)] = (int(ppid), comm, state)
    out: dict[int, tuple[int, str, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, row in table.items():
            if row[0] == parent and pid not in out:
                out[pid] = row
                frontier.append(pid)
    return out


def _leaders(tree: dict[int, tuple[int, str, str]], live: bool = True) -> list[int]:
    """Call leaders in a worker's tree (supervisor -> zygote -> leader -> child), only the
    live ones unless ``live`` is False."""
    pythons = {p for p, row in tree.items() if row[1].startswith("python")}

    def depth(pid: int) -> int:
        return 1 + depth(tree[pid][0]) if tree[pid][0] in pythons else 0

    return [p for p in pythons if depth(p) == 2 and not (live and tree[p][2] == "Z")]


FORGE_AND_LINGER = (
    "import ctypes, json, os, time\n"
    "ctypes.CDLL(None).prctl(15, b'outlived', 0, 0, 0)\n"  # PR_SET_NAME
    "os.write(3, json.dumps({'value': \"'forged'\", 'error': None}).encode())\n"
    "for fd in (1, 2, 3):\n    os.close(fd)\n"
    "time.sleep(60)\n"
)


@needs_bwrap
def test_a_child_that_outlives_its_reply_is_killed_before_the_next_call(repo: Path) -> None:
    """A child that writes a whole result and closes its streams is answered for at once; if it
    then lingers, it is killed at its own deadline before the next call runs."""
    limits = SandboxLimits(cpu_seconds=2, wall_seconds=1, memory_mb=512, output_chars=2000)
    with get_sandbox("bwrap", limits) as sandbox:
        assert sandbox.run("1", str(repo)).value == "1"
        if not sandbox.worker_info.get("call_namespaces"):
            pytest.skip("exits are awaited after the reply only with per-call namespaces")
        forged = sandbox.run(FORGE_AND_LINGER, str(repo))
        assert forged.value == "'forged'" and not forged.timed_out  # the child's own report
        assert sandbox._proc is not None
        tree = _descendants(sandbox._proc.pid)
        lingering = [p for p, row in tree.items() if row[1] == "outlived"]
        assert lingering, "the child was expected to outlive the reply"
        after = sandbox.run("import os; os.listdir('/tmp'), 6 * 7", str(repo))
        assert after.value == "([], 42)" and after.error is None
        alive = _descendants(sandbox._proc.pid)
        assert not [p for p in lingering if p in alive and alive[p][2] != "Z"]


@needs_bwrap
def test_a_killed_leader_forked_ahead_is_replaced(repo: Path) -> None:
    """The zygote forks each call's leader and child ahead of the call; one killed while it
    waits is replaced at the call, which runs normally."""
    with get_sandbox("bwrap", LIMITS) as sandbox:
        assert sandbox.run("1", str(repo)).value == "1"
        assert sandbox._proc is not None
        deadline = time.monotonic() + 30
        while True:  # until the last call's leader has exited (a zombie until the next call)
            tree = _descendants(sandbox._proc.pid)
            leaders = _leaders(tree)
            exited = [p for p in _leaders(tree, live=False) if tree[p][2] == "Z"]
            if (len(leaders) == 1 and exited) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(leaders) == 1 and exited, tree
        os.kill(leaders[0], 9)  # the one forked ahead
        for _ in range(3):
            res = sandbox.run("import pandas as pd; int(pd.read_csv('x.csv').a.sum())", str(repo))
            assert res.value == "9" and res.error is None, res


SMAPS = """\
55d0c0a00000-55d0c3000000 rw-p 00000000 00:00 0                          [heap]
Size:              38912 kB
Rss:               37000 kB
7f0000000000-7f0040000000 rw-p 00000000 00:00 0
Size:            1048576 kB
Rss:                 512 kB
7f1000000000-7f1000800000 r--p 00000000 08:01 123                        /usr/lib/libx.so
Size:               8192 kB
Rss:                8192 kB
7f2000000000-7f2000400000 rw-p 00000000 00:00 0
Size:               4096 kB
Rss:                4096 kB
"""


def test_the_zygote_collapses_only_resident_anonymous_memory() -> None:
    """The zygote backs its heap with huge pages (fewer page-table entries to copy per fork):
    only writable anonymous mappings, and only those mostly resident (a sparse reservation
    would be filled)."""
    from isg_gym.tools.sandbox import _worker_module

    worker = _worker_module()
    mappings = worker._anonymous_mappings(SMAPS)
    assert [(hex(low), name, rss) for low, _, name, rss in mappings] == [
        ("0x55d0c0a00000", "[heap]", 37000 * 1024),
        ("0x7f0000000000", "", 512 * 1024),
        ("0x7f2000000000", "", 4096 * 1024),
    ]
    calls: list[tuple[int, int, int]] = []
    collapsed = worker.collapse_mappings(SMAPS, lambda a, n, advice: calls.append((a, n, advice)))
    # the heap (aligned to 2 MiB) and the 4 MiB mapping; never the 1 GiB reservation
    assert [(hex(a), n >> 20) for a, n, _ in calls] == [("0x55d0c0a00000", 38),
                                                        ("0x7f2000000000", 4)]  # fmt: skip
    assert {advice for *_, advice in calls} == {worker.MADV_COLLAPSE}
    assert collapsed == 0  # this madvise refused (returned None): nothing counted
    assert worker.collapse_mappings(SMAPS, lambda a, n, advice: 0) == 42


@needs_bwrap
def test_worker_reports_its_huge_pages(sb, repo: Path) -> None:
    assert run(sb, "1", repo).value == "1"
    assert isinstance(sb.worker_info.get("huge_pages_mb"), int)


@needs_bwrap
def test_preloaded_libraries_are_frozen_out_of_the_collector(sb, repo: Path) -> None:
    """A child is a fork of the zygote: a full collection in it must not walk (and copy the
    pages of) the preloaded libraries' objects, and it still collects the cell's own cycles."""
    code = (
        "import gc, weakref\n"
        "class Node: pass\n"
        "a, b = Node(), Node()\n"
        "a.other, b.other = b, a\n"
        "alive = weakref.ref(a)\n"
        "del a, b\n"
        "gc.collect()\n"
        "(gc.get_freeze_count() > 100_000, alive() is None)"
    )
    assert run(sb, code, repo).value == "(True, True)"
    assert sb.worker_info.get("frozen_objects", 0) > 100_000


@needs_bwrap
def test_pandas_runs_without_pyarrow_whatever_is_installed(sb, repo: Path) -> None:
    """An extra that installs pyarrow must not change what a cell prints (pandas would back its
    strings with it) nor add its ~50 MB to the zygote: the sandbox makes pyarrow unimportable."""
    code = (
        "import sys, pandas as pd\n"
        "loaded = 'pyarrow' in sys.modules\n"
        "try:\n"
        "    import pyarrow.compute\n"
        "    outcome = 'imported'\n"
        "except ModuleNotFoundError as e:\n"
        "    outcome = str(e)\n"
        "s = pd.Series(['a', 'b'], dtype='str')\n"
        "(loaded, outcome, s.array.__class__.__name__, s.str.upper().tolist())"
    )
    res = run(sb, code, repo)
    assert res.error is None, res.stderr
    assert res.value == (
        "(False, \"No module named 'pyarrow': the sandbox runs without pyarrow (pandas "
        "uses its own string storage)\", 'StringArray', ['A', 'B'])"
    ), res.value
    assert sb.worker_info["without"] == ["pyarrow"]
