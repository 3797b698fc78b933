"""Grading and rewards: answer extraction, abstention, the rubric per answer kind, RL rewards."""

from isg_gym.rewards.abstention import ABSTENTIONS, is_abstention
from isg_gym.rewards.blind_guess import UNANSWERABLE_SHARE, break_even_share
from isg_gym.rewards.extract import Extraction, extract, extract_answer
from isg_gym.rewards.reward import RewardConfig, reward
from isg_gym.rewards.rubric import ABSTRACT_F1, TITLE_F1, Score, grade

__all__ = [
    "ABSTENTIONS",
    "ABSTRACT_F1",
    "TITLE_F1",
    "UNANSWERABLE_SHARE",
    "Extraction",
    "RewardConfig",
    "Score",
    "break_even_share",
    "extract",
    "extract_answer",
    "grade",
    "is_abstention",
    "reward",
]
