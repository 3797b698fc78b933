"""One module per question-type family; importing this package registers them all."""

from isg_gym.qa.types import (  # noqa: F401
    bivariate,
    effect_direction,  # opt-in: asked only when named
    file_metadata,
    group_comparison,
    hypothesis,
    metadata,
    traversal,
    univariate,
)
