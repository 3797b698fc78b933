"""The env layer never breaks on malformed actions or tool output (issue 10 item 9, issue 16).

Every bad action is an error observation, never an exception; actions are bounded before they
are parsed; observations are valid UTF-8; each tool caps its own output with an exact note;
``files_read`` lists only files that were read.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from env_fakes import FakeResult as Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isg_gym.envs import ISGEnv
from isg_gym.envs.actions import (
    MAX_ACTION_CHARS,
    MAX_CALLS,
    MAX_DESCRIPTION_CHARS,
    check_json_value,
    describe_action,
    parse_action,
    safe_text,
)
from isg_gym.tools.python_tool import MAX_CODE_CHARS

QID = "118.univariate_statistic.3"
ENV_CUT = "cut by the environment"


class ScriptedSandbox:
    """Returns the next scripted result for every run (the last one again when exhausted)."""

    def __init__(self, *results: Result) -> None:
        self.results = list(results) or [Result()]

    def run(self, code: str, files_dir: str) -> Result:
        return self.results.pop(0) if len(self.results) > 1 else self.results[0]

    def close(self) -> None:
        pass


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def make_env(*results: Result, **kwargs: Any) -> ISGEnv:
    env = ISGEnv(sandbox=ScriptedSandbox(*results), render_mode="ansi", **kwargs)
    env.reset(options={"question": QID})
    return env


def assert_error_step(env: ISGEnv, action: Any) -> str:
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and "error" in obs, obs[:300]
    obs.encode("utf-8")  # never a lone surrogate
    assert reward == 0.0 and not terminated and not truncated
    assert info["parse_error"] is not None or any(r["error"] for r in info["tool_results"])
    role, stored = env._transcript[-2]
    assert role == "assistant" and len(stored) <= MAX_CODE_CHARS + 100
    stored.encode("utf-8")
    json.dumps(info["tool_results"], allow_nan=True)  # what a record will hold
    return obs


def nested_dict(depth: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return root


def nested_list(depth: int) -> list[Any]:
    root: list[Any] = []
    node = root
    for _ in range(depth):
        child: list[Any] = []
        node.append(child)
        node = child
    return root


class Hostile:
    def __str__(self) -> str:
        raise RuntimeError("no str")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class HostileKey:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


# ---------------------------------------------------------------- malformed actions


@pytest.mark.parametrize(
    ("action", "needle"),
    [
        (nested_dict(100_000), "nested deeper"),
        (nested_list(100_000), "nested deeper"),
        ([call("list_directory", path=nested_list(100_000))], "nested deeper"),
        ({"name": "read_text_file", "arguments": nested_dict(100_000)}, "nested deeper"),
        ("[" * 100_000, "no tool call"),
        ("<tool_call>" + "[" * 100_000 + "</tool_call>", "malformed JSON"),
        ("<tool_call>" + '{"a":' * 50_000 + "</tool_call>", "malformed JSON"),
        ("x" * (MAX_ACTION_CHARS + 1), "message too long"),
        ({1: "x"}, "keys must be strings"),
        (call("read_text_file", **{"path": "README.md"}) | {"arguments": {2: "y"}}, "keys must"),
        ({"name": "list_directory", "arguments": {"path": b"/"}}, "got bytes"),
        (call("list_directory", path=Hostile()), "got Hostile"),
        (Hostile(), "unsupported action type"),
        ([Hostile()], "got Hostile"),
        ({HostileKey(): 1}, "keys must be strings"),
        (call("list_directory", path=float("nan")), "must be a string"),
        (call("list_directory", depth=float("nan")), "must be an integer"),
        (call("list_directory", depth=float("inf")), "must be an integer"),
        (call("list_directory", depth=10**5000), "integer is too large"),
        (call("read_text_file", path="README.md", head=-(10**400)), "integer is too large"),
        (call("read_text_file", path="README.md", head=-(10**20)), "non-negative"),
        (call("list_directory", depth=2**64), "depth must be between"),
        ({"name": "x" * 5_000_000}, "larger than"),
        ({"name": "x" * 500_000}, "unknown tool"),
        (call("final_answer", answer=[1, 2]), "must be a string, number or boolean"),
        (call("final_answer", answer={"a": nested_dict(20)}), "must be a string, number"),
        ({"name": {"a": 1}}, 'needs a "name"'),
        ({"function": {"name": "list_directory", "arguments": "{" * 100_000}}, "not a JSON"),
        (
            {"type": "function", "function": {"name": "read_text_file", "arguments": "[1]"}},
            "not a JSON object",
        ),
        (b"<tool_call>", "unsupported action type"),
        ({"name", "arguments"}, "unsupported action type"),
        ([], "empty list"),
    ],
)
def test_bad_action_is_an_error_observation(action: Any, needle: str) -> None:
    env = make_env()
    obs = assert_error_step(env, action)
    assert needle in obs, obs[:500]
    env.close()


def test_huge_action_is_rejected_without_walking_it() -> None:
    """300,000 calls of about 22 MB: one size error; the transcript keeps a capped description."""
    env = make_env()
    calls = [call("list_directory", path="/" + "x" * 60) for _ in range(300_000)]
    obs = assert_error_step(env, calls)
    assert f"larger than {MAX_ACTION_CHARS} characters" in obs
    stored = env._transcript[-2][1]
    assert stored.startswith('[{"name": "list_directory"') and "more" in stored[-200:]
    assert len(stored) <= MAX_CODE_CHARS + 100
    text = "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls[:7_000])
    assert len(text) < MAX_ACTION_CHARS
    obs, *_, info = env.step(text)
    assert f"{7_000 - MAX_CALLS} tool calls beyond the limit" in obs
    assert len(info["tool_results"]) == MAX_CALLS + 1
    env.close()


def test_calls_beyond_the_limit_are_counted_not_parsed() -> None:
    calls: list[Any] = [call("list_directory")] * MAX_CALLS + [{"name": 5}] * 1000
    parsed = parse_action(calls)
    assert [c.name for c in parsed.calls[:MAX_CALLS]] == ["list_directory"] * MAX_CALLS
    assert parsed.calls[-1].error is not None and "1000 tool calls beyond" in parsed.calls[-1].error


def test_check_json_value_bounds() -> None:
    assert check_json_value({"name": "x", "arguments": {"path": "/", "depth": 2}}) is None
    assert check_json_value([1.5, None, True, "s", {"k": []}]) is None
    assert "deeper than 3" in (check_json_value([[[[1]]]], max_depth=3) or "")
    assert "larger than 10" in (check_json_value(["x" * 20], max_chars=10) or "")
    assert "larger than" in (check_json_value([0] * 10**6, max_chars=1000) or "")
    assert "keys must be strings" in (check_json_value({None: 1}) or "")
    assert "got set" in (check_json_value({"a": {1}}) or "")


def test_describe_action_is_capped_and_never_calls_repr() -> None:
    text = describe_action({"a": [Hostile(), b"x", 10**5000, float("nan")], 3: nested_dict(200)})
    assert text.startswith('{"a": [<Hostile>, <bytes>, <int of ') and "NaN" in text
    assert '"<int>": {"a": {"a"' in text and "..." in text
    long = describe_action("y" * (MAX_DESCRIPTION_CHARS + 10))
    assert len(long) < MAX_DESCRIPTION_CHARS + 80 and "10 more characters" in long
    assert len(describe_action(["z" * 1000] * 10_000)) < MAX_DESCRIPTION_CHARS + 2000
    assert describe_action("a\ud800b") == "a\\ud800b"


JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=30)
    | st.binary(max_size=4)
    | st.builds(Hostile)
    | st.sampled_from([float("inf"), 10**400, "\ud800", "\x00", "/data/../.."])
)
ANY_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=4),
    max_leaves=12,
)
TOOL = st.sampled_from(["list_directory", "read_text_file", "final_answer", "nope", ""])
ACTION = (
    ANY_VALUE
    | st.builds(lambda n, a: {"name": n, "arguments": a}, TOOL, ANY_VALUE)
    | st.lists(st.builds(lambda n, a: {"name": n, "arguments": a}, TOOL, ANY_VALUE), max_size=10)
    | st.builds(
        lambda n, a: {"type": "function", "function": {"name": n, "arguments": a}},
        TOOL,
        st.text(max_size=40),
    )
)
FUZZ_ENV = ISGEnv(sandbox=ScriptedSandbox(Result(stdout="ok")))


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(ACTION)
def test_step_never_raises_on_any_structured_action(action: Any) -> None:
    FUZZ_ENV.reset(options={"question": QID})
    obs, reward, _terminated, _truncated, info = FUZZ_ENV.step(action)
    assert isinstance(obs, str) and obs.encode("utf-8")
    assert isinstance(reward, float) and math.isfinite(reward)
    assert all(isinstance(r["output"], str) for r in info["tool_results"])
    json.dumps(info["tool_results"])  # arguments are JSON values (NaN aside)


def teardown_module() -> None:
    FUZZ_ENV.close()


# ---------------------------------------------------------------- text that is not UTF-8


def test_safe_text_escapes_lone_surrogates_only() -> None:
    assert safe_text("plain \x00 µ \U0001f600") == "plain \x00 µ \U0001f600"
    assert safe_text("a\ud800b") == "a\\ud800b"
    assert safe_text(b"x\xff".decode("utf-8", "surrogateescape")) == "x\\xff"
    assert safe_text("\udfff\ud800").encode("utf-8") == b"\\udfff\\ud800"


def test_surrogates_and_nul_in_tool_output_give_valid_observations() -> None:
    bad = "\ud800 \udcff \x00 end"
    env = make_env(Result(stdout=bad, stderr=bad, value=bad, error=f"ValueError: {bad}"))
    obs, _, _, _, info = env.step(call("run_python_code", code="raise ValueError(chr(0xd800))"))
    obs.encode("utf-8")
    assert "\\ud800" in obs and "\\xff" in obs and "\x00" in obs
    assert "ValueError: \\ud800" in info["tool_results"][0]["output"]
    obs, *_ = env.step(call("read_text_file", path="/\ud800"))
    obs.encode("utf-8")
    assert "error" in obs and "\\ud800" in obs
    obs, *_ = env.step("<tool_call>{\"name\": \"\ud800\"}</tool_call>")
    obs.encode("utf-8")
    obs, _, terminated, _, info = env.step(call("final_answer", answer="\ud800 12"))
    assert terminated and obs.encode("utf-8") and info["answer_text"] == "\ud800 12"
    assert env.render().encode("utf-8")
    env.close()


# ---------------------------------------------------------------- files_read


def test_files_read_lists_only_files_that_exist() -> None:
    env = make_env()
    real = env._repo.data_files[0]
    env.sandbox_spec.results = [Result(stdout="x", files_read=("no/such.csv", real, "", real))]
    _, *_, info = env.step(call("read_text_file", path="/data/no/such/file.csv"))
    assert info["files_read"] == [] and info["tool_results"][0]["error"]
    _, *_, info = env.step(call("read_text_file", path="missing.csv"))
    assert info["files_read"] == []
    _, *_, info = env.step(call("run_python_code", code="open('no/such.csv')"))
    assert info["files_read"] == [real]
    _, *_, info = env.step([call("read_text_file", path="/data/" + real, head=1),
                            call("read_text_file", path="nope")])  # fmt: skip
    assert info["files_read"] == [real]
    env.close()


# ---------------------------------------------------------------- output caps


def long_file(env: ISGEnv, lines: int = 20) -> str:
    """The repository's longest file of at least ``lines`` lines."""
    repo = env._repo
    return max(
        repo.files(),
        key=lambda f: len(text) if len((text := repo.read_text(f)).splitlines()) >= lines else 0,
    )


@pytest.mark.parametrize("cap", [300, 2000, 8000])
def test_read_text_file_pages_through_a_file_with_exact_notes(cap: int) -> None:
    """Following each note's ``tail=`` reads the whole file exactly once, in order."""
    env = make_env(max_output_chars=cap, max_steps=10_000)
    path = long_file(env)
    text = env._repo.read_text(path)
    n_lines = len(text.splitlines())
    assert len(text) > 3 * cap
    pieces, tail, reads = [], None, 0
    while True:
        obs, *_ = env.step(call("read_text_file", path=path, tail=tail))
        reads += 1
        body = obs.split("\n", 1)[1]
        assert len(body) <= cap and ENV_CUT not in obs
        if "[truncated: showing lines " not in body:
            pieces.append(body.rsplit("[lines ", 1)[0] if tail is not None else body)
            break
        shown, note = body.rsplit("[truncated: ", 1)
        first, last = (int(x) for x in note.split("lines ", 1)[1].split(" of")[0].split("-"))
        assert f"of {n_lines}" in note
        assert len(shown.splitlines(keepends=True)) == last - first + 1
        pieces.append(shown)
        tail = int(note.split("tail=", 1)[1].split(maxsplit=1)[0].rstrip(",;]"))
        assert tail == n_lines - last
        assert reads < 10 * len(text) // cap
    assert "".join(pieces) == text or "".join(pieces) == text + "\n"
    env.close()


def test_a_line_longer_than_the_cap_shows_its_start_and_says_so() -> None:
    env = make_env(max_output_chars=120)
    path = long_file(env)
    obs, *_ = env.step(call("read_text_file", path=path))
    body = obs.split("\n", 1)[1]
    assert len(body) <= 120 and ENV_CUT not in obs and "characters of line 1" in body
    env.close()


@pytest.mark.parametrize(("cap", "entries"), [(300, 200), (1000, 200), (8000, 5), (8000, 1000)])
def test_listing_shows_whole_entries_and_where_to_look_next(cap: int, entries: int) -> None:
    env = make_env(max_output_chars=cap, max_list_entries=entries)
    obs, *_ = env.step(call("list_directory", path="/", depth=10))
    body = obs.split("\n", 1)[1]
    assert len(body) <= cap and ENV_CUT not in obs
    header, *lines = body.split("\n")
    total = int(header.rsplit(": ", 1)[1].split()[0])
    repo = env._repo
    note = lines.pop() if lines and lines[-1].startswith("[") else None
    for line in lines:
        assert repo.is_file(line) or repo.is_dir(line.rstrip("/")), line
    if note is None:
        assert len(lines) == total
        return
    assert note.startswith(f"[{total - len(lines)} more entries not shown")
    if "path='" in note:
        where = note.split("path='", 1)[1].split("'", 1)[0]
        assert repo.is_dir(where.strip("/")) or where == "/"
    env.close()


def test_python_output_sections_share_the_cap_each_with_its_note() -> None:
    cap = 2000
    out, err = "o" * 5000 + "OUT-END", "ERR-START" + "e" * 5000 + "Traceback end"
    env = make_env(Result(stdout=out, stderr=err, error="ValueError: x"), max_output_chars=cap)
    obs, *_ = env.step(call("run_python_code", code="x"))
    body = obs.split("\n", 1)[1]
    assert len(body) <= cap and ENV_CUT not in obs
    assert "[stdout cut: the first" in body and f"of {len(out)} characters]" in body
    assert "[stderr cut: the last" in body and body.split("[error]")[0].rstrip().endswith("end")
    assert "[error]\nValueError: x" in body and "OUT-END" not in body and "ERR-START" not in body
    small = make_env(Result(stdout="s" * 50), max_output_chars=100)
    obs, *_ = small.step(call("run_python_code", code="x"))
    assert obs.endswith("s" * 50)  # fits whole: no note
    env.close()
    small.close()
