"""One module per task family; importing this package registers them all."""

from isg_gym.orbits.tasks import (  # noqa: F401
    angular,
    anomalies,
    energy,
    geometry,
    kinematics,
    masses,
    timing,
)
from isg_gym.orbits.tasks.base import (
    ABSTAIN,
    TASKS,
    OrbitQuestion,
    OrbitTask,
    format_answer,
)

__all__ = ["ABSTAIN", "TASKS", "OrbitQuestion", "OrbitTask", "format_answer"]
