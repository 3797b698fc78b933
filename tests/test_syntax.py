"""Every ``ast.parse`` of the package in the threads of one process goes through the parse lock
(CPython 3.11 fails concurrent parses with "AST constructor recursion depth mismatch")."""

import ast
import re
from pathlib import Path

import isg_gym
from isg_gym.syntax import parse

ROOT = Path(isg_gym.__file__).parent
# the sandbox worker parses in its own process, one cell at a time
ALLOWED = {ROOT / "syntax.py", ROOT / "tools" / "sandbox" / "worker.py"}


def test_no_unlocked_parse_in_the_package():
    offenders = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*.py")
                 if p not in ALLOWED and re.search(r"\bast\.parse\(", p.read_text())]  # fmt: skip
    assert offenders == []


def test_parse_is_ast_parse():
    assert ast.dump(parse("f(x, k=1)")) == ast.dump(ast.parse("f(x, k=1)"))
    assert isinstance(parse("1 + 2", mode="eval"), ast.Expression)
