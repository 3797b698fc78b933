"""GRPO on ISG-v0 with TRL's ``environment_factory`` (a tiny-budget sketch for one GPU).

TRL builds one :class:`~isg_gym.rl.ISGToolEnv` per rollout, calls ``reset(**row)`` with each
dataset row (the row's ``question_id`` pins the question; the question text is appended to the
row's prompt), exposes the env's tools (list_directory, read_text_file, run_python_code,
final_answer) to the model through the chat template, runs the tool-calling loop, and scores
each rollout with the env's own reward (1 for a correct final answer, else 0).

Needs a GPU and ``pip install trl datasets 'transformers>=5.2' jmespath`` (TRL's
``environment_factory`` is experimental; add vLLM for ``--use-vllm``). Training questions come
from the training repositories only (:data:`isg_gym.eval.splits.TRAIN_REPOSITORIES`).

    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --max-steps 2
"""

from __future__ import annotations

import argparse
from typing import Any

from isg_gym.eval.splits import TRAIN_REPOSITORIES
from isg_gym.rl import ISGToolEnv, make_dataset_rows


def isg_reward(environments: list[ISGToolEnv], **kwargs: Any) -> list[float]:
    """The env's reward for each rollout (0 until a final answer)."""
    return [env.get_reward() for env in environments]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen3-0.6B", help="a small tool-calling model")
    parser.add_argument("--max-steps", type=int, default=2, help="optimizer steps")
    parser.add_argument("--questions", type=int, default=64, help="training questions (rows)")
    parser.add_argument("--first-repository", type=int, default=TRAIN_REPOSITORIES.start)
    parser.add_argument("--env-max-steps", type=int, default=10, help="tool calls per episode")
    parser.add_argument("--batch-size", type=int, default=4, help="per-device train batch size")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per question")
    parser.add_argument("--max-completion-length", type=int, default=2048)
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--sandbox", default="auto", help="Python sandbox backend")
    parser.add_argument("--use-vllm", action="store_true", help="generate with vLLM (colocate)")
    parser.add_argument("--output-dir", default="runs/isg-grpo")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.first_repository not in TRAIN_REPOSITORIES:
        raise SystemExit(f"--first-repository must be a training repository ({TRAIN_REPOSITORIES})")
    try:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        raise SystemExit(f"this example needs TRL: pip install trl datasets ({exc})") from exc

    # The tools' step budget and the prompt's announced budget are the env's max_steps.
    env_cls = ISGToolEnv.configure(max_steps=args.env_max_steps, sandbox=args.sandbox)
    seeds = range(args.first_repository, TRAIN_REPOSITORIES.stop)
    rows = make_dataset_rows(seeds, n=args.questions, max_steps=args.env_max_steps)
    dataset = Dataset.from_list(rows)

    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.env_max_steps,
        learning_rate=args.learning_rate,
        chat_template_kwargs={"enable_thinking": False},
        use_vllm=args.use_vllm,
        vllm_mode="colocate",
        logging_steps=1,
        log_completions=True,
        report_to="none",
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=args.model,
        args=config,
        train_dataset=dataset,
        reward_funcs=[isg_reward],
        environment_factory=env_cls,
    )
    trainer.train()
    trainer.save_model(args.output_dir)


if __name__ == "__main__":
    main()
