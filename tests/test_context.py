"""agent.context: architecture traits from config.json, GPU resolution, similarity measures."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent import context
from agent.context import (
    detect_gpu,
    match_gpu,
    normalise_quantization,
    normalise_sm,
    quantization_from_config,
    quantization_similarity,
    resolve_gpu,
    sm_similarity,
    trait_similarity,
    traits_for_model_type,
    traits_from_config,
)
from kb.errors import InputError
from kb.records import ArchTraits
from kb.resources import data_file

CONFIGS = Path(__file__).parent / "fixtures" / "configs"


def load(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text())


# --- traits from config.json ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "model_type", "traits", "quantization", "scale_format"),
    [
        ("deepseek-v3.2-exp.json", "deepseek_v32", ("dsa", "mla", "moe", "mtp"), "fp8", "ue8m0"),
        ("glm-5.json", "glm_moe_dsa", ("dsa", "mla", "moe", "mtp"), None, None),
        (
            "qwen3.5-397b-a17b-nvfp4.json",
            "qwen3_5_moe",
            ("hybrid-linear-attention", "moe", "mtp", "multimodal"),
            "nvfp4",
            None,
        ),
        ("kimi-k2.5.json", "kimi_k25", ("mla", "moe", "multimodal"), "int4", None),
        ("gpt-oss-120b.json", "gpt_oss", ("moe", "sliding-window"), "mxfp4", None),
        ("llama-3.1-8b-instruct.json", "llama", (), None, None),
        ("qwen2.5-7b-instruct.json", "qwen2", (), None, None),
    ],
)
def test_traits_from_real_configs(fixture, model_type, traits, quantization, scale_format):
    got = traits_from_config(load(fixture))
    assert got.model_type == model_type
    assert got.traits == traits
    assert got.quantization == quantization
    assert got.scale_format == scale_format


def test_details_carry_the_numbers_a_person_checks():
    dsv32 = dict(traits_from_config(load("deepseek-v3.2-exp.json")).details)
    assert dsv32["index_topk"] == "2048"
    assert dsv32["kv_lora_rank"] == "512"
    assert dsv32["experts"] == "256"
    assert dsv32["experts_per_token"] == "8"
    assert dsv32["weight_block_size"] == "128x128"
    assert dsv32["class"] == "DeepseekV32ForCausalLM"

    qwen = dict(traits_from_config(load("qwen3.5-397b-a17b-nvfp4.json")).details)
    assert qwen["linear_attention_layers"] == "45 of 60"
    assert qwen["experts"] == "512"
    assert qwen["experts_per_token"] == "10"
    assert qwen["quant_algo"] == "NVFP4"
    assert qwen["text_model_type"] == "qwen3_5_moe_text"


def test_wrapper_traits_come_from_text_config():
    config = load("kimi-k2.5.json")
    assert "kv_lora_rank" not in config  # only inside text_config
    got = traits_from_config(config)
    assert got.model_type == "kimi_k25"
    assert dict(got.details)["text_model_type"] == "kimi_k2"
    assert "mla" in got.traits
    # num_nextn_predict_layers: 0 means no MTP layers
    assert "mtp" not in got.traits


def test_sliding_window_key_is_ignored_when_disabled():
    config = load("qwen2.5-7b-instruct.json")
    assert config["sliding_window"] == 131072
    assert "sliding-window" not in traits_from_config(config).traits
    config["use_sliding_window"] = True
    assert "sliding-window" in traits_from_config(config).traits


def test_layer_types_alone_signal_hybrid_attention():
    config = {
        "model_type": "something_new",
        "layer_types": ["linear_attention", "linear_attention", "full_attention"],
    }
    got = traits_from_config(config)
    assert got.traits == ("hybrid-linear-attention",)
    assert dict(got.details)["linear_attention_layers"] == "2 of 3"


def test_trimmed_config_of_known_type_falls_back_to_the_known_traits():
    got = traits_from_config({"model_type": "glm_moe_dsa"})
    assert got.traits == ("dsa", "mla", "moe", "mtp")


def test_config_must_be_an_object():
    with pytest.raises(InputError) as err:
        traits_from_config([1, 2])  # type: ignore[arg-type]
    assert str(err.value) == (
        "config.json must be a JSON object, got list; pass the model's config.json"
    )


@pytest.mark.parametrize(
    ("qc", "expected"),
    [
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
        ({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4"}}, "nvfp4"),
        ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}, "nvfp4"),
        (
            {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {"g": {"weights": {"type": "float", "num_bits": 8}}},
            },
            "fp8",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"type": "float", "num_bits": 4, "group_size": 16}}
                },
            },
            "nvfp4",
        ),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq"),
        ({"quant_method": "gptq", "bits": 4}, "gptq"),
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8"),
        ({"quant_method": "some_new_method"}, "some_new_method"),
    ],
)
def test_quantization_config_shapes(qc, expected):
    name, _scale, _details = quantization_from_config({"quantization_config": qc})
    assert name == expected


def test_no_quantization_config_means_none():
    assert quantization_from_config({"model_type": "llama"}) == (None, None, ())


# --- known model types ----------------------------------------------------------------------

BRIEF_MODEL_TYPES = [
    "deepseek_v3",
    "deepseek_v32",
    "deepseek_v4",
    "kimi_k2",
    "kimi_k25",
    "glm_moe_dsa",
    "glm4_moe",
    "qwen3_5_moe",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_next",
    "qwen3_moe",
    "qwen3",
    "qwen2",
    "minimax_m2",
    "gpt_oss",
    "gemma2",
    "gemma3",
    "llama",
    "mistral3",
    "deepseek_v2",
    "qwen2_5_vl",
]


@pytest.mark.parametrize("model_type", BRIEF_MODEL_TYPES)
def test_known_model_types_have_a_source(model_type):
    data = json.loads(data_file("arch_traits.json").read_text())
    entry = data["model_types"][model_type]
    assert entry["_source"].strip()
    assert set(entry["traits"]) <= set(data["traits"])
    assert entry["family"] in data["families"]


def test_known_map_agrees_with_real_configs():
    """The model_type map (used for findings that name only a type) matches what configs say."""
    for fixture in CONFIGS.glob("*.json"):
        from_config = traits_from_config(json.loads(fixture.read_text()))
        assert traits_for_model_type(from_config.model_type).traits == from_config.traits, fixture


def test_traits_for_model_type():
    assert traits_for_model_type("deepseek_v32").traits == ("dsa", "mla", "moe", "mtp")
    assert "hybrid-linear-attention" in traits_for_model_type("qwen3_5_moe").traits
    assert traits_for_model_type("GLM-MoE-DSA").model_type == "glm_moe_dsa"
    assert traits_for_model_type("llama").traits == ()
    assert traits_for_model_type("brand_new") == ArchTraits(model_type="brand_new")
    assert traits_for_model_type(None) == ArchTraits()


# --- trait similarity -----------------------------------------------------------------------


def test_dsa_model_is_closest_to_the_other_dsa_model():
    dsv32 = traits_from_config(load("deepseek-v3.2-exp.json"))
    glm5 = traits_for_model_type("glm_moe_dsa")
    qwen = traits_for_model_type("qwen3_5_moe")
    dsv3 = traits_for_model_type("deepseek_v3")
    to_glm, reasons = trait_similarity(dsv32, glm5)
    to_qwen, _ = trait_similarity(dsv32, qwen)
    to_dsv3, _ = trait_similarity(dsv32, dsv3)
    assert to_glm > to_dsv3 > to_qwen
    assert "both use DSA sparse attention (indexer)" in reasons
    assert "both MoE" in reasons


def test_same_model_type_counts_most():
    a = traits_from_config(load("qwen3.5-397b-a17b-nvfp4.json"))
    score, reasons = trait_similarity(a, traits_for_model_type("qwen3_5_moe"))
    assert score == 1.0
    assert reasons[0] == "same architecture (qwen3_5_moe)"
    related, _ = trait_similarity(a, traits_for_model_type("qwen3_5"))
    assert related < score


def test_dense_models_of_the_same_type_match_and_of_other_types_do_not():
    assert trait_similarity(traits_for_model_type("llama"), traits_for_model_type("llama"))[0] == 1
    assert trait_similarity(traits_for_model_type("llama"), traits_for_model_type("qwen2")) == (
        0.0,
        (),
    )
    assert trait_similarity(ArchTraits(), ArchTraits()) == (0.0, ())


def test_similarity_is_symmetric_and_bounded():
    data = json.loads(data_file("arch_traits.json").read_text())
    all_types = [traits_for_model_type(t) for t in data["model_types"]]
    for a, b in itertools.combinations(all_types, 2):
        ab, ba = trait_similarity(a, b)[0], trait_similarity(b, a)[0]
        assert ab == ba
        assert 0.0 <= ab < 1.0, (a.model_type, b.model_type)


# --- quantization names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("nvfp4 (modelopt_fp4)", "nvfp4"),
        ("modelopt_fp4", "nvfp4"),
        ("NVFP4", "nvfp4"),
        ("mxfp4", "mxfp4"),
        ("awq (compressed-tensors)", "awq"),
        ("gptq int4", "gptq"),
        ("w4a16 (AutoRound)", "int4"),
        ("INT4", "int4"),
        ("fp8, kv cache fp8", "fp8"),
        ("w8a8_fp8, kv_cache_dtype fp8_e4m3", "fp8"),
        ("bf16", "bf16"),
        ("", None),
        (None, None),
        ("whatever", None),
    ],
)
def test_normalise_quantization(text, expected):
    assert normalise_quantization(text) == expected


def test_quantization_similarity():
    assert quantization_similarity("nvfp4 (modelopt_fp4)", "NVFP4") == 1.0
    assert quantization_similarity("nvfp4", "mxfp4") == 0.5
    assert quantization_similarity("awq", "gptq int4") == 0.5
    assert quantization_similarity("fp8", "nvfp4") == 0.0
    assert quantization_similarity(None, "fp8") == 0.0


# --- GPUs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("sm120", (None, "sm120")),
        ("sm_120", (None, "sm120")),
        ("SM120", (None, "sm120")),
        ("12.0", (None, "sm120")),
        ("12.1", (None, "sm121")),
        ("sm_100a", (None, "sm100")),
        ("gfx942", (None, "gfx942")),
        ("B200", ("NVIDIA B200", "sm100")),
        ("8x B200", ("NVIDIA B200", "sm100")),
        ("B300 x 8", ("NVIDIA B300", "sm103")),
        ("rtx pro 6000", ("NVIDIA RTX PRO 6000 Blackwell", "sm120")),
        (
            "NVIDIA RTX PRO 6000 Blackwell Server Edition",
            ("NVIDIA RTX PRO 6000 Blackwell", "sm120"),
        ),
        (
            "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            ("NVIDIA RTX PRO 6000 Blackwell", "sm120"),
        ),
        ("RTX PRO 2000 Blackwell", ("NVIDIA RTX PRO 2000 Blackwell", "sm120")),
        ("NVIDIA GeForce RTX 5070 Ti (16 GB)", ("NVIDIA GeForce RTX 5070 Ti", "sm120")),
        ("RTX 5070", ("NVIDIA GeForce RTX 5070", "sm120")),
        ("DGX Spark", ("NVIDIA GB10", "sm121")),
        ("NVIDIA GB10 (DGX Spark)", ("NVIDIA GB10", "sm121")),
        ("NVIDIA H100 80GB HBM3", ("NVIDIA H100", "sm90")),
        ("H20", ("NVIDIA H20", "sm90")),
        ("H200", ("NVIDIA H200", "sm90")),
        ("A100-SXM4-80GB", ("NVIDIA A100", "sm80")),
        ("A10", ("NVIDIA A10", "sm86")),
        ("L4", ("NVIDIA L4", "sm89")),
        ("L40S", ("NVIDIA L40S", "sm89")),
        ("RTX 6000 Ada Generation", ("NVIDIA RTX 6000 Ada", "sm89")),
        ("RTX 3090 24 GB", ("NVIDIA GeForce RTX 3090", "sm86")),
        ("Tesla V100-SXM2-32GB", ("NVIDIA Tesla V100", "sm70")),
        ("T4", ("NVIDIA Tesla T4", "sm75")),
        ("AMD Instinct MI355X", ("AMD Instinct MI355X", "gfx950")),
        ("MI300X", ("AMD Instinct MI300X", "gfx942")),
    ],
)
def test_resolve_gpu(value, expected):
    assert resolve_gpu(value) == expected


@pytest.mark.parametrize("value", ["xyz", "", "RTX", "12.0.1"])
def test_resolve_gpu_unknown_names_the_value(value):
    with pytest.raises(InputError) as err:
        resolve_gpu(value)
    assert str(err.value) == (
        f"--gpu '{value}': unknown GPU; use a name like 'B200' or a compute capability like 'sm120'"
    )


def test_match_gpu_reads_sm_from_free_text_and_never_raises():
    assert match_gpu("Blackwell (SM100-class)") == (None, "sm100")
    assert match_gpu("AMD (ROCm 7.0)") is None
    assert match_gpu(None) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sm90", "sm90"),
        ("SM_90a", "sm90"),
        ("9.0", "sm90"),
        ("10.3", "sm103"),
        ("compute capability 8.6", "sm86"),
        ("gfx950", "gfx950"),
        ("B200", None),
        ("120", None),
        (None, None),
    ],
)
def test_normalise_sm(text, expected):
    assert normalise_sm(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("sm120", "sm120", 1.0),
        ("sm120", "12.0", 1.0),
        ("sm120", "sm121", 0.7),
        ("sm100", "sm103", 0.7),
        ("sm100", "sm120", 0.3),
        ("sm103", "sm121", 0.3),
        ("gfx942", "gfx950", 0.3),
        ("sm90", "sm100", 0.0),
        ("sm90", "gfx942", 0.0),
        ("sm120", None, 0.0),
    ],
)
def test_sm_similarity(a, b, expected):
    assert sm_similarity(a, b) == expected
    assert sm_similarity(b, a) == expected


def test_every_shipped_gpu_has_a_known_sm_group():
    data = json.loads(data_file("gpus.json").read_text())
    for gpu in data["gpus"]:
        assert gpu["sm"] in data["sm_groups"], gpu["name"]
        assert resolve_gpu(gpu["name"]) == (gpu["name"], gpu["sm"])
        for alias in gpu["aliases"]:
            assert resolve_gpu(alias) == (gpu["name"], gpu["sm"]), alias


# --- detect_gpu with a fake nvidia-smi ------------------------------------------------------


class FakeSmi:
    def __init__(self, answers: dict[str, tuple[int, str]]):
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, cmd, **kwargs):
        self.calls.append(cmd)
        query = next(a for a in cmd if a.startswith("--query-gpu="))
        code, out = self.answers[query.split("=", 1)[1]]
        return subprocess.CompletedProcess(cmd, code, stdout=out, stderr="")


def which_found(name):
    return f"/usr/bin/{name}"


def test_detect_gpu_reads_name_and_compute_capability():
    run = FakeSmi(
        {
            "name,compute_cap": (
                0,
                "NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0\n"
                "NVIDIA RTX PRO 6000 Blackwell Server Edition, 12.0\n",
            )
        }
    )
    assert detect_gpu(run=run, which=which_found) == ("NVIDIA RTX PRO 6000 Blackwell", "sm120")
    assert run.calls == [
        ["/usr/bin/nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"]
    ]


def test_detect_gpu_keeps_an_unknown_name_with_its_compute_capability():
    run = FakeSmi({"name,compute_cap": (0, "NVIDIA Future GPU 9000, 13.0\n")})
    assert detect_gpu(run=run, which=which_found) == ("NVIDIA Future GPU 9000", "sm130")


def test_detect_gpu_falls_back_to_the_name_on_old_drivers():
    run = FakeSmi(
        {
            "name,compute_cap": (2, 'Field "compute_cap" is not a valid field to query.\n'),
            "name": (0, "Tesla V100-SXM2-32GB\n"),
        }
    )
    assert detect_gpu(run=run, which=which_found) == ("NVIDIA Tesla V100", "sm70")


def test_detect_gpu_without_nvidia_smi_or_driver_is_none():
    assert detect_gpu(run=FakeSmi({}), which=lambda name: None) is None
    broken = FakeSmi(
        {
            "name,compute_cap": (9, "NVIDIA-SMI has failed because it couldn't communicate"),
            "name": (9, "NVIDIA-SMI has failed because it couldn't communicate"),
        }
    )
    assert detect_gpu(run=broken, which=which_found) is None

    def raises(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, 10)

    assert detect_gpu(run=raises, which=which_found) is None


def test_importing_context_and_hub_stays_light():
    """`deploykb --help` must not pay for httpx, numpy or torch through these modules."""
    code = (
        "import sys, agent.context, agent.hub; "
        "print(' '.join(m for m in ('httpx', 'numpy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(context.__file__).parent.parent,
    )
    assert out.stdout.strip() == ""
