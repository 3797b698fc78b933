"""Directory traversal questions: the data files' extension, and counting files by path."""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    PathCondition,
    absent_path_token,
    matching_files,
    sample_path_condition,
)
from isg_gym.repository import Repository
from isg_gym.repository.index import render_token

_NOT_README = "not counting README.md"

_EXTENSION = (
    "What file extension do the data files in this repository use ({not_readme})? "
    "Give the extension without the leading dot.",
    "Which file format extension do this repository's data files have ({not_readme})? "
    "Answer with the extension only, without the dot, e.g. dat.",
    "The data files of this repository ({not_readme}) all share one extension. "
    "Which is it? Answer without the dot.",
)
_PREFIX = (
    "How many data files ({not_readme}) have a path, relative to the repository root, "
    "that starts with `{prefix}`?",
    "Count the data files ({not_readme}) whose path from the repository root begins with "
    "`{prefix}`. How many are there?",
    "How many data files ({not_readme}) are there whose relative path starts with the text "
    "`{prefix}`?",
)
_COUNT_ALL = (
    "How many data files are there in this repository ({not_readme})?",
    "Count the data files in the repository, in all directories ({not_readme}). "
    "How many are there?",
    "What is the total number of data files in this repository ({not_readme})?",
)
_COUNT_WHERE = (
    "How many data files ({not_readme}) are there where {conditions}?",
    "Count the data files ({not_readme}) for which {conditions}. How many are there?",
    "In this repository, how many data files ({not_readme}) have paths where {conditions}?",
)


# --- path helpers (privileged: built from the structured index and the Layout) ----------------


def path_parts(
    repo: Repository, row: int, override: dict[str, str] | None = None
) -> list[tuple[str, list[tuple[str, str]]]]:
    """File ``row``'s path as groups ``(joiner, [(variable, token), ...])``, directories first.

    ``override`` maps a variable name to a rendered value (e.g. an absent one) to use instead.
    """
    spec, override = repo.spec, override or {}
    by_key = {v.key: v for v in spec.path_variables}
    values = repo.index.values(row)
    layout = spec.layout
    groups = [*zip(layout.levels, layout.level_joiners, strict=True),
              (layout.filename, layout.filename_joiner)]  # fmt: skip
    out = []
    for keys, joiner in groups:
        tokens = []
        for key in keys:
            var = by_key[key]
            if var.name in override:
                token = layout.style.format(name=var.short, val=override[var.name])
            else:
                token = render_token(spec, var, values[var.name])
            tokens.append((var.name, token))
        out.append((joiner, tokens))
    return out


def join_parts(parts: list[tuple[str, list[tuple[str, str]]]], extension: str) -> str:
    """The full path of :func:`path_parts` groups."""
    names = [joiner.join(token for _, token in tokens) for joiner, tokens in parts]
    return "/".join(names) + f".{extension}"


def prefix_through(parts: list[tuple[str, list[tuple[str, str]]]], variable: str) -> str:
    """The path up to and including ``variable``'s token (a whole directory ends with '/')."""
    done: list[str] = []
    for g, (joiner, tokens) in enumerate(parts):
        names = [name for name, _ in tokens]
        if variable in names:
            if g < len(parts) - 1:
                return "/".join([*done, joiner.join(t for _, t in tokens)]) + "/"
            upto = tokens[: names.index(variable) + 1]
            return "/".join([*done, joiner.join(t for _, t in upto)])
        done.append(joiner.join(t for _, t in tokens))
    raise KeyError(variable)


def nonexistent_file(ctx: Context) -> str | None:
    """A plausible path of a real file with one variable's value replaced by an absent one."""
    variables = list(ctx.spec.path_variables)
    for j in ctx.rng.permutation(len(variables)):
        token = absent_path_token(ctx.repo, variables[j], ctx.rng)
        if token is None:
            continue
        row = int(ctx.rng.integers(len(ctx.repo.data_files)))
        parts = path_parts(ctx.repo, row, {variables[j].name: token})
        path = join_parts(parts, ctx.spec.file_format)
        if not ctx.repo.is_file(path):
            return path
    return None


def _fmt(template: str, **kwargs: str) -> str:
    return template.format(not_readme=_NOT_README, **kwargs)


# --- question types ---------------------------------------------------------------------------


@register
class FileExtension(QuestionType):
    """The data files' extension (always answerable)."""

    name = "file_extension"
    family = "directory_traversal"
    reasons = ()

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        if not answerable:
            return None
        extension = ctx.repo.data_files[0].rsplit(".", 1)[1]
        return ctx.question(_fmt(ctx.choice(_EXTENSION)), "extension", extension, params={})


@register
class CountPrefix(QuestionType):
    """How many data files have a path starting with a prefix (a directory, or one plus a name
    beginning)."""

    name = "count_prefix"
    family = "directory_traversal"
    reasons = (Reason.NO_SUCH_PATH_VALUE,)

    @dataclass(frozen=True)
    class Config:
        partial_name_share: float = 0.3  # prefixes ending inside a name rather than at a '/'
        tries: int = 8

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        prefix = self._real_prefix(ctx) if answerable else self._absent_prefix(ctx)
        if prefix is None:
            return None
        count = sum(1 for path in ctx.repo.data_files if path.startswith(prefix))
        if answerable != (count > 0):
            return None
        return ctx.question(
            _fmt(ctx.choice(_PREFIX), prefix=prefix),
            "integer",
            count,
            reason=None if answerable else Reason.NO_SUCH_PATH_VALUE,
            params={"prefix": prefix},
        )

    def _real_prefix(self, ctx: Context) -> str:
        """A directory at a random depth + '/', sometimes followed by a child name's start."""
        directories = ctx.repo.index.directories
        by_depth: dict[int, list[str]] = {}
        for directory in directories:
            depth = 0 if directory == "" else directory.count("/") + 1
            by_depth.setdefault(depth, []).append(directory)
        partial = ctx.rng.random() < self.config.partial_name_share
        depths = sorted(by_depth) if partial else sorted(d for d in by_depth if d > 0)
        directory = ctx.choice(by_depth[ctx.choice(depths)])
        base = directory + "/" if directory else ""
        if not partial:
            return base
        name = ctx.choice(directories[directory]).rstrip("/")
        cut = int(ctx.rng.integers(1, len(name))) if len(name) > 1 else 1
        return base + name[:cut]

    def _absent_prefix(self, ctx: Context) -> str | None:
        """A real file's path up to a variable whose value is replaced by an absent one."""
        variables = list(ctx.spec.path_variables)
        files = ctx.repo.data_files
        for _ in range(self.config.tries):
            var = variables[int(ctx.rng.integers(len(variables)))]
            token = absent_path_token(ctx.repo, var, ctx.rng)
            if token is None:
                continue
            parts = path_parts(ctx.repo, int(ctx.rng.integers(len(files))), {var.name: token})
            prefix = prefix_through(parts, var.name)
            if not any(path.startswith(prefix) for path in files):
                return prefix
        return None


@register
class CountFiles(QuestionType):
    """How many data files satisfy 0-3 path conditions."""

    name = "count_files"
    family = "directory_traversal"
    reasons = (Reason.NO_SUCH_PATH_VALUE,)

    @dataclass(frozen=True)
    class Config:
        max_conditions: int = 3

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        conditions = self._conditions(ctx, answerable)
        if conditions is None:
            return None
        count = len(matching_files(ctx.repo, conditions))
        if not answerable and count:
            return None
        if conditions:
            text = " and ".join(c.text(ctx.repo) for c in conditions)
            question = _fmt(ctx.choice(_COUNT_WHERE), conditions=text)
        else:
            question = _fmt(ctx.choice(_COUNT_ALL))
        return ctx.question(
            question,
            "integer",
            count,
            reason=None if answerable else Reason.NO_SUCH_PATH_VALUE,
            params={"path_conditions": [c.to_dict() for c in conditions]},
        )

    def _conditions(self, ctx: Context, answerable: bool) -> list[PathCondition] | None:
        """Conditions on distinct variables; for an unanswerable one, one has an absent value."""
        variables = list(ctx.spec.path_variables)
        order = [variables[j] for j in ctx.rng.permutation(len(variables))]
        most = min(self.config.max_conditions, len(variables))
        absent: list[PathCondition] = []
        if not answerable:
            for i, var in enumerate(order):
                token = absent_path_token(ctx.repo, var, ctx.rng)
                if token is not None:
                    absent = [PathCondition(var.name, "is", token)]
                    order = order[:i] + order[i + 1 :]
                    break
            else:
                return None
        k = int(ctx.rng.integers(0 if answerable else 1, most + 1)) - len(absent)
        conditions = [sample_path_condition(ctx.repo, var, ctx.rng) for var in order[:k]]
        if absent:
            conditions.insert(int(ctx.rng.integers(len(conditions) + 1)), absent[0])
        return conditions
