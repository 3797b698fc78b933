"""What the agent is told: the tools, the answering conventions and the prompt of an episode.

The prompt is the same for every system apart from its unit system, observation window,
observation model (projection, noise) and the question: nothing in it depends on the physics.
"""

from __future__ import annotations

from typing import Any

from isg_gym.orbits.observe import FULL_ROWS, columns, window_end
from isg_gym.orbits.sampling import thresholds
from isg_gym.orbits.system import System
from isg_gym.orbits.tasks import ABSTAIN
from isg_gym.orbits.tasks.base import DEFAULT_THRESHOLD
from isg_gym.orbits.units import G_SI, unit_system
from isg_gym.tools.schemas import FINAL_ANSWER, RUN_PYTHON_CODE, describe_tools, tool_schema

OBSERVE = "observe"
OBSERVATIONS_FILE = "observations.csv"
TRAJECTORY_FILE = "trajectory.csv"
MODES = ("budget", "full")


def observe_schema(per_call: int) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": OBSERVE,
            "description": (
                f"Observe both stars' positions at up to {per_call} times (in the system's time "
                "unit, within the observation window). Each observation uses one unit of the "
                "budget; times outside the window, non-finite or already observed are refused "
                f"without charge. The rows are added to {OBSERVATIONS_FILE} in the Python "
                "tool's working directory."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "times": {
                        "type": "array",
                        "items": {"type": "number"},
                        "maxItems": per_call,
                        "description": "Times to observe.",
                    }
                },
                "required": ["times"],
                "additionalProperties": False,
            },
        },
    }


def python_schema(mode: str) -> dict[str, Any]:
    schema = tool_schema(RUN_PYTHON_CODE)
    name = TRAJECTORY_FILE if mode == "full" else OBSERVATIONS_FILE
    schema["function"]["description"] = (
        "Run Python 3 code in a sandbox (numpy, pandas, scipy available; no network). The "
        f"working directory holds {name} (read-only). Returns stdout, stderr and the value of a "
        "trailing expression. State does not persist between calls."
    )
    return schema


def tool_schemas(mode: str, per_call: int) -> list[dict[str, Any]]:
    tools = [python_schema(mode), tool_schema(FINAL_ANSWER)]
    return [observe_schema(per_call), *tools] if mode == "budget" else tools


def _tolerance() -> str:
    """The relative-error thresholds of the numeric tasks, as a phrase."""
    values = sorted({v for v in thresholds().values() if v > 0} or {DEFAULT_THRESHOLD})
    if len(values) == 1:
        return f"{values[0]:.0%}"
    return f"{values[0]:.0%} to {values[-1]:.0%}, depending on the quantity"


CONVENTIONS = f"""\
Conventions:
- Answer in SI units (kg, m, s, J and their products) with G = {G_SI} m^3 kg^-1 s^-2; a \
number is right when its relative error is within {_tolerance()}.
- "The orbit" is the relative orbit of star 2 around star 1; a separation is the distance \
between the stars; the period is the time between successive closest approaches. Speeds, \
momenta and kinetic energies of the stars are measured in the centre-of-mass frame (without \
the system's proper motion). Maxima and minima are over the whole orbit, not only the \
observation window.
- The stars attract each other by gravity. Some systems also feel a drag a = -v / tau on \
each star (v: its velocity in the observer's frame); in some the attraction is not \
inverse-square but F ~ r^-(2 + alpha), with a strength constant that is unknown.
- Answer "{ABSTAIN}" when the quantity does not exist for the system or cannot be determined \
from its observations. In particular: eccentricity, semi-major and semi-minor axes, the area \
of the orbit, P^2 / a^3 and Roche lobe radii belong to Kepler orbits (inverse-square gravity, \
no drag). An unbound orbit has an eccentricity and a closest separation but no period, \
largest separation, semi-major or semi-minor axis, orbit area, nor a minimum speed, momentum, \
acceleration or angular velocity (they are never reached). Under drag the orbit shrinks, so \
no quantity of the orbit is constant: only the masses, whether the system is bound, and tau \
can be answered. When the attraction is not inverse-square, its unknown strength constant \
leaves the masses, momenta, angular momentum (not the areal velocity), energies and \
boundness undetermined. A drag timescale needs drag, and alpha a force that is not \
inverse-square."""

SYSTEM_PROMPT = """\
You are an astrophysicist studying a binary star system. {observation} Answer the question \
below, then submit the answer with final_answer.

Units: {units} The observation window runs from time 0 to time {end:.10g} {time_unit}.{model}

Tools:
{tools}

To call a tool, write one or more blocks like
<tool_call>{example}</tool_call>
Tool results come back in the next message. You have at most {max_steps} messages.

{conventions}"""

ANSWER_INSTRUCTIONS = (
    "Answer with the value only (a number in SI units, or yes/no). If the quantity does not "
    f'exist for this system or cannot be determined, answer "{ABSTAIN}".'
)


def _units_text(system: System) -> str:
    units = unit_system(system.units)
    return (f"positions are in {units.length} and times in {units.time} "
            f"({units.description}; 1 {units.length} = {units.metres_per_length:.10g} m, "
            f"1 {units.time} = {units.seconds_per_time:.10g} s).")  # fmt: skip


def _model_text(system: System) -> str:
    parts = []
    if system.projected:
        parts.append(" Positions are projected on the sky: only x and y are observed (z, along "
                     "the line of sight, is not).")  # fmt: skip
    if system.noise_m > 0:
        units = unit_system(system.units)
        noise = system.noise_m / units.metres_per_length
        parts.append(f" Every observed coordinate carries independent Gaussian noise with a "
                     f"standard deviation of {noise:.4g} {units.length}.")  # fmt: skip
    else:
        parts.append(" Observed positions are exact (no noise).")
    return "".join(parts)


def build_prompt(system: System, question_text: str, mode: str, budget: int, per_call: int,
                 max_steps: int) -> dict[str, str]:  # fmt: skip
    """The episode's ``{"system", "user"}`` prompt."""
    cols = ", ".join(columns(system))
    if mode == "full":
        observation = (f"The whole trajectory, {FULL_ROWS} observations of both stars' "
                       f"positions uniformly spaced over the observation window, is in "
                       f"{TRAJECTORY_FILE} (columns {cols}).")  # fmt: skip
        example = '{"name": "run_python_code", "arguments": {"code": "print(1 + 1)"}}'
    else:
        observation = (f"You can observe both stars' positions at times you choose: at most "
                       f"{per_call} times per observe call and {budget} observations in all. "
                       f"Observed rows are added to {OBSERVATIONS_FILE} "
                       f"(columns {cols}).")  # fmt: skip
        example = '{"name": "observe", "arguments": {"times": [0, 1.5, 3]}}'
    units = unit_system(system.units)
    return {
        "system": SYSTEM_PROMPT.format(
            observation=observation,
            units=_units_text(system),
            end=window_end(system),
            time_unit=units.time,
            model=_model_text(system),
            tools=describe_tools(tool_schemas(mode, per_call)),
            example=example,
            max_steps=max_steps,
            conventions=CONVENTIONS,
        ),
        "user": f"Question: {question_text}\n\n{ANSWER_INSTRUCTIONS}",
    }
