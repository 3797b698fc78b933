"""One module per question type family; importing this package registers them all."""

import importlib

for _name in ("metadata", "traversal", "file_metadata", "univariate", "bivariate", "hypothesis",
              "group_comparison"):  # fmt: skip
    try:
        importlib.import_module(f"isg_gym.qa.types.{_name}")
    except ModuleNotFoundError as err:  # a family still being written
        if err.name != f"isg_gym.qa.types.{_name}":
            raise
