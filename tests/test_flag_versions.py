"""The versioned flag registry: generated from release extracts, checked per release by ask,
the flag diff and lint."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agent.answer import build_context, propose
from agent.cli import app
from agent.flags import apply_changes, diff, diff_with_notes, parse_command
from agent.registry import load_registry
from kb.parse import parse_text
from kb.records import Fix, Match, QueryContext

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "flag_registry"
QWEN = ROOT / "findings" / "qwen35-397b-nvfp4-sm120-nan-moe-runner.md"
QWEN_CMD = (
    "python -m sglang.launch_server --model-path /data/models/Qwen3.5-397B-A17B-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend triton"
)


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_flag_registry", ROOT / "scripts" / "build_flag_registry.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reg():
    return load_registry()


# --- generation ------------------------------------------------------------------------------


def test_regenerating_the_stored_extract_gives_the_stored_registry(tmp_path) -> None:
    out = tmp_path / "flags.json"
    args = ["--cache", str(FIXTURES), "--facts", str(FIXTURES / "facts.json"), "--offline"]
    assert _builder().main([*args, "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (FIXTURES / "expected.json").read_text(
        encoding="utf-8"
    )
    assert _builder().main([*args, "--out", str(out), "--check"]) == 0
    out.write_text("{}", encoding="utf-8")
    assert _builder().main([*args, "--out", str(out), "--check"]) == 1


def test_what_the_generator_reads_from_the_extract() -> None:
    data = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
    sglang = data["frameworks"]["sglang"]["flags"]
    # a rename: canonical up to 0.5.9, a deprecated alias (DeprecatedAliasStoreAction) in
    # 0.5.18, gone in 0.5.23; the setting is known by its newest name
    old = sglang["--cuda-graph-max-bs-decode"]["spellings"]["--cuda-graph-max-bs"]
    assert old == {
        "versions": [["0.5.9", "0.5.18"]],
        "canonical": [["0.5.9", "0.5.9"]],
        "alias_of": [{"name": "--cuda-graph-max-bs-decode", "versions": [["0.5.18", "0.5.18"]]}],
        "deprecated": [["0.5.18", "0.5.18"]],
        "use_instead": "--cuda-graph-max-bs-decode",
        "removed_in": "0.5.23",
    }
    # cli_name over the field name; choices per release, through module constants
    fp4 = sglang["--fp4-gemm-backend"]
    assert fp4["choices"][0] == {
        "versions": [["0.5.9", "0.5.9"]],
        "values": ["auto", "flashinfer_cudnn", "flashinfer_cutlass", "flashinfer_trtllm"],
    }
    assert "--fp4-gemm-runner-backend" not in fp4["spellings"]
    assert sglang["--enable-nan-detection"]["removed_in"] == "0.5.18"
    assert sglang["--tp-size"]["spellings"]["--tensor-parallel-size"]["canonical"] == []
    assert "--private-state" not in sglang  # no_cli / private fields have no flag
    vllm = data["frameworks"]["vllm"]["flags"]
    assert vllm["--enable-prefix-caching"]["negatable"] is True  # a bool field
    assert vllm["--kv-cache-dtype"]["choices"][-1]["values"][:2] == ["auto", "bfloat16"]
    assert vllm["--attention-backend"]["choices"][0]["values"][1] == "TRITON_ATTN"  # enum names
    assert vllm["--port"]["versions"] == [["0.13.0", "0.13.0"]]  # the frontend fields loop
    assert data["frameworks"]["vllm"]["env"]["VLLM_NVFP4_GEMM_BACKEND"] == {
        "versions": [["0.13.0", "0.13.0"]]
    }
    # a variable a flag replaced: the flag, and the flag's value for each of the variable's
    # (a hand-written description stays)
    sglang_env = data["frameworks"]["sglang"]["env"]
    assert sglang_env["SGLANG_FLASHINFER_FP4_GEMM_BACKEND"]["flag_values"] == {
        "cudnn": "flashinfer_cudnn"
    }
    assert data["frameworks"]["vllm"]["env"]["VLLM_ATTENTION_BACKEND"] == {
        "versions": [["0.10.2", "0.13.0"]],
        "doc": "Attention backend by name.",
        "replaced_by_flag": "--attention-backend",
    }
    assert data["_provenance"]["vllm"][1]["sha256"].startswith("12b3d0a3")


def test_dtype_names_come_from_each_releases_table() -> None:
    # _STR_DTYPE_TO_TORCH_DTYPE in vllm/config/model.py and sglang/srt/configs/model_config.py:
    # strings that name one torch dtype are one value, and so is the Python API's torch.<dtype>
    data = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))
    for fw, version in (("vllm", "0.13.0"), ("sglang", "0.5.23")):
        block = data["frameworks"][fw]
        assert block["value_aliases"]["--dtype"] == {
            "float": "float32",
            "half": "float16",
            "torch.bfloat16": "bfloat16",
            "torch.float16": "float16",
            "torch.float32": "float32",
        }
        assert block["value_aliases_read_from"]["--dtype"] == {
            "table": "_STR_DTYPE_TO_TORCH_DTYPE",
            "versions": [[version, version]],
        }
    # a release without the table contributes nothing (vllm 0.10.2's extract has none)
    assert data["frameworks"]["vllm"]["value_aliases_read_from"]["--dtype"]["versions"] == [
        ["0.13.0", "0.13.0"]
    ]


def test_a_table_that_names_one_string_two_dtypes_stops_the_build() -> None:
    builder = _builder()
    from flag_extract import Release

    releases = {
        "0.1.0": Release(dtype_names={"half": "float16"}),
        "0.2.0": Release(dtype_names={"half": "bfloat16"}),
    }
    with pytest.raises(builder.BuildError, match="--dtype half: torch.float16 before"):
        builder.dtype_aliases(releases, ["0.1.0", "0.2.0"])


@pytest.mark.parametrize("fw", ["vllm", "sglang"])
def test_half_float16_and_torch_float16_are_one_dtype(reg, fw) -> None:
    assert reg.same_value("--dtype", "half", "float16", fw)
    assert reg.same_value("--dtype", "torch.float16", "half", fw)
    assert reg.same_value("--dtype", "float", "float32", fw)
    assert not reg.same_value("--dtype", "float", "float16", fw)
    assert not reg.same_value("--dtype", "bfloat16", "half", fw)
    # the spelling a release offers: the dtype's own name where the release lists it
    assert reg.value_in("--dtype", "torch.float16", fw, reg.versions(fw)[-1]) == "float16"


def test_a_command_with_float16_already_has_a_dtype_half_fix() -> None:
    fix = Fix(
        add=("--dtype half",)
    )  # findings/vllm-946-v100-bfloat16-compute-capability-dtype-half
    same = parse_command("vllm serve m --dtype float16")
    assert diff(same, fix, finding_framework="vllm") == ()
    other = parse_command("vllm serve m --dtype bfloat16")
    assert [c.text for c in diff(other, fix, finding_framework="vllm")] == ["--dtype half"]


def test_offline_without_an_extract_is_one_clear_error(tmp_path, capsys) -> None:
    facts = json.loads((FIXTURES / "facts.json").read_text(encoding="utf-8"))
    facts["releases"]["sglang"].append("0.5.99")
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts), encoding="utf-8")
    code = _builder().main(
        [
            "--cache",
            str(FIXTURES),
            "--facts",
            str(path),
            "--offline",
            "--out",
            str(tmp_path / "out.json"),
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert (
        err == f"Error: {FIXTURES / 'sglang' / '0.5.99'}: not extracted (run without --offline)\n"
    )


# --- the shipped registry: the facts the 2026-12-01 audit checked ------------------------------


def test_releases_read(reg) -> None:
    assert reg.versions("sglang")[0] == "0.4.7" and reg.versions("sglang")[-1] == "0.5.23"
    assert len(reg.versions("sglang")) == 27
    assert reg.versions("vllm")[0] == "0.9.2" and reg.versions("vllm")[-1] == "0.33.0"
    assert len(reg.versions("vllm")) == 25
    assert reg.versions("tensorrt-llm") == ()


@pytest.mark.parametrize(
    ("name", "fw", "version", "accepted"),
    [
        ("--fp4-gemm-backend", "sglang", "0.5.7", False),
        ("--fp4-gemm-backend", "sglang", "0.5.8", True),
        ("--fp8-gemm-backend", "sglang", "0.5.6", False),
        ("--fp8-gemm-backend", "sglang", "0.5.7", True),
        ("--fp4-gemm-runner-backend", "sglang", "0.5.9", False),  # never registered
        ("--enable-nan-detection", "sglang", "0.5.12", True),
        ("--enable-nan-detection", "sglang", "0.5.13", False),
        ("--cuda-graph-max-bs", "sglang", "0.5.12", True),
        ("--cuda-graph-max-bs", "sglang", "0.5.18", True),  # deprecated alias
        ("--cuda-graph-max-bs", "sglang", "0.5.23", False),
        ("--cuda-graph-max-bs-decode", "sglang", "0.5.12", False),
        ("--cuda-graph-sizes", "vllm", "0.10.2", True),
        ("--cuda-graph-sizes", "vllm", "0.13.0", False),
        ("--cudagraph-capture-sizes", "vllm", "0.10.2", False),
        ("--attention-backend", "vllm", "0.11.2", False),
        ("--attention-backend", "vllm", "0.13.0", True),
        ("--max-model", "vllm", "0.33.0", True),  # FlexibleArgumentParser accepts prefixes
        ("--no-enforce-eager", "vllm", "0.9.2", True),
    ],
)
def test_flags_per_release(reg, name, fw, version, accepted) -> None:
    assert reg.accepts(name, fw, version) is accepted


def test_audit_facts(reg) -> None:
    assert reg.canonical("--max-model", "vllm") == "--max-model-len"
    sizes = reg.rename_note("--cuda-graph-sizes", "vllm")
    assert sizes == (
        "--cuda-graph-sizes is the vLLM 0.9.2-0.10.2 name of --cudagraph-capture-sizes "
        "(deprecated alias in 0.11.2-0.12.0); removed in 0.13.0"
    )
    assert "flashinfer_b12x" in reg.choices_in("--moe-backend", "vllm", "0.33.0")
    assert "cutlass" in reg.choices_in("--fp4-gemm-backend", "sglang", "0.5.12")
    assert "cutlass" not in reg.choices_in("--fp4-gemm-backend", "sglang", "0.5.9")
    assert not reg.same_value("--fp4-gemm-backend", "cutlass", "flashinfer_cutlass", "sglang")
    assert "bfloat16" in reg.choices_in("--kv-cache-dtype", "vllm", "0.33.0")
    assert "bf16" not in reg.choices_in("--kv-cache-dtype", "vllm", "0.33.0")
    assert reg.spec("pytorch_backend_config.cuda_graph_padding_enabled", "tensorrt-llm")
    assert reg.spec("cuda_graph_padding_enabled", "tensorrt-llm") is None


def test_describe_names_the_releases(reg) -> None:
    assert reg.describe("--enable-nan-detection", "sglang") == (
        "--enable-nan-detection (sglang): (switch) [in SGLang 0.4.7-0.5.12; removed in 0.5.13]"
    )
    assert reg.describe("--fp4-gemm-backend", "sglang").endswith("[in SGLang 0.5.8-0.5.23]")


@pytest.mark.parametrize(
    ("written", "version", "note"),
    [
        ("0.5.9", "0.5.9", None),
        ("v0.5.12.post1 (lmsysorg/sglang:v0.5.12.post1)", "0.5.12", None),
        ("lmsysorg/sglang:v0.5.11-cu130", "0.5.11", None),
        (
            "0.5.30",
            "0.5.23",
            "SGLang 0.5.30 is newer than the newest release the flag registry "
            "read; checked against 0.5.23",
        ),
        (
            "main (built from source)",
            None,
            "SGLang main (built from source) is not a release "
            "number: flags not checked against a release",
        ),
        (
            "0.2.15",
            None,
            "SGLang 0.2.15 is older than the oldest release the flag registry read "
            "(0.4.7): flags not checked",
        ),
        (  # a build from a checkout without tags, whatever its number says
            "0.1.dev20051+g487ecf187",
            None,
            "SGLang 0.1.dev20051+g487ecf187 is not a release number: flags not checked against "
            "a release",
        ),
        (
            "0.5.10.dev340+ge5a621b72",
            None,
            "SGLang 0.5.10.dev340+ge5a621b72 is not a release number: flags not checked against "
            "a release",
        ),
        ("0.5.9.post1", "0.5.9", None),  # a post release is its release
    ],
)
def test_release_of_a_written_version(reg, written, version, note) -> None:
    got = reg.release("sglang", written)
    assert (got.version, got.note) == (version, note)


def test_release_in_the_same_minor_series(reg) -> None:
    got = reg.release("vllm", "0.11.0 + ROCm 7.0")
    assert (got.version, got.note) == ("0.11.2", "vLLM 0.11.0 + ROCm 7.0 checked against 0.11.2")


@pytest.mark.parametrize(
    ("written", "version"),
    [
        ("vllm/vllm-openai:v0.11.2", "0.11.2"),  # an image tag is its release
        ("image vllm/vllm-openai:v0.17.0-cu130", "0.17.1"),  # the release read in its series
        ("vllm/vllm-openai-rocm:v0.21.0", "0.21.0"),
        (">=0.18.0 (vllm/vllm-openai:v0.18.0)", "0.18.1"),  # the oldest it names, as read
    ],
)
def test_release_of_an_image_tag_or_a_minimum(reg, written, version) -> None:
    got = reg.release("vllm", written)
    assert got.version == version
    assert got.note is None or "checked against" in got.note


def test_a_forks_image_is_not_taken_for_a_release(reg) -> None:
    assert reg.release("vllm", "vllm_hcu 0.18.1 DCU images (DTK 26.04)").version is None


def test_version_issues(reg) -> None:
    (missing,) = reg.version_issues("--fp4-gemm-backend", "flashinfer_cudnn", "sglang", "0.5.7")
    assert missing.message == (
        "--fp4-gemm-backend first appears in SGLang 0.5.8; SGLang 0.5.7 does not accept "
        "--fp4-gemm-backend"
    )
    (gone,) = reg.version_issues("--enable-nan-detection", None, "sglang", "0.5.20")
    assert gone.message == (
        "--enable-nan-detection is not in SGLang 0.5.20 (last in 0.5.12); SGLang 0.5.20 does "
        "not accept --enable-nan-detection"
    )
    (renamed,) = reg.version_issues("--cuda-graph-max-bs-decode", "8", "sglang", "0.5.9")
    assert (renamed.kind, renamed.spelling) == ("renamed", "--cuda-graph-max-bs")
    (choice,) = reg.version_issues("--fp4-gemm-backend", "cutlass", "sglang", "0.5.9")
    assert choice.message == (
        "SGLang 0.5.9 does not accept --fp4-gemm-backend cutlass (choices: auto, "
        "flashinfer_cudnn, flashinfer_cutlass, flashinfer_trtllm)"
    )
    assert reg.version_issues("--fp4-gemm-backend", "cutlass", "sglang", "0.5.12") == ()
    # a spelling that is gone is removed, not renamed; one that comes later, not yet there
    (removed,) = reg.version_issues("--cuda-graph-max-bs", "8", "sglang", "0.5.22")
    assert (removed.kind, removed.message) == (
        "renamed",
        "--cuda-graph-max-bs was removed in SGLang 0.5.20; use --cuda-graph-max-bs-decode",
    )
    (later,) = reg.version_issues("--cuda-graph-max-bs-decode", "8", "sglang", "0.5.9")
    assert later.message == (
        "--cuda-graph-max-bs-decode first appears in SGLang 0.5.14; SGLang 0.5.9 spells it "
        "--cuda-graph-max-bs"
    )


# --- the flag diff for a release -------------------------------------------------------------


def test_diff_spells_flags_and_values_for_the_release() -> None:
    cmd = parse_command("python -m sglang.launch_server --model-path m --tp 8")
    fix = Fix(
        add=("--cuda-graph-max-bs-decode 16", "--attention-backend dsa", "--enable-nan-detection")
    )
    changes = diff(cmd, fix, finding_framework="sglang", target_version="0.5.9")
    assert [(c.text, c.note) for c in changes] == [
        (
            "--cuda-graph-max-bs 16",
            "--cuda-graph-max-bs-decode first appears in SGLang 0.5.14; SGLang 0.5.9 spells it "
            "--cuda-graph-max-bs",
        ),
        ("--attention-backend nsa", "dsa is nsa in sglang 0.5.9"),
        ("--enable-nan-detection", None),
    ]
    assert apply_changes(cmd, changes) == (
        "python -m sglang.launch_server --model-path m --tp 8 --cuda-graph-max-bs 16 "
        "--attention-backend nsa --enable-nan-detection"
    )
    # a flag the release no longer has is left out of the corrected command, and a note says why
    later, notes = diff_with_notes(cmd, fix, finding_framework="sglang", target_version="0.5.23")
    assert [c.text for c in later] == ["--cuda-graph-max-bs-decode 16", "--attention-backend dsa"]
    assert notes == (
        "dropped: --enable-nan-detection: --enable-nan-detection is not in SGLang 0.5.23 (last "
        "in 0.5.12); SGLang 0.5.23 does not accept --enable-nan-detection, and no setting of "
        "SGLang 0.5.23 is known to do the same",
    )
    assert "--enable-nan-detection" not in apply_changes(cmd, later)


def test_equivalents_follow_the_target_release_and_carry_their_caveat() -> None:
    fix = Fix(add=("--attention-backend triton", "--disable-cuda-graph"))
    old = diff(
        None, fix, finding_framework="sglang", target_framework="vllm", target_version="0.11.2"
    )
    assert [c.text for c in old] == ["VLLM_ATTENTION_BACKEND=TRITON_ATTN", "--enforce-eager"]
    assert old[1].note == (
        "translated from sglang --disable-cuda-graph (approximate: vLLM --enforce-eager also "
        "turns off torch.compile; -cc.cudagraph_mode=NONE turns off only CUDA graphs)"
    )
    new = diff(
        None, fix, finding_framework="sglang", target_framework="vllm", target_version="0.33.0"
    )
    assert [c.text for c in new] == ["--attention-backend TRITON_ATTN", "--enforce-eager"]


# --- ask: the Qwen3.5 seed story on SGLang 0.5.9 ----------------------------------------------


def _qwen_finding():
    return parse_text(QWEN.read_text(encoding="utf-8"), str(QWEN)).findings[0]


def test_qwen_seed_on_sglang_059_gets_flags_059_accepts(reg) -> None:
    ctx = build_context(
        framework="sglang 0.5.9", cmd=QWEN_CMD, gpu="sm120", detect=False, warnings=[]
    )
    assert (ctx.framework, ctx.framework_version) == ("sglang", "0.5.9")
    p = propose(Match(_qwen_finding(), 1.0), ctx, "0.5.9")
    assert [c.text for c in p.changes] == [
        "--moe-runner-backend flashinfer_cutlass",
        "--fp4-gemm-backend flashinfer_cudnn",
    ]
    for c in p.changes:
        assert reg.accepts(c.name, "sglang", "0.5.9")
        assert c.value in reg.choices_in(c.name, "sglang", "0.5.9")
        assert "warning" not in (c.note or "")
    assert (
        p.command == QWEN_CMD + " --moe-runner-backend flashinfer_cutlass "
        "--fp4-gemm-backend flashinfer_cudnn"
    )


def test_qwen_seed_on_an_older_release_gets_the_variable_that_release_reads() -> None:
    ctx = QueryContext(
        framework="sglang", framework_version="0.5.7", command=parse_command(QWEN_CMD)
    )
    p = propose(Match(_qwen_finding(), 1.0), ctx, "0.5.7")
    assert p.changes[1].text == "SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn"
    assert p.changes[1].note.endswith(
        "--fp4-gemm-backend first appears in SGLang 0.5.8; SGLang 0.5.7 reads "
        "SGLANG_FLASHINFER_FP4_GEMM_BACKEND instead"
    )
    assert p.command.startswith("SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn python -m sglang")
    assert "--fp4-gemm-backend" not in p.command


def test_version_from_the_server_and_from_installed_package(monkeypatch) -> None:
    info = {"model_path": "m", "tp_size": 8, "version": "0.5.12"}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=info)

    client = httpx.Client(transport=httpx.MockTransport(handler))
    ctx = build_context(server="http://127.0.0.1:30000", client=client, detect=False, warnings=[])
    assert (ctx.framework, ctx.framework_version) == ("sglang", "0.5.12")

    from importlib import metadata

    def version(name: str) -> str:
        if name == "vllm":
            return "0.19.1"
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr("agent.context.detect_gpu", lambda: None)
    ctx = build_context(framework="vllm", detect=True, warnings=[])
    assert (ctx.framework, ctx.framework_version) == ("vllm", "0.19.1")
    ctx = build_context(framework="sglang", detect=True, warnings=[])
    assert ctx.framework_version is None


# --- lint: a finding's flags against its own framework version -------------------------------

FINDING = """\
---
id: x
title: "Qwen3.5 NVFP4 on SGLang {version}"
status: works-with-flags
framework:
  name: sglang
  version: "{version}"
symptoms:
  - class: nan
    text: "NaN happened"
fix:
  add:
    - --moe-runner-backend flashinfer_cutlass
    - --fp4-gemm-backend flashinfer_cudnn
sources:
  - https://github.com/sgl-project/sglang/issues/1
---

## Root cause

The MoE runner picked on auto.
"""


def _lint(tmp_path, monkeypatch, version: str, *args: str):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "findings").mkdir(exist_ok=True)
    (tmp_path / "findings" / "x.md").write_text(textwrap.dedent(FINDING.format(version=version)))
    return CliRunner().invoke(app, ["lint", "findings", *args], catch_exceptions=False)


def test_lint_strict_fails_on_a_flag_the_findings_release_lacks(tmp_path, monkeypatch) -> None:
    result = _lint(tmp_path, monkeypatch, "0.5.7", "--strict")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "findings/x.md:14: warning: flag '--fp4-gemm-backend': --fp4-gemm-backend first appears "
        "in SGLang 0.5.8; SGLang 0.5.7 does not accept --fp4-gemm-backend "
        "(framework.version: 0.5.7)"
    ]
    assert _lint(tmp_path, monkeypatch, "0.5.9", "--strict").exit_code == 0


def test_lint_skips_a_version_that_is_no_release_with_a_note(tmp_path, monkeypatch) -> None:
    result = _lint(tmp_path, monkeypatch, "main", "--strict")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert (
        "findings/x.md:7: note: 2 flag(s) not checked against a release: SGLang main is not a "
        "release number: flags not checked against a release" in result.stderr
    )


def test_a_spelling_the_users_release_no_longer_accepts_is_corrected() -> None:
    cmd = parse_command("python -m sglang.launch_server --model-path m --cuda-graph-max-bs 16")
    fix = Fix(add=("--cuda-graph-max-bs-decode 16",))
    assert diff(cmd, fix, finding_framework="sglang") == ()  # the same setting, already set
    (ch,) = diff(cmd, fix, finding_framework="sglang", target_version="0.5.23")
    assert (ch.action, ch.note) == (
        "change",
        "your command spells it --cuda-graph-max-bs: --cuda-graph-max-bs was removed in SGLang "
        "0.5.20; use --cuda-graph-max-bs-decode",
    )
    assert apply_changes(cmd, (ch,)) == (
        "python -m sglang.launch_server --model-path m --cuda-graph-max-bs-decode 16"
    )


def test_a_release_that_loses_its_argument_files_stops_the_build(tmp_path, capsys) -> None:
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(FIXTURES, cache)
    shutil.rmtree(cache / "vllm" / "0.13.0" / "src" / "vllm" / "engine")  # arg_utils.py moved
    code = _builder().main(
        [
            "--cache",
            str(cache),
            "--facts",
            str(FIXTURES / "facts.json"),
            "--offline",
            "--out",
            str(tmp_path / "out.json"),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        "Error: vllm 0.13.0 has 3 flags, 0.10.2 9: did the argument files move? (KEEP patterns)\n"
    )


# --- what the corrected command proposes for the user's release (tests/fixtures/releases) ----

RELEASES = Path(__file__).parent / "fixtures" / "releases"
SPARSE_CMD = "python -m sglang.launch_server --model-path example/Sparse-MoE-NVFP4 --tp 8"


def _case(name: str):
    path = RELEASES / f"{name}.md"
    return parse_text(path.read_text(encoding="utf-8"), str(path)).findings[0]


def _proposed(case: str, framework: str, cmd: str):
    ctx = build_context(framework=framework, cmd=cmd, detect=False, warnings=[])
    return propose(
        Match(_case(case), 1.0), ctx, load_registry().release(*framework.split()).version
    )


def test_a_flag_the_release_lacks_becomes_the_variable_it_reads():
    p = _proposed("sparse-moe-nvfp4-sm120-nan-fp4-gemm", "sglang 0.5.7", SPARSE_CMD)
    ((kind, text),) = [(c.kind, c.text) for c in p.changes]
    assert (kind, text) == ("env", "SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn")
    assert p.command == "SGLANG_FLASHINFER_FP4_GEMM_BACKEND=cudnn " + SPARSE_CMD


def test_a_flag_no_setting_of_the_release_replaces_is_left_out_and_said():
    p = _proposed("sparse-moe-nvfp4-sm120-nan-fp4-gemm", "sglang 0.5.4", SPARSE_CMD)
    assert p.changes == () and p.command == SPARSE_CMD
    assert p.not_carried == (
        "dropped: --fp4-gemm-backend flashinfer_cudnn: --fp4-gemm-backend first appears in "
        "SGLang 0.5.8; SGLang 0.5.4 does not accept --fp4-gemm-backend, and no setting of "
        "SGLang 0.5.4 is known to do the same",
    )


def test_a_variable_the_release_no_longer_reads_becomes_the_flag_that_replaced_it():
    cmd = "vllm serve example/MLA-MoE-FP4 --tensor-parallel-size 4"
    p = _proposed("mla-moe-fp4-b200-cutlass-mla-env", "vllm 0.28.0", cmd)
    (change,) = p.changes
    assert (change.kind, change.text) == ("flag", "--attention-backend CUTLASS_MLA")
    assert change.note == (
        "VLLM_ATTENTION_BACKEND was removed in vLLM 0.15.1; vLLM 0.28.0 takes "
        "--attention-backend instead; CUTLASS_MLA_VLLM_V1 is CUTLASS_MLA in vllm 0.28.0"
    )
    assert p.command == cmd + " --attention-backend CUTLASS_MLA"
    assert "VLLM_ATTENTION_BACKEND" not in p.command
    # a release that still reads the variable gets it as recorded
    (kept,) = _proposed("mla-moe-fp4-b200-cutlass-mla-env", "vllm 0.11.2", cmd).changes
    assert kept.text == "VLLM_ATTENTION_BACKEND=CUTLASS_MLA_VLLM_V1"


@pytest.mark.parametrize(
    ("version", "text"),
    [
        ("0.28.0", "--linear-backend flashinfer_cudnn"),
        ("0.20.2", "VLLM_NVFP4_GEMM_BACKEND=flashinfer-cudnn"),
    ],
)
def test_an_sglang_fp4_gemm_fix_on_vllm_names_the_releases_setting(version, text):
    cmd = "vllm serve example/Sparse-MoE-NVFP4 --tensor-parallel-size 8"
    p = _proposed("sparse-moe-nvfp4-sm120-nan-fp4-gemm", f"vllm {version}", cmd)
    ((shown, note),) = [(c.text, c.note) for c in p.changes]
    assert shown == text and p.not_carried == ()
    assert note.startswith("translated from sglang --fp4-gemm-backend flashinfer_cudnn (")
    if version == "0.28.0":
        assert "every quantized linear layer" in note  # the caveat of the approximation


def test_the_linear_backend_equivalent_is_scoped_to_the_releases_that_have_it(reg) -> None:
    found = reg.equivalent(
        "--fp4-gemm-backend", "flashinfer_cudnn", "sglang", "vllm", target_version="0.28.0"
    )
    assert (found.kind, found.name, found.value) == ("flag", "--linear-backend", "flashinfer_cudnn")
    first = reg.first_release("--linear-backend", "vllm")
    assert first == "0.22.1"
    before = reg.equivalent(
        "--fp4-gemm-backend", "flashinfer_cudnn", "sglang", "vllm", target_version="0.21.0"
    )
    assert before.name == "VLLM_NVFP4_GEMM_BACKEND"
    assert (
        reg.equivalent(
            "--fp4-gemm-backend", "flashinfer_cudnn", "sglang", "vllm", target_version="0.9.2"
        )
        is None
    )


# --- lint: a removed spelling, a development build ------------------------------------------

VLLM_FINDING = """\
---
id: x
title: "a vLLM finding"
status: works-with-flags
framework:
  name: vllm
  version: "{version}"
symptoms:
  - class: hang
    text: "graph capture hangs"
fix:
  add:
    - --cuda-graph-sizes 8
sources:
  - https://github.com/vllm-project/vllm/issues/1
---

## Root cause

Too many graph sizes.
"""


def _lint_vllm(tmp_path, monkeypatch, version: str):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "findings").mkdir(exist_ok=True)
    (tmp_path / "findings" / "x.md").write_text(VLLM_FINDING.format(version=version))
    return CliRunner().invoke(app, ["lint", "findings", "--strict"], catch_exceptions=False)


def test_lint_says_a_removed_spelling_is_removed_not_renamed(tmp_path, monkeypatch) -> None:
    result = _lint_vllm(tmp_path, monkeypatch, "0.13.0")
    assert result.stdout.splitlines() == [
        "findings/x.md:13: warning: flag '--cuda-graph-sizes': --cuda-graph-sizes was removed in "
        "vLLM 0.13.0; use --cudagraph-capture-sizes (framework.version: 0.13.0)"
    ]
    assert _lint_vllm(tmp_path, monkeypatch, "0.12.0").stdout == ""  # a deprecated alias there


def test_lint_does_not_check_a_development_build(tmp_path, monkeypatch) -> None:
    result = _lint_vllm(tmp_path, monkeypatch, "0.1.dev20051+g487ecf187 (main, 2026-08-25)")
    assert result.exit_code == 0 and result.stdout == ""
    assert (
        "findings/x.md:7: note: 1 flag(s) not checked against a release: vLLM 0.1.dev20051"
        "+g487ecf187 (main, 2026-08-25) is not a release number: flags not checked against a "
        "release" in result.stderr
    )


def test_trtllm_config_is_the_extra_llm_api_options_flag() -> None:
    # tensorrt_llm/commands/serve.py declares one option '--config', '--extra_llm_api_options'
    # (data/flag_facts.json aliases_source): a finding's YAML change replaces the user's --config
    # in place instead of adding a second YAML option beside it
    fix = Fix(add=("--extra_llm_api_options deepseek-r1-deepgemm.yaml",))
    cmd = parse_command("trtllm-serve m --config throughput.yaml --tensor_parallel_size 8")
    changes = diff(cmd, fix, finding_framework="tensorrt-llm")
    assert apply_changes(cmd, changes) == (
        "trtllm-serve m --config deepseek-r1-deepgemm.yaml --tensor_parallel_size 8"
    )
    same = parse_command("trtllm-serve m --config deepseek-r1-deepgemm.yaml")
    assert diff(same, fix, finding_framework="tensorrt-llm") == ()
    reg = load_registry()
    assert reg.canonical("--tensor_parallel_size", "tensorrt-llm") == "--tp_size"
    assert reg.canonical("--free_gpu_memory_fraction", "tensorrt-llm") == (
        "--kv_cache_free_gpu_memory_fraction"
    )
    # the --backend choice type takes trt for tensorrt
    assert reg.same_value("--backend", "trt", "tensorrt", "tensorrt-llm")
    assert not reg.same_value("--backend", "trt", "pytorch", "tensorrt-llm")
