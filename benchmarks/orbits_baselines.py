"""Zero-tool shortcut benchmark of ISG-Orbits-v0: how far answering without observing gets.

Run: ``python benchmarks/orbits_baselines.py`` (needs ``pip install -e ".[bench]"``:
scikit-learn; no simulation, so no REBOUND either).

Every question is seen as an agent sees it before any tool call: the whole prompt (system
prompt with the units, window and observation model, and the question). Policies that never
call a tool:

- **always-abstain**: "not possible" everywhere;
- **best constant**: per task, the one answer that is right most often over the training
  questions ("not possible", yes, no, or the number within the task's threshold of the most
  training answers);
- **text classifier**: TF-IDF (word 1-2-grams and number tokens) + logistic regression trained
  on other training systems' prompts to predict "unanswerable"; per task it abstains above a
  threshold (chosen on out-of-fold predictions) and otherwise gives the best constant of the
  answerable questions. Its within-task answerability AUC is printed (0.5: no signal).

Training questions: systems ``--train`` (default 1000-2999, 6 question slots each, about 3.4
of them kept); scored on held-out training systems ``--test`` (3000-4999) and on ``orbits-200``;
every answer graded by the real grader. Goals: no zero-tool policy above always-abstain (with
40% of the questions unanswerable since questions v2, a blind guess on a balanced yes/no task is
right on 30% against 40% for abstaining: :mod:`isg_gym.rewards.blind_guess`), no task AUC above
0.6.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

import numpy as np

from isg_gym.orbits.grading import grade
from isg_gym.orbits.prompt import build_prompt
from isg_gym.orbits.sampling import iter_questions, question_from_id
from isg_gym.orbits.splits import resolve_split
from isg_gym.orbits.system import build_system
from isg_gym.orbits.tasks import ABSTAIN, TASKS, OrbitQuestion

TOKEN = r"(?u)\b\w[\w.+-]*\b"


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi) + 1)


def prompt_text(question: OrbitQuestion) -> str:
    prompt = build_prompt(build_system(question.system), question.text, "budget", 100, 10, 30)
    return prompt["system"] + "\n" + prompt["user"]


def sampled(systems: range, per_system: int) -> list[OrbitQuestion]:
    return [q for seed in systems for q in iter_questions(build_system(seed), per_system)]


def best_constant(questions: list[OrbitQuestion]) -> str:
    """The answer right most often over ``questions`` (all of one task)."""
    candidates = [ABSTAIN, "yes", "no"]
    candidates += [f"{q.answer:.6g}" for q in questions
                   if q.answerable and q.answer_kind == "number"]  # fmt: skip
    scores = {c: sum(grade(q, c).correct for q in questions) for c in dict.fromkeys(candidates)}
    return max(scores, key=lambda c: (scores[c], c == ABSTAIN))


def accuracy(questions: list[OrbitQuestion], answers: list[str]) -> float:
    return float(np.mean([grade(q, a).correct for q, a in zip(questions, answers, strict=True)]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", default="1000-2999")
    parser.add_argument("--test", default="3000-4999")
    parser.add_argument("--per-system", type=int, default=6)  # slots; about 57% keep a question
    args = parser.parse_args(argv)
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import cross_val_predict
    except ImportError:
        print("needs scikit-learn: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    train = sampled(_range(args.train), args.per_system)
    sets = {"held-out training systems": sampled(_range(args.test), args.per_system),
            "orbits-200": [question_from_id(q) for q in resolve_split("orbits-200")]}  # fmt: skip
    by_task: dict[str, list[OrbitQuestion]] = defaultdict(list)
    for q in train:
        by_task[q.type].append(q)
    constant = {t: best_constant(qs) for t, qs in by_task.items()}
    answerable_constant = {t: best_constant([q for q in qs if q.answerable])
                           for t, qs in by_task.items()}  # fmt: skip
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), token_pattern=TOKEN, min_df=2,
                                 sublinear_tf=True)  # fmt: skip
    x_train = vectorizer.fit_transform([prompt_text(q) for q in train])
    y_train = np.array([not q.answerable for q in train])
    model = LogisticRegression(max_iter=2000, C=1.0)
    oof = cross_val_predict(model, x_train, y_train, cv=5, method="predict_proba")[:, 1]
    model.fit(x_train, y_train)
    cutoff = {}
    for task, qs in by_task.items():
        idx = [i for i, q in enumerate(train) if q.type == task]
        best = (-1.0, 1.1)
        for c in [*sorted(set(oof[idx])), 1.1]:
            answers = [ABSTAIN if oof[i] >= c else answerable_constant[task] for i in idx]
            best = max(best, (accuracy(qs, answers), -c))
        cutoff[task] = -best[1]
    print(f"training questions: {len(train)} (systems {args.train}); "
          f"unanswerable {y_train.mean():.1%}")  # fmt: skip
    print("\n| policy | " + " | ".join(sets) + " |\n|---|" + "---|" * len(sets))
    rows = defaultdict(list)
    aucs: dict[str, list[float]] = defaultdict(list)
    for name, questions in sets.items():
        probs = model.predict_proba(vectorizer.transform([prompt_text(q) for q in questions]))[:, 1]
        rows["always abstain"].append(accuracy(questions, [ABSTAIN] * len(questions)))
        constants = [constant[q.type] for q in questions]
        rows["best constant per task"].append(accuracy(questions, constants))
        classified = [ABSTAIN if p >= cutoff[q.type] else answerable_constant[q.type]
                      for q, p in zip(questions, probs, strict=True)]  # fmt: skip
        rows["text classifier + constant"].append(accuracy(questions, classified))
        rows["gold answers"].append(accuracy(questions, [_gold(q) for q in questions]))
        if name == "held-out training systems":
            for task in TASKS:
                idx = [i for i, q in enumerate(questions) if q.type == task]
                labels = [not questions[i].answerable for i in idx]
                if 0 < sum(labels) < len(labels):
                    aucs[task] = [roc_auc_score(labels, probs[idx]), len(idx)]
    for policy, values in rows.items():
        print(f"| {policy} | " + " | ".join(f"{v:.1%}" for v in values) + " |")
    for i, name in enumerate(sets):
        gap = max(rows[p][i] for p in rows if p not in ("always abstain", "gold answers"))
        gap -= rows["always abstain"][i]
        print(f"\n{name}: best zero-tool policy {100 * gap:+.1f} points against always-abstain "
              f"(goal <= 0: {'met' if gap <= 0 else 'NOT met'})")
    print("\nWithin-task answerability AUC of the text classifier (held-out training systems):")
    print("| task | n | AUC | best constant | its accuracy on held-out |\n|---|---|---|---|---|")
    test = sets["held-out training systems"]
    for task in sorted(TASKS):
        qs = [q for q in test if q.type == task]
        auc, n = aucs.get(task, [float("nan"), len(qs)])
        print(f"| {task} | {n} | {auc:.2f} | {constant[task]} | "
              f"{accuracy(qs, [constant[task]] * len(qs)):.1%} |")  # fmt: skip
    worst = max(v[0] for v in aucs.values())
    print(f"\nlargest task AUC: {worst:.2f} (goal <= 0.60: {'met' if worst <= 0.6 else 'NOT met'})")
    return 0


def _gold(q: OrbitQuestion) -> str:
    if not q.answerable:
        return ABSTAIN
    if q.answer_kind == "yes_no":
        return "yes" if q.answer else "no"
    return repr(q.answer)


if __name__ == "__main__":
    sys.exit(main())
