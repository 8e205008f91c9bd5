"""A launch command is read once: its record carries the image and the layout that applying a
change edits, and its flags are named through the registry at that one reading."""

from __future__ import annotations

from dataclasses import replace

from agent.flags import apply_changes, diff, flags_in, parse_command
from agent.flags.layout import Layout
from agent.registry import load_registry
from kb.records import Fix

DOCKER = (
    "docker run --rm -e SGL_ENABLE_JIT_DEEPGEMM=0 lmsysorg/sglang:v0.5.9 "
    "python3 -m sglang.launch_server --model-path m --tp 8"
)


def test_the_record_carries_its_image_and_layout():
    cfg = parse_command(DOCKER)
    assert cfg.image == "lmsysorg/sglang:v0.5.9"
    assert isinstance(cfg.layout, Layout)
    (span,) = [s for s in cfg.layout.items if not s.is_model]
    assert (span.flag.name, DOCKER[span.start : span.end]) == ("--tp-size", "--tp 8")
    (env,) = cfg.layout.envs
    assert (env.name, env.setting) == ("SGL_ENABLE_JIT_DEEPGEMM", "SGLANG_ENABLE_JIT_DEEPGEMM")
    assert cfg == parse_command(DOCKER)  # the layout is no part of the record's value


def test_changes_are_applied_at_the_spans_of_the_one_reading(monkeypatch):
    cfg = parse_command(DOCKER)
    changes = diff(cfg, Fix(add=("--tp-size 4",), env=("SGLANG_ENABLE_JIT_DEEPGEMM=1",)))

    def no_second_reading(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the command was read again")

    monkeypatch.setattr("agent.flags.apply.parse_command", no_second_reading)
    assert apply_changes(cfg, changes) == DOCKER.replace("--tp 8", "--tp 4").replace(
        "DEEPGEMM=0", "DEEPGEMM=1"
    )


def test_a_record_rebuilt_without_its_layout_is_read_from_its_text():
    cfg = parse_command("vllm serve m --tensor-parallel-size 2")
    rebuilt = replace(cfg, model="m")
    assert rebuilt.layout is None
    changes = diff(rebuilt, Fix(add=("--enforce-eager",)), finding_framework="vllm")
    assert (
        apply_changes(rebuilt, changes) == "vllm serve m --tensor-parallel-size 2 --enforce-eager"
    )


def test_flags_are_named_again_only_for_another_framework():
    reg = load_registry()
    cfg = parse_command("--tp 8 --mem-fraction-static 0.8")
    assert cfg.framework == "sglang"  # the registry that knows the flags
    assert set(flags_in(cfg, "sglang", reg)) == {"--tp-size", "--mem-fraction-static"}
    unknown = parse_command("--foo_bar 1 --quantization fp8")
    assert unknown.framework is None
    assert [f.name for f in unknown.flags] == ["--foo-bar", "--quantization"]
    assert "--quantization" in flags_in(unknown, "vllm", reg)
