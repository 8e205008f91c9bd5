"""The one reader of a framework's name."""

from __future__ import annotations

import pytest

from kb.frameworks import normalise_framework


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
