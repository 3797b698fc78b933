"""A sandbox worker started from a short-lived thread survives that thread."""

from __future__ import annotations

import threading

from isg_gym.tools.files import DictFiles
from isg_gym.tools.sandbox import get_sandbox


def test_a_worker_started_in_a_thread_that_ends_serves_the_next_call() -> None:
    files = DictFiles("spawner-test", {"a.csv": b"x\n1\n"})
    sandbox = get_sandbox()
    try:
        first: list = []
        thread = threading.Thread(target=lambda: first.append(sandbox.run("1 + 1", files)))
        thread.start()
        thread.join()
        assert first[0].error is None, first[0].error
        worker = sandbox._proc
        assert worker is not None
        # the thread that asked for the worker has ended; the worker must still be alive
        second = sandbox.run("open('a.csv').read()", files)
        assert second.error is None, second.error
        assert "x\\n1\\n" in second.value
        assert sandbox._proc is worker and worker.poll() is None  # not restarted
    finally:
        sandbox.close()
