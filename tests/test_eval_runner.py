"""The rollout runner, records, resume and the named splits (scripted policies, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isg_gym.eval import EpisodeState, StepPolicy, Turn, evaluate
from isg_gym.eval.policy import calls_message
from isg_gym.eval.records import RECORDS_FILE, read_records
from isg_gym.eval.splits import SPLITS, TYPES, generate_split, resolve_split, train_env_kwargs
from isg_gym.qa import format_answer
from isg_gym.qa.sampling import parse_question_id, question_from_id
from isg_gym.spec.models import SPEC_VERSION

ENV = {"max_steps": 4, "sandbox": "bwrap"}
IDS = resolve_split("repos:0-6")


class ListThenAnswer(StepPolicy):
    """Lists the root, runs a line of pandas over the first evidence file, then answers."""

    name = "test-list-then-answer"

    def __init__(self, answer: str = "not possible", fail_on: str | None = None) -> None:
        self.answer, self.fail_on, self.batches = answer, fail_on, []

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        self.batches.append(len(episodes))
        turns = []
        for ep in episodes:
            step = len(ep.steps)
            if ep.question_id == self.fail_on:
                turns.append(Turn(error="backend down"))
            elif step == 0:
                calls = [{"name": "list_directory", "arguments": {"path": "/"}}]
                ep.messages.append(calls_message(calls, step))
                turns.append(Turn(calls))
            elif step == 1:
                turns.append(Turn("<tool_call>{not json}</tool_call>"))
                ep.messages.append({"role": "assistant", "content": turns[-1].action})
            else:
                text = json.dumps({"answer": self.answer})
                ep.messages.append({"role": "assistant", "content": text})
                turns.append(Turn(text))
        return turns


def test_records_one_line_per_episode_with_gold_and_transcript(tmp_path: Path) -> None:
    policy = ListThenAnswer()
    summary = evaluate(policy, IDS, tmp_path, concurrency=3, env_kwargs=ENV, report=False)
    records = read_records(tmp_path / RECORDS_FILE)
    assert summary == {"n": len(IDS)} and len(records) == len(IDS)
    assert max(policy.batches) == 3  # one batched call covers every live episode
    assert sorted(r["index"] for r in records) == list(range(len(IDS)))
    for r in records:
        q = question_from_id(r["question_id"])
        assert r["gold"] == format_answer(q) and r["answerable"] == q.answerable
        assert r["type"] == q.type and r["family"] == q.family and r["question"] == q.text
        assert r["steps"] == 3 and r["parse_failures"] == 1
        assert r["tool_calls"][0]["name"] == "list_directory"
        assert r["tool_calls"][0]["result_chars"] > 0
        assert r["outcome"] == ("correct" if not q.answerable else "abstained")
        roles = [m["role"] for m in r["transcript"]]
        assert roles == ["system", "user"] + ["assistant", "tool"] + ["assistant", "user"] * 2
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["backend"] == "test-list-then-answer" and run["episodes"] == len(IDS)


def test_policy_sees_no_answer_key(tmp_path: Path) -> None:
    seen: list[dict] = []

    class Spy(ListThenAnswer):
        def begin(self, episode: EpisodeState) -> None:
            seen.append(dict(episode.info))
            super().begin(episode)

    evaluate(Spy(), IDS[:2], tmp_path, env_kwargs=ENV, report=False)
    for info in seen:
        assert not {"answer", "answerable", "reason", "params", "evidence"} & set(info)
        assert info["prompt"]["user"].startswith("Question: ")


def test_backend_error_ends_episode_and_run_continues(tmp_path: Path) -> None:
    evaluate(ListThenAnswer(fail_on=IDS[1]), IDS[:3], tmp_path, env_kwargs=ENV, report=False)
    by_id = {r["question_id"]: r for r in read_records(tmp_path / RECORDS_FILE)}
    assert by_id[IDS[1]]["outcome"] == "backend_error"
    assert by_id[IDS[1]]["error"] == "backend down" and by_id[IDS[1]]["reward"] == 0
    assert {by_id[q]["outcome"] for q in (IDS[0], IDS[2])} <= {"correct", "abstained"}


def test_truncation_is_recorded(tmp_path: Path) -> None:
    evaluate(ListThenAnswer(), IDS[:1], tmp_path, env_kwargs={"max_steps": 2}, report=False)
    (record,) = read_records(tmp_path / RECORDS_FILE)
    assert record["outcome"] == "truncated" and record["answer"] is None and record["steps"] == 2


def test_resume_skips_done_and_repairs_a_torn_line(tmp_path: Path) -> None:
    evaluate(ListThenAnswer(), IDS, tmp_path, env_kwargs=ENV, report=False)
    path = tmp_path / RECORDS_FILE
    full = read_records(path)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:40])  # interrupted while writing line 3
    assert len(read_records(path)) == 2
    with pytest.raises(FileExistsError, match="resume"):
        evaluate(ListThenAnswer(), IDS, tmp_path, env_kwargs=ENV, report=False)
    policy = ListThenAnswer()
    evaluate(policy, IDS, tmp_path, env_kwargs=ENV, report=False, resume=True)
    resumed = read_records(path)
    assert len(resumed) == len(IDS)
    assert sorted((r["index"], r["question_id"]) for r in resumed) == sorted(
        (r["index"], r["question_id"]) for r in full
    )
    assert sum(policy.batches) > 0
    again = ListThenAnswer()
    evaluate(again, IDS, tmp_path, env_kwargs=ENV, report=False, resume=True)
    assert again.batches == [] and len(read_records(path)) == len(IDS)


def test_resume_refuses_a_different_run(tmp_path: Path) -> None:
    evaluate(ListThenAnswer(), IDS[:1], tmp_path, env_kwargs=ENV, report=False)
    with pytest.raises(ValueError, match="env_kwargs"):
        evaluate(ListThenAnswer(), IDS[:1], tmp_path, env_kwargs={"max_steps": 9},
                 report=False, resume=True)  # fmt: skip


def test_resume_refuses_a_run_of_another_spec_version(tmp_path: Path) -> None:
    """A question id asks about a repository of one spec version: records made before a spec
    bump (run.json without data_version, or another one) are not resumed."""
    evaluate(ListThenAnswer(), IDS[:1], tmp_path, env_kwargs=ENV, report=False)
    run_file = tmp_path / "run.json"
    run = json.loads(run_file.read_text())
    assert run["data_version"] == SPEC_VERSION
    for earlier in (SPEC_VERSION - 1, None):
        run["data_version"] = earlier
        run_file.write_text(json.dumps(run))
        with pytest.raises(ValueError, match="data_version differ"):
            evaluate(ListThenAnswer(), IDS[:2], tmp_path, env_kwargs=ENV, report=False,
                     resume=True)  # fmt: skip


def test_stored_splits_regenerate() -> None:
    ids = resolve_split("isg-500")
    assert len(ids) == 500 == len(set(ids))
    assert [parse_question_id(q)[0] for q in ids] == list(range(500))
    assert {parse_question_id(q)[1] for q in ids} == set(TYPES)
    # A split is computed in order from its first repository (types and answerability are
    # balanced as it goes), so its prefix regenerates.
    assert generate_split(range(0, 40)) == ids[:40]
    test_ids = resolve_split("isg-test-500")
    assert [parse_question_id(q)[0] for q in test_ids] == list(SPLITS["isg-test-500"].repositories)
    start = SPLITS["isg-test-500"].start
    assert generate_split(range(start, start + 12)) == test_ids[:12]


def test_train_range_is_disjoint_from_eval_and_test() -> None:
    kwargs = train_env_kwargs()
    train = range(
        kwargs["start_repository"], kwargs["start_repository"] + kwargs["num_repositories"]
    )
    for split in SPLITS.values():
        r = split.repositories
        assert r.stop <= train.start or r.start >= train.stop


def test_bad_split_names_say_what_is_accepted() -> None:
    with pytest.raises(ValueError, match="isg-500"):
        resolve_split("isg-5000")
    with pytest.raises(ValueError, match="empty"):
        resolve_split("repos:5-5")
    with pytest.raises(ValueError, match=r"REPOSITORY\.TYPE\.INDEX"):
        resolve_split(["not-an-id"])


class AlwaysDown(StepPolicy):
    """A model server that never answers."""

    name = "test-always-down"

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        return [Turn(error="connection refused") for _ in episodes]


def test_a_run_whose_first_episodes_all_fail_stops(tmp_path: Path) -> None:
    """An unreachable server is not an accuracy of 0%: the run stops with a clear error after
    the first FAIL_FAST_EPISODES episodes, which are recorded as infrastructure failures."""
    from isg_gym.eval.errors import InfrastructureError
    from isg_gym.eval.runner import FAIL_FAST_EPISODES

    with pytest.raises(InfrastructureError, match="connection refused"):
        evaluate(AlwaysDown(), IDS, tmp_path, concurrency=1, env_kwargs=ENV, report=False)
    records = read_records(tmp_path / RECORDS_FILE)
    assert len(records) == FAIL_FAST_EPISODES < len(IDS)
    assert {r["outcome"] for r in records} == {"backend_error"}


def test_infrastructure_failures_are_counted_apart_and_retried(tmp_path: Path) -> None:
    from isg_gym.eval.metrics import summarize

    evaluate(ListThenAnswer(fail_on=IDS[1]), IDS[:5], tmp_path, env_kwargs=ENV, report=False)
    summary = summarize(read_records(tmp_path / RECORDS_FILE))
    assert (summary["n"], summary["episodes"]) == (4, 5)  # accuracy is over the 4 played
    assert summary["infrastructure_failures"]["by_outcome"] == {"backend_error": 1}
    assert summary["infrastructure_failures"]["errors"] == ["backend down"]
    policy = ListThenAnswer()  # the server is back: --resume plays only the failed episode
    summary = evaluate(policy, IDS[:5], tmp_path, resume=True, env_kwargs=ENV)
    assert policy.batches == [1, 1, 1]
    assert (summary["n"], summary["episodes"]) == (5, 5)
    assert summary["infrastructure_failures"]["n"] == 0
    assert len(read_records(tmp_path / RECORDS_FILE)) == 6  # the failure's record is kept


class BrokenSandbox:
    """A sandbox that fails on every call (as a crashed worker does)."""

    def run(self, code: str, files_dir: str) -> None:
        raise RuntimeError("worker died")

    def close(self) -> None:
        pass


class RunsPython(StepPolicy):
    name = "test-runs-python"

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        call = [{"name": "run_python_code", "arguments": {"code": "1 + 1"}}]
        return [Turn(call) for _ in episodes]


def test_a_broken_sandbox_is_an_infrastructure_failure_not_an_answer(tmp_path: Path) -> None:
    from isg_gym.eval.errors import InfrastructureError
    from isg_gym.eval.metrics import summarize

    env = {"max_steps": 4, "sandbox": BrokenSandbox()}
    with pytest.raises(InfrastructureError, match="worker died"):  # every episode failed
        evaluate(RunsPython(), IDS[:2], tmp_path, env_kwargs=env, report=False)
    records = read_records(tmp_path / RECORDS_FILE)
    assert [r["outcome"] for r in records] == ["sandbox_error"] * 2
    assert all("worker died" in r["error"] and r["steps"] == 1 for r in records)
    summary = summarize(records)
    assert summary["n"] == 0 and summary["infrastructure_failures"]["n"] == 2
