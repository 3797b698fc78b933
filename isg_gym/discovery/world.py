"""A Discovery repository: the procedural Spec of a seed, transformed (a copy; the builder's
output and ISG-v0's repositories are untouched).

- The README shows the title and the abstract, and the abstract ends with the directional
  hypothesis (:mod:`.hypothesis`) and names the variables the project describes but did not
  record.
- In a counterfactual repository (a share ``counterfactual_share`` of seeds, drawn from
  ``derive(seed, "discovery-counterfactual")``), the hypothesis factor's terms in the outcome's
  expression are negated: the data then contradict the stated hypothesis. Everything else, the
  story's text included, is the factual twin's (same files, same rows but for that outcome and
  what depends on it).

Seeds whose program offers no hypothesis pair (about 3%) are not Discovery repositories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

from isg_gym.discovery.hypothesis import Hypothesis, choose, negate_terms
from isg_gym.discovery.program import Program
from isg_gym.discovery.truth import Truth, compute_truth
from isg_gym.repository import Repository
from isg_gym.seeding import check_seed, derive
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.models import DependentColumn, ReadmeVisibility, Spec

DEFAULT_COUNTERFACTUAL_SHARE = 0.25
UNRECORDED_SENTENCE = "Described in the study plan but not recorded in these data: {listing}."
_STATEMENTS = {
    "increases": (
        "Our main hypothesis is that {outcome} increases with {factor}.",
        "We hypothesise that higher {factor} leads to higher {outcome}.",
        "We expect {outcome} to rise as {factor} increases.",
    ),
    "decreases": (
        "Our main hypothesis is that {outcome} decreases with {factor}.",
        "We hypothesise that higher {factor} leads to lower {outcome}.",
        "We expect {outcome} to fall as {factor} increases.",
    ),
}


class NotADiscoveryRepository(ValueError):
    """The seed's program offers no pair for a directional hypothesis."""


def is_counterfactual(seed: int, share: float = DEFAULT_COUNTERFACTUAL_SHARE) -> bool:
    """Whether seed ``seed`` is counterfactual at this share (before eligibility)."""
    return bool(derive(seed, "discovery-counterfactual").random() < share)


def _listing(labels: list[str]) -> str:
    """Labels joined by "; " (a label may hold "and" or a comma: "sensor and cable mass
    loading"; a semicolon keeps the list unambiguous)."""
    return "; ".join(labels)


def hypothesis_sentence(spec: Spec, hypothesis: Hypothesis) -> str:
    """The stated hypothesis, phrased by a template drawn from the seed."""
    variables = Program(spec).variables
    templates = _STATEMENTS[hypothesis.stated]
    template = templates[int(derive(spec.seed, "discovery-hypothesis-text").integers(3))]
    return template.format(outcome=variables[hypothesis.outcome].label,
                           factor=variables[hypothesis.factor].label)  # fmt: skip


def transform(spec: Spec, hypothesis: Hypothesis) -> Spec:
    """The Discovery Spec of ``spec`` (module docstring): a validated copy."""
    data = spec.model_dump()
    extra = [hypothesis_sentence(spec, hypothesis)]
    if spec.unrecorded:
        extra.append(UNRECORDED_SENTENCE.format(listing=_listing([u.label for u in
                                                                  spec.unrecorded])))  # fmt: skip
    story = data["story"]
    story["abstract"] = " ".join([story["abstract"].rstrip(), *extra])
    story["description"] = story["description"].replace("\n\nDesign.", f" {extra[0]}\n\nDesign.", 1)
    data["readme"] = ReadmeVisibility(present=True, title=True, abstract=True).model_dump()
    if hypothesis.counterfactual:
        for col in data["columns"]:
            if col["name"] == hypothesis.outcome:
                col["expression"] = negate_terms(col["expression"], hypothesis.factor)
    return Spec.model_validate(data)


@dataclass(frozen=True)
class DiscoveryWorld:
    """One Discovery repository: its transformed Spec and the stated hypothesis."""

    seed: int
    spec: Spec
    hypothesis: Hypothesis

    @cached_property
    def repo(self) -> Repository:
        """The files (their ``key`` hashes the transformed Spec: apart from ISG-v0's repository
        of the same seed)."""
        return Repository(self.spec)

    @cached_property
    def truth(self) -> Truth:
        return compute_truth(self.repo)

    @property
    def outcomes(self) -> list[str]:
        return [c.name for c in self.spec.columns if isinstance(c, DependentColumn)]

    def files_in(self, scope: Mapping[str, tuple[str, ...]] | None = None) -> list[str]:
        """The data files whose path variables take the scope's values (all with no scope)."""
        repo = self.repo
        if not scope:
            return list(repo.data_files)
        return [path for path in repo.data_files
                if all(repo.path_values(path)[name] in values
                       for name, values in scope.items())]  # fmt: skip


@lru_cache(maxsize=16)
def discovery_world(
    seed: int, counterfactual_share: float = DEFAULT_COUNTERFACTUAL_SHARE
) -> DiscoveryWorld:
    """The Discovery repository of ``seed`` (cached; raises
    :class:`NotADiscoveryRepository` for the seeds that have none)."""
    seed = check_seed(seed)
    if not 0.0 <= counterfactual_share <= 1.0:
        raise ValueError(f"counterfactual_share must be within [0, 1], got {counterfactual_share}")
    base = build_spec(seed)
    chosen = choose(base)
    if chosen is None:
        raise NotADiscoveryRepository(
            f"repository {seed} has no pair for a directional hypothesis; not a Discovery "
            "repository (about 3% of seeds)"
        )
    counterfactual = is_counterfactual(seed, counterfactual_share)
    hypothesis = Hypothesis(chosen.outcome, chosen.factor, chosen.stated, counterfactual,
                            chosen.effect)  # fmt: skip
    return DiscoveryWorld(seed, transform(base, hypothesis), hypothesis)
