"""Repositories built by a chat model, stage by stage, validated and cached.

``LLMBuilder(backend_ask(backend), model).build(seed)`` follows the published
InfiniteScienceGym pipeline: from the seed's taxonomy triple, candidate titles (one picked by
the seed), a project description (hypothesis, variables, confounders, set-up), an abstract,
the values of the experimental conditions, the path template, the columns with their
distributions, and the dependent variables as expressions of the whitelisted language
(:mod:`isg_gym.spec.expressions`; never code). Every reply is checked (pydantic, the expression
compiler, simulation sanity) and retried with the error fed back; the result is the same
:class:`~isg_gym.spec.models.Spec` the procedural builder makes, or a failure record.
``isg build --builder llm`` builds seeds into a cache (:mod:`isg_gym.simulator.cache`).
"""

from isg_gym.simulator.build import BuildResult
from isg_gym.simulator.llm.batching import BatchedAsk
from isg_gym.simulator.llm.builder import BUILDER, LLMBuilder, backend_ask
from isg_gym.simulator.llm.prompts import PROMPT_VERSION
from isg_gym.simulator.llm.stages import STAGE_NAMES, STAGES

__all__ = [
    "BUILDER",
    "PROMPT_VERSION",
    "STAGES",
    "STAGE_NAMES",
    "BatchedAsk",
    "BuildResult",
    "LLMBuilder",
    "backend_ask",
]
