"""The one reader of a framework's name."""

from __future__ import annotations

import pytest

from kb.frameworks import normalise_framework, split_framework


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sglang", "sglang"),
        ("SGLang main (built from source)", "sglang"),
        ("1Cat-vLLM 0.0.3 (vLLM fork for V100)", "vllm"),
        ("TensorRT-LLM v0.19.0rc0", "tensorrt-llm"),
        ("trtllm", "tensorrt-llm"),
        ("trt-llm 1.2", "tensorrt-llm"),
        ("TensorRT_LLM", "tensorrt-llm"),
        ("flashinfer v0.6.16", None),
        (None, None),
    ],
)
def test_normalise_framework(text, expected) -> None:
    assert normalise_framework(text) == expected


def test_framework_names_are_normalised_once_for_every_spelling():
    assert split_framework("sglang 0.5.9") == ("sglang", "0.5.9")
    assert split_framework("vllm==0.11.0") == ("vllm", "0.11.0")
    assert split_framework("SGLang-0.5.9") == ("sglang", "0.5.9")
    assert split_framework("lmsysorg/sglang:v0.5.9") == ("sglang", "0.5.9")
    assert split_framework("1Cat-vLLM 0.0.3") == ("vllm", "0.0.3")
    assert split_framework("trtllm") == ("tensorrt-llm", None)
    assert split_framework("  ") == (None, None)
