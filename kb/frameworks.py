"""The serving frameworks deploykb knows, and the one reader of a framework's name.

Every place that meets a framework's name (a finding's ``framework.name``, ``--framework``, an
``lm_eval --model`` value, a name in prose) reads it through :func:`normalise_framework`.
"""

from __future__ import annotations

FRAMEWORKS = ("sglang", "vllm", "tensorrt-llm")


def normalise_framework(name: str | None) -> str | None:
    """``"SGLang main"`` -> ``"sglang"``, ``"1Cat-vLLM 0.0.3"`` -> ``"vllm"``, ``"trtllm"`` ->
    ``"tensorrt-llm"``; ``None`` when the text names none of the three."""
    if not name:
        return None
    low = name.lower()
    if "sglang" in low:
        return "sglang"
    if "vllm" in low:
        return "vllm"
    if "tensorrt" in low or "trtllm" in low or "trt-llm" in low:
        return "tensorrt-llm"
    return None
