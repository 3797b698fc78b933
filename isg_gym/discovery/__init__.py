"""ISG-Discovery: open-ended discovery on a repository, graded exactly against the program that
generated it (truth, claims, evidence, scoring, counterfactual repositories)."""

from isg_gym.discovery.claims import (
    CLAIM_RELATIONS,
    Claim,
    ClaimError,
    Resolved,
    Resolver,
    findings_in_text,
    parse_findings,
)
from isg_gym.discovery.evidence import CallRecord
from isg_gym.discovery.hypothesis import Hypothesis
from isg_gym.discovery.scoring import WEIGHTS, DiscoveryScore, score
from isg_gym.discovery.truth import RELATIONS, PairTruth, Truth, compute_truth
from isg_gym.discovery.world import (
    DEFAULT_COUNTERFACTUAL_SHARE,
    DiscoveryWorld,
    NotADiscoveryRepository,
    discovery_world,
)

__all__ = [
    "CLAIM_RELATIONS",
    "DEFAULT_COUNTERFACTUAL_SHARE",
    "RELATIONS",
    "WEIGHTS",
    "CallRecord",
    "Claim",
    "ClaimError",
    "DiscoveryScore",
    "DiscoveryWorld",
    "Hypothesis",
    "NotADiscoveryRepository",
    "PairTruth",
    "Resolved",
    "Resolver",
    "Truth",
    "compute_truth",
    "discovery_world",
    "findings_in_text",
    "parse_findings",
    "score",
]
