"""Memory over a long run: what an episode allocates is freed by reference counting.

Garbage that only the cyclic collector frees (a table's columns, an xlsx workbook, a repository
held by a closure) piles up between its rare full collections, and the heap it filled stays
resident as fragmentation (benchmarks/memory.py measures the run).
"""

import gc

import pytest

from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
from isg_gym.tools.filesystem import list_directory, read_text_file

FORMATS = ["csv", "json", "jsonl", "xlsx", "txt", "log"]


def _cyclic_garbage(work) -> int:
    """The number of objects only the cyclic collector would free after ``work()``."""
    gc.collect()
    gc.disable()
    try:
        work()
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("file_format", FORMATS)
def test_generating_and_serving_files_leaves_no_cyclic_garbage(file_format):
    spec = build_spec(7).model_copy(update={"file_format": file_format})

    def work():
        repo = Repository(spec)
        for path in repo.data_files[:3]:
            assert repo.read_bytes(path) and len(repo.table(path))

    assert _cyclic_garbage(work) == 0


def test_filesystem_tools_leave_no_cyclic_garbage():
    def work():
        repo = Repository(build_spec(11))
        assert list_directory(repo, "/", depth=3).count("\n") > 3
        assert read_text_file(repo, repo.data_files[0])

    assert _cyclic_garbage(work) == 0
