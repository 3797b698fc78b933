"""Repository metadata questions: is there a README, and the project's title and abstract."""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register

_HAS_README = (
    "Does this repository contain a README file (README.md)? Answer yes or no.",
    "Is there a README.md at the root of this repository? Answer yes or no.",
    "Answer yes or no: does the repository include a README?",
)
_HAS_ENTRY = (
    "Does the directory `{directory}` contain an entry (a file or a sub-directory) named "
    "`{entry}`? Answer yes or no.",
    "Is there a file or folder called `{entry}` directly inside the directory `{directory}`? "
    "Answer yes or no.",
    "Answer yes or no: does `{directory}` directly contain an entry named `{entry}`?",
)
_TITLE = (
    "What is the title of the project, as given in the repository's README? "
    "Give the title exactly as written.",
    "According to the README, what is this project called? Give its title exactly as written.",
    "Quote the project title stated in the README.md of this repository.",
)
_ABSTRACT = (
    "What is the abstract of the project, as given in the repository's README? "
    "Give the abstract exactly as written.",
    "Quote the project's abstract from the README.md of this repository.",
    "According to the README, what is the abstract of this study? Reproduce it exactly.",
)


@register
class HasReadme(QuestionType):
    """Whether a directory contains an entry of a given name; "not possible" when that
    directory does not exist. (Whether the repository has a README.md is asked only with
    ``Config(root_share > 0)``: the root always exists, so that question is always answerable
    and its text tells a blind policy to guess; off by default since question generator v3.)

    The entries asked about are real names of the directory's files or sub-directories, or
    the same names with one value replaced by a value no file has, rendered as the repository
    renders it (yes and no are equally likely); the absent directories are built the same way.
    """

    name = "has_readme"
    family = "repository_metadata"
    reasons = (Reason.NO_SUCH_PATH_VALUE,)

    @dataclass(frozen=True)
    class Config:
        root_share: float = 0.0  # the README question itself (always answerable: a tell)
        tries: int = 8

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO
        from isg_gym.qa.types.traversal import child_name, pick_directory

        cfg = self.config
        if answerable and ctx.rng.random() < cfg.root_share / (1 - DEFAULT_UNANSWERABLE_RATIO):
            has = ctx.repo.readme is not None
            params = {"directory": "", "entry": "README.md"}
            return ctx.question(ctx.choice(_HAS_README), "yes_no", has, params=params)
        want = bool(ctx.rng.random() < 0.5)
        for _ in range(cfg.tries):
            pick = pick_directory(ctx, exists=answerable)
            if pick is None:
                return None
            entry = child_name(ctx, pick, real=want)
            if entry is None:
                continue
            text = ctx.choice(_HAS_ENTRY).format(directory=pick.directory + "/", entry=entry)
            return ctx.question(
                text, "yes_no", want,
                reason=None if answerable else Reason.NO_SUCH_PATH_VALUE,
                params={"directory": pick.directory, "entry": entry},
            )  # fmt: skip
        return None


def _readme_reason(ctx: Context, shown: bool, missing_part: Reason) -> Reason | None:
    """Why a README field cannot be read (None when the README shows it)."""
    if ctx.repo.readme is None:
        return Reason.README_MISSING
    return None if shown else missing_part


@register
class Title(QuestionType):
    """The project title, answerable only when the README shows it."""

    name = "title"
    family = "repository_metadata"
    reasons = (Reason.README_MISSING, Reason.README_MISSING_TITLE)
    answerable_share = 0.25  # README present (1/2) and showing the title (1/2)
    unanswerable_share = 0.75

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        reason = _readme_reason(ctx, ctx.spec.readme.title, Reason.README_MISSING_TITLE)
        if answerable != (reason is None):
            return None
        title = ctx.spec.story.title
        if reason is None and f"# {title}\n" not in ctx.repo.readme:
            return None  # the README does not show the title verbatim
        return ctx.question(ctx.choice(_TITLE), "string", title, reason=reason, params={})


@register
class Abstract(QuestionType):
    """The project abstract, answerable only when the README shows it."""

    name = "abstract"
    family = "repository_metadata"
    reasons = (Reason.README_MISSING, Reason.README_MISSING_ABSTRACT)
    answerable_share = 0.125  # README (1/2), title (1/2), abstract (1/2)
    unanswerable_share = 0.875

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        reason = _readme_reason(ctx, ctx.spec.readme.abstract, Reason.README_MISSING_ABSTRACT)
        if answerable != (reason is None):
            return None
        abstract = ctx.spec.story.abstract
        if reason is None and abstract not in ctx.repo.readme:
            return None  # the README does not show the abstract verbatim
        return ctx.question(ctx.choice(_ABSTRACT), "text", abstract, reason=reason, params={})
