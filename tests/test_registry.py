"""The flag registry: canonical names, renames, values, environment variables, translations."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from agent.registry import Registry, load_registry
from kb.errors import DeployKBError
from kb.records import Flag

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def reg() -> Registry:
    return load_registry()


@pytest.mark.parametrize(
    ("name", "framework", "expected"),
    [
        # SGLang aliases, underscores, argparse prefixes
        ("--tp", "sglang", "--tp-size"),
        ("--tensor-parallel-size", "sglang", "--tp-size"),
        ("--tp_size", "sglang", "--tp-size"),
        ("--model", "sglang", "--model-path"),
        ("--speculative-algo", "sglang", "--speculative-algorithm"),
        ("--ep", "sglang", "--ep-size"),
        # SGLang renames and deprecated spellings
        ("--fp4-gemm-runner-backend", "sglang", "--fp4-gemm-backend"),
        ("--fp8-gemm-runner-backend", "sglang", "--fp8-gemm-backend"),
        ("--fp8_gemm_runner_backend", "sglang", "--fp8-gemm-backend"),
        ("--nsa-prefill-backend", "sglang", "--dsa-prefill-backend"),
        ("--nsa-decode-backend", "sglang", "--dsa-decode-backend"),
        ("--cuda-graph-max-bs", "sglang", "--cuda-graph-max-bs-decode"),
        ("--disable-cuda-graph", "sglang", "--disable-cuda-graph"),
        # vLLM short aliases, underscores, dotted JSON keys
        ("-tp", "vllm", "--tensor-parallel-size"),
        ("-q", "vllm", "--quantization"),
        ("--enforce_eager", "vllm", "--enforce-eager"),
        ("-O.cudagraph_mode", "vllm", "--compilation-config.cudagraph_mode"),
        ("--compilation_config.level", "vllm", "--compilation-config.level"),
        ("--no-enable-prefix-caching", "vllm", "--no-enable-prefix-caching"),
        # TensorRT-LLM spells its options with underscores
        ("--tp-size", "tensorrt-llm", "--tp_size"),
        ("--tp_size", "trtllm", "--tp_size"),
        # unknown names come back normalised
        ("--foo_bar", "sglang", "--foo-bar"),
        ("--foo-bar", "tensorrt-llm", "--foo-bar"),
        ("--pp", "sglang", "--pp"),  # ambiguous prefix: argparse rejects it, so do we
        ("--tp", "vllm", "--tp"),  # vLLM does not accept prefixes
    ],
)
def test_canonical(reg: Registry, name: str, framework: str, expected: str) -> None:
    assert reg.canonical(name, framework) == expected


def test_known_and_registered_spellings(reg: Registry) -> None:
    assert reg.is_known("--fp4-gemm-runner-backend", "sglang")
    assert not reg.is_registered_spelling("--fp4-gemm-runner-backend", "sglang")
    assert reg.is_registered_spelling("--nsa-prefill-backend", "sglang")
    assert reg.is_registered_spelling("--fp4-gemm-backend", "sglang")
    assert reg.is_known("--enforce-eager", "vllm")
    assert not reg.is_known("--enforce-eager", "sglang")
    assert not reg.is_known("--pp", "sglang")
    assert reg.is_known("enable_chunked_prefill", "tensorrt-llm")


def test_rename_note_names_both_spellings(reg: Registry) -> None:
    note = reg.rename_note("--fp4-gemm-runner-backend", "sglang")
    assert note == "sglang registers --fp4-gemm-backend, not --fp4-gemm-runner-backend"
    assert reg.rename_note("--fp4-gemm-backend", "sglang") is None
    assert "deprecated" in (reg.rename_note("--nsa-decode-backend", "sglang") or "")


@pytest.mark.parametrize(
    ("name", "framework", "takes", "nargs"),
    [
        ("--disable-cuda-graph", "sglang", False, None),
        ("--tp", "sglang", True, None),
        ("--trust-remote-code", "sglang", False, None),
        ("--cuda-graph-bs-decode", "sglang", True, "+"),
        ("--cuda-graph-bs", "sglang", True, "+"),
        ("--model-checksum", "sglang", True, "?"),
        ("--enforce-eager", "vllm", False, None),
        ("--no-enforce-eager", "vllm", False, None),
        ("--served-model-name", "vllm", True, "+"),
        ("--compilation-config.cudagraph_mode", "vllm", True, None),
        ("--trust_remote_code", "tensorrt-llm", False, None),
        ("--not-a-flag", "sglang", None, None),
    ],
)
def test_takes_value(reg: Registry, name: str, framework: str, takes, nargs) -> None:
    assert reg.takes_value(name, framework) is takes
    assert reg.nargs(name, framework) == nargs


def test_negation_only_for_negatable_switches(reg: Registry) -> None:
    assert reg.negation("--no-enforce-eager", "vllm") == "--enforce-eager"
    assert reg.negation("--no-disable-cuda-graph", "sglang") is None  # store_true only
    assert reg.negation("--enforce-eager", "vllm") is None


@pytest.mark.parametrize(
    ("name", "a", "b", "framework", "same"),
    [
        # cutlass is SGLang's own FP4 kernel in 0.5.10-0.5.15, not flashinfer_cutlass (audit §3)
        ("--fp4-gemm-backend", "cutlass", "flashinfer_cutlass", "sglang", False),
        ("--fp4-gemm-backend", "flashinfer_cudnn", "flashinfer_cutlass", "sglang", False),
        ("--attention-backend", "nsa", "dsa", "sglang", True),
        ("--attention-backend", "FLASHINFER", "flashinfer", "vllm", True),
        ("--moe-backend", "flashinfer-cutlass", "flashinfer_cutlass", "vllm", True),
        ("--mem-fraction-static", "0.80", "0.8", "sglang", True),
        ("--tp", "8", "4", "sglang", False),
        ("--enforce-eager", None, "true", "vllm", True),
        ("--enforce-eager", None, "false", "vllm", False),
        ("--enforce-eager", "False", "0", "vllm", True),
    ],
)
def test_same_value(reg: Registry, name: str, a, b, framework: str, same: bool) -> None:
    assert reg.same_value(name, a, b, framework) is same


@pytest.mark.parametrize(
    ("flag", "source", "target", "expected"),
    [
        (
            Flag("--disable-cuda-graph", None, "--disable-cuda-graph"),
            "sglang",
            "vllm",
            Flag("--enforce-eager", None, "--enforce-eager"),
        ),
        (
            Flag("--enforce-eager", None, "--enforce-eager"),
            "vllm",
            "sglang",
            Flag("--disable-cuda-graph", None, "--disable-cuda-graph"),
        ),
        (
            Flag("--attention-backend", "triton", "--attention-backend triton"),
            "sglang",
            "vllm",
            Flag("--attention-backend", "TRITON_ATTN", "--attention-backend TRITON_ATTN"),
        ),
        (
            Flag("--attention-backend", "TRITON_MLA", ""),
            "vllm",
            "sglang",
            Flag("--attention-backend", "triton", "--attention-backend triton"),
        ),
        (
            Flag("--attention-backend", "flashinfer", ""),
            "sglang",
            "vllm",
            Flag("--attention-backend", "FLASHINFER", "--attention-backend FLASHINFER"),
        ),
        (
            Flag("--tp-size", "8", "--tp 8"),
            "sglang",
            "vllm",
            Flag("--tensor-parallel-size", "8", "--tensor-parallel-size 8"),
        ),
        (
            Flag("--tensor-parallel-size", "4", ""),
            "vllm",
            "tensorrt-llm",
            Flag("--tp_size", "4", "--tp_size 4"),
        ),
        (
            Flag("--moe-runner-backend", "flashinfer_cutlass", ""),
            "sglang",
            "vllm",
            Flag("--moe-backend", "flashinfer_cutlass", "--moe-backend flashinfer_cutlass"),
        ),
        (
            Flag("--kv-cache-dtype", "fp8", ""),
            "vllm",
            "sglang",
            Flag("--kv-cache-dtype", "fp8_e4m3", "--kv-cache-dtype fp8_e4m3"),
        ),
        (
            Flag("--disable-radix-cache", None, ""),
            "sglang",
            "vllm",
            Flag("--enable-prefix-caching", "false", "--enable-prefix-caching false"),
        ),
        (
            Flag("--mem-fraction-static", "0.85", ""),
            "sglang",
            "vllm",
            Flag("--gpu-memory-utilization", "0.85", "--gpu-memory-utilization 0.85"),
        ),
        # no listed equivalent, same name in the target: passes through
        (
            Flag("--tool-call-parser", "qwen25", ""),
            "sglang",
            "vllm",
            Flag("--tool-call-parser", "qwen25", "--tool-call-parser qwen25"),
        ),
        # same framework: only canonicalised
        (
            Flag("--fp4-gemm-runner-backend", "flashinfer_cudnn", "--fp4-gemm-runner-backend x"),
            "sglang",
            "sglang",
            Flag("--fp4-gemm-backend", "flashinfer_cudnn", "--fp4-gemm-runner-backend x"),
        ),
    ],
)
def test_translate(reg: Registry, flag: Flag, source: str, target: str, expected: Flag) -> None:
    assert reg.translate(flag, source, target) == expected


@pytest.mark.parametrize(
    ("flag", "source", "target"),
    [
        (Flag("--attention-backend", "trtllm_mha", ""), "sglang", "vllm"),  # no vLLM value
        (Flag("--moe-runner-backend", "flashinfer_mxfp4", ""), "sglang", "vllm"),
        (Flag("--enable-dp-attention", None, ""), "sglang", "vllm"),
        (Flag("--enforce-eager", None, ""), "vllm", "tensorrt-llm"),
        (Flag("--sampling-backend", "pytorch", ""), "sglang", "vllm"),  # an env var there
    ],
)
def test_translate_without_flag_equivalent(reg: Registry, flag, source, target) -> None:
    assert reg.translate(flag, source, target) is None


def test_equivalent_to_environment_variable_and_back(reg: Registry) -> None:
    eq = reg.equivalent("--sampling-backend", "pytorch", "sglang", "vllm")
    assert (eq.kind, eq.name, eq.value) == ("env", "VLLM_USE_FLASHINFER_SAMPLER", "0")
    back = reg.equivalent("VLLM_ATTENTION_BACKEND", "FLASHINFER", "vllm", "sglang", kind="env")
    assert (back.kind, back.name, back.value) == ("flag", "--attention-backend", "flashinfer")
    assert back.note == "translated from vllm VLLM_ATTENTION_BACKEND=FLASHINFER"


def test_equivalent_marks_approximate_pairs(reg: Registry) -> None:
    eq = reg.equivalent("--mem-fraction-static", "0.8", "sglang", "vllm")
    assert eq.note.startswith("translated from sglang --mem-fraction-static 0.8 (approximate:")


def test_describe(reg: Registry) -> None:
    text = reg.describe("--fp4-gemm-runner-backend", "sglang")
    assert text.startswith("--fp4-gemm-backend (sglang): ")
    assert "flashinfer_cudnn" in text
    assert "sglang registers --fp4-gemm-backend, not --fp4-gemm-runner-backend" in text
    assert "use --cuda-graph-backend-{decode,prefill}=disabled" in reg.describe(
        "--disable-cuda-graph", "sglang"
    )
    assert "--no-enforce-eager turns it off" in reg.describe("--enforce-eager", "vllm")
    assert reg.describe("--bogus", "vllm") == (
        f"--bogus: not in the vllm flag registry ({reg.path})"
    )


def test_environment_variables(reg: Registry) -> None:
    assert reg.canonical_env("SGL_ENABLE_JIT_DEEPGEMM") == "SGLANG_ENABLE_JIT_DEEPGEMM"
    assert reg.canonical_env("SGLANG_NSA_FUSE_TOPK") == "SGLANG_DSA_FUSE_TOPK"
    assert reg.canonical_env("NCCL_P2P_DISABLE") == "NCCL_P2P_DISABLE"
    assert reg.env_framework("VLLM_USE_DEEP_GEMM") == "vllm"
    assert reg.env_framework("SGL_ENABLE_JIT_DEEPGEMM") == "sglang"
    assert reg.env_framework("PYTORCH_CUDA_ALLOC_CONF") is None
    assert reg.is_known_env("PYTORCH_CUDA_ALLOC_CONF")
    assert not reg.is_known_env("MY_OWN_VARIABLE")
    assert reg.describe_env("SGL_ENABLE_JIT_DEEPGEMM").startswith(
        "SGL_ENABLE_JIT_DEEPGEMM (read as SGLANG_ENABLE_JIT_DEEPGEMM) (sglang): "
    )
    # most variables come from the released packages' tables with no text: their versions say it
    assert reg.describe_env("DISABLE_OPENAPI_DOC") == (
        "DISABLE_OPENAPI_DOC (sglang): read by releases 0.5.3-0.5.23; no description recorded"
    )


def test_packages_and_images(reg: Registry) -> None:
    assert reg.framework_of_package("vllm") == "vllm"
    assert reg.framework_of_package("sgl_kernel") == "sglang"
    assert reg.framework_of_package("flashinfer-python") is None
    assert reg.framework_of_image("lmsysorg/sglang:v0.5.11-cu130") == "sglang"
    assert reg.framework_of_image("docker.io/vllm/vllm-openai:v0.17.1") == "vllm"
    assert reg.framework_of_image("ghcr.io/llm-d/llm-d-cuda:v0.6.0") is None


def test_guess_framework(reg: Registry) -> None:
    assert reg.guess_framework(["--tp", "--mem-fraction-static", "--quantization"]) == "sglang"
    assert reg.guess_framework(["--enforce-eager", "--gpu-memory-utilization"]) == "vllm"
    assert reg.guess_framework(["--quantization"]) is None  # known to both: a tie
    assert reg.guess_framework(["--nothing"]) is None


# --- the data file ---------------------------------------------------------------------------


def test_registry_is_cached() -> None:
    assert load_registry() is load_registry()


def test_registry_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(DeployKBError) as exc:
        load_registry(missing)
    assert str(exc.value) == f"{missing}: no such file"
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "frameworks": {,\n}', encoding="utf-8")
    with pytest.raises(DeployKBError) as exc:
        load_registry(bad)
    assert str(exc.value) == (
        f"{bad}:2: invalid JSON: Expecting property name enclosed in double quotes"
    )
    empty = tmp_path / "empty.json"
    empty.write_text("{}", encoding="utf-8")
    with pytest.raises(DeployKBError) as exc:
        load_registry(empty)
    assert str(exc.value) == f"{empty}: not a flag registry (missing 'frameworks')"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_flag_registry", ROOT / "scripts" / "build_flag_registry.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_data_file_is_small_with_provenance_and_current_facts() -> None:
    """The generated file names every release it read with the wheel's sha256, and its hand-kept
    parts are those of data/flag_facts.json (the full regeneration needs the wheels:
    scripts/build_flag_registry.py --check)."""
    path = ROOT / "data" / "flags.json"
    assert path.stat().st_size < 512 * 1024
    data = json.loads(path.read_text(encoding="utf-8"))
    facts = json.loads((ROOT / "data" / "flag_facts.json").read_text(encoding="utf-8"))
    for fw, versions in facts["releases"].items():
        prov = data["_provenance"][fw]
        assert [p["version"] for p in prov] == versions
        assert data["frameworks"][fw]["versions"] == versions
        for p in prov:
            assert re.fullmatch(r"[0-9a-f]{64}", p["sha256"]), p
            assert p["wheel"].startswith(f"{fw}-{p['version']}-"), p
    hand = _builder().build(facts, {})
    assert data["equivalents"] == hand["equivalents"]
    assert data["common_env"] == hand["common_env"]
    assert data["frameworks"]["tensorrt-llm"] == hand["frameworks"]["tensorrt-llm"]
    assert "wheel-stub" in data["_provenance"]["tensorrt-llm"]


def test_equivalents_name_registered_settings(reg: Registry) -> None:
    """Every member of every equivalence exists, and listed values are valid choices."""
    data = json.loads((ROOT / "data" / "flags.json").read_text(encoding="utf-8"))
    for eq in data["equivalents"]:
        for fw, member in eq["members"].items():
            if member.startswith("env:"):
                assert reg.is_known_env(member[4:], fw), member
                continue
            if member.startswith("config:"):
                spec = reg.spec(member[7:], fw)
                assert spec is not None and spec.kind == "config", member
                continue
            spec = reg.spec(member, fw)
            assert spec is not None and spec.name == member, (fw, member)
            runs = data["frameworks"][fw]["flags"][member].get("choices", [])
            ever = (
                {v for run in runs for v in run["values"]}
                if runs and isinstance(runs[0], dict)
                else set(runs)
            )
            for row in eq.get("values", []):
                value = row.get(fw)
                if value is None or not ever:
                    continue
                # a value some release read accepts
                assert any(reg.same_value(member, c, value, fw) for c in ever), (
                    fw,
                    member,
                    value,
                )


def test_flag_tables_are_consistent(reg: Registry) -> None:
    for fw in reg.frameworks:
        for spec in reg.flags(fw):
            if spec.kind != "flag":
                continue
            assert spec.name.startswith("--"), spec.name
            assert reg.canonical(spec.name, fw) == spec.name
            for alias in spec.aliases:
                assert reg.canonical(alias, fw) == spec.name, (fw, alias)
            if spec.negatable or spec.nargs:
                assert spec.takes_value == bool(spec.nargs), spec.name
