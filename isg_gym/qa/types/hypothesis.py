"""Hypothesis tests at alpha 0.01 or 0.05: is the null hypothesis rejected (p < alpha)?

Tests: ``pearson`` / ``spearman`` (no correlation; scipy.stats.pearsonr / spearmanr, two-sided),
``chi_square`` (independence of two categorical columns; scipy.stats.chi2_contingency on
``pd.crosstab``, with or without Yates' continuity correction) and ``welch_t`` (equal means of a
numeric column in two groups of a categorical column; ``scipy.stats.ttest_ind(a, b,
equal_var=False)``, two-sided). The answer is yes when p < alpha.

Column pairs are causally linked (one column's expression depends on the other) or not, drawn
independently of the answer. The test, alpha and the number of row conditions are drawn before
the answerability (so each test's unanswerable share is the nominal one); an answerable question
then draws its target answer and samples scopes, pairs and conditions (a bounded number of
times) until one gives it, so yes and no are balanced per test; when none does, the type offers
no question in that slot (until question generator v3 it fell back to the other answer, which
tilted chi-square to 60% yes). Answerable tests pass the
robustness rules of :mod:`isg_gym.qa.types.bivariate` and never have p within ``margin``
(relative) of alpha.
"""

from __future__ import annotations

from dataclasses import dataclass

from isg_gym.qa.base import Context, Question, QuestionType, register
from isg_gym.qa.types.bivariate import (
    PAIR_REASONS,
    Candidate,
    PairEngine,
    correction_text,
    q,
    scope_phrases,
)

TESTS = ("pearson", "spearman", "chi_square", "welch_t")
ALPHAS = (0.01, 0.05)
ALPHA_MARGIN = 0.25  # robustness: no answerable test with |p - alpha| <= 25% of alpha


def near_alpha(pvalue: float, alpha: float, margin: float = ALPHA_MARGIN) -> bool:
    """Whether ``pvalue`` lies within ``margin`` (relative) of ``alpha``."""
    return abs(pvalue - alpha) <= margin * alpha

# Per test: the question, the claim, the method and the null hypothesis (formatted with x, y,
# g (group column), a, b (group labels), corr).
_QUESTION = {
    "pearson": "Is there a significant Pearson correlation between {x} and {y}",
    "spearman": "Is there a significant Spearman rank correlation between {x} and {y}",
    "chi_square": "Are {x} and {y} significantly associated",
    "welch_t": "Does the mean of {x} differ significantly between the rows where {g} is {a} "
    "and the rows where {g} is {b}",
}
_CLAIM = {
    "pearson": "{x} and {y} are correlated (Pearson)",
    "spearman": "{x} and {y} are rank-correlated (Spearman)",
    "chi_square": "{x} and {y} are not independent",
    "welch_t": "the mean of {x} differs between the rows where {g} is {a} and the rows where "
    "{g} is {b}",
}
_METHOD = {
    "pearson": "Use the two-sided test of the Pearson correlation coefficient on the rows where "
    "both {x} and {y} are present.",
    "spearman": "Use the two-sided test of the Spearman rank correlation coefficient on the rows "
    "where both {x} and {y} are present.",
    "chi_square": "Use the chi-square test of independence on the contingency table of counts of "
    "{x} and {y} (rows where both are present), {corr}.",
    "welch_t": "Use Welch's two-sample t-test (unequal variances, two-sided), ignoring rows where "
    "{x} is missing.",
}
_NULL = {
    "pearson": "no correlation",
    "spearman": "no rank correlation",
    "chi_square": "independence",
    "welch_t": "equal means",
}
TEMPLATES = (
    "{question} {scope}{rows}, at significance level {alpha}? {method}{note} Answer yes if the "
    "null hypothesis of {null} is rejected (p < {alpha}), otherwise no.",
    "Test at the {alpha} significance level whether {claim}, {scope}{rows}. {method}{note} "
    "Answer yes if the null hypothesis of {null} is rejected (p < {alpha}) and no if it is not.",
    "{Scope}{rows}: is the null hypothesis of {null} rejected at significance level {alpha}, "
    "testing whether {claim}? {method}{note} Answer yes (rejected, p < {alpha}) or no.",
)


@register
class HypothesisTest(QuestionType):
    name = "hypothesis_test"
    family = "hypothesis_tests"
    reasons = PAIR_REASONS

    @dataclass(frozen=True)
    class Config:
        max_row_conditions: int = 2
        linked_share: float = 0.5
        tries: int = 24  # candidates sampled to hit the target answer
        margin: float = 0.25  # never ask a test with |p - alpha| <= margin * alpha
        yes_target: float = 0.5  # P(target answer yes)
        yes_linked_share: float = 0.85  # share of linked pairs drawn when the target is yes

    def generate(self, ctx: Context, answerable: bool) -> Question | None:
        cfg = self.config
        engine = PairEngine(
            ctx, TESTS, max_conditions=cfg.max_row_conditions, linked_share=cfg.linked_share,
            linked_only=("chi_square", "welch_t"),  # elsewhere they could hardly answer "yes"
        )
        if not engine.stats:
            return None
        test = ctx.choice(engine.stats)
        k = engine.draw_k()
        alpha = ctx.choice(ALPHAS)
        if answerable:
            cand = self._balanced(ctx, engine, test, k, alpha)
        else:
            cand = engine.unanswerable(test, k)
        return None if cand is None else self._question(ctx, cand, alpha)

    def _balanced(
        self, ctx: Context, engine: PairEngine, test: str, k: int, alpha: float
    ) -> Candidate | None:
        """The first candidate whose answer is a target drawn at random (None if none of
        ``tries`` candidates gives it), never one with p near alpha."""
        target = bool(ctx.rng.random() < self.config.yes_target)
        # a "yes" needs an associated pair: draw linked pairs more often when aiming at it
        engine.linked_share = self.config.yes_linked_share if target else self.config.linked_share
        for cand in engine.candidates(test, k, self.config.tries):
            if not near_alpha(cand.pvalue, alpha, self.config.margin) and (
                (cand.pvalue < alpha) == target
            ):
                return cand
        return None

    def _question(self, ctx: Context, cand: Candidate, alpha: float) -> Question:
        pair = cand.pair
        correction = cand.correction and (cand.reason is not None or cand.chi_dof == 1)
        a, b = pair.groups or ("", "")
        names = {"x": q(pair.x), "y": q(pair.y), "g": q(pair.y), "a": q(a), "b": q(b),
                 "corr": correction_text(correction)}  # fmt: skip
        parts = {k: table[pair.stat].format(**names) for k, table in
                 (("question", _QUESTION), ("claim", _CLAIM), ("method", _METHOD),
                  ("null", _NULL))}  # fmt: skip
        text = ctx.choice(TEMPLATES).format(alpha=alpha, **parts, **scope_phrases(ctx, cand))
        params = {**cand.scope.params(), "test": pair.stat, "alpha": alpha,
                  "row_conditions": cand.row_params}  # fmt: skip
        if pair.stat == "welch_t":
            params |= {"column": pair.x, "group_column": pair.y, "group_a": a, "group_b": b}
        else:
            params |= {"x": pair.x, "y": pair.y}
            if pair.stat == "chi_square":
                params["correction"] = correction
        return ctx.question(
            text,
            "yes_no",
            bool(cand.pvalue < alpha),
            reason=cand.reason,
            params=params,
            evidence=cand.scope.files,
        )
