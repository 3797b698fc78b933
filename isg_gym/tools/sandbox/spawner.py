"""Start sandbox workers from one long-lived thread.

The kernel's parent-death signal (bubblewrap's ``--die-with-parent``, the worker's own
``PR_SET_PDEATHSIG``) fires when the *thread* that forked a process exits, not the process. A
worker started from a short-lived thread (a thread pool made for one episode, a trainer's
callback thread, a Ray task) would be killed when that thread ends, and the next call would
pay a worker restart (2-3 s). :func:`popen` forks every worker from one daemon thread that lives
as long as the process (a forked child process gets its own thread on first use).
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from concurrent.futures import Future
from typing import Any

_Request = tuple[Future[Any], tuple[Any, ...], dict[str, Any]]
_lock = threading.Lock()
_requests: queue.SimpleQueue[_Request] | None = None
_owner_pid: int | None = None


def popen(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(*args, **kwargs)``, forked from the spawner thread."""
    done: Future[subprocess.Popen[bytes]] = Future()
    _queue().put((done, args, kwargs))
    return done.result()


def _queue() -> queue.SimpleQueue[_Request]:
    global _requests, _owner_pid
    with _lock:
        if _requests is None or _owner_pid != os.getpid():  # none yet, or a forked child
            _requests, _owner_pid = queue.SimpleQueue(), os.getpid()
            threading.Thread(
                target=_serve, args=(_requests,), name="isg-sandbox-spawner", daemon=True
            ).start()
        return _requests


def _serve(requests: queue.SimpleQueue[_Request]) -> None:
    while True:
        done, args, kwargs = requests.get()
        if not done.set_running_or_notify_cancel():
            continue
        try:
            done.set_result(subprocess.Popen(*args, **kwargs))
        except BaseException as exc:  # handed to the caller, who raises it
            done.set_exception(exc)
