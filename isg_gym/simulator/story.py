"""Story text of a procedural Spec: title, multi-paragraph description, 150-250 word abstract.

A title is a head, optionally followed by ": " and a subtitle. Heads are the archetype's own
title patterns or, for an archetype adapted to a subdomain, mostly the composed heads of
``_common.json`` ("<topic>: <focus> under Varying <condition>", ...) filled from the
subdomain's topics and methods, the repository's focus (a dependent variable), its factor (an
input of the focus's expression; heads naming it are used only when that input is live) and
one of its path conditions. The description and abstract add one sentence saying which of the
subdomain's topics the data inform and which of its methods they draw on.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from isg_gym.simulator.lexicon import Archetype, load_common
from isg_gym.spec.models import Column, PathVariable, Story, TaxonomyTriple, VariableInfo

ABSTRACT_WORDS = (150, 250)
_SMALL = {
    "a",
    "an",
    "and",
    "as",
    "at",
    "by",
    "for",
    "in",
    "of",
    "on",
    "or",
    "per",
    "the",
    "to",
    "vs",
    "via",
    "van",
    "der",
    "von",
}
SUBTITLE_SHARE = 0.6
ARCHETYPE_TITLE_SHARE = 0.2  # heads from the archetype's own patterns, where it has topics
SUBTITLE_MAX_HEAD_WORDS = 10  # longer heads stand alone
_TITLE_SLOTS = re.compile(r"\{([a-z0-9]+)\}")


class Focus(NamedTuple):
    """What the story is about: a factor (input label), a focus (dependent label), and whether
    the factor is a live term of the focus's expression (else the story claims no relation)."""

    factor: str
    focus: str
    linked: bool


def title_case(text: str) -> str:
    """Capitalise words but small words, words with capitals, and a unit after a number."""
    words = text.split()
    out = []
    for i, w in enumerate(words):
        keep = (i and (w.lower() in _SMALL or _is_number(words[i - 1]))) or any(
            c.isupper() for c in w
        )
        out.append(w if keep else w[:1].upper() + w[1:])
    return " ".join(out)


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _fill(text: str, triple: TaxonomyTriple, factor: str, focus: str, title: bool = False) -> str:
    f = (lambda s: title_case(s)) if title else (lambda s: s)
    return text.format(
        subdomain=triple.subdomain, domain=triple.domain, factor=f(factor), focus=f(focus)
    )


def _listing(items: list[VariableInfo]) -> str:
    parts = [f"{v.label} ({v.unit})" if v.unit else v.label for v in items]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _sentence(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def _draw(rng: np.random.Generator, items: list[str], k: int) -> list[str]:
    """``k`` distinct items in random order (repeated if there are fewer)."""
    order = [items[int(i)] for i in rng.permutation(len(items))]
    return (order * k)[:k]


def _compose_title(
    arch: Archetype, triple: TaxonomyTriple, focus: Focus, words: dict[str, str],
    rng: np.random.Generator,
) -> str:  # fmt: skip
    """A head (one of the archetype's own patterns, or for an archetype with a subdomain
    vocabulary one of the composed heads, ARCHETYPE_TITLE_SHARE of them the archetype's), and
    for a share of short heads without a colon a subtitle of slots the head does not use."""
    common = load_common()
    usable = (lambda t: focus.linked or "{factor}" not in t)  # noqa: E731
    own = rng.random() < ARCHETYPE_TITLE_SHARE or not arch.topics
    if own:
        pattern = arch.titles[int(rng.integers(len(arch.titles)))]
        title = _fill(pattern, triple, focus.factor, focus.focus, title=True)
    else:
        heads = [h for h in common["title_heads"] if usable(h)]
        pattern = heads[int(rng.integers(len(heads)))]
        title = _format_title(pattern, words)
    if (arch.topics and rng.random() < SUBTITLE_SHARE and not set(":?") & set(title)
            and len(title.split()) <= SUBTITLE_MAX_HEAD_WORDS):  # fmt: skip
        used = set(_TITLE_SLOTS.findall(pattern))
        subtitles = [t for t in common["title_subtitles"]
                     if usable(t) and not set(_TITLE_SLOTS.findall(t)) & used]  # fmt: skip
        subtitle = subtitles[int(rng.integers(len(subtitles)))]
        title += ": " + _format_title(subtitle, words)
    return title[:1].upper() + title[1:]


def _format_title(pattern: str, words: dict[str, str]) -> str:
    return pattern.format(**{k: title_case(words[k]) for k in _TITLE_SLOTS.findall(pattern)})


def write_story(
    arch: Archetype,
    triple: TaxonomyTriple,
    focus: Focus,
    path_vars: list[PathVariable],
    columns: list[Column],
    unrecorded_confounders: list[VariableInfo],
    unrecorded_planned: list[VariableInfo],
    rng: np.random.Generator,
) -> Story:
    """Compose the story from the archetype's text and the variables actually in the Spec."""
    factor = focus.factor
    conditions = [p for p in path_vars if p.kind in ("numeric", "categorical")]
    words = {"subdomain": triple.subdomain, "factor": factor, "focus": focus.focus}
    if arch.topics:
        topic, topic2 = _draw(rng, arch.topics, 2)
        method, method2 = _draw(rng, arch.methods, 2)
        others = [p.label for p in conditions if p.label != factor] or [conditions[0].label]
        words |= {"topic": topic, "topic2": topic2, "method": method, "method2": method2,
                  "condition": others[int(rng.integers(len(others)))]}  # fmt: skip
    title = _compose_title(arch, triple, focus, words, rng)
    setting = _sentence(_fill(arch.setting, triple, factor, focus.focus))
    if arch.topics:
        sentences = load_common()["topic_sentences"]
        setting += " " + sentences[int(rng.integers(len(sentences)))].format(**words)
    goal = _sentence(_fill(arch.goal, triple, factor, focus.focus))
    hypothesis = _sentence(_fill(arch.hypothesis, triple, factor, focus.focus))
    measured = [c for c in columns if c.role in ("categorical", "integer", "continuous")]
    outcomes = [c for c in columns if c.role == "dependent"]
    file_unit, row_unit = arch.file_unit, arch.row_unit

    description = "\n\n".join(
        [
            f"{setting} This project belongs to {triple.subdomain} ({triple.domain}): "
            f"{triple.subdomain_description}",
            f"Goal. {goal}",
            f"Hypothesis. {hypothesis}",
            f"Design. Experimental conditions are encoded in the directory layout: "
            f"{_listing(conditions)}. Each data file holds {file_unit}; each row is {row_unit}, "
            f"identified by {columns[0].label} and time-stamped by {columns[1].label}.",
            f"Independent variables. Varied across files: {_listing(conditions)}. "
            f"Recorded for each row: {_listing(measured) or 'none'}.",
            f"Dependent variables. {_sentence(_listing(outcomes))}",
            _unrecorded_paragraph(unrecorded_confounders, unrecorded_planned),
        ]
    )

    core = [
        setting,
        goal,
        f"Across {len(conditions)} experimental condition{'s' * (len(conditions) != 1)} "
        f"({_listing(conditions)}), each data file holds {file_unit} and each row records "
        f"{row_unit}.",
        f"For every row we recorded {_listing(measured) or 'the experimental conditions'}, "
        f"and measured {_listing(outcomes)}.",
        hypothesis,
    ]
    if unrecorded_confounders:
        core.append(
            f"Because {_listing(unrecorded_confounders)} could not be recorded, effects "
            f"attributed to {factor} should be interpreted with care."
        )
    fillers = list(load_common()["abstract_fillers"])
    order = rng.permutation(len(fillers))
    sentences = list(core)
    words = _words(sentences)  # kept up to date, not recounted
    for i in order:
        if words >= ABSTRACT_WORDS[0]:
            break
        sentences.append(fillers[i])
        words += len(fillers[i].split())
    while words > ABSTRACT_WORDS[1] and len(sentences) > 3:
        words -= len(sentences.pop(-2 if sentences[-1] in fillers else -1).split())
    abstract = " ".join(sentences)
    if not ABSTRACT_WORDS[0] <= len(abstract.split()) <= ABSTRACT_WORDS[1]:
        abstract = _fit(abstract)
    return Story(title=title, description=description, abstract=abstract)


def _unrecorded_paragraph(confounders: list[VariableInfo], planned: list[VariableInfo]) -> str:
    """What the project describes but does not record (either list may be empty)."""
    first = (f"Possible confounders that were not recorded: {_listing(confounders)}."
             if confounders else "No unrecorded confounders were identified.")  # fmt: skip
    second = (f" Planned but not yet recorded: {_listing(planned)}."
              if planned else " Nothing else is planned.")  # fmt: skip
    return "Confounders. " + first + second


def _words(sentences: list[str]) -> int:
    return sum(len(s.split()) for s in sentences)


def _fit(text: str) -> str:
    """Last resort for unusual lexicon entries: trim at a sentence end, or pad with a filler."""
    words = text.split()
    if len(words) > ABSTRACT_WORDS[1]:
        text = " ".join(words[: ABSTRACT_WORDS[1]])
        cut = text.rfind(". ")
        text = text[: cut + 1] if cut > 0 and len(text[:cut].split()) >= ABSTRACT_WORDS[0] else text
        return text if text.endswith(".") else text + "."
    extra = [f for f in load_common()["abstract_fillers"] if f not in text]
    while len(text.split()) < ABSTRACT_WORDS[0] and extra:
        text += " " + extra.pop(0)
    return text
