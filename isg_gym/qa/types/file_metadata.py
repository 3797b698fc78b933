"""File metadata questions: a file's number of data rows, and a column's missing values.

count_missing (v2) keeps the answer 0 near 20% of its answerable questions: in a repository
with gappy columns it usually asks a (file, column) pair that has gaps; repositories without
gappy columns always answer 0. Unanswerable questions name a column drawn the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.scope import ScopeSampler
from isg_gym.qa.types.traversal import nonexistent_file

_ROWS = (
    "How many data rows does the file `{file}` contain (not counting the header)?",
    "Count the records in `{file}`, excluding any header line. How many are there?",
    "What is the number of data rows in the file `{file}` (header excluded)?",
)
_MISSING = (
    'How many rows of the file `{file}` have a missing value in the column "{column}"?',
    'In `{file}`, how many values of the column "{column}" are missing?',
    'Count the missing (empty / null / NA) entries of column "{column}" in the file `{file}`.',
)


def _random_file(ctx: Context) -> str:
    files = ctx.repo.data_files
    return files[int(ctx.rng.integers(len(files)))]


def _missing_file(ctx: Context) -> str | None:
    """A well-formed path that is not a file of the repository, or None."""
    scope = ScopeSampler(ctx.repo, ctx.rng).missing_file()
    path = scope.file if scope is not None else nonexistent_file(ctx)
    return None if path is None or ctx.repo.is_file(path) else path


@register
class CountRows(QuestionType):
    """The number of data rows of one file (header excluded)."""

    name = "count_rows"
    family = "file_metadata"
    reasons = (Reason.NO_SUCH_FILE,)

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        path = _random_file(ctx) if answerable else _missing_file(ctx)
        if path is None:
            return None
        text = ctx.choice(_ROWS).format(file=path)
        params = {"file": path}
        if not answerable:
            return ctx.question(text, "integer", None, reason=Reason.NO_SUCH_FILE, params=params)
        rows = len(ctx.repo.table(path))
        return ctx.question(text, "integer", rows, params=params, evidence=(path,))


@register
class CountMissing(QuestionType):
    """How many values of one column of one file are missing."""

    name = "count_missing"
    family = "file_metadata"
    reasons = (Reason.NO_SUCH_FILE, Reason.UNRECORDED_VARIABLE)

    @dataclass(frozen=True)
    class Config:
        any_pair_share: float = 0.15  # how often to ask any (file, column), gaps or not
        file_tries: int = 12  # files tried for one with a gap in the chosen column

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        if answerable:
            path, column = self._pair(ctx)
            reason = None
        else:
            made = self._unanswerable(ctx)
            if made is None:
                return None
            path, column, reason = made
        text = ctx.choice(_MISSING).format(file=path, column=column)
        params = {"file": path, "column": column}
        if reason is not None:
            return ctx.question(text, "integer", None, reason=reason, params=params)
        missing = int(ctx.repo.table(path)[column].isna().sum())
        return ctx.question(text, "integer", missing, params=params, evidence=(path,))

    @staticmethod
    def _columns(ctx: Context) -> tuple[list[str], list[str]]:
        columns = [c for c in ctx.spec.columns if c.role not in ("identifier", "datetime")]
        return [c.name for c in columns], [c.name for c in columns if c.missing_rate > 0]

    def _column(self, ctx: Context) -> str:
        """A recorded column, drawn as answerable questions draw theirs (usually a gappy one)."""
        columns, gappy = self._columns(ctx)
        if gappy and ctx.rng.random() >= self.config.any_pair_share:
            return ctx.choice(gappy)
        return ctx.choice(columns)

    def _pair(self, ctx: Context) -> tuple[str, str]:
        """A file and a column; with gappy columns, usually a pair with at least one gap."""
        columns, gappy = self._columns(ctx)
        if not gappy or ctx.rng.random() < self.config.any_pair_share:
            return _random_file(ctx), ctx.choice(columns)
        column = ctx.choice(gappy)
        path = _random_file(ctx)
        for _ in range(self.config.file_tries):
            if ctx.repo.table(path)[column].isna().any():
                break
            path = _random_file(ctx)
        return path, column

    def _unanswerable(self, ctx: Context) -> tuple[str, str, Reason] | None:
        """A missing file with a real column, or a real file with an unrecorded variable."""
        makers = [self._no_such_file, self._unrecorded]
        for i in ctx.rng.permutation(len(makers)):
            made = makers[i](ctx)
            if made is not None:
                return made
        return None

    def _no_such_file(self, ctx: Context) -> tuple[str, str, Reason] | None:
        path = _missing_file(ctx)
        return None if path is None else (path, self._column(ctx), Reason.NO_SUCH_FILE)

    def _unrecorded(self, ctx: Context) -> tuple[str, str, Reason] | None:
        recorded = {c.name for c in ctx.spec.columns}
        names = [u.name for u in ctx.spec.unrecorded if u.name not in recorded]
        if not names:
            return None
        return _random_file(ctx), ctx.choice(names), Reason.UNRECORDED_VARIABLE
