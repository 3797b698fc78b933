"""Directory traversal questions: the data files' extension, and counting files by path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.conditions import (
    PATH_OPS_NUMERIC,
    PathCondition,
    _weighted,
    absent_path_token,
    exact_num,
    matching_files,
    sample_path_condition,
)
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO
from isg_gym.repository import Repository
from isg_gym.repository.index import render_token, render_value
from isg_gym.simulator.procedural import RESEARCHER_FORMATS
from isg_gym.spec.models import PathVariable

_NOT_README = "not counting README.md"

_EXTENSION = (
    "What file extension do the data files in this repository use ({not_readme})? "
    "Give the extension without the leading dot.",
    "Which file format extension do this repository's data files have ({not_readme})? "
    "Answer with the extension only, without the dot, e.g. dat.",
    "The data files of this repository ({not_readme}) all share one extension. "
    "Which is it? Answer without the dot.",
)
_EXTENSION_UNDER = (
    "What file extension do the data files under the directory `{directory}` use "
    "({not_readme})? Give the extension without the leading dot.",
    "Which file format extension do the data files below `{directory}` have ({not_readme})? "
    "Answer with the extension only, without the dot, e.g. dat.",
    "The data files under the directory `{directory}` ({not_readme}) share one extension. "
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
_PREFIX_RULE = (
    "The count may be 0; if the directory part of the prefix (up to its last '/') does not "
    "exist, the answer is not possible."
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


def _group_names(parts: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    return [joiner.join(token for _, token in tokens) for joiner, tokens in parts]


@dataclass(frozen=True)
class DirectoryPick:
    """A non-root directory (``exists`` or not) and the path parts of a file below it."""

    directory: str  # without the trailing '/'
    exists: bool
    parts: list[tuple[str, list[tuple[str, str]]]]
    depth: int  # number of path groups in ``directory`` (>= 1)


def pick_directory(ctx: Context, exists: bool, tries: int = 8) -> DirectoryPick | None:
    """A directory at a random depth >= 1: a real one, or a real one's path with one value
    replaced by a value no file has (drawn by :func:`absent_path_token`, rendered as the
    repository renders it), so that real and absent directories read alike."""
    files = ctx.repo.data_files
    directories = ctx.repo.index.directories
    for _ in range(tries):
        row = int(ctx.rng.integers(len(files)))
        parts = path_parts(ctx.repo, row)
        if len(parts) < 2:
            return None
        depth = int(ctx.rng.integers(1, len(parts)))
        if not exists:
            above = [name for _, tokens in parts[:depth] for name, _ in tokens]
            var = above[int(ctx.rng.integers(len(above)))]
            token = absent_path_token(ctx.repo, _variable(ctx, var), ctx.rng)
            if token is None:
                continue
            parts = path_parts(ctx.repo, row, {var: token})
        directory = "/".join(_group_names(parts)[:depth])
        if (directory in directories) == exists:
            return DirectoryPick(directory, exists, parts, depth)
    return None


def child_name(ctx: Context, pick: DirectoryPick, real: bool) -> str | None:
    """The name of an entry of ``pick.directory`` as its files name it (``real``), or the same
    name with one of its values replaced by an absent one (an entry that does not exist)."""
    parts = pick.parts
    extension = f".{ctx.spec.file_format}" if pick.depth == len(parts) - 1 else ""
    joiner, tokens = parts[pick.depth]
    if not real:
        names = [name for name, _ in tokens]
        var = names[int(ctx.rng.integers(len(names)))]
        token = absent_path_token(ctx.repo, _variable(ctx, var), ctx.rng)
        if token is None:
            return None
        style, short = ctx.spec.layout.style, _variable(ctx, var).short
        tokens = [(n, style.format(name=short, val=token) if n == var else t) for n, t in tokens]
    name = joiner.join(t for _, t in tokens) + extension
    if pick.exists:
        children = {c.rstrip("/") for c in ctx.repo.index.directories[pick.directory]}
        if (name in children) != real:
            return None
    return name


def _variable(ctx: Context, name: str):
    return next(v for v in ctx.spec.path_variables if v.name == name)


def _fmt(template: str, **kwargs: str) -> str:
    return template.format(not_readme=_NOT_README, **kwargs)


# --- question types ---------------------------------------------------------------------------


@register
class FileExtension(QuestionType):
    """The extension of the data files under one directory; "not possible" when that directory
    does not exist. (A question about the whole repository is always answerable, so its text
    would tell: by default none is asked, ``Config.root_share``.)"""

    name = "file_extension"
    family = "directory_traversal"
    reasons = (Reason.NO_SUCH_PATH_VALUE,)

    @dataclass(frozen=True)
    class Config:
        root_share: float = 0.0  # questions about the whole repository (the root always exists)

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        extension = ctx.repo.data_files[0].rsplit(".", 1)[1]
        root = self.config.root_share / (1 - DEFAULT_UNANSWERABLE_RATIO)
        if answerable and root > 0 and ctx.rng.random() < root:
            text = _fmt(ctx.choice(_EXTENSION))
            return ctx.question(text, "extension", extension, params={"directory": ""})
        pick = pick_directory(ctx, exists=answerable)
        if pick is None:
            return None
        text = _fmt(ctx.choice(_EXTENSION_UNDER), directory=pick.directory + "/")
        return ctx.question(
            text, "extension", extension,
            reason=None if answerable else Reason.NO_SUCH_PATH_VALUE,
            params={"directory": pick.directory},
        )  # fmt: skip


@register
class CountPrefix(QuestionType):
    """How many data files have a path starting with a prefix: a directory, or a directory
    plus the start of an entry's name. The count may be 0 (no entry name starts so); "not
    possible" when the prefix's directory does not exist."""

    name = "count_prefix"
    family = "directory_traversal"
    reasons = (Reason.NO_SUCH_PATH_VALUE,)

    @dataclass(frozen=True)
    class Config:
        partial_name_share: float = 0.35  # prefixes ending inside a name rather than at a '/'
        zero_share: float = 0.12  # answerable questions whose name start matches no entry
        tries: int = 8

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        cfg = self.config
        for _ in range(cfg.tries):
            pick = pick_directory(ctx, exists=answerable)
            if pick is None:
                return None
            prefix = pick.directory + "/"
            if ctx.rng.random() < cfg.partial_name_share:
                zero = ctx.rng.random() < cfg.zero_share / cfg.partial_name_share
                name = child_name(ctx, pick, real=not zero)
                if name is None or len(name) < 2:
                    continue
                prefix += name[: int(ctx.rng.integers(1, len(name)))]
            count = sum(1 for path in ctx.repo.data_files if path.startswith(prefix))
            if not answerable and count:
                continue
            text = _fmt(ctx.choice(_PREFIX), prefix=prefix) + " " + _PREFIX_RULE
            return ctx.question(
                text, "integer", count,
                reason=None if answerable else Reason.NO_SUCH_PATH_VALUE,
                params={"prefix": prefix, "directory": pick.directory},
            )  # fmt: skip
        return None


@register
class CountFiles(QuestionType):
    """How many data files satisfy 0-3 path conditions; 0 when none does (a value no file has,
    or values no file has together); "not possible" when a condition names a path variable the
    repository does not record."""

    name = "count_files"
    family = "directory_traversal"
    reasons = (Reason.UNRECORDED_VARIABLE,)

    @dataclass(frozen=True)
    class Config:
        max_conditions: int = 3
        zero_share: float = 0.12  # answerable questions built to match no file

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        variables = list(ctx.spec.path_variables)
        order = [variables[j] for j in ctx.rng.permutation(len(variables))]
        most = min(self.config.max_conditions, len(variables))
        # 1-3 conditions whatever the answerability: an unanswerable count names at least one
        # (unrecorded) path variable, so a count with no condition would give it away.
        k = int(ctx.rng.integers(1, most + 1))
        texts: list[str] = []
        params: list[dict] = []
        conditions = [sample_path_condition(ctx.repo, var, ctx.rng) for var in order[:k]]
        if answerable and k and ctx.rng.random() < self.config.zero_share:
            j = int(ctx.rng.integers(k))
            token = absent_path_token(ctx.repo, order[j], ctx.rng)
            if token is not None:
                conditions[j] = PathCondition(order[j].name, "is", token)
        texts = [c.text(ctx.repo) for c in conditions]
        params = [c.to_dict() for c in conditions]
        if not answerable:
            made = unrecorded_path_condition(ctx)
            if made is None:
                return None
            j = int(ctx.rng.integers(k))
            texts[j], params[j] = made
        count = len(matching_files(ctx.repo, conditions)) if answerable else None
        if texts:
            question = _fmt(ctx.choice(_COUNT_WHERE), conditions=" and ".join(texts))
        else:
            question = _fmt(ctx.choice(_COUNT_ALL))
        return ctx.question(
            question, "integer", count,
            reason=None if answerable else Reason.UNRECORDED_VARIABLE,
            params={"path_conditions": params},
        )  # fmt: skip


# Weights of the unrecorded path variables a count may name, so that a variable's name says as
# little as it can about the count's answerability: about the odds that a repository records
# each kind (procedural builder: a date 2 in 5, a researcher 7 in 20, each archetype variable
# about 1 in 2); a running number (recorded 3 in 4, and then asked often) gets 6, which brings
# its share of unanswerable counts near its share of answerable ones (a TF-IDF classifier's
# within-type AUC on count_files: 0.76 with no weights and every value, 0.58 with these).
UNRECORDED_WEIGHTS = {"sequence": 6.0, "date": 0.4 / 0.6, "researcher": 0.35 / 0.65, "lexicon": 1.0}


def unrecorded_path_variables(ctx: Context) -> list[tuple[PathVariable, float]]:
    """Path variables this repository does not have, as other repositories of its archetype
    do (its archetype's other path variables, a running number, a date, a researcher), with
    the weight of each (:data:`UNRECORDED_WEIGHTS`); none shares a label or a short name with
    one of the repository's own path variables."""
    import datetime as dt

    from isg_gym.simulator.lexicon import load_common, spec_archetype

    spec = ctx.spec
    own = spec.path_variables
    taken = {v.short for v in own} | {v.label for v in own} | {v.name for v in own}
    kinds = {v.kind for v in own}
    out: list[tuple[PathVariable, float]] = []
    arch = spec_archetype(spec)
    if arch is None:
        return out

    def add(kind: str, name: str, short: str, label: str, values: list[str], weight: float):
        if not {name, short, label} & taken and len(values) >= 2:
            var = PathVariable(key="var9", kind=kind, name=name, short=short, label=label,
                               unit="", description="A path variable this repository lacks.",
                               values=values)  # fmt: skip
            out.append((var, weight))

    rng = ctx.rng
    for pv in arch.path_variables:  # 2-6 of its values, as a repository using it would have
        kind = "categorical" if isinstance(pv.values[0], str) else "numeric"
        size = int(rng.integers(min(2, len(pv.values)), min(6, len(pv.values)) + 1))
        picked = sorted(rng.choice(len(pv.values), size, replace=False).tolist())
        values = [str(pv.values[i]) if kind == "categorical" else exact_num(float(pv.values[i]))
                  for i in picked]  # fmt: skip
        add(kind, pv.name, pv.short, pv.label, values, UNRECORDED_WEIGHTS["lexicon"])
    if "sequence" not in kinds:
        n = int(rng.integers(2, 25))
        add("sequence", f"{arch.sequence_name}_number"[:31], arch.sequence_name[:12],
            f"{arch.sequence_name} number", [str(i) for i in range(1, n + 1)],
            UNRECORDED_WEIGHTS["sequence"])  # fmt: skip
    if "date" not in kinds:
        start = dt.date(int(rng.integers(2012, 2026)), 1, 1)
        days = sorted(rng.choice(365, int(rng.integers(2, 11)), replace=False).tolist())
        dates = [(start + dt.timedelta(days=int(d))).isoformat() for d in days]
        add("date", "collection_date", "date", "collection date", dates,
            UNRECORDED_WEIGHTS["date"])  # fmt: skip
    if "researcher" not in kinds:
        common = load_common()
        fmt = RESEARCHER_FORMATS[int(rng.integers(len(RESEARCHER_FORMATS)))]
        lasts = rng.choice(len(common["last_names"]), int(rng.integers(2, 6)), replace=False)
        firsts = common["first_names"]
        names = []
        for i in lasts.tolist():
            last, first = common["last_names"][i], firsts[int(rng.integers(len(firsts)))]
            names.append(fmt.format(f=first[0].lower(), F=first[0], last=last.lower(), Last=last))
        add("researcher", "researcher", "by", "researcher", names,
            UNRECORDED_WEIGHTS["researcher"])  # fmt: skip
    return out


def unrecorded_path_condition(ctx: Context) -> tuple[str, dict] | None:
    """A condition on a path variable this repository does not have, worded and drawn as the
    conditions on its own path variables are (the same operators, values in its format)."""
    candidates = unrecorded_path_variables(ctx)
    if not candidates:
        return None
    weights = np.array([w for _, w in candidates])
    var = candidates[int(ctx.rng.choice(len(candidates), p=weights / weights.sum()))][0]
    tokens = [render_value(ctx.spec, var, v) for v in var.values]
    if var.kind in ("numeric", "sequence") and len(tokens) >= 3:
        op = _weighted(ctx.rng, PATH_OPS_NUMERIC)
    else:
        op = "is_one_of" if len(tokens) >= 3 and ctx.rng.random() < 0.3 else "is"
    subject = f'{var.label} (path component "{var.short}")'
    value: object
    if op == "is":
        value = tokens[int(ctx.rng.integers(len(tokens)))]
        text = f"{subject} is {value}"
    elif op == "is_one_of":
        k = int(ctx.rng.integers(2, len(tokens)))
        chosen = set(ctx.rng.choice(len(tokens), k, replace=False).tolist())
        value = [t for i, t in enumerate(tokens) if i in chosen]
        text = f"{subject} is one of " + ", ".join(value[:-1]) + " or " + value[-1]
    else:
        value = sorted(float(v) for v in var.values)[int(ctx.rng.integers(len(var.values)))]
        words = {"gt": "greater than", "lt": "less than", "ge": "at least", "le": "at most"}
        text = f"{subject} is {words[op]} {exact_num(value)}"
    params = {"variable": None, "label": var.label, "short": var.short, "op": op, "value": value}
    return text, params
