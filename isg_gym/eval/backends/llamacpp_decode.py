"""Greedy decoding under a GBNF grammar that checks one token per step instead of the whole
vocabulary.

llama-cpp-python's sampler chain runs the grammar over every candidate token before picking
one (49,152 for SmolLM2): about as long as the model's own forward pass on a CPU. At
temperature 0 the pick is the most likely token the grammar allows, so
:class:`GrammarDecoder` tries the most likely token alone and runs the grammar over the whole
vocabulary only when that token is refused (llama.cpp's own ``common_sampler`` does the same).
The result is the same token; the grammar is parsed once and reset for each completion.
"""

from __future__ import annotations

import ctypes
import math
import time
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from isg_gym.eval.backends.llamacpp_states import common_prefix

TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])  # llama_token_data


class GrammarDecoder:
    """Greedy completions of one ``Llama`` under one grammar (GBNF text, root rule ``root``)."""

    def __init__(self, llm: Any, grammar: str) -> None:
        import llama_cpp

        self._api = llama_cpp
        self._vocab = llm._model.vocab
        self._sampler = llama_cpp.llama_sampler_init_grammar(
            self._vocab, grammar.encode("utf-8"), b"root"
        )
        if not self._sampler:
            raise ValueError("llama.cpp could not parse the grammar")
        self.n_vocab = int(llm.n_vocab())
        self._all = np.zeros(self.n_vocab, dtype=TOKEN_DATA)
        self._one = (llama_cpp.llama_token_data * 1)()
        self.full_passes = 0  # steps whose most likely token the grammar refused

    def _allowed(self, data: Any, size: int) -> None:
        array = self._api.llama_token_data_array(data=data, size=size, selected=-1, sorted=False)
        self._api.llama_sampler_apply(self._sampler, ctypes.byref(array))

    def pick(self, logits: np.ndarray) -> int:
        """The most likely token the grammar allows next."""
        best = int(np.argmax(logits))
        self._one[0].id, self._one[0].logit, self._one[0].p = best, float(logits[best]), 0.0
        self._allowed(self._one, 1)
        if math.isfinite(self._one[0].logit):
            return best
        self.full_passes += 1
        self._all["id"] = np.arange(self.n_vocab)
        self._all["logit"] = logits
        self._allowed(self._all.ctypes.data_as(ctypes.POINTER(self._api.llama_token_data)),
                      self.n_vocab)  # fmt: skip
        scores = self._all["logit"]
        index = int(np.argmax(scores))
        if not math.isfinite(float(scores[index])):
            raise RuntimeError("the grammar allows no next token")
        return int(self._all["id"][index])

    def complete(
        self, llm: Any, prompt: Sequence[int], max_tokens: int, stop: Sequence[str] = ()
    ) -> dict[str, Any]:
        """A ``Llama.create_completion``-shaped response for ``prompt`` (token ids), reusing
        the context's common prefix as ``Llama.generate`` does."""
        api = self._api
        tokens = list(prompt)
        reuse = common_prefix(np.asarray(llm.input_ids[: llm.n_tokens]), np.asarray(tokens))
        reuse = min(reuse, len(tokens) - 1)  # evaluate at least one token: fresh logits
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
        else:
            llm.reset()
            reuse = 0
        llm.eval(tokens[reuse:])
        api.llama_sampler_reset(self._sampler)
        out: list[int] = []
        finish = "length"
        text = ""
        for _ in range(max_tokens):
            pointer = llm._ctx.get_logits_ith(-1)
            token = self.pick(np.ctypeslib.as_array(pointer, shape=(self.n_vocab,)))
            api.llama_sampler_accept(self._sampler, token)
            if api.llama_vocab_is_eog(self._vocab, token):
                finish = "stop"
                break
            out.append(token)
            text = llm.detokenize(out, prev_tokens=tokens).decode("utf-8", errors="ignore")
            cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
            if cut >= 0:
                text, finish = text[:cut], "stop"
                break
            llm.eval([token])
        return {
            "id": f"cmpl-{uuid.uuid4()}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": llm.model_path,
            "choices": [{"text": text, "index": 0, "logprobs": None, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(tokens),
                "completion_tokens": len(out),
                "total_tokens": len(tokens) + len(out),
            },
        }

    def close(self) -> None:
        if self._sampler:
            self._api.llama_sampler_free(self._sampler)
            self._sampler = None
