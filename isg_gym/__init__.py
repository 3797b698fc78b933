"""InfiniteScienceGym: procedurally generated scientific data repositories and questions."""

from isg_gym.dataset import make_dataset, score
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec

__all__ = ["Repository", "build_spec", "make_dataset", "score"]


def _register_envs() -> None:
    """Register ``ISG-v0`` with Gymnasium (when installed) via a string entry point."""
    try:
        from gymnasium.envs.registration import register, registry
    except ImportError:  # gymnasium is only needed for the environment
        return
    if "ISG-v0" not in registry:
        register(id="ISG-v0", entry_point="isg_gym.envs.env:ISGEnv")


_register_envs()
