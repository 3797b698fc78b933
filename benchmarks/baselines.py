"""Zero-tool shortcut benchmark: how far answering without looking at the data gets.

Run: ``python benchmarks/baselines.py`` (needs ``pip install -e ".[bench]"``: scikit-learn).

Two classifiers predict from a question's TEXT alone whether it is unanswerable:

- **text**: TF-IDF of word 1-2-grams + logistic regression;
- **structure**: gradient-boosted trees on simple structural features of the text (length,
  numbers of quoted names, backticked paths, conditions and each comparison operator; digits,
  decimals and negatives of the numbers; identifier-like tokens; statistic words).

They are trained on questions of TRAINING repositories (``--train``, default 1000-2999, 5
questions each) and scored on other training repositories (``--test``, default 3000-4999:
10,000 questions) and on the ``isg-500`` split. The **zero-tool policy** uses a classifier's
probability: per question type it abstains ("not possible") where that probability is above a
threshold and otherwise gives the best no-data guess of the type (its most common answer over
the answerable training questions: "yes"/"no", an extension, a count, a float that is rarely
right); the per-type threshold maximises the policy's accuracy on out-of-fold predictions over
the training questions (a type whose guess is never right abstains throughout). Every answer
is graded by the real grader (:func:`isg_gym.rewards.grade`); the gold answers must score 100%.

Printed: accuracy of always-abstain, of the zero-tool policy (with each classifier, with their
mean, and with no classifier at all: "type prior", per type always the guess or always abstain),
of the gold answers and, on isg-500, of the scripted oracle through the tools (read from its
committed run, ``benchmarks/results/oracle``); a per-type table of within-type answerability AUC
for both classifiers (0.5: no signal; with its standard error), the unanswerable share, the per-
type accuracy of the zero-tool policy (mean of both classifiers) and of the type prior, and the
most common answer's share of the answerable questions. A blind guess on a yes/no type whose
answers are balanced is right on half of the answerable questions: with 40% unanswerable (since
question generator v3) that is 30% against 40% for abstaining; with v2's 25% it was 37.5% against
25%, so the type prior alone beat always-abstain (:mod:`isg_gym.rewards.blind_guess`). Goals:
no zero-tool policy beats always-abstain (gap <= 0, or within 1.96 standard errors of the
paired per-question difference when a classifier's noise puts it a hair above); no type's AUC
above 0.60 (issue 9). The verdicts are printed as measured, met or not.

Generated questions are cached under ``--cache`` (default: a directory in the system's temp dir)
keyed by :data:`~isg_gym.qa.base.QUESTION_VERSION` and a hash of the generator's source, so a
second run takes seconds; ``--workers`` processes generate them (default 2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import isg_gym
from isg_gym.eval.splits import TRAIN_REPOSITORIES, resolve_split
from isg_gym.qa import QUESTION_VERSION, Question, format_answer, generate_questions
from isg_gym.qa.sampling import question_from_id
from isg_gym.repository import Repository
from isg_gym.rewards import grade

ABSTAIN = "not possible"
GOAL_AUC = 0.60
_RANGE = re.compile(r"^(\d+)-(\d+)$")
# Source folders whose code decides what the questions are (their hash keys the cache).
_GENERATOR_PACKAGES = ("qa", "repository", "spec", "simulator", "numbers.py", "seeding.py")


def _repo_range(text: str) -> range:
    match = _RANGE.match(text)
    if not match or int(match.group(2)) <= int(match.group(1)):
        raise argparse.ArgumentTypeError(f"{text!r} is not a range A-B of repositories (A < B)")
    return range(int(match.group(1)), int(match.group(2)))


# --- questions, generated once and cached ------------------------------------------------------


def generator_hash() -> str:
    """A hash of the question generator's source (a change invalidates the cache)."""
    root = Path(isg_gym.__file__).parent
    digest = hashlib.sha256(f"v{QUESTION_VERSION}".encode())
    for name in _GENERATOR_PACKAGES:
        path = root / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.relative_to(root).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _question(record: dict[str, Any]) -> Question:
    fields = {k: v for k, v in record.items() if k != "answerable"}
    fields["evidence"] = tuple(fields.get("evidence", ()))
    return Question(**fields)


def _generate_chunk(job: tuple[list[int], int]) -> list[dict[str, Any]]:
    seeds, per_repository = job
    out = []
    for seed in seeds:
        out += [q.to_dict() for q in generate_questions(Repository.from_seed(seed), per_repository)]
    return out


def _split_chunk(ids: list[str]) -> list[dict[str, Any]]:
    out = []
    for qid in ids:
        try:
            out.append(question_from_id(qid).to_dict())
        except ValueError as exc:  # a stored id the current generator no longer has
            out.append({"id": qid, "error": str(exc)})
    return out


def _cached(cache: Path, name: str, make: Callable[[], list[dict[str, Any]]]) -> list[dict]:
    path = cache / f"v{QUESTION_VERSION}-{generator_hash()}" / f"{name}.jsonl"
    if path.exists():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    records = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    tmp.replace(path)
    return records


def _parallel(fn: Callable, jobs: list, workers: int) -> list[dict[str, Any]]:
    if workers <= 1:
        return [r for job in jobs for r in fn(job)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [r for chunk in pool.map(fn, jobs) for r in chunk]


def repository_questions(
    repos: range, per_repository: int, cache: Path, workers: int
) -> list[Question]:
    """``per_repository`` questions of each repository (the ISG-v0 sampler), cached."""
    seeds = list(repos)
    jobs = [(seeds[i : i + 50], per_repository) for i in range(0, len(seeds), 50)]
    name = f"repos-{repos.start}-{repos.stop}-x{per_repository}"
    records = _cached(cache, name, lambda: _parallel(_generate_chunk, jobs, workers))
    return [_question(r) for r in records]


def split_questions(split: str, cache: Path, workers: int) -> tuple[list[Question], list[str]]:
    """The questions of a stored split, and the ids that no longer regenerate."""
    ids = resolve_split(split)
    jobs = [ids[i : i + 25] for i in range(0, len(ids), 25)]
    key = hashlib.sha256(" ".join(ids).encode()).hexdigest()[:10]
    records = _cached(cache, f"split-{split}-{key}", lambda: _parallel(_split_chunk, jobs, workers))
    return [_question(r) for r in records if "error" not in r], [
        r["id"] for r in records if "error" in r
    ]


# --- the two classifiers ---------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_OPERATORS = ("greater than", "less than", "at least", "at most", "between", "is not",
              "one of", " is ", "equal", "exactly", "inclusive")  # fmt: skip
_STATISTICS = ("mean", "median", "minimum", "maximum", "standard deviation", "variance",
               "distinct", "most common", "pearson", "spearman", "slope", "chi-square",
               "welch", "highest", "lowest", "missing", "how many", "identifier", "timestamp",
               "time", "label", "category", "yes or no", "extension", "title", "abstract",
               "readme")  # fmt: skip


def _digits(number: str) -> int:
    return len(number.lstrip("-").replace(".", "").lstrip("0")) or 1


def structural_features(text: str) -> list[float]:
    """Simple structural features of a question's text (see the module docstring)."""
    low = text.casefold()
    bare = re.sub(r"`[^`]*`", " ", text)  # numbers inside paths are not thresholds
    numbers = _NUMBER.findall(bare)
    digits = [_digits(n) for n in numbers] or [0]
    decimals = [len(n.split(".")[1]) if "." in n else 0 for n in numbers] or [0]
    return [
        len(text), len(text.split()), text.count('"') / 2, text.count("`") / 2,
        low.count(" where "), low.count(" and "), low.count(","), low.count("?"),
        len(numbers), max(digits), float(np.mean(digits)), max(decimals),
        sum(n.startswith("-") for n in numbers), len(re.findall(r"\w_\w", text)),
        len(re.findall(r"\w=\w", text)), len(re.findall(r"/", text)),
        *(low.count(op) for op in _OPERATORS), *(float(s in low) for s in _STATISTICS),
    ]  # fmt: skip


@dataclass
class Model:
    """A fitted classifier: ``predict(texts)`` -> P(unanswerable)."""

    name: str
    make: Callable[[], Any]
    featurize: Callable[[Sequence[str]], Any]
    fitted: Any = None

    def fit(self, texts: Sequence[str], y: np.ndarray) -> Model:
        self.fitted = self.make().fit(self.featurize(texts), y)
        return self

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.fitted.predict_proba(self.featurize(texts))[:, 1]

    def out_of_fold(self, texts: Sequence[str], y: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Predictions for each training question from a model fitted without its repository."""
        from sklearn.model_selection import GroupKFold

        out = np.zeros(len(texts))
        for train, held in GroupKFold(n_splits=3).split(texts, y, groups):
            fitted = self.make().fit(self.featurize([texts[i] for i in train]), y[train])
            out[held] = fitted.predict_proba(self.featurize([texts[i] for i in held]))[:, 1]
        return out


def models() -> list[Model]:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    def text_model() -> Any:
        return make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
            LogisticRegression(C=4.0, max_iter=2000),
        )

    def structure_model() -> Any:
        return HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=0)

    def structure_features(texts: Sequence[str]) -> np.ndarray:
        return np.array([structural_features(t) for t in texts])

    return [
        Model("text", text_model, list),
        Model("structure", structure_model, structure_features),
    ]


# --- the zero-tool policy --------------------------------------------------------------------


@dataclass
class Policy:
    """Per type: the best no-data guess, and the P(unanswerable) above which to abstain."""

    guess: dict[str, str]
    threshold: dict[str, float]

    def answer(self, question: Question, p_unanswerable: float) -> str:
        if question.type not in self.guess:
            return ABSTAIN
        if p_unanswerable > self.threshold[question.type]:
            return ABSTAIN
        return self.guess[question.type]


def fit_policy(questions: Sequence[Question], p: np.ndarray) -> Policy:
    """The guesses and thresholds that maximise the accuracy on ``questions`` given
    out-of-fold probabilities ``p``."""
    guess: dict[str, str] = {}
    threshold: dict[str, float] = {}
    by_type: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_type[q.type].append(i)
    for kind, idx in by_type.items():
        answers = Counter(format_answer(questions[i]) for i in idx if questions[i].answerable)
        if not answers:
            guess[kind], threshold[kind] = ABSTAIN, -1.0
            continue
        guess[kind] = answers.most_common(1)[0][0]
        hit = np.array([grade(questions[i], guess[kind]).value for i in idx])
        unanswerable = np.array([not questions[i].answerable for i in idx], dtype=float)
        probs = p[idx]
        order = np.argsort(probs)  # answer the lowest-probability ones, abstain on the rest
        # accuracy when answering the first j (in probability order) and abstaining on the rest
        answered_hits = np.concatenate([[0.0], np.cumsum(hit[order])])
        abstained_right = np.concatenate([np.cumsum(unanswerable[order][::-1])[::-1], [0.0]])
        j = int(np.argmax(answered_hits + abstained_right))
        threshold[kind] = -1.0 if j == 0 else float(probs[order][j - 1])
    return Policy(guess, threshold)


def fit_prior_policy(questions: Sequence[Question], guess: dict[str, str]) -> Policy:
    """No classifier: per type, always give the guess or always abstain, whichever scores
    more on ``questions`` (what knowing the type alone earns)."""
    threshold: dict[str, float] = {}
    for kind, value in guess.items():
        mine = [q for q in questions if q.type == kind]
        hits = sum(grade(q, value).value for q in mine)
        threshold[kind] = math.inf if hits > sum(not q.answerable for q in mine) else -1.0
    return Policy(dict(guess), threshold)


def scores(questions: Sequence[Question], answers: Sequence[str]) -> np.ndarray:
    """Each answer's grade."""
    return np.array([grade(q, a).value for q, a in zip(questions, answers, strict=True)], float)


def accuracy(questions: Sequence[Question], answers: Sequence[str]) -> float:
    return float(scores(questions, answers).mean()) if questions else float("nan")


def auc_se(auc: float, positives: int, negatives: int) -> float:
    """The standard error of an AUC (Hanley & McNeil, 1982)."""
    if math.isnan(auc) or not positives or not negatives:
        return float("nan")
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    var = (auc * (1 - auc) + (positives - 1) * (q1 - auc**2)
           + (negatives - 1) * (q2 - auc**2)) / (positives * negatives)  # fmt: skip
    return math.sqrt(max(var, 0.0))


def auc_by_type(questions: Sequence[Question], p: np.ndarray) -> dict[str, tuple[float, float]]:
    """Within-type AUC of ``p`` for "unanswerable" and its standard error (NaN where a type has
    one class only)."""
    from sklearn.metrics import roc_auc_score

    out: dict[str, tuple[float, float]] = {}
    for kind in sorted({q.type for q in questions}):
        idx = [i for i, q in enumerate(questions) if q.type == kind]
        y = [not questions[i].answerable for i in idx]
        auc = roc_auc_score(y, p[idx]) if 0 < sum(y) < len(y) else float("nan")
        out[kind] = (auc, auc_se(auc, sum(y), len(y) - sum(y)))
    return out


def top_answer_share(questions: Sequence[Question], kind: str) -> tuple[str, float]:
    answers = Counter(format_answer(q) for q in questions if q.type == kind and q.answerable)
    if not answers:
        return "-", float("nan")
    value, count = answers.most_common(1)[0]
    return value, count / sum(answers.values())


# --- the report ------------------------------------------------------------------------------

ORACLE_SUMMARY = Path(__file__).resolve().parent / "results" / "oracle" / "summary.json"


def oracle_line() -> str:
    """The scripted oracle's isg-500 accuracy through the tools (its committed run, made with
    ``isg eval --backend scripted --model oracle --split isg-500``), if it is of this version."""
    if not ORACLE_SUMMARY.exists():
        return "oracle (tools)          not run: isg eval --backend scripted --model oracle"
    summary = json.loads(ORACLE_SUMMARY.read_text(encoding="utf-8"))
    if summary.get("question_version") != QUESTION_VERSION:
        return (f"oracle (tools)          {ORACLE_SUMMARY} is of question version "
                f"{summary.get('question_version')}, not {QUESTION_VERSION}: rerun it")  # fmt: skip
    return (f"oracle (tools)          {summary['accuracy']:7.2%}  ({summary['correct']}/"
            f"{summary['n']} through the sandbox, benchmarks/results/oracle)")  # fmt: skip



def evaluate(
    label: str, questions: list[Question], fitted: list[Model], policies: dict[str, Policy]
) -> dict[str, Any]:
    """Print the accuracies and the per-type table for one question set; return the figures."""
    texts = [q.text for q in questions]
    probs = {m.name: m.predict(texts) for m in fitted}
    probs["mean"] = np.mean([probs[m.name] for m in fitted], axis=0)
    probs["type prior"] = np.zeros(len(questions))
    abstained = scores(questions, [ABSTAIN] * len(questions))
    abstain = float(abstained.mean())
    gold = accuracy(questions, [format_answer(q) for q in questions])
    per_question = {
        name: scores(questions, [pol.answer(q, pr) for q, pr in zip(questions, probs[name],
                                                                     strict=True)])
        for name, pol in policies.items()
    }  # fmt: skip
    zero = {name: float(s.mean()) for name, s in per_question.items()}
    share = sum(not q.answerable for q in questions) / len(questions)
    print(f"\n== {label}: {len(questions)} questions, unanswerable share {share:.3f}")
    print(f"  always abstain          {abstain:7.2%}")
    for name, acc in zero.items():
        print(f"  zero-tool ({name:<10})  {acc:7.2%}  ({100 * (acc - abstain):+.1f} points)")
    print("  (type prior: no classifier, per type always the guess or always abstain; the gap "
          "between it and the classifiers is what the text tells about answerability)")
    print(f"  gold answers (grader)   {gold:7.2%}" + ("" if gold == 1.0 else "  <-- NOT 100%"))
    if label.startswith("isg-500"):
        print(f"  {oracle_line()}")
    aucs = {m.name: auc_by_type(questions, probs[m.name]) for m in fitted}
    best_name = max(zero, key=lambda k: zero[k])
    print(f"  (per type: zero-tool is the best policy overall, {best_name}; prior the type prior)")
    print(f"  {'type':<22} {'n':>5} {'unans':>6} {'AUC text (SE)':>14} {'AUC struct (SE)':>16}"
          f" {'zero-tool':>9} {'prior':>6}  top answer (its share of the answerable)")  # fmt: skip
    for kind in sorted(aucs["text"]):
        idx = [i for i, q in enumerate(questions) if q.type == kind]
        mine = [questions[i] for i in idx]
        unans = sum(not q.answerable for q in mine) / len(mine)
        value, top = top_answer_share(questions, kind)
        (a_t, se_t), (a_s, se_s) = aucs["text"][kind], aucs["structure"][kind]
        by = {name: float(per_question[name][idx].mean()) for name in (best_name, "type prior")}
        print(f"  {kind:<22} {len(mine):5d} {unans:6.1%} {a_t:7.3f} ({se_t:.3f}) {a_s:9.3f} "
              f"({se_s:.3f}) {by[best_name]:9.1%} {by['type prior']:6.1%}  {value[:20]!r} "
              f"({top:.1%})")  # fmt: skip
    best = zero[best_name]
    gap = best - abstain
    diff = per_question[best_name] - abstained
    se = float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else 0.0
    flat = [(a, se, k, m) for m, by in aucs.items() for k, (a, se) in by.items()
            if not math.isnan(a)]  # fmt: skip
    worst = max(flat) if flat else (float("nan"), float("nan"), "-", "-")
    verdict = "met" if gap <= 0 else ("met within noise" if gap <= 1.96 * se else "NOT MET")
    print(f"  GOAL no zero-tool policy beats always-abstain: {verdict} (best: {best_name}, "
          f"{best:.2%}, {100 * gap:+.2f} points, SE of the paired difference "
          f"{100 * se:.2f})")  # fmt: skip
    above = [f for f in flat if f[0] > GOAL_AUC]
    clear = [f for f in above if f[0] - 1.96 * f[1] > GOAL_AUC]
    print(f"  GOAL no type's AUC above {GOAL_AUC:.2f}: "
          f"{'met' if not above else 'NOT MET'} (highest {worst[0]:.3f}: {worst[2]}, {worst[3]}; "
          f"{len(above)} above, {len(clear)} of them by more than 1.96 SE)")  # fmt: skip
    return {"abstain": abstain, "zero_tool": zero, "gold": gold, "auc": aucs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=_repo_range, default=range(1000, 3000), metavar="A-B",
                        help="training repositories (default 1000-2999)")  # fmt: skip
    parser.add_argument("--test", type=_repo_range, default=range(3000, 5000), metavar="A-B",
                        help="held-out training repositories (default 3000-4999)")  # fmt: skip
    parser.add_argument("--per-repository", type=int, default=5, metavar="N")
    parser.add_argument("--split", default="isg-500", help="stored split scored (default isg-500)")
    parser.add_argument("--cache", type=Path,
                        default=Path(tempfile.gettempdir()) / "isg-gym-baselines",
                        help="cache of generated questions")  # fmt: skip
    parser.add_argument("--workers", type=int, default=2, help="generating processes")
    args = parser.parse_args(argv)
    for r in (args.train, args.test):
        if r.start < TRAIN_REPOSITORIES.start or r.stop > TRAIN_REPOSITORIES.stop:
            parser.error(f"repositories {r.start}-{r.stop} are not all training repositories "
                         f"({TRAIN_REPOSITORIES.start}-{TRAIN_REPOSITORIES.stop - 1})")  # fmt: skip
    if set(args.train) & set(args.test):
        parser.error("--train and --test overlap")
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("baselines.py needs scikit-learn: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    started = time.time()
    train = repository_questions(args.train, args.per_repository, args.cache, args.workers)
    test = repository_questions(args.test, args.per_repository, args.cache, args.workers)
    split, lost = split_questions(args.split, args.cache, args.workers)
    print(f"question generator v{QUESTION_VERSION} ({generator_hash()}); questions in "
          f"{time.time() - started:.0f} s; train {len(train)} questions from repositories "
          f"{args.train.start}-{args.train.stop - 1}")  # fmt: skip
    if lost:
        print(f"  {len(lost)} ids of {args.split} do not regenerate (stale split file?): "
              f"{', '.join(lost[:5])}")  # fmt: skip
    texts = [q.text for q in train]
    y = np.array([not q.answerable for q in train], dtype=int)
    groups = np.array([q.repository for q in train])
    fitted, policies, oof = [], {}, {}
    for model in models():
        oof[model.name] = model.out_of_fold(texts, y, groups)
        fitted.append(model.fit(texts, y))
    oof["mean"] = np.mean([oof[m.name] for m in fitted], axis=0)
    for name, p in oof.items():
        policies[name] = fit_policy(train, p)
    policies["type prior"] = fit_prior_policy(train, policies["text"].guess)
    print("  no-data guesses: " + ", ".join(f"{k}={v[:20]!r}" for k, v in
                                            sorted(policies["text"].guess.items())))  # fmt: skip
    evaluate(f"held-out training repositories {args.test.start}-{args.test.stop - 1}", test,
             fitted, policies)  # fmt: skip
    evaluate(args.split, split, fitted, policies)
    print(f"\ntotal {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
