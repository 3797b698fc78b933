"""Fingerprints of what the generator produces, to show that a speed-up changed nothing.

Prints one SHA-256 per kind of output; run it before and after a change (same versions of the
libraries in ``constraints.txt``) and compare the lines:

- ``questions``: the JSON dumps of every question of ``generate_questions(repo, COUNT)`` over
  repositories ``0..SEEDS-1``, plus every type pinned to each of its first slots (both
  answerabilities), so every question type is covered;
- ``resets``: the first observation and info of ISGEnv resets (a fixed seed, random
  repositories, privileged info on, so the gold answer and params are included);
- ``files <fmt>``: the sha256 of the served bytes of the first files of every repository,
  re-served in each file format (and README.md).

Usage: python benchmarks/fingerprint.py [--seeds 200] [--count 6] [--resets 300] [--files 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from typing import Any

from isg_gym.envs import ISGEnv
from isg_gym.qa import QUESTION_TYPES, generate_questions
from isg_gym.qa.sampling import make_question
from isg_gym.repository import Repository
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.models import FILE_FORMATS


def dump(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, default=repr).encode()


def questions_hash(seeds: int, count: int) -> tuple[str, int]:
    digest, n = hashlib.sha256(), 0
    for seed in range(seeds):
        repo = Repository.from_seed(seed)
        for q in generate_questions(repo, count):
            digest.update(dump(q.to_dict()))
            n += 1
        for name in sorted(QUESTION_TYPES):
            for index in range(2):
                for answerable in (True, False):
                    q = make_question(repo, name, index, answerable)
                    digest.update(dump(None if q is None else q.to_dict()))
                    n += q is not None
    return digest.hexdigest(), n


class NoSandbox:
    """Resets never run code; the env only needs an object with run() and close()."""

    def run(self, code: str, files_dir: str) -> None:
        raise RuntimeError("not used")

    def close(self) -> None:
        pass


def resets_hash(resets: int) -> str:
    env = ISGEnv(sandbox=NoSandbox(), privileged_info=True)
    digest = hashlib.sha256()
    obs, info = env.reset(seed=0)
    for _ in range(resets):
        info.pop("tools", None)
        digest.update(obs.encode() + dump(info))
        obs, info = env.reset()
    env.close()
    return digest.hexdigest()


def files_hashes(seeds: int, files: int) -> dict[str, str]:
    out = {}
    for fmt in ("native", *FILE_FORMATS):
        digest = hashlib.sha256()
        for seed in range(seeds):
            spec = build_spec(seed)
            if fmt != "native":
                spec = spec.model_copy(update={"file_format": fmt})
            repo = Repository(spec)
            for path in repo.files()[: files + 1]:
                content = hashlib.sha256(repo.read_bytes(path)).digest()
                digest.update(path.encode() + b"\0" + content)
        out[fmt] = digest.hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--count", type=int, default=6)
    parser.add_argument("--resets", type=int, default=300)
    parser.add_argument("--files", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    qhash, n = questions_hash(args.seeds, args.count)
    print(f"questions ({n} over seeds 0-{args.seeds - 1}): {qhash}")
    print(f"resets ({args.resets}): {resets_hash(args.resets)}")
    for fmt, value in files_hashes(args.seeds, args.files).items():
        print(f"files {fmt:<6} ({args.files} + README per repository): {value}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
