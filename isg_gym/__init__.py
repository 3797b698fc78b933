"""InfiniteScienceGym: procedurally generated scientific data repositories and questions."""

from isg_gym.dataset import make_dataset, score
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec

__all__ = ["Repository", "build_spec", "make_dataset", "score"]
