"""Calibrate ISG-Orbits-v0's per-task thresholds the way Gravity-Bench did.

Run: ``python benchmarks/orbits_calibrate.py [--systems 1000-1599] [--write]`` (needs the
``orbits`` extra).

For every training system in ``--systems`` the expert's analysis
(:mod:`isg_gym.eval.policies.orbits_fit`, the code the scripted expert sends to the sandbox,
run here in-process for speed) fits ``--observations`` uniformly spaced observations of the
window (100, as Gravity-Bench), and answers every task (both stars where a task asks about
one). Per task, over the answerable numeric questions: the expert's relative error at the
``--percentile`` (80) and the threshold, the smallest rung of 5/15/20/40/70% that covers it.
Also counted: how often the expert said "not possible" where an answer exists, or answered
where none exists (its abstention errors). ``--write`` stores the thresholds in
``isg_gym/data/orbits/thresholds.json``; the table prints them next to Gravity-Bench's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from isg_gym.eval.policies.orbits_fit import ABSTAIN, Model
from isg_gym.orbits.observe import columns, observe, window_end
from isg_gym.orbits.sampling import thresholds
from isg_gym.orbits.system import ObservationOptions, build_system
from isg_gym.orbits.tasks import TASKS
from isg_gym.orbits.truth import facts
from isg_gym.orbits.units import unit_system

RUNGS = (0.05, 0.15, 0.20, 0.40, 0.70)
THRESHOLDS_FILE = Path(__file__).resolve().parents[1] / "isg_gym/data/orbits/thresholds.json"
# Gravity-Bench's thresholds (scripts/scenarios_config.json, percent) for the nearest task.
GRAVITY_BENCH = {
    "star_mass": ("mass_star1/2", 5), "total_mass": ("total_mass", 5),
    "reduced_mass": ("reduced_mass", 5), "period": ("period", 5),
    "kepler_constant": ("kepler_3rd_law (yes/no)", 5), "eccentricity": ("eccentricity", 5),
    "semi_major_axis": ("semi_major_axis", 5), "semi_minor_axis": ("semi_minor_axis", 5),
    "periastron": ("periastron", 5), "apoastron": ("apoastron", 5),
    "orbit_area": ("orbital_area_star1/2", 5), "roche_lobe_radius": ("roche_lobe_radius", 5),
    "max_speed": ("max_velocity_star1/2", 20), "min_speed": ("min_velocity_star1/2", 5),
    "max_momentum": ("max_momentum_star1/2", 20), "min_momentum": ("min_momentum_star1/2", 5),
    "max_acceleration": ("max_acceleration_star1/2", 70),
    "min_acceleration": ("min_acceleration_star1/2", 5),
    "max_angular_velocity": ("max_angular_velocity_star1/2", 20),
    "min_angular_velocity": ("min_angular_velocity_star1/2", 5),
    "areal_velocity": ("area_swept_over_time_peri/apo", 15),
    "angular_momentum": ("specific_angular_momentum", 15), "total_energy": ("K+U", 40),
    "is_bound": ("is_bound (yes/no)", 5), "drag_timescale": ("linear_drag", 15),
    "gravity_exponent": ("modified_gravity_power_law", 70), "apsidal_precession": ("-", None),
}  # fmt: skip


def _range(text: str) -> range:
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi) + 1)


def rung(error: float) -> float:
    """The smallest rung covering ``error`` (the largest when none does)."""
    return next((r for r in RUNGS if error <= r), RUNGS[-1])


def expert_errors(systems: range, observations: int, options: ObservationOptions):
    """Per task: relative errors on answerable numeric questions, and abstention mistakes."""
    errors: dict[str, list[float]] = defaultdict(list)
    mistakes: dict[str, int] = defaultdict(int)
    asked: dict[str, int] = defaultdict(int)
    for seed in systems:
        system = build_system(seed, options)
        table = pd.DataFrame(observe(system, np.linspace(0, window_end(system), observations)),
                             columns=columns(system))  # fmt: skip
        units = unit_system(system.units)
        model = Model(table, units.metres_per_length, units.seconds_per_time, system.noise_m)
        truth = facts(system)
        for name, cls in TASKS.items():
            task = cls()
            for star in (1, 2) if cls.per_star else (None,):
                asked[name] += 1
                answer = model.answer(name, star)
                if truth.orbit in cls.undefined:
                    mistakes[name] += answer != ABSTAIN
                    continue
                if answer == ABSTAIN:
                    mistakes[name] += 1
                    continue
                if cls.kind == "yes_no":
                    mistakes[name] += (answer == "yes") != cls.answers[truth.orbit]
                    continue
                gold = task.value(truth, {"star": star})
                errors[name].append(abs(float(answer) - gold) / abs(gold))
    return errors, mistakes, asked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="1000-1599", help="training systems A-B")
    parser.add_argument("--observations", type=int, default=100)
    parser.add_argument("--percentile", type=float, default=80.0)
    parser.add_argument("--projection-share", type=float, default=0.0,
                        help="share of systems seen projected on the sky (not for --write)")
    parser.add_argument("--noise-share", type=float, default=0.0,
                        help="share of systems with position noise (not for --write)")
    parser.add_argument("--write", action="store_true", help="store the thresholds")
    args = parser.parse_args(argv)
    systems = _range(args.systems)
    if systems.start < 1000:
        parser.error("calibrate on training systems (>= 1000), not the evaluation range")
    options = ObservationOptions(projection_share=args.projection_share,
                                 noise_share=args.noise_share)  # fmt: skip
    if args.write and options != ObservationOptions():
        parser.error("--write calibrates the default (exact, unprojected) observations only")
    start = time.perf_counter()
    errors, mistakes, asked = expert_errors(systems, args.observations, options)
    elapsed = time.perf_counter() - start
    rows = {}
    print(f"expert on {args.observations} uniform observations, systems {args.systems} "
          f"({len(systems)} systems, {elapsed:.0f} s); "
          f"p{args.percentile:g} relative error")  # fmt: skip
    print(f"| task | n | p50 | p{args.percentile:g} | threshold | abstention errors | "
          "Gravity-Bench task | GB threshold |")
    print("|---|---|---|---|---|---|---|---|")
    for name in sorted(TASKS):
        gb_task, gb = GRAVITY_BENCH[name]
        errs = np.array(errors.get(name, []))
        if TASKS[name].kind == "yes_no":
            p50 = pn = math.nan
            threshold = None
        else:
            p50 = float(np.percentile(errs, 50))
            pn = float(np.percentile(errs, args.percentile))
            threshold = rung(pn)
        rows[name] = {"threshold": threshold if threshold is not None else 0.0, "n": len(errs),
                      "p50": p50, f"p{args.percentile:g}": pn,
                      "abstention_errors": mistakes[name], "asked": asked[name]}  # fmt: skip
        shown = "exact" if threshold is None else f"{threshold:.0%}"
        print(f"| {name} | {len(errs)} | {p50:.1e} | {pn:.1e} | {shown} | "
              f"{mistakes[name]}/{asked[name]} | {gb_task} | "
              f"{'-' if gb is None else f'{gb}%'} |")  # fmt: skip
    stored = thresholds()
    right = sum(asked.values()) - sum(mistakes.values())
    right -= sum(sum(e > stored.get(name, 0.05) for e in errs) for name, errs in errors.items())
    print(f"\nexpert accuracy over every (system, task, star) question with the stored "
          f"thresholds: {right / sum(asked.values()):.1%} of {sum(asked.values())} "
          f"(projection share {args.projection_share:g}, noise share {args.noise_share:g})")
    if args.write:
        data = {
            "method": f"smallest rung covering the expert's p{args.percentile:g} relative error "
                      f"on {args.observations} uniform observations",
            "rungs": list(RUNGS),
            "systems": args.systems,
            "tasks": {k: {kk: (None if isinstance(vv, float) and math.isnan(vv) else vv)
                          for kk, vv in v.items()} for k, v in rows.items()},
        }  # fmt: skip
        THRESHOLDS_FILE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {THRESHOLDS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
