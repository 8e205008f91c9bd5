"""kb.write: rendering that parses back, and writes that never lose a file."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kb.errors import DeployKBError, FindingError
from kb.parse import parse_file, parse_text
from kb.records import Finding, Fix, Framework, Hardware, Symptom
from kb.write import render_finding, write_finding

EXAMPLE = (
    Path(__file__).resolve().parent.parent / "findings" / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md"
)


def _generated() -> Finding:
    """A finding as `deploykb add` would build it: fields only, no story."""
    return Finding(
        id="qwen3-fp8-h100-capture-ima",
        title="Qwen3-30B-A3B-FP8 on 4x H100: illegal memory access during CUDA graph capture",
        status="works-with-flags",
        date="2026-03-02",
        model="Qwen/Qwen3-30B-A3B-FP8",
        quantization="fp8",
        hardware=Hardware(gpu="H100", count=4, sm="sm90"),
        framework=Framework(name="vllm", version="0.11.0"),
        symptoms=(
            Symptom(
                "illegal-memory-access", "CUDA error: an illegal memory access was encountered"
            ),
            Symptom("crash", "Assertion `x` failed: ``` in a log line"),
        ),
        root_cause="The FP8 block GEMM picked for capture reads past its scales.",
        fix=Fix(add=("--enforce-eager",), env=("VLLM_USE_DEEP_GEMM=0",)),
        alternatives=(
            Fix(add=('--compilation-config \'{"cudagraph_mode": "PIECEWISE"}\'',), note="slower"),
        ),
        tried_without_effect=("--max-num-seqs 32",),
        failing_command="vllm serve Qwen/Qwen3-30B-A3B-FP8 \\\n  --tensor-parallel-size 4",
        working_command="VLLM_USE_DEEP_GEMM=0 vllm serve Qwen/Qwen3-30B-A3B-FP8 --enforce-eager",
        tags=("hopper", "fp8"),
    )


def _without_location(f: Finding) -> Finding:
    return replace(f, path=None, line=None)


def test_generated_finding_gets_a_body_and_round_trips() -> None:
    f = _generated()
    text = render_finding(f)
    (again,) = parse_text(text, f"{f.id}.md").findings
    assert again.body.startswith("## What happened\n")
    assert (
        "## Root cause\n\nThe FP8 block GEMM picked for capture reads past its scales."
        in again.body
    )
    assert "- Add `--enforce-eager`" in again.body
    assert "- Set `VLLM_USE_DEEP_GEMM=0`" in again.body
    assert _without_location(replace(again, body="")) == f
    # Rendering what was parsed gives the same file: the generated body is now the story.
    assert render_finding(again) == text


def test_root_cause_goes_to_the_body_not_the_front_matter() -> None:
    text = render_finding(_generated())
    front, body = text.split("\n---\n", 1)
    assert "root_cause" not in front
    assert "## Root cause" in body


def test_commands_are_block_scalars_and_tags_a_flow_list() -> None:
    text = render_finding(_generated())
    assert (
        "failing_command: |\n  vllm serve Qwen/Qwen3-30B-A3B-FP8 \\\n    --tensor-parallel-size 4\n"
        in text
    )
    assert "working_command: |\n  VLLM_USE_DEEP_GEMM=0 vllm serve" in text
    assert "tags: [hopper, fp8]\n" in text
    assert "date: 2026-03-02\n" in text


def test_rendered_example_parses_to_the_shipped_record() -> None:
    (f,) = parse_file(EXAMPLE).findings
    (again,) = parse_text(render_finding(f), str(EXAMPLE)).findings
    assert again == f


def test_minimal_finding_renders_without_a_body() -> None:
    f = Finding(id="m", title="t: with a colon", status="broken")
    text = render_finding(f)
    assert text == "---\nid: m\ntitle: 't: with a colon'\nstatus: broken\n---\n"
    assert _without_location(parse_text(text, "m.md").findings[0]) == f


def test_write_creates_the_file_and_it_parses(tmp_path: Path) -> None:
    f = _generated()
    path, backup = write_finding(f, tmp_path / "team")
    assert path == tmp_path / "team" / f"{f.id}.md"
    assert backup is None
    (again,) = parse_file(path).findings
    assert _without_location(replace(again, body="")) == f
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left


def test_write_refuses_to_overwrite(tmp_path: Path) -> None:
    f = _generated()
    path, _ = write_finding(f, tmp_path)
    before = path.read_bytes()
    with pytest.raises(DeployKBError) as exc:
        write_finding(replace(f, status="broken"), tmp_path)
    assert str(exc.value) == (
        f"{path} already exists; use --force to replace it (the old file is kept as {f.id}.md.bak)"
    )
    assert path.read_bytes() == before


def test_force_replaces_and_keeps_the_old_file_as_backup(tmp_path: Path) -> None:
    f = _generated()
    path, _ = write_finding(f, tmp_path)
    before = path.read_bytes()
    path2, backup = write_finding(replace(f, status="broken"), tmp_path, force=True)
    assert path2 == path
    assert backup == tmp_path / f"{f.id}.md.bak"
    assert backup.read_bytes() == before
    assert parse_file(path).findings[0].status == "broken"


def test_failed_replace_leaves_the_original_intact(tmp_path: Path, monkeypatch) -> None:
    f = _generated()
    path, _ = write_finding(f, tmp_path)
    before = path.read_bytes()

    def broken_replace(src, dst):  # noqa: ANN001
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(DeployKBError) as exc:
        write_finding(replace(f, status="broken"), tmp_path, force=True)
    assert str(exc.value) == f"cannot write {path}: No space left on device"
    assert path.read_bytes() == before
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers == [f"{f.id}.md", f"{f.id}.md.bak"]  # the temp file is gone


def test_write_refuses_an_id_that_is_not_a_file_name(tmp_path: Path) -> None:
    with pytest.raises(FindingError) as exc:
        write_finding(replace(_generated(), id="../escape"), tmp_path)
    assert (
        str(exc.value) == f"{tmp_path}: id '../escape' is not a slug; cannot name a file after it"
    )
    assert list(tmp_path.iterdir()) == []


def test_write_refuses_a_record_that_would_not_load_back(tmp_path: Path) -> None:
    bad = replace(_generated(), status="working")
    with pytest.raises(FindingError) as exc:
        write_finding(bad, tmp_path)
    assert str(exc.value) == (
        f"{tmp_path / bad.id}.md:4: status 'working' is not one of: "
        "works, works-with-flags, broken, partial"
    )
    assert list(tmp_path.iterdir()) == []
