"""Scores of a discovery report, each apart, and the reward that combines them.

Claims about recorded variables are judged per (outcome, factor) pair. A claim is **correct**
when its relation is the program's within its scope (:meth:`Truth.relation`; for a pair
without a direction, a categorical factor or outcome, any effect relation is right where the
program has an effect). A pair is correct when all its claims are, and **credited** when they
all also earn evidence credit (:mod:`.evidence`).

========================  ======  ==========================================================
component                 weight  what it measures
========================  ======  ==========================================================
``f1``                    0.55    F1 of credited pairs: precision over the pairs claimed with
                                  an effect (plus pairs wrongly claimed "no effect"), recall
                                  over the program's detectable effects
``evidence``              0.15    share of claims about recorded variables with evidence
                                  credit
``robustness``            0.10    share of scoped claims that hold within their scope
``unrecorded``            0.20    unrecorded variables flagged "untestable" and never
                                  asserted, over their number plus the recorded variables
                                  wrongly flagged untestable
========================  ======  ==========================================================

The reward is the weighted mean of the components that apply (robustness needs a scoped
claim, evidence a claim about recorded variables, unrecorded a variable the story names as
unrecorded or a flag), so it lies in [0, 1]. A correct "no effect" claim earns nothing and
costs nothing (else claiming "no effect" for every running number would pad precision); a
wrong one counts against precision. Reported apart: raw precision / recall / F1 without the
evidence condition, and for counterfactual repositories whether the claim about the stated
hypothesis followed the data or the story.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from isg_gym.discovery import evidence as ev
from isg_gym.discovery.claims import UNTESTABLE, Resolved
from isg_gym.discovery.hypothesis import Hypothesis
from isg_gym.discovery.truth import EFFECT_RELATIONS, Truth

WEIGHTS: dict[str, float] = {"f1": 0.55, "evidence": 0.15, "robustness": 0.10, "unrecorded": 0.20}

# TruthInsightBench's dimensions (weights in its rubric) and what they map to here.
TRUTHINSIGHT: dict[str, tuple[int, str | None, str]] = {
    "evidence_auditability": (45, "evidence", "claims backed by a cited call that ran, read the "
                              "files in scope and used the columns"),
    "robustness": (15, "robustness", "scoped claims that hold within their scope"),
    "control_testing": (15, "control_testing", "claims whose factor is another outcome (a "
                        "confounded association unless controlled) that are right"),
    "cross_dataset_generalisation": (10, None, "does not map: an episode has one repository"),
    "novelty": (10, None, "does not map: every effect is in the program; nothing is new to it"),
    "falsifiability": (5, "unrecorded", "variables the data cannot test flagged untestable "
                       "rather than asserted"),
}  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    """How one claim was judged."""

    claim: Resolved
    kind: str  # "recorded" | "flag" (unrecorded, flagged) | "asserted" (unrecorded, asserted)
    # | "wrong_flag" (recorded variables flagged untestable)
    correct: bool
    truth: str | None = None  # the program's relation within the claim's scope
    credited: bool = False  # evidence credit
    note: str = ""


@dataclass
class DiscoveryScore:
    """All the scores of one report; :attr:`reward` combines :attr:`components`."""

    reward: float
    components: dict[str, float | None]
    precision: float
    recall: float
    f1_raw: float
    precision_raw: float
    recall_raw: float
    detectable_effects: int
    assertions: int = 0  # pairs precision is over (claimed with an effect, or wrongly without)
    verdicts: list[Verdict] = field(default_factory=list)
    counterfactual: bool = False
    followed_data: bool | None = None
    followed_story: bool | None = None
    hypothesis_claim: str | None = None
    control_testing: float | None = None

    def truthinsight(self) -> dict[str, Any]:
        """The breakdown in TruthInsightBench's dimensions (None where none maps)."""
        values = {**self.components, "control_testing": self.control_testing}
        return {dim: {"weight": w, "value": None if key is None else values.get(key),
                      "maps_to": key, "note": note}
                for dim, (w, key, note) in TRUTHINSIGHT.items()}  # fmt: skip

    def metrics(self) -> dict[str, float]:
        """Flat figures for evaluation summaries (components that do not apply, and precision
        without a claim, are left out)."""
        out = {"reward": self.reward, "recall": self.recall, "f1_raw": self.f1_raw,
               "claims": float(len(self.verdicts)),
               "counterfactual": float(self.counterfactual)}  # fmt: skip
        if self.assertions:  # no precision without a claim it is over
            out["precision"] = self.precision
        out |= {k: v for k, v in self.components.items() if v is not None}
        if self.control_testing is not None:
            out["control_testing"] = self.control_testing
        if self.counterfactual:
            out["followed_data"] = float(bool(self.followed_data))
            out["followed_story"] = float(bool(self.followed_story))
        return out

    def explanation(self) -> str:
        parts = [f"reward {self.reward:.3f}"]
        parts += [f"{k} {v:.3f}" for k, v in self.components.items() if v is not None]
        parts += [f"precision {self.precision:.3f}", f"recall {self.recall:.3f} of "
                  f"{self.detectable_effects} detectable effects"]  # fmt: skip
        if self.counterfactual:
            followed = ("the data" if self.followed_data else "the story" if self.followed_story
                        else "neither")  # fmt: skip
            parts.append(f"counterfactual hypothesis: followed {followed}")
        return "; ".join(parts)


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def judge(
    claims: list[Resolved],
    truth: Truth,
    calls: Mapping[int, ev.CallRecord],
    files_in: Callable[[Mapping[str, tuple[str, ...]]], list[str]],
) -> list[Verdict]:
    """One verdict per claim (see the module docstring)."""
    out = []
    for claim in claims:
        if claim.unrecorded:
            flagged = claim.relation == UNTESTABLE
            out.append(Verdict(claim, "flag" if flagged else "asserted", flagged))
            continue
        if claim.relation == UNTESTABLE or claim.outcome is None:
            out.append(Verdict(claim, "wrong_flag", False, note="recorded variables are testable"))
            continue
        pair = truth.pairs[claim.outcome, claim.factor]
        relation = truth.relation(claim.outcome, claim.factor, claim.scope)
        if relation is None:
            correct = False
        elif not pair.directional and relation != "no effect":
            correct = claim.relation in EFFECT_RELATIONS
        else:
            correct = claim.relation == relation
        variables = [truth.variables[claim.outcome], truth.variables[claim.factor]]
        credited, note = ev.check(claim.evidence, calls, variables, files_in(claim.scope))
        out.append(Verdict(claim, "recorded", correct, relation, credited, note))
    return out


def score(
    claims: list[Resolved],
    truth: Truth,
    calls: Mapping[int, ev.CallRecord],
    files_in: Callable[[Mapping[str, tuple[str, ...]]], list[str]],
    hypothesis: Hypothesis | None = None,
) -> DiscoveryScore:
    """Judge ``claims`` and combine the scores (module docstring)."""
    verdicts = judge(claims, truth, calls, files_in)
    recorded = [v for v in verdicts if v.kind == "recorded"]
    by_pair: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
    for v in recorded:
        by_pair[v.claim.outcome, v.claim.factor].append(v)  # type: ignore[index]
    detectable = {(p.outcome, p.factor) for p in truth.effects(detectable_only=True)}
    counted = hits = hits_raw = found = found_raw = 0
    for key, group in by_pair.items():
        assertive = any(v.claim.relation in EFFECT_RELATIONS for v in group)
        correct = all(v.correct for v in group)
        credited = correct and all(v.credited for v in group)
        if assertive or not correct:
            counted += 1
            hits += credited and assertive
            hits_raw += correct and assertive
        if key in detectable and assertive:
            found += credited
            found_raw += correct
    precision = hits / counted if counted else 1.0
    precision_raw = hits_raw / counted if counted else 1.0
    recall = found / len(detectable) if detectable else 1.0
    recall_raw = found_raw / len(detectable) if detectable else 1.0

    scoped = [v for v in recorded if v.claim.scope]
    unrecorded = set(truth.unrecorded)
    flagged = {n for v in verdicts if v.kind == "flag" for n in v.claim.unrecorded}
    asserted = {n for v in verdicts if v.kind == "asserted" for n in v.claim.unrecorded}
    wrong_flags = sum(v.kind == "wrong_flag" for v in verdicts)
    handled_of = len(unrecorded) + wrong_flags
    components: dict[str, float | None] = {
        "f1": _f1(precision, recall),
        "evidence": sum(v.credited for v in recorded) / len(recorded) if recorded else None,
        "robustness": sum(v.correct for v in scoped) / len(scoped) if scoped else None,
        "unrecorded": len((flagged - asserted) & unrecorded) / handled_of if handled_of else None,
    }
    applied = {k: v for k, v in components.items() if v is not None}
    reward = sum(WEIGHTS[k] * v for k, v in applied.items()) / sum(WEIGHTS[k] for k in applied)
    on_outcomes = [v for v in recorded if truth.variables[v.claim.factor].outcome]
    control = sum(v.correct for v in on_outcomes) / len(on_outcomes) if on_outcomes else None
    result = DiscoveryScore(
        reward=float(min(1.0, max(0.0, reward))),
        components=components,
        precision=precision,
        recall=recall,
        f1_raw=_f1(precision_raw, recall_raw),
        precision_raw=precision_raw,
        recall_raw=recall_raw,
        detectable_effects=len(detectable),
        assertions=counted,
        verdicts=verdicts,
        control_testing=control,
    )
    if hypothesis is not None:
        _hypothesis(result, recorded, hypothesis)
    return result


def _hypothesis(result: DiscoveryScore, recorded: list[Verdict], hyp: Hypothesis) -> None:
    """Which direction the report gives the stated hypothesis pair (an unscoped claim first)."""
    on_pair = [
        v for v in recorded if (v.claim.outcome, v.claim.factor) == (hyp.outcome, hyp.factor)
    ]
    on_pair.sort(key=lambda v: bool(v.claim.scope))
    claimed = on_pair[0].claim.relation if on_pair else None
    result.counterfactual = hyp.counterfactual
    result.hypothesis_claim = claimed
    result.followed_data = claimed == hyp.program
    result.followed_story = claimed == hyp.stated
