"""TRL glue without torch: the reward is counted once, a final prose message is graded, the
dataset prompt leaves the tools to the chat template, and the Hermes ChatML chat template."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from isg_gym.qa import format_answer
from isg_gym.qa.conventions import CONVENTIONS
from isg_gym.qa.sampling import question_from_id
from isg_gym.rewards import RewardConfig
from isg_gym.rl import ISGToolEnv, isg_reward, make_dataset_rows, system_prompt
from isg_gym.rl.chat_template import HERMES_CHATML_TEMPLATE, HERMES_RESPONSE_TEMPLATE
from isg_gym.rl.schemas import task_statement
from isg_gym.rl.trl import final_message_text
from isg_gym.tools.schemas import TOOL_NAMES

ROOT = Path(__file__).resolve().parents[1]
ROWS_QUESTION = "1001.count_rows.2"  # "How many data rows does the file ... contain?"


def _gold(question_id: str) -> str:
    return format_answer(question_from_id(question_id))


def _trl_reward_sources(env_class: type, reward_funcs: list[Any]) -> list[Any]:
    """The reward sources GRPOTrainer (TRL 1.16) scores with: the given reward functions, plus
    ``get_reward`` when the environment class defines one."""
    sources = list(reward_funcs)
    if "get_reward" in dict(inspect.getmembers(env_class, predicate=inspect.isfunction)):
        sources.append(lambda environments, **kw: [e.get_reward() for e in environments])
    return sources


def _total_reward(env: ISGToolEnv, completion: list[dict[str, Any]]) -> float:
    sources = _trl_reward_sources(type(env), [isg_reward])
    return sum(f(environments=[env], completions=[completion])[0] for f in sources)


def _assistant(text: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": text, **extra}]


def test_a_right_answer_is_rewarded_once() -> None:
    env = ISGToolEnv()
    env.reset(question_id=ROWS_QUESTION)
    env.final_answer(_gold(ROWS_QUESTION))
    calls = [{"type": "function", "function": {"name": "final_answer", "arguments": {}}}]
    completion = [*_assistant("", tool_calls=calls), {"role": "tool", "content": "ok"},
                  *_assistant("Done.")]  # fmt: skip
    assert _total_reward(env, completion) == 1.0  # the trailing message changes nothing
    assert env.outcome == "correct"
    # the example passes the same single reward function
    example = (ROOT / "examples" / "trl_grpo.py").read_text(encoding="utf-8")
    assert re.search(r"reward_funcs=\[isg_reward\]", example)


@pytest.mark.parametrize(
    ("message", "reward", "outcome"),
    [
        ("The answer is {gold}.", 1.0, "correct"),
        ("<think>maybe 3</think>\\boxed{{{gold}}}", 1.0, "correct"),
        ('<tool_call>{{"name": "final_answer", "arguments": {{"answer": "{gold}"}}}}</tool_call>',
         1.0, "correct"),  # written as text, not parsed by TRL: the env's parser reads it
        ("The answer is {wrong}.", 0.0, "wrong"),
        ("<think>no idea</think>", 0.0, "format_error"),  # nothing left to read
        ('<tool_call>{{"name": "list_directory", "arguments": {{}}}}</tool_call>', 0.0,
         "no_answer"),  # a tool call that never ran: no answer
    ],
)  # fmt: skip
def test_a_final_prose_message_is_graded(message: str, reward: float, outcome: str) -> None:
    gold = _gold(ROWS_QUESTION)
    env = ISGToolEnv()
    env.reset(question_id=ROWS_QUESTION)
    text = message.format(gold=gold, wrong=int(gold) + 1)
    assert _total_reward(env, _assistant(text)) == reward
    assert env.outcome == outcome and env.list_directory().startswith("[error] the episode is over")


def test_a_rollout_cut_during_tool_calls_has_no_answer() -> None:
    env = ISGToolEnv()
    env.reset(question_id=ROWS_QUESTION)
    calls = [{"type": "function", "function": {"name": "list_directory", "arguments": {}}}]
    assert final_message_text(_assistant("", tool_calls=calls)) is None
    assert final_message_text([*_assistant("", tool_calls=calls), {"role": "tool"}]) is None
    assert isg_reward([env], [_assistant("", tool_calls=calls)]) == [0.0]
    assert env.outcome is None  # still open: nothing was graded
    parts = [{"type": "text", "text": "It is "}, {"type": "text", "text": "4"}]
    assert final_message_text(_assistant(parts)) == "It is 4"
    assert final_message_text("plain") == "plain" and final_message_text([]) is None
    assert isg_reward([object()], [_assistant("1")]) == [None]  # another env class: not ours


def test_the_format_component_rewards_a_readable_answer() -> None:
    cls = ISGToolEnv.configure(reward_config=RewardConfig(correctness=1.0, format=0.1))
    rewards = []
    for text in ("It is -5.", "", _gold(ROWS_QUESTION)):
        env = cls()
        env.reset(question_id=ROWS_QUESTION)
        rewards.append(isg_reward([env], [_assistant(text)])[0])
    assert rewards == [0.1, 0.0, 1.1]


def test_dataset_prompt_leaves_the_tools_to_the_chat_template() -> None:
    rows = make_dataset_rows("repos:1000-1002", max_steps=12)
    system = rows[0]["prompt"][0]["content"]
    assert system == system_prompt(12, tools=False)
    assert system.startswith(task_statement()) and system.endswith(CONVENTIONS)
    assert "at most 12 times" in system
    assert "<tool_call>" not in system
    for name in TOOL_NAMES:  # named at most in the task statement, never described
        assert f"- {name}(" not in system and f"{name}(" not in system
    full = make_dataset_rows("repos:1000-1002", max_steps=12, tool_list=True)
    assert full[0]["prompt"][0]["content"] == system_prompt(12)
    assert all(f"- {name}(" in system_prompt(12) for name in TOOL_NAMES)


# ---------------------------------------------------------------- the chat template

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "SYS"},
    {"role": "user", "content": "Q?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "list_directory", "arguments": {"path": "/"}}},
        {"type": "function", "function": {"name": "read_text_file",
                                          "arguments": '{"path": "a.csv"}'}}]},
    {"role": "tool", "name": "list_directory", "content": "a.csv"},
    {"role": "tool", "name": "read_text_file", "content": "x\n1"},
    {"role": "assistant", "content": "It is 1."},
]  # fmt: skip
TOOLS = [{"type": "function", "function": {"name": "final_answer", "parameters": {
    "type": "object", "properties": {"answer": {"type": "string"}}}}}]  # fmt: skip
EXPECTED = (
    "<|im_start|>system\nSYS\n\n# Tools\n\nThese functions can be called. Their JSON schemas are "
    'inside <tools></tools>:\n<tools>\n{"name": "final_answer", "parameters": {"type": "object", '
    '"properties": {"answer": {"type": "string"}}}}\n</tools>\n\nTo call one, write a JSON object '
    "with its name and arguments inside <tool_call></tool_call>, for example:\n<tool_call>\n"
    '{"name": "final_answer", "arguments": {"answer": "..."}}\n</tool_call><|im_end|>\n'
    "<|im_start|>user\nQ?<|im_end|>\n"
    '<|im_start|>assistant\n<tool_call>\n{"name": "list_directory", "arguments": {"path": "/"}}\n'
    '</tool_call>\n<tool_call>\n{"name": "read_text_file", "arguments": {"path": "a.csv"}}\n'
    "</tool_call><|im_end|>\n"
    "<|im_start|>tool\n<tool_response>\na.csv\n</tool_response><|im_end|>\n"
    "<|im_start|>tool\n<tool_response>\nx\n1\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\nIt is 1.<|im_end|>\n"
)


def _render(
    messages: list[dict[str, Any]], tools: Any = None, generation: bool = False, **kwargs: Any
) -> str:
    """The template rendered as transformers renders chat templates (a sandboxed Jinja
    environment with trim_blocks, lstrip_blocks and a tojson that keeps non-ASCII)."""
    pytest.importorskip("jinja2")
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])  # fmt: skip
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    template = env.from_string(HERMES_CHATML_TEMPLATE)
    return template.render(
        messages=messages, tools=tools, add_generation_prompt=generation, **kwargs
    )


def test_chat_template_renders_hermes_tool_calls() -> None:
    assert _render(CONVERSATION, TOOLS) == EXPECTED
    # without tools and without a system message: plain ChatML
    assert _render(CONVERSATION[1:2], generation=True) == (
        "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n"
    )
    # prefill_tool_call: every model turn starts a tool call
    assert _render(CONVERSATION[:2], TOOLS, generation=True, prefill_tool_call=True).endswith(
        "<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
    )
    # every message renders the same whatever follows (TRL needs this "prefix-preserving")
    for k in range(1, len(CONVERSATION)):
        assert _render(CONVERSATION[: k + 1], TOOLS, generation=True).startswith(
            _render(CONVERSATION[:k], TOOLS)
        )


def test_transformers_renders_and_parses_with_the_template() -> None:
    pytest.importorskip("transformers")
    from transformers.utils.chat_parsing.response_parser import parse_response
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(conversations=[CONVERSATION], tools=TOOLS,
                                        chat_template=HERMES_CHATML_TEMPLATE)  # fmt: skip
    assert rendered == [EXPECTED]
    prompt = render_jinja_template(conversations=[CONVERSATION[:2]], tools=TOOLS,
                                   chat_template=HERMES_CHATML_TEMPLATE,
                                   add_generation_prompt=True)[0][0]  # fmt: skip
    reply = ('<tool_call>\n{"name": "final_answer", "arguments": {"answer": "7"}}\n</tool_call>'
             "<|im_end|>")  # fmt: skip
    message = parse_response(reply, HERMES_RESPONSE_TEMPLATE, prefix=prompt)
    assert message["tool_calls"] == [
        {"type": "function", "function": {"name": "final_answer", "arguments": {"answer": "7"}}}
    ]
    message = parse_response("It is 7.<|im_end|>", HERMES_RESPONSE_TEMPLATE,
                             prefix=prompt)  # fmt: skip
    assert message == {"role": "assistant", "content": "It is 7."}
    # with the prefilled <tool_call> in the prompt, the reply is the rest of the call
    prefilled = render_jinja_template(conversations=[CONVERSATION[:2]], tools=TOOLS,
                                      chat_template=HERMES_CHATML_TEMPLATE,
                                      add_generation_prompt=True, prefill_tool_call=True)[0][0]
    assert prefilled == prompt + "<tool_call>\n"
    rest = reply[len("<tool_call>\n") :]
    message = parse_response(rest, HERMES_RESPONSE_TEMPLATE, prefix=prefilled)
    assert message["tool_calls"][0]["function"] == {"name": "final_answer",
                                                    "arguments": {"answer": "7"}}  # fmt: skip
