"""Repository metadata questions: is there a README, and the project's title and abstract."""

from __future__ import annotations

from isg_gym.qa.base import Context, Question, QuestionType, Reason, register

_HAS_README = (
    "Does this repository contain a README file (README.md)? Answer yes or no.",
    "Is there a README.md at the root of this repository? Answer yes or no.",
    "Answer yes or no: does the repository include a README?",
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
    """Whether the repository has a README.md (always answerable)."""

    name = "has_readme"
    family = "repository_metadata"
    reasons = ()

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        if not answerable:
            return None
        has = ctx.repo.readme is not None
        return ctx.question(ctx.choice(_HAS_README), "yes_no", has, params={})


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
