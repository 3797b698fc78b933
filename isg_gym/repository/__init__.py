"""The virtual repository of a Spec: file index, tables, serialisers, README."""

from isg_gym.repository.paths import RepositoryPathError, canonical_path
from isg_gym.repository.repository import Repository

__all__ = ["Repository", "RepositoryPathError", "canonical_path"]
