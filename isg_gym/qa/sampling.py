"""Sampling questions for a repository with a controlled share of unanswerable ones.

Question slot ``i`` of repository ``s`` draws its answerability from
``derive(s, "answerability", QUESTION_VERSION, i)`` (unanswerable with probability
``unanswerable_ratio``), then tries the requested types in an order drawn from
``derive(s, "type-order", QUESTION_VERSION, i)``; the first
type that can build a question of that answerability wins, seeded by
``derive(s, type, QUESTION_VERSION, i)``. The id
``"{s}.{type}.{i}"`` therefore regenerates the same question (:func:`question_from_id`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from isg_gym.qa.base import (
    QUESTION_TYPES,
    QUESTION_VERSION,
    Context,
    Question,
    known_types,
    question_type,
)
from isg_gym.repository import Repository
from isg_gym.rewards.blind_guess import UNANSWERABLE_SHARE
from isg_gym.seeding import derive

# 0.4 since v3 (0.25 before): below 0.375 a blind guess on a yes/no question beats abstaining
# (isg_gym.rewards.blind_guess).
DEFAULT_UNANSWERABLE_RATIO = UNANSWERABLE_SHARE


def _check_types(types: Iterable[str] | None) -> list[str]:
    names = sorted(QUESTION_TYPES) if types is None else list(types)
    unknown = [t for t in names if t not in known_types()]
    if unknown or not names:
        raise ValueError(f"unknown question types {unknown}; known: {known_types()}")
    return names


def _check_ratio(ratio: float) -> float:
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"unanswerable_ratio must be within [0, 1], got {ratio!r}")
    return float(ratio)


def slot_answerable(seed: int, index: int, unanswerable_ratio: float) -> bool:
    draw = derive(seed, "answerability", QUESTION_VERSION, index).random()
    return bool(draw >= unanswerable_ratio)


def _accepts_unanswerable(seed: int, index: int, cls: type) -> bool:
    """Thin out unanswerable questions of types that are rarely answerable, so that every type's
    own unanswerable share matches the slot ratio (else "not possible" would be a shortcut for,
    e.g., abstract questions). A type answerable in a share ``a`` of repositories and
    unanswerable in ``u`` keeps an unanswerable slot with probability ``a / u``."""
    keep = min(1.0, cls.answerable_share / cls.unanswerable_share)
    rng = derive(seed, "keep-unanswerable", QUESTION_VERSION, cls.name, index)
    return keep >= 1.0 or bool(rng.random() < keep)


Configs = Mapping[str, Any]


def _config(cls: type, configs: Configs | None) -> Any:
    config = (configs or {}).get(cls.name)
    if config is not None and not isinstance(config, cls.Config):
        raise ValueError(
            f"config for {cls.name!r} must be a {cls.__module__}.{cls.__qualname__}.Config, "
            f"got {type(config).__name__}"
        )
    return config


def make_question(
    repo: Repository,
    type_name: str,
    index: int,
    answerable: bool,
    configs: Configs | None = None,
) -> Question | None:
    """Question ``index`` of type ``type_name`` with the given answerability, or None.

    ``configs`` maps type names to instances of that type's ``Config`` (defaults otherwise).
    """
    cls = question_type(_check_types([type_name])[0])
    if not answerable and not (cls.reasons and _accepts_unanswerable(repo.seed, index, cls)):
        return None
    rng = derive(repo.seed, type_name, QUESTION_VERSION, index)
    ctx = Context(repo=repo, rng=rng, type=type_name, index=index)
    return cls(_config(cls, configs)).generate(ctx, answerable)


def question_at(
    repo: Repository,
    index: int,
    types: Iterable[str] | None = None,
    unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
    exclude: set[tuple[str, str]] | None = None,
    configs: Configs | None = None,
) -> Question | None:
    """The question in slot ``index`` of ``repo`` (None if no requested type fits the slot).

    Types whose question would repeat one in ``exclude`` (see :func:`question_key`) are passed
    over, so skipping repeats does not change the slot's answerability.
    """
    names = _check_types(types)
    answerable = slot_answerable(repo.seed, index, _check_ratio(unanswerable_ratio))
    order = derive(repo.seed, "type-order", QUESTION_VERSION, index).permutation(len(names))
    for i in order:
        question = make_question(repo, names[i], index, answerable, configs)
        if question is not None and (not exclude or question_key(question) not in exclude):
            return question
    return None


def question_key(question: Question) -> tuple[str, str]:
    """Two questions with the same key ask the same thing (templates aside)."""
    return question.type, json.dumps(question.params, sort_keys=True)


def generate_questions(
    repo: Repository,
    count: int,
    types: Iterable[str] | None = None,
    unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
    max_slots: int | None = None,
    configs: Configs | None = None,
) -> list[Question]:
    """Up to ``count`` questions from consecutive slots (skipping slots no type fits)."""
    return list(iter_questions(repo, count, types, unanswerable_ratio, max_slots, configs))


def iter_questions(
    repo: Repository,
    count: int,
    types: Iterable[str] | None = None,
    unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
    max_slots: int | None = None,
    configs: Configs | None = None,
) -> Iterator[Question]:
    """Questions of consecutive slots, skipping empty slots and repeats of an earlier question
    (same type and params, e.g. a second "which extension" question)."""
    names = _check_types(types)
    for name in names:  # a wrong config is an error even if no slot reaches its type
        _config(question_type(name), configs)
    seen: set[tuple[str, str]] = set()
    for index in range(max_slots if max_slots is not None else 4 * count + 8):
        if len(seen) >= count:
            return
        question = question_at(repo, index, names, unanswerable_ratio, seen, configs)
        if question is not None:
            seen.add(question_key(question))
            yield question


def parse_question_id(question_id: str) -> tuple[int, str, int]:
    """``"118.univariate_statistic.3"`` -> ``(118, "univariate_statistic", 3)``."""
    parts = question_id.split(".") if isinstance(question_id, str) else []
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        raise ValueError(
            f"question id {question_id!r} is not of the form 'REPOSITORY.TYPE.INDEX', "
            "e.g. '118.univariate_statistic.3'"
        )
    _check_types([parts[1]])
    return int(parts[0]), parts[1], int(parts[2])


def question_from_id(
    question_id: str,
    repo: Repository | None = None,
    unanswerable_ratio: float = DEFAULT_UNANSWERABLE_RATIO,
    configs: Configs | None = None,
) -> Question:
    """Regenerate a question from its id (the ratio must be the one it was sampled with)."""
    seed, type_name, index = parse_question_id(question_id)
    repo = repo if repo is not None else Repository.from_seed(seed)
    if repo.seed != seed:
        raise ValueError(f"question {question_id!r} belongs to repository {seed}, not {repo.seed}")
    answerable = slot_answerable(seed, index, _check_ratio(unanswerable_ratio))
    question = make_question(repo, type_name, index, answerable, configs)
    if question is None:
        raise ValueError(f"repository {seed} has no question {question_id!r}")
    return question
