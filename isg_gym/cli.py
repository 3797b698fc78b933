"""The ``isg`` command: inspect, print and materialise simulated repositories; evaluate models."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence

from isg_gym.eval.cli import EvalCliError
from isg_gym.eval.errors import InfrastructureError
from isg_gym.qa.sampling import DEFAULT_UNANSWERABLE_RATIO
from isg_gym.repository import Repository, RepositoryPathError
from isg_gym.repository.repository import stderr_progress
from isg_gym.simulator.procedural import build_spec
from isg_gym.spec.models import Column, Spec, column_kind
from isg_gym.tools.sandbox import SandboxError


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) on bad arguments."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _seed(text: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"SEED must be a non-negative integer, got {text!r}"
        ) from None
    if seed < 0:
        raise argparse.ArgumentTypeError(f"SEED must be a non-negative integer, got {seed}")
    return seed


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _column_detail(c: Column) -> str:
    match c.role:
        case "identifier":
            return f"prefix {c.prefix}"
        case "datetime":
            return f"every {c.interval_seconds}s" + ("" if c.regular else " (sampled)")
        case "categorical":
            return ", ".join(c.values)
        case "integer" | "continuous":
            return c.distribution.model_dump_json()
    return c.expression


def _variable_rows(spec: Spec) -> list[tuple[str, str, str, str]]:
    rows = [(p.name, f"path:{p.kind}", p.unit, ", ".join(p.values[:6])
             + (" ..." if len(p.values) > 6 else "")) for p in spec.path_variables]  # fmt: skip
    for c in spec.columns:
        detail = _column_detail(c)
        kind = c.role if c.role != "dependent" else f"dependent:{column_kind(c)}"
        missing = f" [{c.missing_rate:.1%} missing]" if c.missing_rate else ""
        rows.append((c.name, kind, c.unit, detail + missing))
    return rows


def _spec(args: argparse.Namespace) -> Spec:
    """The seed's Spec: built procedurally, or read from ``--specs DIR`` (a spec cache)."""
    if getattr(args, "specs", None) is None:
        return build_spec(args.seed)
    from isg_gym.simulator.cache import SpecCacheError, SpecSource

    try:
        return SpecSource(args.specs, model=args.specs_model).spec(args.seed)
    except SpecCacheError as exc:
        raise CliError(str(exc)) from None


def _repository(args: argparse.Namespace) -> Repository:
    return Repository(_spec(args))


def cmd_show(args: argparse.Namespace) -> None:
    spec = _spec(args)
    repo = Repository(spec)
    t = spec.taxonomy
    vis = spec.readme
    wrap = lambda s: textwrap.fill(s, 100, initial_indent="  ", subsequent_indent="  ")  # noqa: E731
    print(f"repository {spec.seed}  (archetype {spec.archetype}, spec v{spec.spec_version})")
    print(f"taxonomy:  {t.field} / {t.domain} / {t.subdomain}")
    print(f"title:     {spec.story.title}")
    names = {p.key: p.short for p in spec.path_variables}
    dates = f", dates {spec.layout.date_format}" if "date" in names else ""
    print(
        f"template:  {spec.layout.template(spec.file_format, names)}   "
        f"(style {spec.layout.style}{dates})"
    )
    print(
        f"files:     {len(repo.data_files)} data files of {repo.index.total_combinations} "
        f"combinations, format {spec.file_format}, sorted by {spec.sort_by or 'nothing'}"
    )
    print(f"readme:    present={vis.present} title={vis.title} abstract={vis.abstract}")
    print("abstract:")
    print(wrap(spec.story.abstract))
    print("variables:")
    rows = _variable_rows(spec)
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for row in rows:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(row, widths, strict=False)) + "  "
              + row[3][:160])  # fmt: skip
    print("not recorded: " + ", ".join(u.name for u in spec.unrecorded))


def cmd_tree(args: argparse.Namespace) -> None:
    repo = _repository(args)
    print("/")

    def walk(path: str, depth: int, prefix: str) -> None:
        entries = repo.listdir(path)
        for i, name in enumerate(entries):
            last = i == len(entries) - 1
            print(f"{prefix}{'└── ' if last else '├── '}{name}")
            if name.endswith("/") and depth < args.depth:
                walk(f"{path}/{name}".strip("/"), depth + 1, prefix + ("    " if last else "│   "))

    walk("", 1, "")


def cmd_cat(args: argparse.Namespace) -> None:
    repo = _repository(args)
    if not repo.is_file(args.path):
        if repo.is_dir(args.path):
            raise CliError(f"{args.path!r} is a directory; use `isg tree {args.seed}`")
        raise CliError(f"no file {args.path!r} in repository {args.seed}; "
                       f"see `isg tree {args.seed}`")  # fmt: skip
    text = repo.read_text(args.path)
    if args.head is not None:
        text = "".join(text.splitlines(keepends=True)[: args.head])
    sys.stdout.write(text)


def cmd_materialize(args: argparse.Namespace) -> None:
    repo = _repository(args)
    root = repo.materialize(args.directory, progress=stderr_progress)
    print(f"wrote {len(repo.files())} files to {root}")


def cmd_spec(args: argparse.Namespace) -> None:
    print(_spec(args).to_json())


def cmd_questions(args: argparse.Namespace) -> None:
    from isg_gym.qa import format_answer, generate_questions
    from isg_gym.qa.base import known_types

    types = args.type or None
    unknown = [t for t in types or [] if t not in known_types()]
    if unknown:
        raise CliError(f"unknown question type(s) {unknown}; known: {known_types()}")
    if not 0 <= args.unanswerable <= 1:
        raise CliError(f"--unanswerable must be within [0, 1], got {args.unanswerable}")
    repo = _repository(args)
    questions = generate_questions(repo, args.count, types, args.unanswerable)
    if args.json:
        for q in questions:
            print(json.dumps({**q.to_dict(), "gold": format_answer(q)}))
        return
    for q in questions:
        print(f"[{q.id}] ({q.family})")
        print(textwrap.fill(q.text, 100, initial_indent="  Q: ", subsequent_indent="     "))
        why = f"   (unanswerable: {q.reason})" if q.reason else ""
        print(f"  A: {format_answer(q)}{why}")
        print()


def _specs_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--specs",
        default=None,
        metavar="DIR",
        help="read the Spec from this spec cache (isg build) instead of building it",
    )
    s.add_argument(
        "--specs-model",
        default=None,
        metavar="NAME",
        help="the model whose specs to read when DIR holds several builds",
    )


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="isg", description="InfiniteScienceGym repositories.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    seed_help = "repository number (any non-negative integer)"

    s = sub.add_parser("show", help="taxonomy, title, abstract, template, variables, file count")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    _specs_arguments(s)
    s.set_defaults(run=cmd_show)

    s = sub.add_parser("tree", help="the directory tree")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    s.add_argument("--depth", type=_positive, default=99, metavar="N", help="levels to show")
    _specs_arguments(s)
    s.set_defaults(run=cmd_tree)

    s = sub.add_parser("cat", help="print a file (xlsx as text)")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    s.add_argument("path", metavar="PATH", help="file path inside the repository")
    s.add_argument("--head", type=_positive, default=None, metavar="N", help="first N lines")
    _specs_arguments(s)
    s.set_defaults(run=cmd_cat)

    s = sub.add_parser("materialize", help="write the repository to a directory")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    s.add_argument("directory", metavar="DIR", help="target directory (created if needed)")
    _specs_arguments(s)
    s.set_defaults(run=cmd_materialize)

    s = sub.add_parser("questions", help="questions with gold answers and reasons")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    s.add_argument("--count", type=_positive, default=12, metavar="N", help="how many")
    s.add_argument("--type", action="append", metavar="TYPE", help="restrict to a type (repeat)")
    s.add_argument(
        "--unanswerable",
        type=float,
        default=DEFAULT_UNANSWERABLE_RATIO,
        metavar="R",
        help=f"share of unanswerable questions (default {DEFAULT_UNANSWERABLE_RATIO})",
    )
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    _specs_arguments(s)
    s.set_defaults(run=cmd_questions)

    s = sub.add_parser("spec", help="the Spec as JSON")
    s.add_argument("seed", type=_seed, metavar="SEED", help=seed_help)
    _specs_arguments(s)
    s.set_defaults(run=cmd_spec)

    from isg_gym.eval.cli import add_commands

    add_commands(sub)
    from isg_gym.simulator.build_cli import add_command as add_build

    add_build(sub)  # isg build
    from isg_gym.tools.sandbox.doctor import add_command as add_doctor

    add_doctor(sub)  # isg doctor
    from isg_gym.play import add_command as add_play

    add_play(sub)  # isg play
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from isg_gym.simulator.cache import SpecCacheError

    args = parser().parse_args(argv)
    try:
        status = args.run(args)
    except BrokenPipeError:
        return 0
    except (CliError, EvalCliError, RepositoryPathError, SpecCacheError, OSError) as err:
        print(f"isg {args.command}: error: {err}", file=sys.stderr)
        return 2
    except (InfrastructureError, SandboxError) as err:  # the machine, not the answers
        print(f"isg {args.command}: error: {err}", file=sys.stderr)
        return 1
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
