"""``isg eval``, ``isg report`` and ``isg paraphrase``: the evaluation commands of ``isg``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

BACKENDS = ("openai", "vllm", "llamacpp", "smolagents", "scripted")


class EvalCliError(Exception):
    """A user error in an evaluation command (one line, exit status 2)."""


def add_commands(sub: Any) -> None:
    """Register the evaluation subcommands on the ``isg`` parser's subparsers."""
    s = sub.add_parser(
        "eval",
        help="evaluate a model (or a scripted baseline) on a split",
        description="Play the questions of a split with a model and write episodes.jsonl, "
        "summary.json, summary.md and plots/ to --out.",
    )
    _model_arguments(s)
    s.add_argument("--env", default="ISG-v0", metavar="ID",
                   help="the environment (default ISG-v0); `isg envs` lists them")  # fmt: skip
    s.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="an argument of the env's constructor (VALUE read as JSON when it "
                   "parses), e.g. --env-arg observation=full; repeatable")  # fmt: skip
    s.add_argument("--split", default=None, metavar="NAME",
                   help="a named split of the env (ISG-v0: isg-500, the default, "
                   "isg-test-500, or repos:A-B; `isg envs` lists every env's)")  # fmt: skip
    s.add_argument("--episodes", type=int, default=None, metavar="N",
                   help="only the first N questions of the split")  # fmt: skip
    s.add_argument("--out", required=True, metavar="DIR", help="output directory")
    s.add_argument("--concurrency", type=int, default=4, metavar="K",
                   help="episodes played at once (default 4)")  # fmt: skip
    s.add_argument("--resume", action="store_true",
                   help="skip the episodes already in DIR/episodes.jsonl")  # fmt: skip
    s.add_argument("--max-steps", type=int, default=20, metavar="N",
                   help="env steps per episode (default 20)")  # fmt: skip
    s.add_argument("--sandbox", default="auto", choices=("auto", "bwrap", "landlock", "none"),
                   help="backend of run_python_code (default auto: bwrap, else landlock; "
                   "'none' is no isolation)")  # fmt: skip
    s.add_argument("--seed", type=int, default=0, help="seed of the random baseline")
    s.add_argument("--agent", default="tool_calling", choices=("tool_calling", "code"),
                   help="smolagents agent class (--backend smolagents)")  # fmt: skip
    s.add_argument("--smolagents-model", default="openai", choices=("openai", "vllm"),
                   help="smolagents model class: OpenAIServerModel or VLLMModel")  # fmt: skip
    s.add_argument("--flatten-messages", action="store_true",
                   help="smolagents: send message content as plain strings, not lists of parts "
                   "(servers such as llama-cpp-python's need it)")  # fmt: skip
    s.add_argument("--answer-on-last-step", action="store_true",
                   help="openai, vllm, llamacpp: offer only final_answer on an episode's last "
                   "step, so a model that has not answered must answer")  # fmt: skip
    s.add_argument("--max-output-chars", type=int, default=None, metavar="N",
                   help="cap on each tool result the model reads (default: the env's, 8000 "
                   "characters); lower it for small context windows")  # fmt: skip
    s.add_argument("--paraphrases", default=None, metavar="DIR",
                   help="use the paraphrases `isg paraphrase` cached in DIR")  # fmt: skip
    s.add_argument("--paraphrase-model", default=None, metavar="NAME",
                   help="the model whose paraphrases to use (default: --model)")  # fmt: skip
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--ray", nargs="?", const=True, default=None, metavar="ADDRESS",
                   help="run the episodes in Ray actors (needs isg-gym[ray]): alone, Ray's "
                   "default (RAY_ADDRESS, a cluster started here, else a new local one); or "
                   "local, auto, HOST:PORT, ray://HOST:10001")  # fmt: skip
    s.add_argument("--ray-actors", type=int, default=2, metavar="N",
                   help="Ray actors (default 2)")  # fmt: skip
    s.add_argument("--ray-actor-concurrency", type=int, default=2, metavar="M",
                   help="episodes (envs) per Ray actor at once (default 2); with --ray, "
                   "--concurrency is ignored: a chat backend gets actors x M at once")  # fmt: skip
    s.set_defaults(run=cmd_eval)

    s = sub.add_parser("envs", help="the registered environments, their splits and policies")
    s.set_defaults(run=cmd_envs)

    s = sub.add_parser(
        "report",
        help="rebuild the summaries of runs and compare them",
        description="Rebuild summary.json, summary.md and plots/ of each run directory from its "
        "episodes.jsonl and print a leaderboard table.",
    )
    s.add_argument("dirs", nargs="+", metavar="DIR", help="run directories of `isg eval`")
    s.add_argument("--out", default=None, metavar="FILE",
                   help="also write the leaderboard (Markdown) and a PNG beside it")  # fmt: skip
    s.set_defaults(run=cmd_report)

    s = sub.add_parser(
        "paraphrase",
        help="rewrite a split's questions with a model, keeping every number and name",
        description="Ask a model to paraphrase questions; keep a rewrite only when every number, "
        "column name, condition value and significant-figure instruction survives; cache the "
        "accepted ones by (question id, model).",
    )
    _model_arguments(s, scripted=False)
    s.add_argument("--split", default="isg-500", metavar="NAME", help="questions to rewrite")
    s.add_argument("--episodes", type=int, default=None, metavar="N", help="first N only")
    s.add_argument("--cache", default="paraphrases", metavar="DIR", help="cache directory")
    s.add_argument("--attempts", type=int, default=2, metavar="N", help="tries per question")
    s.set_defaults(run=cmd_paraphrase)


def _model_arguments(s: argparse.ArgumentParser, scripted: bool = True) -> None:
    choices = BACKENDS if scripted else ("openai", "vllm", "llamacpp")
    s.add_argument("--backend", required=True, choices=choices, help="where the model runs")
    s.add_argument("--model", required=True, metavar="NAME",
                   help="model name (openai, vllm), GGUF path or 'smollm2' (llamacpp), or "
                        "a scripted policy of the env (ISG-v0: oracle|abstain|random; "
                        "`isg envs` lists every env's); "
                        "several, comma-separated: one run each in OUT/NAME and a "
                        "leaderboard")  # fmt: skip
    s.add_argument("--base-url", default=None, metavar="URL",
                   help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")  # fmt: skip
    s.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="variable holding the API key (default OPENAI_API_KEY)")  # fmt: skip
    s.add_argument("--temperature", type=float, default=0.0, help="sampling temperature")
    s.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="completion tokens per model call")  # fmt: skip
    s.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds per API request attempt (openai)")  # fmt: skip
    s.add_argument("--max-retries", type=int, default=3, metavar="N",
                   help="retries with backoff on transient API errors (openai)")  # fmt: skip
    s.add_argument("--text-tools", action="store_true",
                   help="no native tool calls: the model writes <tool_call> text (llamacpp: "
                   "no tool-call grammar)")  # fmt: skip
    s.add_argument("--chat-format", default=None, metavar="NAME",
                   help="llamacpp: chat format (default: the GGUF's own template; e.g. chatml "
                   "for SmolLM2, Qwen, Hermes)")  # fmt: skip
    s.add_argument("--n-ctx", type=int, default=4096, metavar="N",
                   help="llamacpp: context window in tokens (default 4096)")  # fmt: skip
    s.add_argument("--threads", type=int, default=None, metavar="N",
                   help="llamacpp: CPU threads (default: llama.cpp's; 1 is fastest on a busy "
                   "machine)")  # fmt: skip
    s.add_argument("--tool-choice", default=None, choices=("auto", "required", "none"),
                   help="openai, smolagents: the tool_choice sent with the tools (default: "
                   "auto for openai, smolagents' own, required, for smolagents)")  # fmt: skip


def make_backend(args: argparse.Namespace, concurrency: int = 8) -> Any:
    """The :class:`~isg_gym.eval.backends.ChatBackend` the arguments name (options another
    command does not define take their defaults)."""
    option = {"text_tools": False, "tool_choice": None, "n_ctx": 4096, "threads": None,
              "chat_format": None}  # fmt: skip
    args = argparse.Namespace(**{**option, **vars(args)})
    if args.backend == "openai":
        from isg_gym.eval.backends.openai_compat import OpenAIBackend

        return OpenAIBackend(
            args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            concurrency=concurrency,
            timeout=args.timeout,
            max_retries=args.max_retries,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            native_tools=not args.text_tools,
            tool_choice=args.tool_choice or "auto",
        )
    if args.backend == "vllm":
        from isg_gym.eval.backends.vllm_offline import VLLMBackend

        return VLLMBackend(args.model, max_tokens=args.max_tokens, temperature=args.temperature)
    if args.backend == "llamacpp":
        from isg_gym.eval.backends.llamacpp import LlamaCppBackend

        return LlamaCppBackend(
            None if args.model == "smollm2" else args.model,
            n_ctx=args.n_ctx,
            max_tokens=args.max_tokens,
            temperature=args.temperature,
            n_threads=args.threads,
            chat_format=args.chat_format,
            constrain_tools=not args.text_tools,
        )
    raise EvalCliError(f"--backend {args.backend} is not a chat backend")


def make_policy(args: argparse.Namespace) -> Any:
    """The policy ``isg eval`` runs."""
    from isg_gym.eval.policy import ChatPolicy

    if args.backend == "scripted":
        from isg_gym.envs.registry import get_env

        entry = get_env(getattr(args, "env", "ISG-v0"))
        if args.model not in entry.policies:
            raise EvalCliError(f"--model for --backend scripted on {entry.id} must be one of "
                               f"{', '.join(sorted(entry.policies))}")  # fmt: skip
        return entry.policy(args.model, seed=args.seed)
    if args.backend == "smolagents":
        from isg_gym.eval.smolagents_adapter import SmolagentsPolicy

        return SmolagentsPolicy(_smolagents_model_factory(args), agent=args.agent,
                                max_steps=args.max_steps)  # fmt: skip
    # llamacpp gets the tools too: it decodes under a grammar built from them
    return ChatPolicy(make_backend(args, args.concurrency), native_tools=not args.text_tools,
                      answer_on_last_step=args.answer_on_last_step)  # fmt: skip


def _smolagents_model_factory(args: argparse.Namespace) -> Any:
    import os

    if args.smolagents_model == "vllm":
        shared: list[Any] = []  # one in-process vLLM engine for every episode (--concurrency 1)

        def vllm_model() -> Any:
            if not shared:
                from smolagents import VLLMModel

                shared.append(VLLMModel(model_id=args.model))
            return shared[0]

        return vllm_model
    from isg_gym.eval.backends.openai_compat import check_base_url

    check_base_url(args.base_url)
    key = os.environ.get(args.api_key_env) or ("EMPTY" if args.base_url else None)
    if key is None:
        raise EvalCliError(f"set the API key in the environment variable {args.api_key_env}")
    options: dict[str, Any] = {"temperature": args.temperature, "max_tokens": args.max_tokens,
                               "flatten_messages_as_text": args.flatten_messages}  # fmt: skip
    if args.tool_choice is not None and args.agent == "tool_calling":  # a CodeAgent sends no tools
        options["tool_choice"] = args.tool_choice

    def openai_model() -> Any:
        from smolagents import OpenAIServerModel

        return OpenAIServerModel(model_id=args.model, api_base=args.base_url, api_key=key,
                                 **options)  # fmt: skip

    return openai_model


def cmd_eval(args: argparse.Namespace) -> None:
    from isg_gym.envs.registry import get_env, parse_env_args

    if args.concurrency < 1 or (args.episodes is not None and args.episodes < 1):
        raise EvalCliError("--concurrency and --episodes must be positive integers")
    if args.max_steps < 1:
        raise EvalCliError("--max-steps must be a positive integer")
    if args.ray is not None:
        from isg_gym.rl.ray_pool import require_ray

        if args.ray_actors < 1 or args.ray_actor_concurrency < 1:
            raise EvalCliError("--ray-actors and --ray-actor-concurrency must be positive")
        try:
            require_ray()
        except ImportError as exc:
            raise EvalCliError(str(exc)) from None
    try:
        entry = get_env(args.env)
        env_kwargs: dict[str, Any] = {"max_steps": args.max_steps, "sandbox": args.sandbox,
                                      **parse_env_args(entry, args.env_arg)}  # fmt: skip
    except (ImportError, ValueError) as exc:
        raise EvalCliError(str(exc)) from None
    if args.max_output_chars is not None:
        if args.max_output_chars < 100:
            raise EvalCliError("--max-output-chars must be >= 100")
        env_kwargs["max_output_chars"] = args.max_output_chars
    args.split = args.split or entry.default_split
    if args.paraphrases and entry.id != "ISG-v0":
        raise EvalCliError("--paraphrases applies to ISG-v0 questions only")
    if args.paraphrases:
        env_kwargs["question_texts"] = paraphrased_texts(
            args.split, args.episodes, args.paraphrases, args.paraphrase_model or args.model
        )
    if args.backend == "smolagents" and args.smolagents_model == "vllm" and args.concurrency > 1:
        raise EvalCliError("--smolagents-model vllm shares one engine: use --concurrency 1")
    if args.ray is not None:  # the live episodes: what a chat backend sends at once
        args.concurrency = args.ray_actors * args.ray_actor_concurrency
    models = [m.strip() for m in args.model.split(",")]
    if len(models) > 1 and (not all(models) or len(set(models)) != len(models)):
        raise EvalCliError(f"--model {args.model!r}: give distinct names separated by commas")
    if len(models) == 1:
        print(headline(_evaluate_one(args, entry.id, env_kwargs, args.out), args.out))
        return
    # Several models: one run each in OUT/MODEL, then the leaderboard of them all.
    from isg_gym.eval.report import write_leaderboard

    dirs = []
    for model in models:
        out = Path(args.out) / model.replace("/", "_")
        summary = _evaluate_one(argparse.Namespace(**{**vars(args), "model": model}),
                                entry.id, env_kwargs, out)  # fmt: skip
        print(f"{model}: {headline(summary, out)}")
        dirs.append(out)
    print()
    print(write_leaderboard(dirs, Path(args.out) / "leaderboard.md"), end="")
    print(f"leaderboard in {Path(args.out) / 'leaderboard.md'} (and leaderboard.png)")


def _evaluate_one(
    args: argparse.Namespace, env_id: str, env_kwargs: dict[str, Any], out: str | Path
) -> dict[str, Any]:
    """Run ``args.model`` on the split into ``out``; its summary."""
    from isg_gym.eval.runner import evaluate

    try:
        policy = make_policy(args)
    except (ImportError, ValueError) as exc:
        raise EvalCliError(str(exc)) from None
    try:
        return evaluate(
            policy,
            args.split,
            out,
            episodes=args.episodes,
            concurrency=args.concurrency,
            resume=args.resume,
            env_kwargs=env_kwargs,
            progress=not args.no_progress,
            env=env_id,
            ray=args.ray,
            ray_actors=args.ray_actors,
            ray_actor_concurrency=args.ray_actor_concurrency,
        )
    except (FileExistsError, ValueError) as exc:
        raise EvalCliError(str(exc)) from None
    finally:
        policy.close()


def cmd_envs(args: argparse.Namespace) -> None:
    from isg_gym.envs.registry import ENVS

    for entry in ENVS.values():
        extra = f" (needs isg-gym[{entry.extra}])" if entry.extra else ""
        print(f"{entry.id}: {entry.description}{extra}")
        print(f"  splits: {', '.join(entry.split_names)} (default {entry.default_split})")
        print(f"  scripted policies: {', '.join(entry.policies) or 'none'}")


def paraphrased_texts(
    split: str, episodes: int | None, cache_dir: str, model: str
) -> dict[str, str]:
    """Question id -> accepted, up-to-date paraphrase, for the questions of the split."""
    from isg_gym.eval.splits import resolve_split
    from isg_gym.qa.paraphrase import apply_paraphrases, cache_path
    from isg_gym.qa.sampling import question_from_id

    if not cache_path(cache_dir, model).exists():
        raise EvalCliError(f"no paraphrases of model {model!r} in {cache_dir}")
    questions = [question_from_id(qid) for qid in resolve_split(split)[:episodes]]
    rewritten = apply_paraphrases(questions, cache_dir, model)
    return {q.id: r.text for q, r in zip(questions, rewritten, strict=True) if r.text != q.text}


def headline(summary: dict[str, Any], out: str | Path) -> str:
    """The accuracy line of the summary and where the report is."""
    from isg_gym.eval.report import accuracy_line

    return f"{accuracy_line(summary)}; report in {Path(out) / 'summary.md'}"


def cmd_report(args: argparse.Namespace) -> None:
    from isg_gym.eval.report import leaderboard, rebuild, write_leaderboard

    missing = [d for d in args.dirs if not (Path(d) / "episodes.jsonl").exists()]
    if missing:
        raise EvalCliError(f"no episodes.jsonl in {', '.join(missing)}")
    rebuild(args.dirs)
    if args.out:
        write_leaderboard(args.dirs, Path(args.out))
    print(leaderboard(args.dirs))


def cmd_paraphrase(args: argparse.Namespace) -> None:
    from isg_gym.eval.splits import resolve_split
    from isg_gym.qa.paraphrase import paraphrase_questions
    from isg_gym.qa.sampling import question_from_id

    try:
        ids = resolve_split(args.split)[: args.episodes]
        backend = make_backend(args)
    except (ImportError, ValueError) as exc:
        raise EvalCliError(str(exc)) from None
    questions = [question_from_id(qid) for qid in ids]
    try:
        results = paraphrase_questions(  # cached by the model name as typed (--model)
            questions, backend, cache_dir=Path(args.cache), attempts=args.attempts,
            model=args.model,
        )  # fmt: skip
    finally:
        backend.close()
    accepted = sum(r.accepted for r in results)
    for r in results:
        print(json.dumps({"id": r.question_id, "accepted": r.accepted,
                          "paraphrase": r.paraphrase, "missing": r.missing}))  # fmt: skip
    print(f"accepted {accepted}/{len(results)} paraphrases; cache in {args.cache}")
