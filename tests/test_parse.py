"""kb.parse and kb.serialize: shipped findings, exact error messages, free-form notes."""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from kb.errors import FindingError
from kb.parse import MAX_BYTES, parse_bytes, parse_file, parse_text
from kb.records import Check, Finding, Fix, Framework, Hardware, Performance, Symptom
from kb.serialize import KEYS, finding_from_dict, finding_to_dict
from kb.write import render_finding

REPO = Path(__file__).resolve().parent.parent
FINDINGS = REPO / "findings"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "parse"
SHIPPED = sorted(p for p in FINDINGS.glob("*.md") if p.name != "README.md")
EXAMPLE_FILE = FINDINGS / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md"


def _error(exc_info: pytest.ExceptionInfo[FindingError]) -> str:
    return str(exc_info.value)


# --- the shipped knowledge base -----------------------------------------------------------------


def test_there_are_shipped_findings() -> None:
    assert len(SHIPPED) >= 3


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_finding_parses_without_warnings(path: Path) -> None:
    result = parse_file(path)
    assert [str(w) for w in result.warnings] == []
    (finding,) = result.findings
    assert finding.id == path.stem
    assert finding.path == str(path)
    assert finding.line == 1


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_finding_round_trips_through_render(path: Path) -> None:
    (finding,) = parse_file(path).findings
    (again,) = parse_text(render_finding(finding), str(path)).findings
    assert again == finding


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_finding_round_trips_through_json(path: Path) -> None:
    (finding,) = parse_file(path).findings
    stored = json.dumps(finding_to_dict(finding))
    loaded = finding_from_dict(json.loads(stored), path=str(path), body=finding.body, line=1)
    assert loaded == finding


def _readme_example() -> str:
    readme = (FINDINGS / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- example:start -->", 1)[1].split("<!-- example:end -->", 1)[0]
    match = re.fullmatch(r"\s*```markdown\n(.*)```\s*", block, re.S)
    assert match, "the README example must be one ```markdown fenced block"
    return match.group(1)


def test_readme_example_is_the_shipped_glm5_finding() -> None:
    assert _readme_example() == EXAMPLE_FILE.read_text(encoding="utf-8")


def test_readme_example_parses_into_the_documented_fields() -> None:
    result = parse_text(_readme_example(), str(EXAMPLE_FILE))
    assert [str(w) for w in result.warnings] == []
    (f,) = result.findings
    assert f.id == "glm5-nvfp4-sm120-deepgemm-ue8m0-nan"
    assert f.status == "broken"  # the seeds end with the NaN crash unresolved
    assert f.date == "2026-02-19"
    assert f.hardware == Hardware(
        gpu="NVIDIA RTX PRO 6000 Blackwell", count=8, sm="sm120", interconnect="PCIe"
    )
    assert [s.cls for s in f.symptoms] == ["device-assert", "crash", "warning"]
    # the last plan of seed 004, never reported tried
    assert f.fix.remove == ("--kv-cache-dtype fp8_e4m3",)
    assert f.fix.add == ("--disable-cuda-graph",)
    assert f.fix.confirmed is False
    assert "--fp8-gemm-backend cutlass" in f.tried_without_effect
    assert not any("--attention-backend" in t for t in f.tried_without_effect)
    assert f.working_command is None
    assert f.command_provenance == "reconstructed"
    assert f.components == ("deepgemm", "fp8-gemm", "nsa-attention", "fp8-kv-cache", "nvfp4")
    assert f.checked is not None and f.checked.date == "2026-12-01"
    assert all(s.startswith("report: ") or "#" in s for s in f.sources)
    assert f.root_cause is not None and f.root_cause.startswith("Unknown; the reports end")
    assert f.body.startswith("## What happened\n")


# --- finding_to_dict / finding_from_dict --------------------------------------------------------


def _full_finding() -> Finding:
    return Finding(
        id="x-1",
        title="A title",
        status="partial",
        date="2026-03",
        model="org/Model-7B",
        architecture="llama",
        quantization="fp8",
        hardware=Hardware(gpu="H100", count=2, sm="sm90", interconnect="NVLink"),
        framework=Framework(name="vllm", version="0.11.0"),
        symptoms=(Symptom("hang", "stuck at capture"),),
        root_cause="why it broke",
        fix=Fix(add=("--enforce-eager",), remove=("--x",), env=("A=1",), pins=("torch==2.9",)),
        alternatives=(Fix(add=("--y 1",), note="reported by someone else"),),
        tried_without_effect=("--z",),
        failing_command="vllm serve org/Model-7B",
        working_command="vllm serve org/Model-7B \\\n  --enforce-eager",
        performance=Performance(throughput_tok_s=812.5, concurrency=16, baseline="b", notes="n"),
        sources=("a/b#1",),
        related=("other",),
        tags=("t1", "t2"),
        components=("cuda-graph",),
        command_provenance="quoted",
        checked=Check(date="2026-12-01", against=("a/b#1",), note="all fields"),
        body="## Notes\n\nSome text.",
        path="x-1.md",
        line=1,
    )


def test_to_dict_uses_the_readme_key_order_and_omits_empty_fields() -> None:
    d = finding_to_dict(_full_finding())
    assert list(d) == list(KEYS)
    minimal = finding_to_dict(Finding(id="m", title="t", status="works"))
    assert minimal == {"id": "m", "title": "t", "status": "works"}
    assert d["symptoms"] == [{"class": "hang", "text": "stuck at capture"}]
    assert d["alternatives"] == [{"add": ["--y 1"], "note": "reported by someone else"}]


def test_dict_round_trip_is_exact_for_every_field() -> None:
    f = _full_finding()
    d = json.loads(json.dumps(finding_to_dict(f)))
    assert finding_from_dict(d, path="x-1.md", body=f.body, line=1) == f


def test_root_cause_lives_in_the_body_when_the_body_says_it() -> None:
    body = "## What happened\n\nx\n\n## Root cause\n\nThe scale format.\n\n## Fix\n\ny"
    f = finding_from_dict({"id": "a", "title": "t", "status": "broken"}, path="a.md", body=body)
    assert f.root_cause == "The scale format."
    assert "root_cause" not in finding_to_dict(f)
    # A root cause that the body does not carry stays in the dict, so nothing is lost.
    g = replace(f, root_cause="Something else.")
    assert finding_to_dict(g)["root_cause"] == "Something else."
    assert finding_from_dict(finding_to_dict(g), path="a.md", body=body) == g


def test_from_dict_normalises_yaml_dates_and_sm() -> None:
    d = {"id": "a", "title": "t", "status": "works", "date": dt.date(2026, 2, 19)}
    d["hardware"] = {"sm": "SM_120"}
    f = finding_from_dict(d, path="a.md")
    assert f.date == "2026-02-19"
    assert f.hardware.sm == "sm120"


def test_from_dict_without_lines_names_only_the_path() -> None:
    with pytest.raises(FindingError) as exc:
        finding_from_dict({"id": "a", "title": "t", "status": "fine"}, path="row 3")
    assert (
        _error(exc)
        == "row 3: status 'fine' is not one of: works, works-with-flags, broken, partial"
    )


# --- exact error messages -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "bad-yaml.md",
            "7: invalid YAML in front matter: mapping values are not allowed in this context",
        ),
        ("missing-status.md", "1: missing required field 'status'"),
        (
            "unknown-status.md",
            "5: status 'working' is not one of: works, works-with-flags, broken, partial",
        ),
        (
            "unknown-key.md",
            "6: unknown key 'gpu' (did you mean 'hardware.gpu'?); allowed keys: " + ", ".join(KEYS),
        ),
        (
            "bad-symptom-class.md",
            "11: symptom class 'segfault' is not one of: nan, garbage-output, empty-output, "
            "accuracy, device-assert, illegal-memory-access, crash, hang, oom, slow, warning",
        ),
        ("unclosed.md", "1: front matter is not closed: add a '---' line after the fields"),
    ],
)
def test_invalid_fixture_reports_path_line_and_problem(name: str, message: str) -> None:
    path = FIXTURES / name
    with pytest.raises(FindingError) as exc:
        parse_file(path)
    assert _error(exc) == f"{path}:{message}"


HEAD = "---\nid: case\ntitle: A case\nstatus: broken\n"


@pytest.mark.parametrize(
    ("front", "message"),
    [
        ("hardware: B200\n", "5: 'hardware' must be a mapping"),
        (
            "hardware:\n  gpu: B200\n  count: eight\n",
            "7: 'hardware.count' must be an integer (got 'eight')",
        ),
        (
            "hardware:\n  gpus: B200\n",
            "6: unknown key 'hardware.gpus'; allowed: gpu, count, sm, interconnect",
        ),
        (
            "hardware:\n  sm: blackwell\n",
            "6: 'hardware.sm' must look like sm90, sm100 or sm120 (NVIDIA) or gfx942 (AMD) "
            "(got 'blackwell')",
        ),
        ("sources: https://example.org/a\n", "5: 'sources' must be a list of strings"),
        ("tags: [fp8, 2026]\n", "5: 'tags' must be a list of strings"),
        (
            "framework:\n  name: vllm\n  version: 0.10\n",
            "7: 'framework.version' must be a string (got 0.1; put it in quotes)",
        ),
        ("date: 19.02.2026\n", "5: 'date' must be YYYY-MM-DD or YYYY-MM (got '19.02.2026')"),
        ("date: 2026-02-30\n", "5: 'date' 2026-02-30 is not a real date"),
        (
            "fix:\n  env:\n    - VLLM_USE_DEEP_GEMM\n",
            "7: 'fix.env' entries must look like NAME=value (got 'VLLM_USE_DEEP_GEMM')",
        ),
        (
            "fix:\n  change:\n    - --mem-fraction-static 0.82\n",
            "7: 'fix.change' entries must look like '--flag OLD -> NEW' or 'NAME=OLD -> NEW' "
            "(got '--mem-fraction-static 0.82')",
        ),
        ("symptoms:\n  - class: nan\n", "6: symptom 1 has no 'text'"),
        (
            "performance:\n  throughput_tok_s: fast\n",
            "6: 'performance.throughput_tok_s' must be a number (got 'fast')",
        ),
        ("status: works\n", "5: duplicate key 'status' (first on line 4)"),
        (
            'model: "nvidia/GLM-5-NVFP4\nquantization: nvfp4\n',
            "6: invalid YAML in front matter: found unexpected end of stream "
            "(while scanning a quoted scalar on line 5)",
        ),
    ],
)
def test_invalid_field_reports_the_line_of_the_field(front: str, message: str) -> None:
    with pytest.raises(FindingError) as exc:
        parse_text(HEAD + front + "---\n", "findings/case.md")
    assert _error(exc) == f"findings/case.md:{message}"


def test_bad_id_is_reported_at_its_line() -> None:
    text = "---\ntitle: T\nid: GLM 5\nstatus: works\n---\n"
    with pytest.raises(FindingError) as exc:
        parse_text(text, "f.md")
    assert _error(exc) == (
        "f.md:3: id 'GLM 5' is not a slug: use lower-case letters, digits, '-', '_' and '.', "
        "starting with a letter or digit"
    )


def test_non_utf8_file_names_the_byte_offset_and_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes(b"---\nid: a\ntitle: caf\xe9\nstatus: works\n---\n")
    with pytest.raises(FindingError) as exc:
        parse_file(path)
    assert _error(exc) == f"{path}:3: not UTF-8 text (invalid byte 0xe9 at offset 20)"


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.md"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(FindingError) as exc:
        parse_file(path)
    assert _error(exc) == f"{path}: binary file, not Markdown"


@pytest.mark.parametrize("content", [b"", b"\n  \n\t\n"])
def test_empty_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.md"
    path.write_bytes(content)
    with pytest.raises(FindingError) as exc:
        parse_file(path)
    assert _error(exc) == f"{path}: empty file"


def test_huge_file_is_refused_before_it_is_read(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "huge.md"
    with path.open("wb") as fh:
        fh.truncate(12_300_000)  # sparse: 12.3 MB on paper

    def no_read(self: Path) -> bytes:
        raise AssertionError("parse_file read a file it should have refused by size")

    monkeypatch.setattr(Path, "read_bytes", no_read)
    with pytest.raises(FindingError) as exc:
        parse_file(path)
    assert _error(exc) == f"{path}: file is 12.3 MB; a finding must be under 1 MB"


def test_size_limit_applies_to_text_and_bytes_too() -> None:
    big = "x" * (MAX_BYTES + 1)
    with pytest.raises(FindingError, match=r"^<stdin>: file is 1\.0 MB"):
        parse_text(big, "<stdin>")
    with pytest.raises(FindingError, match=r"^<stdin>: file is 1\.0 MB"):
        parse_bytes(big.encode(), "<stdin>")


def test_crlf_and_bom_files_parse_with_the_same_lines() -> None:
    text = "\ufeff---\r\nid: a\r\ntitle: t\r\nstatus: nope\r\n---\r\n"
    with pytest.raises(FindingError) as exc:
        parse_text(text, "a.md")
    assert _error(exc).startswith("a.md:4: status 'nope'")


def test_yaml_comment_eating_a_value_is_a_warning() -> None:
    text = HEAD + "framework:\n  name: sglang\n  version: main (PR #14311)\n---\n"
    result = parse_text(text, "case.md")
    assert result.findings[0].framework.version == "main (PR"
    assert [str(w) for w in result.warnings] == [
        "case.md:7: '#14311)' is a YAML comment, so it is not part of 'framework.version'; "
        "put the whole value in quotes"
    ]


def test_front_matter_is_read_once_with_its_key_lines_and_coded_warnings() -> None:
    from kb.parse import finding_from_front_matter, read_front_matter

    text = HEAD + "fix:\n  add:\n    - --tp 8\nframework:\n  version: main (PR #1)\n---\nStory.\n"
    front = read_front_matter(text, "findings/other.md")
    assert front is not None and front.data["fix"]["add"] == ["--tp 8"]
    assert (front.lines["status"], front.lines["fix.add.0"], front.body) == (4, 7, "Story.")
    result = finding_from_front_matter(front, "findings/other.md")
    assert [w.code for w in result.warnings] == ["yaml-comment", "id-mismatch"]
    assert read_front_matter("## notes\n\nfree-form text\n", "notes.md") is None
    with pytest.raises(FindingError, match="front matter is not closed"):
        read_front_matter("---\nid: a\n", "a.md")


def test_id_that_does_not_match_the_file_name_is_a_warning() -> None:
    result = parse_text(HEAD + "---\n", "findings/other-name.md")
    assert [str(w) for w in result.warnings] == [
        "findings/other-name.md:2: id 'case' does not match the file name; rename it to case.md"
    ]


def test_markdown_without_front_matter_or_sections_is_an_error() -> None:
    with pytest.raises(FindingError) as exc:
        parse_text("# Notes\n\nJust a paragraph.\n", "NOTES.md")
    assert _error(exc) == (
        "NOTES.md:1: no front matter and no '## ' sections, so nothing to read; "
        "see findings/README.md for the format"
    )


# --- free-form FINDINGS.md ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def free_form():
    return parse_file(FIXTURES / "FINDINGS.md")


def test_free_form_gives_one_finding_per_section(free_form) -> None:
    assert [f.title for f in free_form.findings] == [
        "Kimi K2-Thinking NVFP4 on 8x RTX PRO 6000 (sm120)",
        "Qwen3-30B-A3B-FP8 returns garbage under load",
        "Speculative decoding on the old box",
    ]
    assert [f.line for f in free_form.findings] == [6, 35, 49]
    assert len({f.id for f in free_form.findings}) == 3
    assert free_form.findings[2].id == "findings-speculative-decoding-on-the-old-box"


def test_free_form_warns_once_per_case_naming_the_missing_fields(free_form) -> None:
    path = FIXTURES / "FINDINGS.md"
    assert [str(w) for w in free_form.warnings] == [
        f"{path}:35: free-form section 'Qwen3-30B-A3B-FP8 returns garbage under load': "
        "could not find gpu",
        f"{path}:49: free-form section 'Speculative decoding on the old box': "
        "could not find model, gpu, framework, status, symptoms (assumed partial)",
    ]


def test_free_form_section_with_two_launch_commands(free_form) -> None:
    f = free_form.findings[0]
    assert f.status == "works-with-flags"
    assert f.model == "nvidia/Kimi-K2-Thinking-NVFP4"
    assert f.quantization == "modelopt_fp4"
    assert f.hardware == Hardware(gpu="RTX PRO 6000", count=8, sm="sm120")
    assert f.framework == Framework(name="sglang", version="0.5.6")
    assert f.date == "2026-02-12"
    assert f.symptoms == (
        Symptom(
            "illegal-memory-access",
            "RuntimeError: CUDA error: an illegal memory access was encountered",
        ),
    )
    assert f.fix == Fix(
        add=("--disable-cuda-graph", "--fp4-gemm-backend flashinfer_cudnn"),
        env=("SGLANG_ENABLE_JIT_DEEPGEMM=0",),
    )
    assert f.tried_without_effect == ("--attention-backend triton",)
    assert f.failing_command == (
        "python -m sglang.launch_server --model-path nvidia/Kimi-K2-Thinking-NVFP4 --tp 8 \\\n"
        "  --quantization modelopt_fp4 --trust-remote-code"
    )
    assert f.working_command is not None
    assert f.working_command.startswith(
        "SGLANG_ENABLE_JIT_DEEPGEMM=0 python -m sglang.launch_server"
    )
    assert f.working_command.endswith("--disable-cuda-graph --fp4-gemm-backend flashinfer_cudnn")
    assert f.root_cause is not None and f.root_cause.startswith("the default FP4 GEMM path")
    assert f.body.startswith("SGLang 0.5.6, built from main")
    assert "## Qwen3" not in f.body


def test_free_form_broken_section_keeps_its_command_as_the_failing_one(free_form) -> None:
    f = free_form.findings[1]
    assert f.status == "broken"
    assert f.model == "Qwen/Qwen3-30B-A3B-FP8"
    assert f.framework == Framework(name="vllm", version="v0.11.0")
    assert f.failing_command == (
        "vllm serve Qwen/Qwen3-30B-A3B-FP8 --tensor-parallel-size 4 --max-num-seqs 64"
    )
    assert f.working_command is None
    assert f.tried_without_effect == ("VLLM_USE_DEEP_GEMM=0",)
    # classed by the same rules as a pasted log ("falling back to a slower kernel")
    assert [s.cls for s in f.symptoms] == ["slow"]
    assert f.fix.is_empty()


def test_free_form_findings_survive_render_and_parse(free_form) -> None:
    for f in free_form.findings:
        (again,) = parse_text(render_finding(f), f"{f.id}.md").findings
        assert replace(again, path=None, line=None) == replace(f, path=None, line=None)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("It crashed at decode. Adding the flag fixed it.", "works"),
        ("Adding the flag fixed the OOM, but now it crashes at decode.", "broken"),
        ("The new build does not work on this box.", "broken"),
        ("It only partially works at TP8.", "partial"),
        ("**Status**: works with flags", "works-with-flags"),
    ],
)
def test_free_form_status_follows_the_last_thing_said(text: str, status: str) -> None:
    (f,) = parse_text(f"## Case\n\n{text}\n", "notes.md").findings
    assert f.status == status


@pytest.mark.parametrize(
    ("line", "cls"),
    [
        (
            "RuntimeError: CUDA error: an illegal memory access was encountered",
            "illegal-memory-access",
        ),
        (
            "../aten/src/ATen/native/cuda/Indexing.cu:1236: Assertion `idx < size` failed.",
            "device-assert",
        ),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "oom"),
        ("ValueError: NaN detected in logits", "nan"),
        ("[rank0]: Watchdog caught collective operation timeout", "hang"),
        ("KeyError: 'model.layers.0.mlp.experts.w13_weight_scale'", "crash"),
    ],
)
def test_free_form_symptom_classes(line: str, cls: str) -> None:
    (f,) = parse_text(f"## Case\n\n```\n{line}\n```\n", "notes.md").findings
    assert [(s.cls, s.text) for s in f.symptoms] == [(cls, line)]


@pytest.mark.parametrize(
    "line",
    [
        "NCCL watchdog thread terminated with exception",
        "Warning: inf values detected",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ],
)
def test_free_form_findings_and_pasted_logs_class_a_line_alike(line: str) -> None:
    from agent.logs import classify

    (f,) = parse_text(f"## Case\n\n```\n{line}\n```\n", "notes.md").findings
    assert [s.cls for s in f.symptoms] == [classify(line) or "crash"]


def test_an_amd_target_is_a_valid_sm():
    from kb.serialize import finding_from_dict

    f = finding_from_dict(
        {"id": "a", "title": "t", "status": "works", "hardware": {"sm": "GFX942"}}, path="a.md"
    )
    assert f.hardware.sm == "gfx942"


def test_a_huge_number_is_one_line_not_pythons_advice():
    text = "---\nid: x\ntitle: t\nstatus: works\ngpu_count: " + "9" * 5000 + "\n---\n"
    with pytest.raises(FindingError) as exc:
        parse_text(text, "findings/x.md")
    assert str(exc.value) == (
        "findings/x.md:5: invalid YAML in front matter: a number of 5,000 digits; the limit is "
        "100 (put it in quotes if it is text)"
    )
