"""InfiniteScienceGym: procedurally generated scientific data repositories and questions."""

from isg_gym.dataset import make_dataset, score
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec

__all__ = ["Repository", "build_spec", "make_dataset", "score"]

# Registers ISG-v0 and the other environments with Gymnasium (string entry points: no env is
# imported until one is made).
import isg_gym.envs.registry  # noqa: F401
