"""One module per question-type family; importing this package registers them all."""

from isg_gym.qa.types import (  # noqa: F401
    bivariate,
    file_metadata,
    group_comparison,
    hypothesis,
    metadata,
    traversal,
    univariate,
)
