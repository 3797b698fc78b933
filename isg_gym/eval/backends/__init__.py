"""Model backends for :mod:`isg_gym.eval`: OpenAI-compatible API, offline vLLM, llama.cpp.

Heavy backends import their library lazily, inside the backend's constructor.
"""

from isg_gym.eval.backends.base import ChatBackend, Completion, Message

__all__ = ["ChatBackend", "Completion", "Message"]
