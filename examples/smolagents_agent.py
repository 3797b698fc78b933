"""A smolagents agent on ISG-v0: N episodes of an evaluation split, scored by the runner.

The agent is smolagents' own loop (``ToolCallingAgent`` by default, or ``CodeAgent`` with
``--agent code``, whose code runs only in the env's sandbox) with the env's four tools, behind
either an OpenAI-compatible server (``OpenAIServerModel``; the API key comes from the
``OPENAI_API_KEY`` environment variable, "EMPTY" for a local server) or an in-process vLLM model
(``--backend vllm``, needs a GPU). Records, ``summary.md`` and plots go to ``--out-dir``.

    # a local server, e.g. `vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice
    #   --tool-call-parser hermes`
    python examples/smolagents_agent.py --model Qwen/Qwen3-8B --episodes 24
    python examples/smolagents_agent.py --backend vllm --model Qwen/Qwen3-0.6B --episodes 12
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass
from typing import Any

from isg_gym.eval.backends.openai_compat import is_local_url
from isg_gym.eval.runner import evaluate
from isg_gym.eval.smolagents_adapter import SmolagentsPolicy


@dataclass
class Args:
    backend: str = "openai"
    """model backend: "openai" (an OpenAI-compatible server) or "vllm" (in-process, GPU)"""
    model: str = "Qwen/Qwen3-8B"
    """model id on the server, or the Hugging Face id / path vLLM loads"""
    base_url: str = "http://127.0.0.1:8000/v1"
    """OpenAI-compatible API base URL (backend openai)"""
    agent: str = "tool_calling"
    """smolagents agent: "tool_calling" (ToolCallingAgent) or "code" (CodeAgent)"""
    split: str = "isg-500"
    """evaluation split: "isg-500", "isg-test-500" or "repos:A-B\""""
    episodes: int = 24
    """number of questions to play (the first of the split)"""
    out_dir: str = "runs/smolagents"
    """where episodes.jsonl, run.json and the report go"""
    concurrency: int = 4
    """episodes played at once (forced to 1 with backend vllm)"""
    max_steps: int = 30
    """env step budget per episode (one step per tool call); the agent's turns too"""
    python_session: str = "fresh"
    """run_python_code state: "fresh" or "persistent" (code blocks see earlier variables)"""
    sandbox: str = "auto"
    """sandbox backend of run_python_code ("auto", "bwrap", "landlock" or "none")"""
    temperature: float = 0.0
    """sampling temperature (backend openai)"""
    max_tokens: int = 2048
    """completion tokens per model call (backend openai)"""
    max_model_len: int = 32768
    """context length vLLM allocates (backend vllm)"""
    resume: bool = False
    """continue an interrupted run in out_dir"""
    verbose: bool = False
    """print smolagents' step logs"""


def parse_args(argv: list[str] | None = None) -> Args:
    """Command-line flags generated from the fields of :class:`Args`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Args):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            kind = {"int": int, "float": float, "str": str}[str(f.type)]
            parser.add_argument(flag, type=kind, default=f.default)
    args = Args(**vars(parser.parse_args(argv)))
    if args.backend not in ("openai", "vllm"):
        parser.error(f"--backend must be openai or vllm, got {args.backend!r}")
    return args


def model_factory(args: Args) -> Any:
    """A callable giving each episode its smolagents model."""
    if args.backend == "vllm":
        from smolagents import VLLMModel

        # One engine for the whole run (loading is slow and it holds the GPU): shared by the
        # episodes, which then run one at a time. VLLMModel samples with smolagents' defaults
        # (greedy, 2048 tokens): keyword arguments given here would go to LLM.generate.
        shared = VLLMModel(model_id=args.model, model_kwargs={"max_model_len": args.max_model_len})
        return lambda: shared

    from smolagents import OpenAIServerModel

    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        if not is_local_url(args.base_url):
            sys.exit(f"set OPENAI_API_KEY for {args.base_url}")
        api_key = "EMPTY"

    def make() -> Any:
        return OpenAIServerModel(
            model_id=args.model,
            api_base=args.base_url,
            api_key=api_key,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
        )

    return make


def main() -> None:
    args = parse_args()
    policy = SmolagentsPolicy(
        model_factory(args),
        agent=args.agent,
        model_id=args.model,
        verbosity=1 if args.verbose else -1,
    )
    concurrency = 1 if args.backend == "vllm" else args.concurrency
    summary = evaluate(
        policy,
        args.split,
        args.out_dir,
        episodes=args.episodes,
        concurrency=concurrency,
        resume=args.resume,
        env_kwargs={
            "max_steps": args.max_steps,
            "python_session": args.python_session,
            "sandbox": args.sandbox,
        },
        progress=True,
        run_info={"agent": f"smolagents/{args.agent}", "temperature": args.temperature},
    )
    print(f"outcomes written to {args.out_dir}/episodes.jsonl, report in {args.out_dir}/summary.md")
    low, high = summary["ci"] or (0.0, 0.0)
    print(
        f"accuracy {summary['accuracy']:.4f} ({summary['correct']}/{summary['n']}), "
        f"95% CI [{low:.3f}, {high:.3f}]"
    )


if __name__ == "__main__":
    main()
