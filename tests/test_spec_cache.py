"""The spec cache: content-addressed records, hashes checked on read, resume, cache hits;
``isg build`` and ``--specs``; ``gym.make("ISG-v0", specs=DIR)``; byte-identical repositories
from a cached Spec (golden hashes of the small committed cache ``tests/data/llm_specs``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest
from env_fakes import FakeSandbox
from fake_openai_server import ScriptedChatServer
from llm_designer import ScriptedDesigner
from test_determinism import tree_hash

from isg_gym.cli import main
from isg_gym.eval.backends.openai_compat import OpenAIBackend
from isg_gym.eval.errors import InfrastructureError
from isg_gym.repository import Repository
from isg_gym.simulator.build import ProceduralBuilder, build_seeds
from isg_gym.simulator.cache import (
    MANIFEST,
    CacheKey,
    SpecCache,
    SpecCacheError,
    SpecSource,
    load_spec,
)
from isg_gym.simulator.llm import LLMBuilder, backend_ask
from isg_gym.simulator.procedural import build_spec

COMMITTED = Path(__file__).parent / "data" / "llm_specs"
GOLDEN = {  # isg materialize SEED DIR --specs tests/data/llm_specs (spec v3)
    0: "b20c268cac84dfbd52ff084dc6d39b5762febaa0680cf141b5fdb27f969b5012",
    1: "bb6ed9b765a4382a4ee3b7bd29ff3391a55cb02880dd0d9ea6d4e5726ec44117",
    2: "d00d205492a3b0c35d9c4b617a5884a6f44cb55179d9d3c738f0427464aea9a6",
}


@pytest.fixture
def server() -> Iterator[ScriptedChatServer]:
    with ScriptedChatServer(ScriptedDesigner(), retry_after_ms=1) as srv:
        yield srv


def _builder(url: str, model: str = "scripted-model") -> tuple[LLMBuilder, OpenAIBackend]:
    backend = OpenAIBackend(model, base_url=url, max_retries=0, concurrency=4)
    return LLMBuilder(backend_ask(backend), model), backend


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "specs"
    shutil.copytree(COMMITTED, out)
    return out


# --- records and the manifest ---------------------------------------------------------------


def test_build_resume_and_cache_hits(server, tmp_path) -> None:
    builder, backend = _builder(server.url)
    cache = SpecCache(tmp_path / "c", create=True)
    try:
        first = build_seeds(range(2), builder, cache, concurrency=2)
        asked = len(server.requests)
        second = build_seeds(range(4), builder, SpecCache(tmp_path / "c"), concurrency=2)
    finally:
        backend.close()
    assert (first.built, first.cached_built, asked) == (2, 0, 14)
    assert (second.built, second.cached_built) == (2, 2)
    assert len(server.requests) == asked + 14  # only the two new seeds asked the model
    source = SpecSource(tmp_path / "c")
    assert source.seeds == (0, 1, 2, 3) and source.model == "scripted-model"
    assert source.builder == "llm" and source.prompt_version == 1
    record = json.loads((tmp_path / "c" / CacheKey(0, "llm", "scripted-model", 1).file).read_text())
    assert record["status"] == "built" and record["stats"]["calls"] == 7
    assert load_spec(0, tmp_path / "c") == source.spec(0)


def test_failed_seeds_are_recorded_and_kept_unless_retried(tmp_path) -> None:
    designer = ScriptedDesigner({"titles": ["nope"] * 3})
    with ScriptedChatServer(designer) as srv:
        builder, backend = _builder(srv.url)
        try:
            cache = SpecCache(tmp_path, create=True)
            first = build_seeds([5], builder, cache)
            again = build_seeds([5], builder, cache)
            retried = build_seeds([5], builder, cache, retry_failed=True)
        finally:
            backend.close()
    assert first.failed == 1 and first.failures == {("titles", "json"): 1}
    assert again.cached_failed == 1 and again.failed == 0
    assert retried.built == 1 and SpecSource(tmp_path).seeds == (5,)
    # the manifest keeps both lines; the later one wins
    statuses = [
        json.loads(line)["status"] for line in (tmp_path / MANIFEST).read_text().splitlines()
    ]
    assert statuses == ["failed", "built"]


def test_backend_errors_are_not_cached_and_stop_a_run_early(tmp_path) -> None:
    designer = ScriptedDesigner({"titles": [{"status": 500}] * 5})
    with ScriptedChatServer(designer, retry_after_ms=1) as srv:
        builder, backend = _builder(srv.url)
        try:
            cache = SpecCache(tmp_path, create=True)
            with pytest.raises(InfrastructureError, match="first 4 builds"):
                build_seeds(range(8), builder, cache, concurrency=1)
            assert cache.entries() == []  # backend errors are never cached
            # the fifth 500 went to seed 4 if it had started, else it goes to seed 0 now
            summary = build_seeds(range(4), builder, cache)
        finally:
            backend.close()
    assert summary.built + summary.errors == 4 and summary.errors <= 1
    assert len(cache.entries()) == summary.built


def test_an_edited_or_corrupted_record_is_an_error(tmp_path) -> None:
    specs = _copy(tmp_path)
    record = next((specs / "specs").glob("1-*.json"))
    text = record.read_text()
    record.write_text(text.replace('"decimals": 3', '"decimals": 4', 1))
    source = SpecSource(specs)
    assert source.spec(0).seed == 0  # the others still read
    with pytest.raises(SpecCacheError, match="does not match its manifest entry"):
        source.spec(1)
    record.unlink()
    with pytest.raises(SpecCacheError, match="missing or unreadable"):
        SpecSource(specs).spec(1)


def test_the_cli_reports_a_corrupted_record_in_one_line(tmp_path, capsys) -> None:
    specs = _copy(tmp_path)
    record = next((specs / "specs").glob("2-*.json"))
    record.write_bytes(record.read_bytes()[:-20])
    assert main(["show", "2", "--specs", str(specs)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not match its manifest entry" in err


def test_a_torn_manifest_line_is_ignored_and_cut_off(tmp_path) -> None:
    specs = _copy(tmp_path)
    with open(specs / MANIFEST, "a") as f:
        f.write('{"builder": "llm", "seed": 9')  # an interrupted append
    cache = SpecCache(specs)
    assert len(cache.entries()) == 3
    cache.put(CacheKey(7, "procedural", "", 0), "built", spec=build_spec(7))
    lines = (specs / MANIFEST).read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)
    with open(specs / MANIFEST, "a") as f:
        f.write("not json\n")
    with pytest.raises(SpecCacheError, match="line 5 is not a manifest entry"):
        SpecCache(specs)


def test_several_builds_in_one_directory_must_be_chosen(tmp_path) -> None:
    specs = _copy(tmp_path)
    cache = SpecCache(specs)
    build_seeds([0, 4], ProceduralBuilder(), cache)
    with pytest.raises(SpecCacheError, match="several builds"):
        SpecSource(specs)
    assert SpecSource(specs, builder="procedural").seeds == (0, 4)
    assert SpecSource(specs, model="scripted-model").spec(0) != SpecSource(
        specs, builder="procedural"
    ).spec(0)
    with pytest.raises(SpecCacheError, match="seed 4 is not in the spec cache"):
        SpecSource(specs, model="scripted-model").spec(4)
    with pytest.raises(SpecCacheError, match="no spec cache"):
        SpecSource(tmp_path / "nowhere")


# --- byte-identical repositories ---------------------------------------------------------------


@pytest.mark.parametrize("seed", sorted(GOLDEN))
def test_a_cached_spec_materializes_to_golden_bytes(seed, tmp_path, capsys) -> None:
    assert main(["materialize", str(seed), str(tmp_path), "--specs", str(COMMITTED)]) == 0
    assert tree_hash(tmp_path) == GOLDEN[seed]


def test_same_bytes_in_another_process_and_hash_seed(tmp_path) -> None:
    out = tmp_path / "repo"
    env = {**os.environ, "PYTHONHASHSEED": "4242"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "isg_gym.cli",
            "materialize",
            "1",
            str(out),
            "--specs",
            str(COMMITTED),
        ],
        check=True,
        env=env,
        capture_output=True,
    )
    assert tree_hash(out) == GOLDEN[1]


# --- isg build and --specs ---------------------------------------------------------------------


def test_isg_build_prints_counts_and_resumes(server, tmp_path, capsys) -> None:
    args = [
        "build",
        "--builder",
        "llm",
        "--backend",
        "openai",
        "--model",
        "scripted-model",
        "--base-url",
        server.url,
        "--seeds",
        "0:3",
        "--cache",
        str(tmp_path),
        "--concurrency",
        "2",
        "--no-progress",
        "--json",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "built 3, failed 0, cached 0" in out and "model calls 21 (7.0 per seed)" in out
    assert json.loads(out.strip().splitlines()[-1])["built"] == 3
    assert main([*args[:-6], "--seeds", "1:5", "--cache", str(tmp_path), "--no-progress"]) == 0
    assert "built 2, failed 0, cached 2 (2 built, 0 failed) of 4 seeds" in capsys.readouterr().out
    assert main(["show", "4", "--specs", str(tmp_path)]) == 0
    assert "archetype llm" in capsys.readouterr().out


def test_isg_build_reports_failures_by_stage(tmp_path, capsys) -> None:
    designer = ScriptedDesigner({"abstract": ["{}"] * 2})
    with ScriptedChatServer(designer) as srv:
        code = main(
            [
                "build",
                "--backend",
                "openai",
                "--model",
                "m",
                "--base-url",
                srv.url,
                "--seeds",
                "3",
                "--cache",
                str(tmp_path),
                "--max-attempts",
                "2",
                "--no-progress",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0 and "built 0, failed 1" in out
    assert "failed seeds by stage and check:\n  abstract    schema           1" in out


def test_isg_build_errors_are_one_line(tmp_path, capsys) -> None:
    assert main(["build", "--seeds", "0:2", "--cache", str(tmp_path)]) == 2
    assert "needs --backend and --model" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["build", "--builder", "procedural", "--seeds", "5:2", "--cache", str(tmp_path)])
    assert "--seeds takes A:B" in capsys.readouterr().err


def test_procedural_specs_in_a_cache_show_as_without_one(tmp_path, capsys) -> None:
    assert (
        main(
            [
                "build",
                "--builder",
                "procedural",
                "--seeds",
                "3,8",
                "--cache",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    for command in (["show", "8"], ["tree", "8", "--depth", "2"], ["questions", "8", "--json"]):
        assert main(command) == 0
        plain = capsys.readouterr().out
        assert main([*command, "--specs", str(tmp_path)]) == 0
        assert capsys.readouterr().out == plain


# --- the env -----------------------------------------------------------------------------------


def test_env_draws_only_cached_seeds_and_refuses_others() -> None:
    env = gym.make("ISG-v0", specs=str(COMMITTED), sandbox=FakeSandbox(), privileged_info=True)
    try:
        seen = {env.reset(seed=i)[1]["repository"] for i in range(12)}
        assert seen <= {0, 1, 2} and len(seen) >= 2
        _, info = env.reset(options={"repository": 2})
        assert info["repository"] == 2
        assert env.unwrapped._repo.spec == load_spec(2, COMMITTED)
        with pytest.raises(ValueError, match="seed 7 is not in the spec cache"):
            env.reset(options={"repository": 7})
        _, reward, terminated, _, info = env.step(
            {"name": "final_answer", "arguments": {"answer": info["answer"]}}
        )
        assert terminated and reward == 1.0
    finally:
        env.close()
    narrow = gym.make(
        "ISG-v0",
        specs=SpecSource(COMMITTED),
        start_repository=1,
        num_repositories=1,
        sandbox=FakeSandbox(),
    )
    try:
        assert {narrow.reset(seed=i)[1]["repository"] for i in range(4)} == {1}
    finally:
        narrow.close()
    with pytest.raises(ValueError, match="holds no built seed in"):
        gym.make("ISG-v0", specs=str(COMMITTED), start_repository=3, sandbox=FakeSandbox())


def test_a_cached_repository_equals_the_spec_it_was_built_from(server, tmp_path) -> None:
    builder, backend = _builder(server.url)
    try:
        result = builder.build(11)
    finally:
        backend.close()
    cache = SpecCache(tmp_path, create=True)
    cache.put(
        CacheKey(11, "llm", "scripted-model", 1), "built", spec=result.spec, stats=result.stats
    )
    fresh, cached = Repository(result.spec), Repository(load_spec(11, tmp_path))
    assert fresh.files() == cached.files()
    assert all(fresh.read_bytes(p) == cached.read_bytes(p) for p in fresh.files())


def test_the_summary_gives_model_figures_for_every_model_builder() -> None:
    from types import SimpleNamespace

    from isg_gym.simulator.build import BuildSummary
    from isg_gym.simulator.build_cli import summary_lines

    summary = BuildSummary(
        requested=2,
        built=1,
        failed=1,
        calls=15,
        prompt_tokens=900,
        completion_tokens=300,
        wall_seconds=3.0,
    )
    small = SimpleNamespace(name="llm-small", model="smollm2")
    assert any("model calls 15 (7.5 per seed)" in line for line in summary_lines(summary, small))
    procedural = SimpleNamespace(name="procedural", model="")
    assert not any("model calls" in line for line in summary_lines(summary, procedural))
