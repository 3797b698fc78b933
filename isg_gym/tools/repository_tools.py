"""``list_directory`` and ``read_text_file`` over a :class:`~isg_gym.repository.Repository`:
the argument checks and caps around :mod:`isg_gym.tools.filesystem`, shared by every env whose
world is a repository."""

from __future__ import annotations

from typing import Any

from isg_gym.repository import Repository
from isg_gym.tools.arguments import as_int, as_str, check_args
from isg_gym.tools.filesystem import list_directory, read_text_file, resolve

__all__ = ["RepositoryTools"]


class RepositoryTools:
    """The filesystem tools of one env, with its caps."""

    def __init__(self, max_list_entries: int = 200, max_output_chars: int = 8000) -> None:
        self.max_list_entries = int(max_list_entries)
        self.max_output_chars = int(max_output_chars)

    def list_directory(self, repo: Repository, arguments: dict[str, Any]) -> str:
        check_args(arguments, ("path", "depth", "pattern"), ())
        path = arguments.get("path")
        path = "/" if path is None else as_str(path, "path")
        depth = as_int(arguments.get("depth", 1), "depth")
        pattern = arguments.get("pattern")
        if pattern is not None:
            pattern = as_str(pattern, "pattern", 1000)
        return list_directory(
            repo,
            path,
            1 if depth is None else depth,
            pattern,
            self.max_list_entries,
            self.max_output_chars,
        )

    def read_text_file(self, repo: Repository, arguments: dict[str, Any]) -> tuple[str, str]:
        """The file's text (capped) and its canonical path (the file read)."""
        check_args(arguments, ("path", "head", "tail"), ("path",))
        path = as_str(arguments["path"], "path")
        head = as_int(arguments.get("head"), "head")
        tail = as_int(arguments.get("tail"), "tail")
        text = read_text_file(repo, path, head, tail, self.max_output_chars)
        return text, resolve(repo, path)
