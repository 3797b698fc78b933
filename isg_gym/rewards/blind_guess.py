"""How many questions must be unanswerable so that guessing blind never beats abstaining.

A policy that never looks at the data can, per question, either abstain (right exactly when the
question is unanswerable, share ``u``) or give its type's most common answer (right on a share
``top`` of the answerable ones, so ``top * (1 - u)`` in all). Guessing pays when
``top * (1 - u) > u``, that is when ``u < top / (1 + top)``: on a balanced yes/no question
(``top = 0.5``) any share below 1/3 lets coin flips beat always-abstain.

The question generators cap the most common answer of a yes/no type at 60% of its answerable
questions (every other type at 30%), so the break-even share is ``0.6 / 1.6 = 0.375``.
:data:`UNANSWERABLE_SHARE` is the default of every environment with abstention (ISG-v0,
ISG-Orbits-v0 and the LLM-built repositories): 0.4, above it with a margin for what a text
classifier can tell about answerability (within-type AUC <= 0.60, ``benchmarks/baselines.py``).
"""

from __future__ import annotations

MAX_TOP_ANSWER_SHARE = 0.6  # the most common answer of a yes/no type, at most (others: 0.3)
UNANSWERABLE_SHARE = 0.4


def break_even_share(top_share: float) -> float:
    """The unanswerable share below which guessing the most common answer (right on
    ``top_share`` of the answerable questions) beats abstaining."""
    if not 0.0 <= top_share <= 1.0:
        raise ValueError(f"top_share must be within [0, 1], got {top_share!r}")
    return top_share / (1.0 + top_share)
