"""The embedded default builder: ``build_spec(seed)`` from the curated lexicon, no model needed.

A seed picks a taxonomy triple, an archetype of that field fitting the domain, a subset of the
archetype's variables with parameters jittered within their plausible ranges, dependent
expressions composed from the causal sketch, a path template, a file format and README
visibility. Each decision draws from its own labelled stream, so the builder is a pure function
of the seed.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

import numpy as np

from isg_gym.seeding import check_seed, derive
from isg_gym.simulator.expressions import InputScale, compose, num
from isg_gym.simulator.lexicon import (
    Archetype,
    Effect,
    LexCategorical,
    LexContinuous,
    LexDependent,
    LexInteger,
    LexPathVariable,
    load_common,
    subdomain_archetypes,
)
from isg_gym.simulator.story import Focus, write_story
from isg_gym.simulator.taxonomy import sample_triple
from isg_gym.spec import distributions as d
from isg_gym.spec.models import (
    DATE_FORMATS,
    EXPANSION_STYLES,
    FILE_FORMATS,
    CategoricalColumn,
    Column,
    ContinuousColumn,
    DatetimeColumn,
    DependentColumn,
    IdentifierColumn,
    IntegerColumn,
    Layout,
    PathVariable,
    ReadmeVisibility,
    Spec,
    VariableInfo,
)

RESEARCHER_FORMATS = ("{f}{last}", "{F}{Last}", "{last}{f}", "{f}.{last}", "{Last}")
MIN_COLUMNS, MAX_COLUMNS = 7, 19  # Spec.columns' limits
# Which described variables are recorded varies by repository (spec v2), so that a variable's
# name does not tell whether a repository records it: each confounder or planned variable of
# the archetype is recorded as a column with this probability, each independent variable the
# repository does not record is described as planned-but-unrecorded with UNCHOSEN_DESCRIBED,
# and each chosen independent that no dependent uses is demoted to unrecorded with DEMOTED.
PROMOTED = 0.6
UNCHOSEN_DESCRIBED = 0.5
DEMOTED = 0.15


def _text_of(v: VariableInfo) -> dict[str, str]:
    """A variable's name, label, unit and description (what ``model_dump`` gives, cheaper)."""
    return {"name": v.name, "label": v.label, "unit": v.unit, "description": v.description}


def _round(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _subset(rng: np.random.Generator, n: int, low: int, high: int) -> list[int]:
    """A sorted random subset of range(n) with a size uniform in [low, high]."""
    high = min(high, n)
    low = min(low, high)
    size = int(rng.integers(low, high + 1))
    return sorted(rng.choice(n, size, replace=False).tolist())


def _value_token(v: float | str) -> str:
    if isinstance(v, str):
        return v
    return np.format_float_positional(float(v), trim="-")


def _project_path_variables(
    arch: Archetype, rng: np.random.Generator
) -> list[tuple[LexPathVariable, list[str]]]:
    chosen = _subset(rng, len(arch.path_variables), 1, 3)
    out = []
    for i in chosen:
        pv = arch.path_variables[i]
        values = [_value_token(pv.values[j]) for j in _subset(rng, len(pv.values), 2, 6)]
        out.append((pv, values))
    return out


def _researchers(rng: np.random.Generator, count: int) -> list[str]:
    common = load_common()
    fmt = RESEARCHER_FORMATS[rng.integers(len(RESEARCHER_FORMATS))]
    firsts = common["first_names"]
    lasts = [common["last_names"][i] for i in rng.choice(len(common["last_names"]), count, False)]
    out = []
    for last in lasts:
        first = firsts[rng.integers(len(firsts))]
        out.append(fmt.format(f=first[0].lower(), F=first[0], last=last.lower(), Last=last))
    return out


def _dates(rng: np.random.Generator, count: int) -> list[str]:
    year = int(rng.integers(2012, 2026))
    days = np.sort(rng.choice(365, count, replace=False))
    start = dt.date(year, 1, 1)
    return [(start + dt.timedelta(days=int(x))).isoformat() for x in days]


def _path_variables(arch: Archetype, rng: np.random.Generator) -> list[PathVariable]:
    out: list[PathVariable] = []
    for k, (pv, values) in enumerate(_project_path_variables(arch, rng), start=1):
        kind = "categorical" if isinstance(pv.values[0], str) else "numeric"
        out.append(PathVariable(key=f"var{k}", kind=kind, values=values, short=pv.short,
                                **_text_of(pv)))  # fmt: skip
    extras = {
        "seq_number": rng.random() < 0.75,
        "researcher": rng.random() < 0.35,
        "date": rng.random() < 0.4,
    }
    while len(out) + sum(extras.values()) < 3:
        extras[next(k for k in ("seq_number", "date", "researcher") if not extras[k])] = True
    if extras["seq_number"]:
        n = int(rng.integers(2, 25))
        out.append(PathVariable(
            key="seq_number", kind="sequence", name=f"{arch.sequence_name}_number"[:31],
            short=arch.sequence_name[:12], label=f"{arch.sequence_name} number", unit="",
            description=f"Running number of the {arch.sequence_name} within its condition.",
            values=[str(i) for i in range(1, n + 1)],
        ))  # fmt: skip
    if extras["researcher"]:
        out.append(PathVariable(
            key="researcher", kind="researcher", name="researcher", short="by",
            label="researcher", unit="", description="Researcher who collected the data file.",
            values=_researchers(rng, int(rng.integers(2, 6))),
        ))  # fmt: skip
    if extras["date"]:
        out.append(PathVariable(
            key="date", kind="date", name="collection_date", short="date",
            label="collection date", unit="", description="Date on which the file was recorded.",
            values=_dates(rng, int(rng.integers(2, 11))),
        ))  # fmt: skip
    return out


def _layout(keys: list[str], rng: np.random.Generator) -> Layout:
    total = len(keys)
    levels = int(min(rng.integers(2, 5), total - 1))
    order = [keys[i] for i in rng.permutation(total)]
    if "seq_number" in order and rng.random() < 0.7:  # run numbers usually name the file
        order.remove("seq_number")
        order.append("seq_number")
    sizes = [1] * (levels + 1)
    for _ in range(total - levels - 1):
        open_slots = [i for i, s in enumerate(sizes) if s < 3]
        sizes[open_slots[rng.integers(len(open_slots))]] += 1
    groups, start = [], 0
    for size in sizes:
        groups.append(order[start : start + size])
        start += size
    joiners = ("-", "_")
    return Layout(
        levels=groups[:-1],
        level_joiners=[joiners[rng.integers(2)] for _ in range(levels)],
        filename=groups[-1],
        filename_joiner=joiners[rng.integers(2)],
        style=EXPANSION_STYLES[rng.integers(len(EXPANSION_STYLES))],
        date_format=DATE_FORMATS[rng.integers(len(DATE_FORMATS))],
        seq_width=int(rng.integers(1, 4)),
    )


def _jitter(dist, rng: np.random.Generator):
    """The lexicon's distribution with parameters moved within a plausible neighbourhood."""
    u = lambda lo, hi: rng.uniform(lo, hi)  # noqa: E731
    prob = lambda p: _round(min(max(p * u(0.8, 1.25), 0.01), 0.99))  # noqa: E731
    match dist:
        case d.Normal():
            return d.Normal(mean=_round(dist.mean + u(-0.2, 0.2) * dist.sd),
                            sd=_round(dist.sd * u(0.8, 1.25)))  # fmt: skip
        case d.Uniform():
            span = dist.high - dist.low
            return d.Uniform(low=_round(dist.low + u(0, 0.1) * span),
                             high=_round(dist.high - u(0, 0.1) * span))  # fmt: skip
        case d.LogNormal():
            return d.LogNormal(mu=_round(dist.mu + u(-0.2, 0.2) * dist.sigma),
                               sigma=_round(min(dist.sigma * u(0.85, 1.15), 3.0)))  # fmt: skip
        case d.Beta():
            return dist.model_copy(update={"a": _round(dist.a * u(0.8, 1.25)),
                                           "b": _round(dist.b * u(0.8, 1.25))})  # fmt: skip
        case d.Exponential():
            return d.Exponential(scale=_round(dist.scale * u(0.8, 1.25)))
        case d.Bernoulli() | d.Geometric():
            return dist.model_copy(update={"p": prob(dist.p)})
        case d.Binomial():
            return d.Binomial(n=dist.n, p=prob(dist.p))
        case d.NegativeBinomial():
            return d.NegativeBinomial(n=_round(dist.n * u(0.8, 1.25)), p=prob(dist.p))
        case d.Poisson():
            return d.Poisson(lam=_round(dist.lam * u(0.8, 1.25)))
    raise TypeError(f"unknown distribution {dist!r}")


def _missing_rate(rng: np.random.Generator) -> float:
    return round(float(rng.uniform(0.01, 0.1)), 3) if rng.random() < 0.2 else 0.0


def _independent_column(v, rng: np.random.Generator) -> Column:
    common = {**_text_of(v), "missing_rate": _missing_rate(rng)}
    if isinstance(v, LexCategorical):
        base = np.array(v.weights or [1.0] * len(v.values), dtype=float)
        probs = rng.dirichlet(base / base.sum() * 40)
        probs = np.maximum(np.round(probs, 3), 0.005)
        probs = [float(p) for p in probs / probs.sum()]
        probs[-1] = 1.0 - sum(probs[:-1])
        return CategoricalColumn(values=list(v.values), probabilities=probs, **common)
    if isinstance(v, LexInteger):
        return IntegerColumn(distribution=_jitter(v.distribution, rng), **common)
    assert isinstance(v, LexContinuous)
    return ContinuousColumn(distribution=_jitter(v.distribution, rng), decimals=v.decimals,
                            clip=v.clip, **common)  # fmt: skip


_UNRECORDED_WORDS = re.compile(
    r"\b(not|never|planned|unrecorded|unmeasured|unknown|no|without|could|would)\b", re.I
)


def _recorded_description(v: VariableInfo) -> str:
    """The lexicon's description of a confounder/planned variable, without the clause that says
    it is not recorded (the column's description in the README data dictionary)."""
    if not _UNRECORDED_WORDS.search(v.description):
        return v.description
    head = v.description.split(",")[0].strip().rstrip(".")
    if len(head) >= 10 and not _UNRECORDED_WORDS.search(head):
        return head + "."
    return f"{v.label[:1].upper()}{v.label[1:]}, recorded for each row."


def _described_column(v: VariableInfo, rng: np.random.Generator) -> ContinuousColumn:
    """A recorded column for a variable the lexicon only describes (a confounder or planned
    variable): positive, log-normal around a scale drawn per repository."""
    scale = 10.0 ** rng.uniform(-1, 3)
    decimals = int(min(max(3 - np.floor(np.log10(scale)), 0), 4))
    clip = (0.0, 100.0) if v.unit == "%" else None
    if clip is not None:
        scale = min(scale, 40.0)
    return ContinuousColumn(
        distribution=d.LogNormal(mu=_round(float(np.log(scale))),
                                 sigma=_round(rng.uniform(0.15, 0.5))),
        decimals=decimals, clip=clip, missing_rate=_missing_rate(rng),
        **(_text_of(v) | {"description": _recorded_description(v)}),
    )  # fmt: skip


def _recorded_split(
    arch: Archetype, independents: list, deps: list[LexDependent], n_fixed: int,
    rng: np.random.Generator,
) -> tuple[list, list[VariableInfo], list[VariableInfo], list[VariableInfo]]:  # fmt: skip
    """Per repository: which independents stay recorded, which described variables become
    columns, and which are described as unrecorded (confounders, planned)."""
    referenced = {e.input for dep in deps for e in dep.effects}
    referenced |= {e.other for dep in deps for e in dep.effects if e.other}
    chosen = {v.name for v in independents}
    kept, demoted = [], []
    for v in independents:
        if v.name not in referenced and rng.random() < DEMOTED and len(independents) > 3:
            demoted.append(VariableInfo(name=v.name, label=v.label, unit=v.unit,
                                        description=v.description))  # fmt: skip
        else:
            kept.append(v)
    described = [VariableInfo(name=v.name, label=v.label, unit=v.unit, description=v.description)
                 for v in arch.independent
                 if v.name not in chosen and rng.random() < UNCHOSEN_DESCRIBED]  # fmt: skip
    promoted: list[VariableInfo] = []
    confounders: list[VariableInfo] = []
    planned: list[VariableInfo] = []
    room = MAX_COLUMNS - n_fixed - len(kept) - len(deps)
    for group, out in ((arch.confounders, confounders), (arch.planned, planned)):
        for info in group:  # the lexicon's own VariableInfo (validated, frozen): shared as is
            if rng.random() < PROMOTED and len(promoted) < room:
                promoted.append(info)
            else:
                out.append(info)
    planned += demoted + described
    if not confounders and not planned:  # every repository describes something unrecorded
        back = promoted.pop(int(rng.integers(len(promoted))))
        (confounders if back.name in {v.name for v in arch.confounders} else planned).append(back)
    # Too few columns left (about 1 seed in 10,000): demoted variables are recorded again, in
    # their order, until the Spec has its minimum (no draw: every other seed is unchanged).
    short = MIN_COLUMNS - (n_fixed + len(kept) + len(promoted) + len(deps))
    back_again = {d.name for d in demoted[: max(short, 0)]}
    if back_again:
        still_demoted = {d.name for d in demoted} - back_again
        kept = [v for v in independents if v.name not in still_demoted]
        planned = [v for v in planned if v.name not in back_again]
    return kept, promoted, confounders, planned


def _scale_of_column(col: Column, log_inputs: set[str]) -> InputScale | None:
    """Centre and spread of a numeric column; log-scale statistics only if a log effect uses it."""
    if isinstance(col, IntegerColumn | ContinuousColumn):
        centre, sd = col.distribution.moments()
        nonneg = col.distribution.nonnegative or bool(
            isinstance(col, ContinuousColumn)
            and col.clip
            and col.clip[0] is not None
            and col.clip[0] >= 0
        )
        if not nonneg or col.name not in log_inputs:
            return InputScale(centre, max(sd, 1e-6), nonneg)
        sample = col.distribution.sample(derive(0, "log-scale", col.name), 2000)
        if isinstance(col, ContinuousColumn) and col.clip is not None:
            sample = np.clip(sample, col.clip[0], col.clip[1])
        return InputScale.from_samples(np.maximum(sample, 0), centre, max(sd, 1e-6))
    return None


def _scale_of_path(pv: PathVariable) -> InputScale | None:
    if pv.kind not in ("numeric", "sequence"):
        return None
    return _scale_of_values(tuple(pv.values))


# Sequences 1..n and the lexicon's value subsets recur across seeds: over 8,000 builds 1,606
# distinct, 84% hits at 1,024 entries and 86% at 4,096 (~530 bytes an entry).
@lru_cache(maxsize=1024)
def _scale_of_values(values: tuple[str, ...]) -> InputScale:
    return InputScale.from_samples(np.array([float(v) for v in values]))


@lru_cache(maxsize=4096)  # a function of the lexicon's dependent alone
def _scale_of_span(low: float, high: float, centre: float, scale: float) -> InputScale:
    return InputScale.from_samples(np.linspace(max(low, 0), high, 9), centre, scale)


def _dependent_column(
    dep: LexDependent, available: dict[str, InputScale], shares: dict[str, dict[str, float]],
    rng: np.random.Generator,
) -> tuple[DependentColumn, InputScale | None]:  # fmt: skip
    effects = [
        e for e in dep.effects
        if (e.input in available or e.input in shares)
        and (e.other is None or e.other in available)
    ]  # fmt: skip
    low, high = dep.range
    half = (high - low) / 2
    info = dict(name=dep.name, label=dep.label, unit=dep.unit, description=dep.description)
    noise_sd = _round(dep.noise * half * rng.uniform(0.8, 1.2))
    if dep.kind == "categorical":
        score = compose(effects, available, shares, low, high, rng)
        k = len(dep.labels)
        cuts = ", ".join(num(low + (high - low) * i / k) for i in range(1, k))
        labels = ", ".join(repr(x) for x in dep.labels)
        column = DependentColumn(expression=f"cut({score}, [{cuts}], [{labels}])",
                                 noise_sd=noise_sd, missing_rate=_missing_rate(rng),
                                 **info)  # fmt: skip
        return column, None
    expression = compose(effects, available, shares, low, high, rng)
    column = DependentColumn(expression=expression, noise_sd=noise_sd, decimals=dep.decimals,
                             clip=dep.bounds, missing_rate=_missing_rate(rng), **info)  # fmt: skip
    nonneg = dep.bounds is not None and dep.bounds[0] is not None and dep.bounds[0] >= 0
    centre, scale = (low + high) / 2, max(half / 1.5, 1e-6)
    if not nonneg:
        return column, InputScale(centre, scale, False)
    return column, _scale_of_span(low, high, centre, scale)


def _choose_variables(
    arch: Archetype, rng: np.random.Generator, path_names: set[str]
) -> tuple[list, list[LexDependent]]:
    """Dependents and independents; every dependent keeps at least one of its causal inputs."""
    deps = [arch.dependent[i] for i in _subset(rng, len(arch.dependent), 2, 6)]
    referenced = {e.input for dep in deps for e in dep.effects}
    referenced |= {e.other for dep in deps for e in dep.effects if e.other}
    pool = arch.independent
    n_ind = int(rng.integers(min(3, len(pool)), len(pool) + 1))
    n_ind = max(n_ind, 5 - len(deps))
    n_ind = min(n_ind, 17 - len(deps), len(pool))
    priority = rng.random(len(pool)) - np.array([0.5 * (v.name in referenced) for v in pool])
    chosen = {int(i) for i in np.argsort(priority, kind="stable")[:n_ind]}
    position = {v.name: i for i, v in enumerate(pool)}
    available = set(path_names) | {pool[i].name for i in chosen}
    for dep in deps:
        if not any(e.input in available and (e.other or e.input) in available for e in dep.effects):
            extra = next((e.input for e in dep.effects if e.input in position and e.other is None),
                         None)  # fmt: skip
            if extra is not None:
                chosen.add(position[extra])
                available.add(extra)
        available.add(dep.name)
    return [pool[i] for i in sorted(chosen)], deps


def _live(effect: Effect, scales: dict[str, InputScale], shares: dict[str, dict]) -> bool:
    """Whether an effect is a term of its dependent's expression that varies in the data."""
    if effect.form == "level":
        return shares.get(effect.input, {}).get(effect.level, 0) > 0
    return effect.input in scales and (effect.other is None or effect.other in scales)


def _pick_factor_focus(
    lex_deps: list[LexDependent], path_vars: list[PathVariable], labels: dict[str, str],
    scales: dict[str, InputScale], shares: dict[str, dict],
) -> tuple[str, str, bool]:  # fmt: skip
    """(factor, focus, linked) for the story: the first numeric dependent with a live term in
    its expression, and that term's input with the largest strength (``linked``); else the first
    dependent and a path condition, which the story then names without claiming a relation."""
    numeric = [ld for ld in lex_deps if ld.kind == "numeric"] or lex_deps
    for dep in numeric:
        factor = next((labels[e.input] for e in sorted(dep.effects, key=lambda e: -e.strength)
                       if _live(e, scales, shares)), None)  # fmt: skip
        if factor is not None:
            return factor, dep.label, True
    factor = next((p.label for p in path_vars if p.kind in ("numeric", "categorical")),
                  path_vars[0].label)  # fmt: skip
    return factor, numeric[0].label, False


@lru_cache(maxsize=16)  # a Spec is ~36 KB, rebuilt in ~2 ms: a long run keeps few
def _build(seed: int) -> Spec:
    triple = sample_triple(derive(seed, "taxonomy"))
    candidates = subdomain_archetypes(triple.field, triple.domain, triple.subdomain)
    arch = candidates[derive(seed, "archetype").integers(len(candidates))]

    rng = derive(seed, "variables")
    path_vars = _path_variables(arch, rng)
    independents, lex_deps = _choose_variables(arch, rng, {p.name for p in path_vars})
    independents, promoted, confounders, planned = _recorded_split(
        arch, independents, lex_deps, 2, derive(seed, "recorded")
    )

    crng = derive(seed, "columns")
    columns: list[Column] = [
        IdentifierColumn(
            prefix=arch.id_prefix, digits=int(crng.integers(4, 6)), **_text_of(arch.identifier)
        ),
        DatetimeColumn(
            start=dt.datetime(
                int(crng.integers(2015, 2025)),
                int(crng.integers(1, 13)),
                int(crng.integers(1, 29)),
                int(crng.integers(0, 24)),
                tzinfo=dt.UTC,
            ),
            interval_seconds=int(arch.interval_seconds[crng.integers(len(arch.interval_seconds))]),
            regular=bool(crng.random() < 0.6),
            **_text_of(arch.timestamp),
        ),
    ]
    columns += [_independent_column(v, crng) for v in independents]
    prng = derive(seed, "described-columns")
    columns += [_described_column(v, prng) for v in promoted]

    log_inputs = {e.input for dep in lex_deps for e in dep.effects if e.form == "log"}
    scales: dict[str, InputScale] = {}
    shares: dict[str, dict[str, float]] = {}  # categorical input -> level -> share of rows
    for pv in path_vars:
        if (s := _scale_of_path(pv)) is not None:
            scales[pv.name] = s
        elif pv.kind in ("categorical", "researcher"):
            shares[pv.name] = {v: 1 / len(pv.values) for v in pv.values}
    for col in columns[2:]:
        if (s := _scale_of_column(col, log_inputs)) is not None:
            scales[col.name] = s
        elif isinstance(col, CategoricalColumn):
            shares[col.name] = dict(zip(col.values, col.probabilities, strict=True))
    deps: list[DependentColumn] = []
    erng = derive(seed, "expressions")
    for dep in lex_deps:
        column, scale = _dependent_column(dep, scales, shares, erng)
        deps.append(column)
        if scale is not None:
            scales[dep.name] = scale
        else:
            shares[dep.name] = {label: 1 / len(dep.labels) for label in dep.labels}
    columns += deps

    srng = derive(seed, "sorting")
    sortable = [c.name for c in columns if isinstance(c, ContinuousColumn | IntegerColumn)]
    choice = srng.random()
    sort_by = (None if choice < 0.3 else columns[0].name if choice < 0.5
               else columns[1].name if choice < 0.8 or not sortable
               else sortable[srng.integers(len(sortable))])  # fmt: skip

    labels = {c.name: c.label for c in columns} | {p.name: p.label for p in path_vars}
    factor, focus, linked = _pick_factor_focus(lex_deps, path_vars, labels, scales, shares)
    story = write_story(arch, triple, Focus(factor, focus, linked), path_vars, columns,
                        confounders, planned, derive(seed, "story"))  # fmt: skip

    vrng = derive(seed, "readme")
    present = bool(vrng.random() < 0.5)
    title = present and bool(vrng.random() < 0.5)
    abstract = title and bool(vrng.random() < 0.5)
    file_format = FILE_FORMATS[derive(seed, "format").integers(len(FILE_FORMATS))]
    return Spec(
        seed=seed,
        taxonomy=triple,
        archetype=arch.id,
        story=story,
        path_variables=path_vars,
        layout=_layout([p.key for p in path_vars], derive(seed, "layout")),
        columns=columns,
        unrecorded=[*confounders, *planned],
        sort_by=sort_by,
        file_format=file_format,
        readme=ReadmeVisibility(present=present, title=title, abstract=abstract),
    )


def build_spec(seed: int) -> Spec:
    """The Spec of repository ``seed`` (any non-negative integer); pure and cached."""
    return _build(check_seed(seed))
