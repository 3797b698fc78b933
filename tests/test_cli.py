import json
import subprocess
import sys

import pytest

from isg_gym.cli import main
from isg_gym.repository import Repository
from isg_gym.spec.models import Spec


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "isg_gym.cli", *args], capture_output=True,
                          text=True)  # fmt: skip


def test_show(capsys):
    assert main(["show", "1"]) == 0
    out = capsys.readouterr().out
    spec = Repository.from_seed(1).spec
    for piece in (spec.taxonomy.field, spec.story.title, "template:", "files:", "abstract:"):
        assert piece in out
    for col in spec.columns:
        assert col.name in out


def test_tree_and_depth(capsys):
    repo = Repository.from_seed(2)
    assert main(["tree", "2"]) == 0
    full = capsys.readouterr().out
    for path in repo.data_files[:10]:
        assert path.split("/")[-1] in full
    assert main(["tree", "2", "--depth", "1"]) == 0
    shallow = capsys.readouterr().out.splitlines()
    assert len(shallow) == 1 + len(repo.listdir("/"))


def test_cat_and_head(capsys):
    repo = Repository.from_seed(3)
    path = repo.data_files[0]
    assert main(["cat", "3", f"/{path}", "--head", "2"]) == 0
    out = capsys.readouterr().out
    assert out == "".join(repo.read_text(path).splitlines(keepends=True)[:2])


def test_spec_json(capsys):
    assert main(["spec", "4"]) == 0
    assert Spec.from_json(capsys.readouterr().out) == Repository.from_seed(4).spec
    json.loads(Repository.from_seed(4).spec.to_json())


def test_materialize_writes_every_file(tmp_path, capsys):
    repo = Repository.from_seed(6)
    assert main(["materialize", "6", str(tmp_path)]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(repo.files())
    assert (tmp_path / repo.data_files[0]).read_bytes() == repo.read_bytes(repo.data_files[0])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "-3"], "non-negative integer"),
        (["show", "abc"], "non-negative integer"),
        (["tree", "1", "--depth", "0"], "positive integer"),
        (["cat", "1", "no/such/file.csv"], "no file"),
        (["cat", "1", "../../etc/passwd"], "leaves the repository"),
        (["frobnicate", "1"], "invalid choice"),
        ([], "required"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message):
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_questions_text_and_json(capsys):
    from isg_gym.qa import format_answer, generate_questions

    questions = generate_questions(Repository.from_seed(5), 6)
    assert main(["questions", "5", "--count", "6"]) == 0
    out = capsys.readouterr().out
    for q in questions:
        assert f"[{q.id}]" in out and f"A: {format_answer(q)}" in out
        if q.reason:
            assert q.reason in out
    assert main(["questions", "5", "--count", "6", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [x["id"] for x in lines] == [q.id for q in questions]
    assert all(x["gold"] == format_answer(q) for x, q in zip(lines, questions, strict=True))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["questions", "1", "--type", "bogus"], "unknown question type"),
        (["questions", "1", "--unanswerable", "2"], "within [0, 1]"),
        (["questions", "1", "--count", "0"], "positive integer"),
    ],
)
def test_questions_errors_are_one_line(args, message):
    result = run(*args)
    assert result.returncode == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
