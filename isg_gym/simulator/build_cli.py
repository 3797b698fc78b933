"""``isg build``: build seeds into a spec cache with the LLM (or procedural) builder."""

from __future__ import annotations

import argparse
import json
from typing import Any

from isg_gym.eval.cli import EvalCliError

BACKENDS = ("openai", "vllm", "llamacpp")


def parse_seeds(text: str) -> list[int]:
    """``"0:500"`` (half-open), ``"7"``, or a comma list of both (``"0:10,20:30,99"``)."""
    seeds: list[int] = []
    for part in text.split(","):
        try:
            if ":" in part:
                start, stop = (int(x) for x in part.split(":"))
                if not 0 <= start < stop:
                    raise ValueError
                seeds.extend(range(start, stop))
            else:
                seed = int(part)
                if seed < 0:
                    raise ValueError
                seeds.append(seed)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--seeds takes A:B (A < B, half-open), N, or a comma list of them; got {text!r}"
            ) from None
    return list(dict.fromkeys(seeds))


def add_command(sub: Any) -> None:
    s = sub.add_parser(
        "build",
        help="build seeds' Specs into a spec cache (LLM builder or procedural)",
        description="Build the Specs of --seeds with --builder into the cache directory --cache "
        "(resumable: seeds already there are skipped) and print built / failed / cached with "
        "the failures by stage. The env reads the cache with gym.make('ISG-v0', specs=DIR); "
        "isg show/tree/questions with --specs DIR.",
    )
    s.add_argument("--builder", default="llm", choices=("llm", "procedural"))
    s.add_argument("--backend", choices=BACKENDS, default=None, help="where the model runs (llm)")
    s.add_argument(
        "--model",
        default=None,
        metavar="NAME",
        help="model name (openai, vllm) or GGUF path / 'smollm2' (llamacpp)",
    )
    s.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1",
    )
    s.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        metavar="VAR",
        help="variable holding the API key (default OPENAI_API_KEY)",
    )
    s.add_argument(
        "--seeds",
        required=True,
        type=parse_seeds,
        metavar="A:B",
        help="seeds to build: A:B (half-open), N, or a comma list",
    )
    s.add_argument("--cache", required=True, metavar="DIR", help="spec cache directory")
    s.add_argument(
        "--concurrency", type=int, default=8, metavar="N", help="seeds built at once (default 8)"
    )
    s.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        metavar="N",
        help="replies asked per stage before a seed fails (default 3)",
    )
    s.add_argument(
        "--profile",
        default="full",
        choices=("full", "small"),
        help="reply bounds: full (default), or small for sub-1B models (builder llm-small: "
        "the fewest variables, short texts)",
    )
    s.add_argument(
        "--retry-failed",
        action="store_true",
        help="build again the seeds the cache records as failed",
    )
    s.add_argument("--temperature", type=float, default=0.7, help="sampling temperature")
    s.add_argument(
        "--max-tokens",
        type=int,
        default=2048,
        metavar="N",
        help="completion tokens per model call (default 2048)",
    )
    s.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="seconds per API request attempt (openai)",
    )
    s.add_argument(
        "--max-retries",
        type=int,
        default=3,
        metavar="N",
        help="retries with backoff on transient API errors (openai)",
    )
    s.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="llama.cpp threads (default: llama.cpp's choice)",
    )
    s.add_argument("--json", action="store_true", help="also print the summary as JSON")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.set_defaults(run=cmd_build)


def _backend(args: argparse.Namespace) -> Any:
    if args.backend == "llamacpp":
        from isg_gym.eval.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(
            None if args.model == "smollm2" else args.model,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            n_threads=args.threads,
        )
    from isg_gym.eval.cli import make_backend

    args.text_tools = False
    return make_backend(args, concurrency=args.concurrency)


def _builder(args: argparse.Namespace) -> tuple[Any, Any]:
    """(builder, backend or None)."""
    if args.builder == "procedural":
        from isg_gym.simulator.build import ProceduralBuilder

        return ProceduralBuilder(), None
    if args.backend is None or args.model is None:
        raise EvalCliError("--builder llm needs --backend and --model")
    from isg_gym.simulator.llm import BatchedAsk, LLMBuilder, backend_ask

    try:
        backend = _backend(args)
    except (ImportError, ValueError, FileNotFoundError) as exc:
        raise EvalCliError(str(exc)) from None
    ask = BatchedAsk(backend) if args.backend == "vllm" else backend_ask(backend)
    builder = LLMBuilder(ask, args.model, max_attempts=args.max_attempts, profile=args.profile)
    return builder, backend


def summary_lines(summary: Any, builder: Any) -> list[str]:
    """The report of a build run (counts, failures and rejections by stage, model figures)."""
    s = summary
    lines = [
        f"built {s.built}, failed {s.failed}, cached {s.cached_built + s.cached_failed} "
        f"({s.cached_built} built, {s.cached_failed} failed) of {s.requested} seeds; backend "
        f"errors {s.errors}" + (" (not cached: run again to retry them)" if s.errors else ""),
    ]
    for title, counter in (("failed seeds", s.failures), ("rejected replies", s.rejected)):
        if counter:
            lines.append(f"{title} by stage and check:")
            for (stage, kind), n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {stage:<11} {kind:<11} {n:>6}")
    new = s.built + s.failed
    if builder.model and new:  # a model's builder (llm, llm-small)
        wall = max(s.wall_seconds, 1e-9)
        lines.append(
            f"model calls {s.calls} ({s.calls / new:.1f} per seed), prompt tokens "
            f"{s.prompt_tokens}, completion tokens {s.completion_tokens}; {s.wall_seconds:.1f} s "
            f"wall: {s.calls / wall:.2f} calls/s, {s.completion_tokens / wall:.0f} completion "
            f"tokens/s, {new / wall:.3f} seeds/s"
        )
    for example in s.error_examples:
        lines.append(f"backend error: {example}")
    return lines


def cmd_build(args: argparse.Namespace) -> int:
    from isg_gym.simulator.build import build_seeds
    from isg_gym.simulator.cache import SpecCache

    if args.concurrency < 1 or args.max_attempts < 1:
        raise EvalCliError("--concurrency and --max-attempts must be positive integers")
    builder, backend = _builder(args)
    try:
        cache = SpecCache(args.cache, create=True)
        summary = build_seeds(
            args.seeds,
            builder,
            cache,
            concurrency=args.concurrency,
            retry_failed=args.retry_failed,
            progress=not args.no_progress,
        )
    finally:
        if backend is not None:
            backend.close()
    model = f", model {builder.model}, prompt v{builder.prompt_version}" if builder.model else ""
    print(f"isg build: builder {builder.name}{model}; cache {args.cache}")
    for line in summary_lines(summary, builder):
        print(line)
    if args.json:
        print(json.dumps(summary.to_dict(), sort_keys=True))
    return 1 if summary.errors else 0
