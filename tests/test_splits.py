"""Splits balanced by construction: per-type unanswerable shares, regeneration, --check."""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from isg_gym.eval import splits
from isg_gym.eval.splits import (
    SPLITS,
    TYPES,
    Split,
    question_answerable,
    resolve_split,
    share_problems,
    split_answerability,
    type_shares,
)
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO, parse_question_id, question_from_id


@cache
def small_split() -> tuple[str, ...]:
    return tuple(resolve_split("repos:0-36"))


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_stored_splits_every_type_near_nominal(name: str) -> None:
    """Every type's unanswerable share in a stored split is within 5 points of nominal (read
    from the ids alone; passes once the split files are regenerated with this recipe)."""
    ids = resolve_split(name)
    assert len(ids) == SPLITS[name].count
    assert [parse_question_id(q)[0] for q in ids] == list(SPLITS[name].repositories)
    assert share_problems(ids) == [], type_shares(ids)
    counts = Counter(parse_question_id(q)[1] for q in ids)
    assert set(counts) == set(TYPES)


def test_answerability_sequence_is_exact_per_block_and_differs_by_type() -> None:
    for start in (0, SPLITS["isg-test-500"].start):
        sequences = {k: [split_answerability(start, k, i) for i in range(400)] for k in TYPES}
        for seq in sequences.values():
            assert seq.count(False) == 160  # 2 in 5 (DEFAULT_UNANSWERABLE_RATIO 0.4)
            assert all(seq[i : i + 5].count(False) == 2 for i in range(0, 400, 5))
        assert len({tuple(s) for s in sequences.values()}) > 1
    assert split_answerability(0, "title", 5) == split_answerability(0, "title", 5)


def test_small_range_is_balanced_and_regenerates() -> None:
    ids = small_split()
    assert [parse_question_id(q)[0] for q in ids] == list(range(36))
    assert resolve_split("repos:0-36") == list(ids)  # deterministic
    position: Counter[str] = Counter()
    for qid in ids:
        _, kind, _ = parse_question_id(qid)
        want = split_answerability(0, kind, position[kind])
        position[kind] += 1
        assert question_answerable(qid) == want, qid
        question = question_from_id(qid)
        assert question.id == qid and question.answerable == want
    counts = Counter(parse_question_id(q)[1] for q in ids)
    assert max(counts.values()) - min(counts.values()) <= 2, counts
    for kind, count in counts.items():
        unanswerable = sum(
            not question_answerable(q) for q in ids if parse_question_id(q)[1] == kind
        )
        # whole blocks of 5 hold exactly 2; a partial block is off by at most 1.2
        assert abs(unanswerable - count * DEFAULT_UNANSWERABLE_RATIO) <= 1.2 + 1e-9, kind


def test_a_type_the_repository_cannot_offer_falls_through(monkeypatch) -> None:
    """A repository refusing its type's due answerability gives the next type; the refused
    type stays due and is asked first by the next repositories."""
    real = splits.make_question

    def refuse(repo, kind, slot, answerable, configs=None):
        if kind == "abstract" and answerable and repo.seed % 3:
            return None
        return real(repo, kind, slot, answerable, configs)

    monkeypatch.setattr(splits, "make_question", refuse)
    ids = splits.generate_split(range(0, 24))
    abstracts = [q for q in ids if parse_question_id(q)[1] == "abstract"]
    for position, qid in enumerate(abstracts):
        assert question_answerable(qid) == split_answerability(0, "abstract", position)
        if question_answerable(qid):
            assert parse_question_id(qid)[0] % 3 == 0
    assert len({parse_question_id(q)[0] for q in ids}) == 24


def test_check_prints_the_table_and_fails_on_a_difference_or_an_imbalance(
    monkeypatch, tmp_path: Path, capsys
) -> None:
    monkeypatch.setattr(splits, "SPLITS", {"tiny": Split("tiny", 0, 12, "tiny")})
    monkeypatch.setattr(splits, "_split_file", lambda name: tmp_path / f"{name}.txt")
    monkeypatch.setattr(splits, "share_problems", lambda ids, gap=None: [])  # 1 per type
    assert splits.main(["--write"]) == 0
    assert splits.main(["--check"]) == 0
    out = capsys.readouterr().out
    assert "tiny: matches" in out and "abstract" in out and "share" in out
    path = tmp_path / "tiny.txt"
    path.write_text("\n".join(path.read_text().split()[::-1]) + "\n")
    assert splits.main(["--check"]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_check_fails_when_a_share_is_off_nominal(monkeypatch, tmp_path: Path, capsys) -> None:
    monkeypatch.setattr(splits, "SPLITS", {"tiny": Split("tiny", 0, 12, "tiny")})
    monkeypatch.setattr(splits, "_split_file", lambda name: tmp_path / f"{name}.txt")
    monkeypatch.setattr(splits, "split_answerability", lambda start, kind, k: True)
    assert splits.main(["--write"]) == 1  # all answerable: every type 0% unanswerable
    assert "OFF NOMINAL" in capsys.readouterr().out
    assert splits.main(["--check"]) == 1
