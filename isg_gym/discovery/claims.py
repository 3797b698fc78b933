"""Discovery claims: the schema, parsing (tool arguments or a final message), and resolution of
the names a claim uses to the repository's variables.

A claim is ``{"outcome", "factor", "relation", "scope", "evidence"}``:

- ``outcome``: a measured outcome (a dependent column), by name or label;
- ``factor``: a recorded column or path variable (by name, label or the README's placeholder),
  or a variable the project describes but did not record;
- ``relation``: ``increases``, ``decreases``, ``no effect``, ``depends on`` (the factor matters,
  but not in one direction: non-monotonic, or an interaction whose sign changes), or
  ``untestable`` (the factor, or the outcome, is not in the data, so the data cannot test it;
  ``outcome`` may then be omitted);
- ``scope`` (optional): path conditions the claim is restricted to, ``{"variable": value}`` or
  ``{"variable": [values]}``, values as in the paths or the README;
- ``evidence``: ids of the ``run_python_code`` calls that support it (each call's output starts
  with its id).

Anything else is a :class:`ClaimError` whose message says what was wrong and restates the
schema; the env shows it as an error observation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from isg_gym.discovery.program import Program
from isg_gym.repository.index import render_token, render_value
from isg_gym.spec.models import Spec

MAX_CLAIMS = 300
MAX_TEXT = 200
MAX_EVIDENCE = 50
UNTESTABLE = "untestable"
CLAIM_RELATIONS = ("increases", "decreases", "no effect", "depends on", UNTESTABLE)

SCHEMA_TEXT = """\
Each finding is a JSON object:
  {"outcome": "<measured outcome>", "factor": "<condition or variable>",
   "relation": "increases" | "decreases" | "no effect" | "depends on" | "untestable",
   "scope": {"<path variable>": "<value>" or ["<value>", ...]},   (optional)
   "evidence": [<run_python_code call ids>]}
- relation "increases"/"decreases": the outcome rises/falls as the factor increases;
  "depends on": the factor matters but not in one direction (non-monotonic, or the sign changes
  with other conditions; also use it for a factor or outcome without an order, e.g. categories);
  "no effect": the factor does not affect the outcome;
  "untestable": the factor (a variable the project names but did not record) cannot be tested
  with these data ("outcome" may then be omitted).
- scope restricts a claim to files whose path variables have the given values.
- evidence lists the ids of run_python_code calls (shown as "call id: N" in their output) that
  ran the analysis supporting the claim."""

EXAMPLES_TEXT = """\
Example:
  submit_findings(findings=[
    {"outcome": "yield", "factor": "temperature", "relation": "increases", "evidence": [2]},
    {"outcome": "yield", "factor": "site", "relation": "depends on", "evidence": [2, 3]},
    {"outcome": "yield", "factor": "ph", "relation": "decreases",
     "scope": {"site": "north"}, "evidence": [3]},
    {"outcome": "yield", "factor": "batch_number", "relation": "no effect", "evidence": [2]},
    {"factor": "soil moisture", "relation": "untestable", "evidence": []}])"""


class ClaimError(ValueError):
    """Findings that do not follow the schema (the message is shown to the agent)."""


def _error(message: str) -> ClaimError:
    return ClaimError(f"{message}\n{SCHEMA_TEXT}")


def normalise(text: str) -> str:
    """A name as compared: lower case, runs of other characters as one underscore."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


class Claim(BaseModel):
    """One finding as submitted (names not yet resolved)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    outcome: str | None = Field(default=None, max_length=MAX_TEXT)
    factor: str = Field(min_length=1, max_length=MAX_TEXT)
    relation: str
    scope: dict[str, str | int | float | list[str | int | float]] = Field(default_factory=dict)
    evidence: list[int] = Field(default_factory=list, max_length=MAX_EVIDENCE)

    @field_validator("relation", mode="before")
    @classmethod
    def _relation(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError(f"must be one of {list(CLAIM_RELATIONS)}")
        text = re.sub(r"[\s_-]+", " ", value.strip().lower())
        if text not in CLAIM_RELATIONS:
            raise ValueError(f"{value!r} is not one of {list(CLAIM_RELATIONS)}")
        return text

    @field_validator("evidence", mode="before")
    @classmethod
    def _evidence(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, int | str):
            value = [value]
        if isinstance(value, list):
            return [int(v) if isinstance(v, str) and v.strip().isdigit() else v for v in value]
        return value

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> Any:
        return {} if value is None else value


def _describe(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        where = ".".join(str(x) for x in err.get("loc", ())) or "claim"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def parse_findings(value: Any) -> list[Claim]:
    """Claims from ``submit_findings``' ``findings`` argument: a list of claim objects (or
    that list as a JSON string, or an object holding it under ``findings``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _error("`findings` is a string that is not JSON") from None
    if isinstance(value, dict) and set(value) == {"findings"}:
        value = value["findings"]
    if not isinstance(value, list):
        raise _error(f"`findings` must be a list of findings, got {type(value).__name__}")
    if len(value) > MAX_CLAIMS:
        raise _error(f"too many findings ({len(value)}; at most {MAX_CLAIMS})")
    claims = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _error(f"finding {i} must be an object, got {type(item).__name__}")
        try:
            claims.append(Claim.model_validate(item))
        except ValidationError as exc:
            raise _error(f"finding {i} is malformed: {_describe(exc.errors())}") from None
    return claims


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def findings_in_text(text: str) -> Any:
    """The findings a final message holds: the first JSON list, or object with ``findings``,
    in it (inside a code fence or not); raises :class:`ClaimError` when there is none."""
    decoder = json.JSONDecoder()
    blocks = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for block in blocks:
        for start, char in enumerate(block):
            if char not in "[{":
                continue
            try:
                value, _ = decoder.raw_decode(block, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, list) or (isinstance(value, dict) and "findings" in value):
                return value
    raise _error("the message holds no findings: call submit_findings, or end with a JSON list "
                 "of findings")  # fmt: skip


@dataclass(frozen=True)
class Resolved:
    """A claim with its names resolved: ``outcome``/``factor`` are variable names (recorded or
    unrecorded), ``scope`` maps path variables to canonical values."""

    claim: Claim
    outcome: str | None
    factor: str
    relation: str
    scope: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unrecorded: tuple[str, ...] = ()  # names of unrecorded variables the claim mentions

    @property
    def evidence(self) -> list[int]:
        return self.claim.evidence


class Resolver:
    """Maps the names and values claims use to a Spec's variables."""

    def __init__(self, spec: Spec) -> None:
        program = Program(spec)
        self.variables = program.variables
        self.outcomes = program.outcomes
        self.unrecorded = {u.name: u.label for u in spec.unrecorded}
        # names win over labels and placeholders, recorded variables over unrecorded ones
        aliases = [(u.label, u.name) for u in spec.unrecorded]
        aliases += [(u.name, u.name) for u in spec.unrecorded]
        aliases += [(a, n) for n, v in self.variables.items() for a in (v.label, v.short) if a]
        aliases += [(n, n) for n in self.variables]
        self._names = {normalise(alias): name for alias, name in aliases}
        self._values: dict[str, dict[str, str]] = {}
        for var in spec.path_variables:
            forms: dict[str, str] = {}
            for value in var.values:
                for form in (value, render_value(spec, var, value), render_token(spec, var, value)):
                    forms[form.lower()] = value
            self._values[var.name] = forms
        self._numeric = {v.name for v in spec.path_variables if v.kind in ("numeric", "sequence")}

    def name(self, text: str) -> str | None:
        return self._names.get(normalise(text))

    def known(self) -> str:
        recorded = ", ".join(self.variables)
        unrecorded = ", ".join(self.unrecorded) or "none"
        return f"recorded: {recorded}; described but not recorded: {unrecorded}"

    def _value(self, variable: str, value: Any) -> str:
        forms = self._values[variable]
        if isinstance(value, bool):
            value = str(value)
        text = str(value).strip().lower()
        if text in forms:
            return forms[text]
        if variable in self._numeric:
            try:
                number = float(text)
            except ValueError:
                number = None
            for form, canonical in forms.items():
                if number is not None and form == canonical.lower() and float(form) == number:
                    return canonical
        shown = sorted(set(forms.values()))
        raise _error(f"scope: {variable} has no value {value!r}; its values: {shown}")

    def resolve(self, claim: Claim) -> Resolved:
        factor = self.name(claim.factor)
        if factor is None:
            raise _error(f"unknown factor {claim.factor!r}; known variables: {self.known()}")
        outcome = None
        if claim.outcome is not None and claim.outcome.strip():
            outcome = self.name(claim.outcome)
            if outcome is None:
                raise _error(f"unknown outcome {claim.outcome!r}; the measured outcomes: "
                             f"{', '.join(self.outcomes)}")  # fmt: skip
        if claim.relation != UNTESTABLE:
            if outcome is None:
                raise _error("`outcome` is required unless the relation is 'untestable'")
            if outcome not in self.outcomes and outcome not in self.unrecorded:
                raise _error(f"{outcome!r} is not a measured outcome; the measured outcomes: "
                             f"{', '.join(self.outcomes)}")  # fmt: skip
            if outcome == factor:
                raise _error(f"the factor and the outcome are the same variable ({outcome})")
        scope: dict[str, tuple[str, ...]] = {}
        for key, values in claim.scope.items():
            variable = self.name(key)
            if variable is None or variable not in self._values:
                paths = ", ".join(self._values)
                raise _error(f"scope: {key!r} is not a path variable; path variables: {paths}")
            if variable == factor:
                raise _error(f"scope: a claim about {factor} cannot fix {factor} itself")
            items = values if isinstance(values, list) else [values]
            if not items:
                raise _error(f"scope: {key!r} lists no value")
            scope[variable] = tuple(sorted({self._value(variable, v) for v in items}))
        mentioned = tuple(n for n in (outcome, factor) if n in self.unrecorded)
        return Resolved(claim, outcome, factor, claim.relation, scope, mentioned)

    def resolve_all(self, claims: list[Claim]) -> list[Resolved]:
        out = []
        for i, claim in enumerate(claims):
            try:
                out.append(self.resolve(claim))
            except ClaimError as exc:
                raise ClaimError(f"finding {i}: {exc}") from None
        return out
