"""The serving frameworks deploykb knows, and the one reader of a framework's name.

Every place that meets a framework's name (a finding's ``framework.name``, ``--framework``, an
``lm_eval --model`` value, a name in prose) reads it through :func:`normalise_framework`.
"""

from __future__ import annotations

import re

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


def split_framework(value: str | None) -> tuple[str | None, str | None]:
    """'sglang 0.5.9' -> ('sglang', '0.5.9'); 'vllm==0.11.0' -> ('vllm', '0.11.0');
    'SGLang-0.5.9' or 'lmsysorg/sglang:v0.5.9' -> ('sglang', ...): the name through
    :func:`normalise_framework`, the version as written after it."""
    if not value or not value.strip():
        return None, None
    m = re.match(
        r"\s*([A-Za-z0-9][\w./:-]*?)(?:\s*(?:==|@|\s|-(?=\d)|:v?(?=\d))\s*(.+))?\s*$", value
    )
    name, version = (m.group(1), m.group(2)) if m else (value.strip(), None)
    return normalise_framework(name) or name.lower(), (version or None)
