"""Scripted policies for ``ISG-Discovery-v0``.

- ``analyst`` (:class:`AnalystPolicy`): data-driven, through the tools only. It reads the
  README, runs one analysis in the sandbox (:mod:`.discovery_analysis`: every data file
  loaded, a test per outcome and factor), claims the effects it finds at ``alpha`` citing that
  call, and flags the variables the README names as unrecorded as untestable. When the
  submission is refused (a finding names something the repository lacks), it drops the
  finding the error names and submits again. Its score is the reference a model should beat.
- ``oracle`` (:class:`DiscoveryOraclePolicy`, privileged): claims exactly the program's
  detectable effects from the answer key, backed by one call that reads every data file (its
  bytes: the answer is known) and names every variable it claims about; scores 1.0.
- ``empty`` (:class:`EmptyClaimsPolicy`): submits no finding at once.
- ``random`` (:class:`RandomClaimsPolicy`): reads the README, runs a trivial call, then
  submits random claims about random columns, seeded per episode.
"""

from __future__ import annotations

import inspect
import json
import re
from dataclasses import dataclass, field
from typing import Any

from isg_gym.discovery.prompt import CALL_ID, SUBMIT_FINDINGS
from isg_gym.eval.policies import discovery_analysis as da
from isg_gym.eval.policies.baselines import _send
from isg_gym.eval.policies.oracle import (
    RESULT_MARK,
    SANDBOX_HEADER,
    _last_output,
    sb_data_files,
    sb_read,
    sb_read_log,
)
from isg_gym.eval.policy import EpisodeState, PerEpisodePolicy, StepPolicy, Turn
from isg_gym.seeding import derive

ALPHA = 1e-3
MAX_ROWS = 50_000  # rows the analysis uses (a fixed sample of larger repositories)
STYLES = ("{name}={val}", "{name}_{val}", "{name}-{val}", "{name}{val}", "{val}")
_PATH_LINE = re.compile(r"^- `\{([a-z][a-z0-9]*)\}`: .*?e\.g\. `([^`]*)`")
_DATE = re.compile(r"\[written ([YMD_\-]+)\]")
_ROW = re.compile(r"^\| *([a-z][a-z0-9_]*) *\| *([a-z]+) *\|")
_TEMPLATE = re.compile(r"laid out as `([^`]+)`")
_UNRECORDED = re.compile(r"not recorded in these data: ([^.]+)\.")
_REJECTED = re.compile(r"\[submit_findings\] error: finding (\d+):")
_OUTCOMES = re.compile(r"^Measured outcomes: (.+)\.$", re.M)
_CALL = re.compile(rf"{re.escape(CALL_ID)}(\d+)")

ANALYSIS_SOURCE = SANDBOX_HEADER + "\n\n".join(
    inspect.getsource(fn)
    for fn in (sb_data_files, sb_read_log, sb_read, da.sd_layout, da.sd_load, da.sd_is_numeric,
               da.sd_kruskal, da.sd_shape, da.sd_block, da.sd_residual, da.sd_relation,
               da.sd_adjusted, da.sd_stratified_chi_square, da.sd_analyse)
)  # fmt: skip


@dataclass
class Readme:
    """What the scripted analyst takes from a README: the layout, the column types and the
    variables named as unrecorded."""

    template: str = ""
    styles: dict[str, str] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    dates: list[str] = field(default_factory=list)
    columns: dict[str, str] = field(default_factory=dict)  # name -> type
    unrecorded: list[str] = field(default_factory=list)

    def layout(self) -> dict[str, Any]:
        """The ``layout`` argument of the sandbox loader: path variables named by their
        placeholder (suffixed when a column has that name)."""
        names = {s: (f"{s}_path" if s in self.columns else s) for s in self.styles}
        return {"template": self.template, "styles": self.styles, "values": self.values,
                "dates": self.dates, "columns": names}  # fmt: skip


def _style(short: str, example: str) -> str:
    for style in STYLES[:3]:
        if example.startswith(style.format(name=short, val="")):
            return style
    return "{name}{val}" if example.startswith(short) and len(example) > len(short) else "{val}"


def _date_pattern(fmt: str) -> str:
    out = re.escape(fmt)
    for code, digits in (("YYYY", 4), ("MM", 2), ("DD", 2)):
        out = out.replace(code, rf"\d{{{digits}}}")
    return out


def parse_readme(text: str) -> Readme:
    """The README's layout template, path variables (placeholder, style, value pattern),
    column types and unrecorded variables (from the sentence naming them)."""
    out = Readme()
    if m := _TEMPLATE.search(text):
        out.template = m.group(1)
    for line in text.splitlines():
        if m := _PATH_LINE.match(line):
            short, example = m.groups()
            out.styles[short] = _style(short, example)
            if d := _DATE.search(line):
                out.values[short] = _date_pattern(d.group(1))
                out.dates.append(short)
            else:
                out.values[short] = r"[A-Za-z0-9.]+"
        elif m := _ROW.match(line):
            out.columns[m.group(1)] = m.group(2)
    if m := _UNRECORDED.search(text):
        out.unrecorded = [p.strip() for p in m.group(1).split(";") if p.strip()]
    return out


def outcomes_of(episode: EpisodeState) -> list[str]:
    """The measured outcomes the prompt lists."""
    text = str((episode.info.get("prompt") or {}).get("user", episode.observation))
    m = _OUTCOMES.search(text)
    return [o.strip() for o in m.group(1).split(",")] if m else []


def call_id(output: str) -> int | None:
    m = _CALL.search(output)
    return int(m.group(1)) if m else None


def _result(output: str) -> Any:
    for line in output.splitlines():
        if line.startswith(RESULT_MARK):
            return json.loads(line[len(RESULT_MARK) :])
    return None


def _submit(findings: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": SUBMIT_FINDINGS, "arguments": {"findings": findings}}


def _read_readme() -> dict[str, Any]:
    return {"name": "read_text_file", "arguments": {"path": "/README.md"}}


def _python(code: str) -> dict[str, Any]:
    return {"name": "run_python_code", "arguments": {"code": code}}


def analysis_code(readme: Readme, outcomes: list[str], alpha: float = ALPHA) -> str:
    """The sandbox program: load every file, test every outcome and factor, print the effects
    found at ``alpha`` as one marked JSON line of ``[outcome, factor, relation]``."""
    layout = readme.layout()
    design = [c for c, kind in readme.columns.items()
              if kind in ("numeric", "categorical") and c not in outcomes]  # fmt: skip
    paths = list(layout["columns"].values())
    plan = {"outcomes": [o for o in outcomes if o in readme.columns], "design": design + paths,
            "paths": paths, "alpha": alpha, "max_rows": MAX_ROWS}  # fmt: skip
    return (
        f"{ANALYSIS_SOURCE}\n\nLAYOUT = json.loads({json.dumps(layout)!r})\n"
        f"PLAN = json.loads({json.dumps(plan)!r})\n"
        f"DATA = sd_load(LAYOUT)\n"
        "FOUND = [[r['outcome'], r['factor'], r['relation']] for r in sd_analyse(DATA, PLAN)\n"
        "         if r['relation'] is not None and r['p'] < PLAN['alpha']]\n"
        f"print({RESULT_MARK!r} + json.dumps(FOUND, separators=(',', ':')))\n"
    )


def untestable(labels: list[str]) -> list[dict[str, Any]]:
    return [{"factor": label, "relation": "untestable", "evidence": []} for label in labels]


class AnalystPolicy(PerEpisodePolicy):
    """The data-driven analyst (module docstring): README, one analysis call, findings."""

    name = "scripted-analyst"
    model = "scripted-analyst"

    def __init__(self, alpha: float = ALPHA) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be within (0, 1), got {alpha}")
        self.alpha = alpha

    def _turn(self, episode: EpisodeState) -> Turn:
        state = episode.memory.setdefault("analyst", {})
        if "readme" not in state:
            state["readme"] = None
            return _send(episode, _read_readme())
        if state["readme"] is None:
            state["readme"] = parse_readme(_last_output(episode))
            code = analysis_code(state["readme"], outcomes_of(episode), self.alpha)
            return _send(episode, _python(code))
        output = _last_output(episode)
        if "findings" in state:  # the submission was refused: drop the finding it names
            rejected = _REJECTED.search(output)
            if rejected is None or int(rejected.group(1)) >= len(state["findings"]):
                state["findings"] = []
            else:
                del state["findings"][int(rejected.group(1))]
            return _send(episode, _submit(state["findings"]))
        results, cid = _result(output), call_id(output)
        findings = [
            {"outcome": o, "factor": f.removesuffix("_path"), "relation": r, "evidence": [cid]}
            for o, f, r in (results or [])
            if cid is not None
        ]
        state["findings"] = findings + untestable(state["readme"].unrecorded)
        return _send(episode, _submit(state["findings"]))


class DiscoveryOraclePolicy(PerEpisodePolicy):
    """Claims the answer key's detectable effects (privileged), backed by one call that reads
    every data file and uses every column it names."""

    name = "scripted-discovery-oracle"
    model = "scripted-discovery-oracle"
    privileged = True

    def _turn(self, episode: EpisodeState) -> Turn:
        key = episode.info.get("answer")
        if not isinstance(key, dict) or "effects" not in key:
            return Turn(error="oracle: needs the privileged answer key", error_kind="policy")
        effects = [e for e in key["effects"] if e["detectable"]]
        if not episode.steps:
            names = sorted({n for e in effects for n in (e["outcome"], e["factor"])})
            code = (f"{SANDBOX_HEADER}\n{inspect.getsource(sb_data_files)}\n"
                    f"USED = json.loads({json.dumps(names)!r})\n"
                    "size = sum(len(open(f, 'rb').read()) for f in sb_data_files())\n"
                    "print(size, 'bytes read;', len(USED), 'variables')\n")  # fmt: skip
            return _send(episode, _python(code))
        cid = call_id(_last_output(episode))
        findings = [{"outcome": e["outcome"], "factor": e["factor"], "relation": e["relation"],
                     "evidence": [cid] if cid is not None else []} for e in effects]  # fmt: skip
        return _send(episode, _submit(findings + untestable(key["unrecorded"])))


class EmptyClaimsPolicy(StepPolicy):
    """Submits no finding at once."""

    name = "scripted-empty"
    model = "scripted-empty"

    def act(self, episodes: list[EpisodeState]) -> list[Turn]:
        return [_send(ep, _submit([])) for ep in episodes]


class RandomClaimsPolicy(PerEpisodePolicy):
    """Reads the README, runs a trivial call, then submits 0..``max_claims`` claims about
    random (outcome, column) pairs with random relations, citing that call. Each episode draws
    from ``derive(seed, "random-claims", question_id)``."""

    name = "scripted-random-claims"
    model = "scripted-random-claims"

    def __init__(self, seed: int = 0, max_claims: int = 10) -> None:
        if max_claims < 0:
            raise ValueError(f"max_claims must be >= 0, got {max_claims}")
        self.seed = seed
        self.max_claims = max_claims

    def _turn(self, episode: EpisodeState) -> Turn:
        state = episode.memory.setdefault("random", {})
        if not episode.steps:
            return _send(episode, _read_readme())
        if "readme" not in state:
            state["readme"] = parse_readme(_last_output(episode))
            return _send(episode, _python("print(sum(range(10)))"))
        rng = derive(self.seed, "random-claims", episode.question_id)
        readme: Readme = state["readme"]
        outcomes = outcomes_of(episode)
        factors = [c for c, kind in readme.columns.items()
                   if kind in ("numeric", "categorical")] + list(readme.styles)  # fmt: skip
        relations = ("increases", "decreases", "no effect", "depends on")
        cid = call_id(_last_output(episode))
        findings = []
        for _ in range(int(rng.integers(self.max_claims + 1)) if outcomes and factors else 0):
            outcome = outcomes[int(rng.integers(len(outcomes)))]
            factor = factors[int(rng.integers(len(factors)))]
            if factor != outcome:
                findings.append({"outcome": outcome, "factor": factor,
                                 "relation": relations[int(rng.integers(4))],
                                 "evidence": [cid] if cid is not None else []})  # fmt: skip
        return _send(episode, _submit(findings))
