"""The answering conventions every question follows, stated to the agent verbatim.

The question generators, the independent checker (``tests/checker.py``) and the grader all
implement exactly these rules; the env's system prompt and the dataset rows carry the text.
"""

from __future__ import annotations

from isg_gym.qa.base import ABSTAIN

CONVENTIONS = f"""\
Conventions:
- Answer "{ABSTAIN}" when the question cannot be answered from the repository: a file, \
directory, column or path value it names does not exist (for counts, see below); the files \
and rows it selects leave fewer values than the statistic needs; or it asks a numeric \
statistic (minimum, maximum, mean, median, standard deviation, variance, correlation, slope, \
t-test, group mean) of a text-label column, an identifier column or a timestamp column.
- Minimum non-missing values: mode, minimum, maximum, median, mean and number of distinct \
values: 1; standard deviation and variance: 2; Pearson, Spearman, OLS slope and chi-square: 3 \
rows with both columns present, each column taking at least 2 distinct values there; Welch's \
t-test: 2 in each group, and not both groups constant; which group has the highest or lowest \
mean: at least one group with a value.
- A count of files or rows is a number and may be 0, also when a path value or combination of \
values it names occurs in no file. A count is "{ABSTAIN}" only when it names a file or \
directory that does not exist, or a column or path variable the repository does not record.
- Missing values are ignored; a row whose filter column is missing does not satisfy a condition.
- A value read from a path may be given with or without its name part (`by=smith` or `smith`, \
`date_01_03` or `01_03`)."""
