"""The curated lexicon: project archetypes per taxonomy field, as validated data.

Each ``data/lexicon/<field>.json`` file (named like the taxonomy file it covers) holds a list of
archetypes. An archetype is a plausible kind of study in that field: its title patterns, story
text, and pools of path variables, independent variables, dependent variables (with a causal
sketch of which inputs drive them, in which direction and through which functional form), and
variables that are described but never recorded.

Each ``data/lexicon/<field>.subdomains.json`` file holds the vocabulary of the field's
subdomains: what a subdomain's studies are about (topics), how they measure (methods), the
row-level covariates they may record (variables with unit, distribution and description), and
optionally which of the field's archetypes serve the subdomain (default: those of its domain).
:func:`subdomain_archetypes` adapts each serving archetype to the subdomain (its own id, topics,
methods and the covariates added to its independent variables); a subdomain without vocabulary
is served by its domain's archetypes unchanged. ``python -m isg_gym.simulator.lexicon``
validates every file and prints coverage.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from importlib import resources
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from isg_gym.simulator.taxonomy import load_taxonomy
from isg_gym.spec.distributions import ContinuousDistribution, IntegerDistribution
from isg_gym.spec.models import PATH_TOKEN_RE, Spec, VariableInfo, check_label

PLACEHOLDERS = ("subdomain", "domain", "factor", "focus")
_PLACEHOLDER_RE = re.compile(r"\{([a-z_]+)\}")
_M = TypeVar("_M", bound=BaseModel)


def _check_text(text: str, where: str) -> str:
    for name in _PLACEHOLDER_RE.findall(text):
        if name not in PLACEHOLDERS:
            raise ValueError(f"{where}: unknown placeholder {{{name}}}; allowed: {PLACEHOLDERS}")
    return text


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


VariableText = VariableInfo


class LexPathVariable(VariableText):
    """An experimental condition that is encoded in the directory layout."""

    short: str = Field(description="name used in paths, e.g. 'temp' in temp=300")
    values: list[float] | list[str] = Field(min_length=2, max_length=12)

    @field_validator("short")
    @classmethod
    def _short(cls, v: str) -> str:
        if not re.match(r"^[a-z][a-z0-9]{0,11}$", v):
            raise ValueError(f"short {v!r} must be 1-12 lowercase letters/digits")
        return v

    @field_validator("values")
    @classmethod
    def _values(cls, v: list) -> list:
        if len(set(v)) != len(v):
            raise ValueError("path variable values must be distinct")
        for x in v:
            if isinstance(x, str):
                if not PATH_TOKEN_RE.match(x):
                    raise ValueError(f"path value {x!r} must match {PATH_TOKEN_RE.pattern}")
                check_label(x)
            elif x < 0:
                raise ValueError(f"numeric path value {x} must be >= 0 (paths avoid '-')")
        return v


class LexCategorical(VariableText):
    kind: Literal["categorical"] = "categorical"
    values: list[str] = Field(min_length=2, max_length=12)
    weights: list[float] | None = None

    @model_validator(mode="after")
    def _check(self):
        for x in self.values:
            check_label(x)
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"{self.name}: categorical values must be distinct")
        if self.weights is not None and (
            len(self.weights) != len(self.values) or min(self.weights) <= 0
        ):
            raise ValueError(f"{self.name}: weights must be positive, one per value")
        return self


class LexInteger(VariableText):
    kind: Literal["integer"] = "integer"
    distribution: IntegerDistribution


class LexContinuous(VariableText):
    kind: Literal["continuous"] = "continuous"
    distribution: ContinuousDistribution
    decimals: int = Field(ge=0, le=6)
    clip: tuple[float | None, float | None] | None = None


Form = Literal["linear", "saturating", "optimum", "threshold", "log", "interaction", "level"]


class Effect(_Model):
    """One arrow of the causal sketch: ``input`` drives the dependent through ``form``."""

    input: str
    form: Form
    direction: Literal[1, -1]
    strength: float = Field(default=1.0, gt=0, le=5, description="relative weight")
    level: str | None = Field(default=None, description="form 'level': the category with effect")
    other: str | None = Field(default=None, description="form 'interaction': the second input")

    @model_validator(mode="after")
    def _check(self):
        if (self.form == "level") != (self.level is not None):
            raise ValueError(f"effect on {self.input}: 'level' is required exactly for form level")
        if (self.form == "interaction") != (self.other is not None):
            raise ValueError(f"effect on {self.input}: 'other' is required for form interaction")
        return self


class LexDependent(VariableText):
    kind: Literal["numeric", "categorical"]
    range: tuple[float, float] = Field(description="typical span of the score / value")
    decimals: int = Field(default=2, ge=0, le=6)
    bounds: tuple[float | None, float | None] | None = Field(
        default=None, description="physical limits to clip to, e.g. [0, 100] for a percentage"
    )
    noise: float = Field(default=0.1, ge=0.01, le=0.6, description="noise sd / half-range")
    labels: list[str] | None = Field(default=None, description="categorical: low to high score")
    effects: list[Effect] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self):
        if not self.range[0] < self.range[1]:
            raise ValueError(f"{self.name}: range must be increasing")
        if (self.kind == "categorical") != (self.labels is not None):
            raise ValueError(f"{self.name}: labels are required exactly for categorical kind")
        if self.labels is not None:
            if not 2 <= len(self.labels) <= 6 or len(set(self.labels)) != len(self.labels):
                raise ValueError(f"{self.name}: 2-6 distinct labels")
            for x in self.labels:
                check_label(x)
        return self


class Archetype(_Model):
    id: str
    domains: list[str] = Field(min_length=1)
    titles: list[str] = Field(min_length=3)
    setting: str = Field(min_length=40, description="one or two sentences: what is studied, where")
    goal: str = Field(min_length=30)
    hypothesis: str = Field(min_length=30)
    file_unit: str = Field(min_length=5, description="what one data file holds, e.g. 'one run'")
    row_unit: str = Field(min_length=5, description="what one row is, e.g. 'one sample'")
    sequence_name: str = Field(description="path name of the sequence placeholder, e.g. 'run'")
    identifier: VariableText
    id_prefix: str = Field(pattern=r"^[A-Z]{1,4}$")
    timestamp: VariableText
    interval_seconds: list[Annotated[int, Field(ge=1, le=7 * 86_400)]] = Field(
        min_length=1, description="plausible sampling intervals, at most a week"
    )
    path_variables: list[LexPathVariable] = Field(min_length=2)
    independent: list[LexCategorical | LexInteger | LexContinuous] = Field(min_length=4)
    dependent: list[LexDependent] = Field(min_length=3)
    confounders: list[VariableText] = Field(min_length=1)
    planned: list[VariableText] = Field(min_length=1, description="planned, never recorded")
    topics: list[str] = Field(default=[], description="set by subdomain specialisation")
    methods: list[str] = Field(default=[], description="set by subdomain specialisation")

    @field_validator("titles", "setting", "goal", "hypothesis")
    @classmethod
    def _placeholders(cls, v):
        for text in [v] if isinstance(v, str) else v:
            _check_text(text, "text")
        return v

    @model_validator(mode="after")
    def _references(self):
        names: list[str] = [self.identifier.name, self.timestamp.name]
        names += [v.name for v in self.path_variables]
        names += [v.name for v in self.independent]
        dep_names = [v.name for v in self.dependent]
        unrecorded = [v.name for v in self.confounders + self.planned]
        everything = names + dep_names + unrecorded
        dupes = {n for n in everything if everything.count(n) > 1}
        if dupes:
            raise ValueError(f"archetype {self.id}: duplicate variable names {sorted(dupes)}")
        kinds = {v.name: ("categorical" if isinstance(v.values[0], str) else "numeric")
                 for v in self.path_variables}  # fmt: skip
        kinds |= {v.name: "categorical" if v.kind == "categorical" else "numeric"
                  for v in self.independent}  # fmt: skip
        for dep in self.dependent:
            for eff in dep.effects:
                for ref in filter(None, (eff.input, eff.other)):
                    if ref not in kinds:
                        raise ValueError(
                            f"archetype {self.id}, dependent {dep.name}: input {ref!r} is not a "
                            "path variable, independent variable or earlier dependent"
                        )
                want = "categorical" if eff.form == "level" else "numeric"
                if kinds[eff.input] != want:
                    raise ValueError(
                        f"archetype {self.id}, {dep.name}: form {eff.form!r} needs a {want} "
                        f"input, {eff.input!r} is {kinds[eff.input]}"
                    )
                if eff.other is not None and kinds[eff.other] != "numeric":
                    raise ValueError(f"archetype {self.id}: interaction partner must be numeric")
                if eff.level is not None:
                    pool = next(
                        v.values for v in [*self.path_variables, *self.independent]
                        if v.name == eff.input
                    )  # fmt: skip
                    if eff.level not in pool:
                        raise ValueError(
                            f"archetype {self.id}: level {eff.level!r} not a value of {eff.input}"
                        )
            kinds[dep.name] = "categorical" if dep.kind == "categorical" else "numeric"
        return self


class FieldLexicon(_Model):
    field: str = Field(description="taxonomy file stem, e.g. 'natural_physics'")
    label: str = Field(description="human name of the field, e.g. 'Physics'")
    archetypes: list[Archetype] = Field(min_length=3)

    @model_validator(mode="after")
    def _coverage(self):
        taxonomy = load_taxonomy()
        if self.field not in taxonomy:
            raise ValueError(f"unknown field {self.field!r}; known: {sorted(taxonomy)}")
        known = set(taxonomy[self.field])
        covered: set[str] = set()
        for arch in self.archetypes:
            unknown = set(arch.domains) - known
            if unknown:
                raise ValueError(f"archetype {arch.id}: unknown domains {sorted(unknown)}")
            covered |= set(arch.domains)
        if known - covered:
            raise ValueError(
                f"{self.field}: domains without an archetype {sorted(known - covered)}"
            )
        ids = [a.id for a in self.archetypes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.field}: duplicate archetype ids")
        return self


_PHRASE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ,()'/+.-]{2,58}[A-Za-z0-9)]$")


def _check_phrases(phrases: list[str], where: str) -> list[str]:
    for text in phrases:
        if not _PHRASE_RE.match(text) or "  " in text:
            raise ValueError(
                f"{where}: {text!r} must be a 4-60 character phrase of letters, digits, spaces "
                "and ,()'/+.- (no braces, no final full stop)"
            )
    if len(set(phrases)) != len(phrases):
        raise ValueError(f"{where}: phrases must be distinct")
    return phrases


class SubdomainVocabulary(_Model):
    """A subdomain's own words, written to fit every archetype that serves it."""

    topics: list[str] = Field(min_length=3, max_length=6, description=(
        "what its studies are about: noun phrases that read well after 'in' (lower case but for "
        "names and acronyms)"))  # fmt: skip
    methods: list[str] = Field(min_length=2, max_length=5, description=(
        "how its studies measure: noun phrases that read well after 'with'"))  # fmt: skip
    variables: list[
        Annotated[LexCategorical | LexInteger | LexContinuous, Field(discriminator="kind")]
    ] = Field(default=[], max_length=4, description="row-level covariates (no dependent uses them)")
    archetypes: list[str] | None = Field(
        default=None, description="ids of the field's archetypes serving it (default: its domain's)"
    )

    @field_validator("topics", "methods")
    @classmethod
    def _phrases(cls, v: list[str]) -> list[str]:
        return _check_phrases(v, "vocabulary")


class FieldSubdomains(_Model):
    field: str = Field(description="taxonomy file stem, e.g. 'natural_physics'")
    domains: dict[str, dict[str, SubdomainVocabulary]] = Field(
        description="domain -> subdomain -> vocabulary (a subdomain may be left out)"
    )

    @model_validator(mode="after")
    def _known(self):
        taxonomy = load_taxonomy()
        if self.field not in taxonomy:
            raise ValueError(f"unknown field {self.field!r}; known: {sorted(taxonomy)}")
        archetypes = {a.id: a for a in load_lexicon(self.field).archetypes}
        for domain, subdomains in self.domains.items():
            known = taxonomy[self.field].get(domain)
            if known is None:
                raise ValueError(f"{self.field}: unknown domain {domain!r}")
            for sub, vocab in subdomains.items():
                if sub not in known:
                    raise ValueError(f"{self.field}/{domain}: unknown subdomain {sub!r}")
                for arch_id in vocab.archetypes or []:
                    if arch_id not in archetypes:
                        raise ValueError(f"{sub}: unknown archetype {arch_id!r}")
                for arch in _serving(archetypes, domain, vocab):
                    _specialise(arch, sub, vocab)  # raises on a clash of variable names
        return self


def _serving(
    archetypes: dict[str, Archetype], domain: str, vocab: SubdomainVocabulary | None
) -> list[Archetype]:
    if vocab is not None and vocab.archetypes:
        return [archetypes[i] for i in vocab.archetypes]
    return [a for a in archetypes.values() if domain in a.domains]


def subdomain_slug(subdomain: str) -> str:
    """``'Quantum Computing Experiments'`` -> ``'quantum_computing_experiments'``."""
    return re.sub(r"[^a-z0-9]+", "_", subdomain.lower()).strip("_")


def _specialise(arch: Archetype, subdomain: str, vocab: SubdomainVocabulary) -> Archetype:
    """``arch`` adapted to a subdomain: its id ``<archetype>/<subdomain slug>``, the subdomain's
    topics and methods, and its covariates appended to the independent variables. The parts are
    validated models already, so only the one new constraint is checked: no covariate may share a
    name with a variable of the archetype or of the builder (a copy, not a re-validation, keeps
    the first build of a field fast)."""
    names = {arch.identifier.name, arch.timestamp.name, "researcher", "collection_date",
             f"{arch.sequence_name}_number"[:31]}  # fmt: skip
    for group in (arch.path_variables, arch.independent, arch.dependent, arch.confounders,
                  arch.planned):  # fmt: skip
        names |= {v.name for v in group}
    covariates = [v.name for v in vocab.variables]
    if clash := sorted(names.intersection(covariates)):
        raise ValueError(f"archetype {arch.id} in subdomain {subdomain!r}: duplicate variable "
                         f"names {clash}")  # fmt: skip
    if len(set(covariates)) != len(covariates):
        raise ValueError(f"subdomain {subdomain!r}: duplicate covariate names {covariates}")
    return _share_fields_set(arch.model_copy(update={
        "id": f"{arch.id}/{subdomain_slug(subdomain)}", "topics": list(vocab.topics),
        "methods": list(vocab.methods), "independent": [*arch.independent, *vocab.variables],
    }))  # fmt: skip


@cache
def load_subdomains(field: str) -> FieldSubdomains:
    """The validated subdomain vocabulary of one field (cached; empty if the file is absent)."""
    path = resources.files("isg_gym.data.lexicon").joinpath(f"{field}.subdomains.json")
    if not path.is_file():
        return FieldSubdomains(field=field, domains={})
    return share_fields_sets(FieldSubdomains.model_validate_json(path.read_text("utf-8")))


@cache
def subdomain_archetypes(field: str, domain: str, subdomain: str) -> tuple[Archetype, ...]:
    """The archetypes serving one subdomain: adapted to its vocabulary where the lexicon has
    one, else its domain's archetypes as they are."""
    archetypes = {a.id: a for a in load_lexicon(field).archetypes}
    vocab = load_subdomains(field).domains.get(domain, {}).get(subdomain)
    serving = _serving(archetypes, domain, vocab)
    if vocab is None:
        return tuple(serving)
    return tuple(_specialise(a, subdomain, vocab) for a in serving)


def spec_archetype(spec: Spec) -> Archetype | None:
    """The archetype a procedural Spec was built from (``spec.archetype``), or None (a Spec of
    another builder)."""
    t = spec.taxonomy
    try:
        candidates = subdomain_archetypes(t.field, t.domain, t.subdomain)
    except (FileNotFoundError, KeyError):
        return None
    return next((a for a in candidates if a.id == spec.archetype), None)


@cache
def load_lexicon(field: str) -> FieldLexicon:
    """The validated lexicon of one taxonomy field (cached)."""
    text = resources.files("isg_gym.data.lexicon").joinpath(f"{field}.json").read_text("utf-8")
    return share_fields_sets(FieldLexicon.model_validate_json(text))  # pydantic's parser: faster


_FIELDS_SETS: dict[frozenset[str], set[str]] = {}


def share_fields_sets(root: _M) -> _M:
    """``root`` with every model under it (``root`` included) holding one shared set object per
    distinct ``model_fields_set``; returns ``root``.

    pydantic gives each validated instance a set of its own of the field names the input gave:
    about 450 bytes, 40% of what a field's lexicon occupies. The lexicon's models are frozen, so
    pydantic never adds to these sets (``model_copy`` copies its set before it adds the updated
    names): sharing one set among equal ones is what ``model_construct(_fields_set=...)`` does,
    without building the models again.
    """
    stack: list[object] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, BaseModel):
            stack.extend(_share_fields_set(item).__dict__.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return root


def _share_fields_set(model: _M) -> _M:
    """``model`` holding the shared set equal to its ``model_fields_set`` (one model, not the
    models under it)."""
    names = model.__pydantic_fields_set__
    shared = _FIELDS_SETS.setdefault(frozenset(names), names)
    if shared is not names:
        object.__setattr__(model, "__pydantic_fields_set__", shared)
    return model


@cache
def load_common() -> dict:
    """Field-independent word lists (researcher names)."""
    return json.loads(resources.files("isg_gym.data.lexicon").joinpath("_common.json").read_text())


def main(argv: list[str] | None = None) -> int:
    """Validate lexicon files (all by default) and print their coverage."""
    fields = (argv if argv else None) or sorted(load_taxonomy())
    failed = 0
    for field in fields:
        try:
            lex = load_lexicon(field)
        except FileNotFoundError:
            print(f"{field}: MISSING")
            failed += 1
        except Exception as err:  # report every file, then fail
            print(f"{field}: INVALID\n{err}")
            failed += 1
        else:
            print(f"{field}: ok, {len(lex.archetypes)} archetypes")
        try:
            subs = load_subdomains(field)
        except Exception as err:  # report every file, then fail
            print(f"{field}.subdomains: INVALID\n{err}")
            failed += 1
            continue
        total = sum(len(s) for s in load_taxonomy()[field].values())
        own = sum(len(s) for s in subs.domains.values())
        print(f"{field}.subdomains: ok, {own} of {total} subdomains with their own vocabulary")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
