"""Opt-in: does an outcome increase or decrease as a recorded variable increases?

Asked only when ``effect_direction`` is named in ``question_types`` (it is not a default type:
the default questions and the stored splits do not include it). The gold answer is the
program's direction (:func:`isg_gym.discovery.truth.pair_truth`): a numeric outcome and a
numeric recorded variable (a column or a numeric path variable, not another outcome) that the
program makes monotone over the observed range, and only where the served rows agree robustly
(Spearman's rank correlation over all rows with both values, p below :attr:`Config.max_pvalue`,
with the program's sign), so that an analysis of the data and the program give one answer. The
target answer is drawn first (increases or decreases, half each), then a pair giving it.

Unanswerable: the variable is one the project describes but did not record.
"""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.discovery.data import pooled_rows
from isg_gym.discovery.program import Program
from isg_gym.discovery.truth import pair_truth
from isg_gym.qa.base import Context, Question, QuestionType, Reason, register
from isg_gym.qa.types.bivariate import q

ANSWERS = ("increases", "decreases")
TEMPLATES = (
    "Across all data files, does {y} increase or decrease as {x} increases? Judge by the sign "
    "of Spearman's rank correlation over the rows where both are present. Answer increases or "
    "decreases.",
    "As {x} increases, does {y} tend to increase or to decrease (the sign of the Spearman rank "
    "correlation of the two over every row where both are present, all files pooled)? Answer "
    "increases or decreases.",
)


@register
class EffectDirection(QuestionType):
    name = "effect_direction"
    family = "effects"
    reasons = (Reason.UNRECORDED_VARIABLE,)
    opt_in = True

    @dataclass(frozen=True)
    class Config:
        max_pvalue: float = 1e-6  # robustness: the data agree with the program at this level
        tries: int = 24  # candidate pairs examined

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        program = Program(ctx.spec)
        variables = program.variables
        outcomes = [o for o in program.outcomes if variables[o].numeric]
        if not outcomes:
            return None
        if not answerable:
            if not ctx.spec.unrecorded:
                return None
            factor = ctx.choice([u.name for u in ctx.spec.unrecorded])
            return self._question(ctx, ctx.choice(outcomes), factor, None, "unrecorded")
        pairs = [(o, f) for o in outcomes for f in sorted(program.inputs[o])
                 if variables[f].numeric and not variables[f].outcome]  # fmt: skip
        if not pairs:
            return None
        target = ANSWERS[int(ctx.rng.integers(2))]
        rows = pooled_rows(ctx.repo)
        fallback = None
        for i in ctx.rng.permutation(len(pairs))[: self.config.tries]:
            outcome, factor = pairs[int(i)]
            truth = pair_truth(program, rows, outcome, factor, self.config.max_pvalue)
            if truth.relation not in ANSWERS or not truth.detectable:
                continue
            if truth.relation == target:
                return self._question(ctx, outcome, factor, truth.relation, variables[factor].role)
            fallback = fallback or (outcome, factor, truth.relation, variables[factor].role)
        return None if fallback is None else self._question(ctx, *fallback)

    def _question(
        self, ctx: Context, outcome: str, factor: str, answer: str | None, kind: str
    ) -> Question:
        text = ctx.choice(TEMPLATES).format(y=q(outcome), x=q(factor))
        return ctx.question(
            text,
            "category",
            answer,
            reason=Reason.UNRECORDED_VARIABLE if answer is None else None,
            params={"outcome": outcome, "factor": factor, "factor_kind": kind},
            evidence=ctx.repo.data_files if answer is not None else (),
        )
