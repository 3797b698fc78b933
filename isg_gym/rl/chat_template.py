"""A ChatML chat template with Hermes tool calls, for models whose own template has no tools.

SmolLM2's chat template ignores ``tools`` and ``tool_calls``, so TRL's ``GRPOTrainer`` refuses it
for tool calling ("The provided chat template does not support tool calling"), and TRL only
knows how to parse the tool calls of the templates it recognises.
:func:`use_hermes_chat_template` gives a tokenizer whose vocabulary has the ChatML markers
(``<|im_start|>``, ``<|im_end|>``: SmolLM2, Qwen, Hermes models) this template and the matching
response template, which transformers (>= 5.13) uses to parse the model's ``<tool_call>`` blocks
back into tool calls:

- the system message, then the tools as JSON schemas inside ``<tools></tools>`` and how to call
  one: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
- an assistant turn: its text, then one ``<tool_call>`` block per call;
- a tool result: a ``tool`` turn holding ``<tool_response>...</tool_response>``.

Every message renders the same whatever follows it (TRL needs this "prefix-preserving" property
to find the tokens of a tool result), and no thinking markers are added.
"""

from __future__ import annotations

from typing import Any

HERMES_CHATML_TEMPLATE = """\
{%- macro render_content(content) -%}
{%- if content is string -%}{{ content }}\
{%- elif content is iterable -%}{%- for part in content -%}\
{%- if part is mapping and part.get('type') == 'text' -%}{{ part['text'] }}{%- endif -%}\
{%- endfor -%}{%- endif -%}
{%- endmacro -%}
{%- set first_is_system = messages and messages[0]['role'] == 'system' -%}
{%- if tools or first_is_system -%}
{{ '<|im_start|>system\\n' }}
{%- if first_is_system -%}{{ render_content(messages[0]['content']) }}{%- endif -%}
{%- if tools -%}
{%- if first_is_system -%}{{ '\\n\\n' }}{%- endif -%}
{{ '# Tools\\n\\nThese functions can be called. Their JSON schemas are inside \
<tools></tools>:\\n<tools>' }}
{%- for tool in tools -%}{{ '\\n' }}\
{{ (tool['function'] if tool['function'] is defined else tool) | tojson }}{%- endfor -%}
{%- set example = tools[0]['function'] if tools[0]['function'] is defined else tools[0] -%}
{%- set params = ((example.get('parameters') or {}).get('properties') or {}) | list -%}
{{ '\\n</tools>\\n\\nTo call one, write a JSON object with its name and arguments inside \
<tool_call></tool_call>, for example:\\n<tool_call>\\n{"name": ' }}{{ example['name'] | tojson }}\
{{ ', "arguments": {' }}{%- if params -%}{{ params[0] | tojson }}{{ ': "..."' }}{%- endif -%}\
{{ '}}\\n</tool_call>' }}
{%- endif -%}
{{ '<|im_end|>\\n' }}
{%- endif -%}
{%- for message in messages -%}
{%- if not (loop.first and first_is_system) -%}
{%- if message['role'] == 'assistant' -%}
{{ '<|im_start|>assistant\\n' }}{{ render_content(message['content']) if message['content'] }}
{%- for call in message.get('tool_calls') or [] -%}
{%- set function = call['function'] if call['function'] is defined else call -%}
{%- if message['content'] or not loop.first -%}{{ '\\n' }}{%- endif -%}
{{ '<tool_call>\\n{"name": ' }}{{ function['name'] | tojson }}{{ ', "arguments": ' }}
{%- if function['arguments'] is string -%}{{ function['arguments'] }}\
{%- else -%}{{ function['arguments'] | tojson }}{%- endif -%}
{{ '}\\n</tool_call>' }}
{%- endfor -%}
{{ '<|im_end|>\\n' }}
{%- elif message['role'] == 'tool' -%}
{{ '<|im_start|>tool\\n<tool_response>\\n' }}{{ render_content(message['content']) }}\
{{ '\\n</tool_response><|im_end|>\\n' }}
{%- else -%}
{{ '<|im_start|>' + message['role'] + '\\n' }}{{ render_content(message['content']) }}\
{{ '<|im_end|>\\n' }}
{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}\
{%- if prefill_tool_call is defined and prefill_tool_call -%}{{ '<tool_call>\\n' }}{%- endif -%}
{%- endif -%}
"""

# transformers' response template (>= 5.13) that reads a reply of this chat template back into a
# message: the text up to <|im_end|> is the content, each <tool_call> block one JSON tool call.
HERMES_RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}

CHATML_TOKENS = ("<|im_start|>", "<|im_end|>")


def use_hermes_chat_template(tokenizer: Any) -> Any:
    """Give ``tokenizer`` (a transformers tokenizer with the ChatML tokens) the Hermes tool-call
    chat template and its response template; returns the same tokenizer.

    A tokenizer without ``<|im_start|>`` / ``<|im_end|>`` in its vocabulary is refused with a
    ``ValueError``: the template would split those markers into ordinary tokens.
    """
    vocab = tokenizer.get_vocab()
    missing = [t for t in CHATML_TOKENS if t not in vocab]
    if missing:
        raise ValueError(
            f"the tokenizer has no {', '.join(missing)} token: the Hermes ChatML template needs a "
            "ChatML vocabulary (SmolLM2, Qwen, Hermes models)"
        )
    tokenizer.chat_template = HERMES_CHATML_TEMPLATE
    tokenizer.response_template = HERMES_RESPONSE_TEMPLATE
    if getattr(tokenizer, "pad_token", None) is None:
        tokenizer.pad_token = "<|im_end|>"
    return tokenizer
