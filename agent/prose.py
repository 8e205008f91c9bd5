"""Deployment context named in free text: "Qwen3.5 on B200", "2x RTX 5090D", "H20", "vLLM 0.10".

When no option gives the model, GPU, quantization or framework, a question or a pasted report
usually names them. This module reads them out of the text with the same tables the options use
(``data/gpus.json``, ``data/model_names.json``, ``data/arch_traits.json``); it never guesses beyond
what the text names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# single-word aliases that are ordinary words or too short to trust in prose
_AMBIGUOUS_ALIASES = frozenset({"spark", "thor", "orin", "pro 6000", "pro 5000", "pro 2000"})
_HF_ID = re.compile(r"(?<![\w/.-])([A-Za-z0-9][\w-]{1,38})/([A-Za-z0-9][\w.-]{1,95})")
_NOT_ORGS = frozenset(
    {
        "vllm",
        "sglang",
        "python",
        "usr",
        "lib",
        "site-packages",
        "srt",
        "home",
        "root",
        "data",
        "models",
        "workspace",
        "opt",
        "tmp",
        "dist-packages",
        "model_executor",
        "layers",
        "v1",
    }
)
_QUANT = re.compile(
    r"\b(nvfp4|modelopt[_-]fp4|mxfp4|w4a16|w4a8|w8a8|awq|gptq|int4|fp8|fp4)\b", re.IGNORECASE
)
_FRAMEWORK = re.compile(
    r"\b(sglang|vllm|tensorrt[-_ ]?llm|trt[-_ ]?llm)\b"
    r"(?:[\s:=@-]*(?:version\s+|api server version\s+|v)?(\d+\.\d+(?:\.\d+)*(?:\.post\d+|rc\d+)?))?",
    re.IGNORECASE,
)
_VLLM_VERSION = re.compile(r"vLLM API server version\s+v?(\d+\.\d+(?:\.\d+)*\S*)", re.IGNORECASE)
_SM_TOKEN = re.compile(r"\bsm[_ ]?(\d{2,3})a?\b", re.IGNORECASE)


@dataclass(frozen=True)
class ProseContext:
    model: str | None = None  # the name as written ("Qwen3.5-397B-A17B", "deepseek-ai/DeepSeek-V3")
    model_type: str | None = None  # config.json model_type the name implies
    gpu: str | None = None  # canonical GPU name
    sm: str | None = None
    quantization: str | None = None
    framework: str | None = None
    framework_version: str | None = None

    def described(self) -> str:
        parts = []
        if self.model:
            parts.append(
                f"model {self.model}" + (f" ({self.model_type})" if self.model_type else "")
            )
        if self.gpu or self.sm:
            parts.append(f"GPU {self.gpu or self.sm}" + (f" ({self.sm})" if self.gpu else ""))
        if self.quantization:
            parts.append(f"quantization {self.quantization}")
        if self.framework:
            parts.append(
                f"framework {self.framework}"
                + (f" {self.framework_version}" if self.framework_version else "")
            )
        return ", ".join(parts)


@lru_cache(maxsize=1)
def _model_names() -> tuple[tuple[re.Pattern[str], str], ...]:
    from kb.dataload import load_json_data

    return tuple(
        (re.compile(e["pattern"], re.IGNORECASE), e["model_type"])
        for e in load_json_data("model_names.json")["names"]
    )


def model_type_of_name(name: str | None) -> str | None:
    """'nvidia/GLM-5-NVFP4' -> 'glm_moe_dsa'; None when the name is not a known family."""
    if not name:
        return None
    for rx, model_type in _model_names():
        if rx.search(name):
            return model_type
    return None


def _model(text: str) -> tuple[str | None, str | None]:
    for m in _HF_ID.finditer(text):
        org, name = m.group(1), m.group(2)
        if org.lower() in _NOT_ORGS or name.endswith((".py", ".so", ".json", ".md")):
            continue
        mt = model_type_of_name(name)
        if mt:
            return f"{org}/{name}".rstrip("."), mt
    best: tuple[int, str, str] | None = None
    for rx, model_type in _model_names():
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            # extend to the whole name token ("Qwen3.5" -> "Qwen3.5-397B-A17B-NVFP4")
            end = m.end()
            while end < len(text) and (text[end].isalnum() or text[end] in "-_."):
                end += 1
            best = (m.start(), text[m.start() : end].rstrip("._-"), model_type)
    return (best[1], best[2]) if best else (None, None)


def _gpu(text: str) -> tuple[str | None, str | None]:
    from agent.context import _alias_table, _words

    words = f" {_words(text)} "
    best: tuple[int, str, str] | None = None
    for alias, name, sm in _alias_table():
        if alias in _AMBIGUOUS_ALIASES:
            continue
        pos = words.find(f" {alias} ")
        if pos >= 0 and (best is None or pos < best[0]):
            best = (pos, name, sm)
    if best:
        return best[1], best[2]
    m = _SM_TOKEN.search(text)
    if m:
        return None, f"sm{int(m.group(1))}"
    return None, None


def _quantization(text: str) -> str | None:
    from agent.context import normalise_quantization

    m = _QUANT.search(text)
    return normalise_quantization(m.group(1)) if m else None


def _framework(text: str) -> tuple[str | None, str | None]:
    from kb.frameworks import normalise_framework

    m = _FRAMEWORK.search(text)
    if not m:
        return None, None
    name = normalise_framework(m.group(1))
    version = m.group(2)
    if name == "vllm" and not version:
        v = _VLLM_VERSION.search(text)
        version = v.group(1) if v else None
    return name, version


def read_context(text: str, *, limit: int = 20000) -> ProseContext:
    """Model, GPU, quantization and framework as the text names them (first mention wins)."""
    if not text:
        return ProseContext()
    text = text[:limit]
    model, model_type = _model(text)
    gpu, sm = _gpu(text)
    fw, version = _framework(text)
    return ProseContext(model, model_type, gpu, sm, _quantization(text), fw, version)
