"""Model and hardware context: architecture traits from config.json, GPU names to SM, similarity.

Everything here is pure except ``detect_gpu``, which runs ``nvidia-smi`` through the ``run`` it
is given. The facts (which config keys mean which trait, which GPU has which compute capability)
live in ``data/arch_traits.json`` and ``data/gpus.json``; this module only applies them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from kb.errors import InputError
from kb.records import ArchTraits

__all__ = [
    "detect_gpu",
    "match_gpu",
    "normalise_model_type",
    "normalise_quantization",
    "normalise_sm",
    "quantization_from_config",
    "quantization_similarity",
    "resolve_gpu",
    "sm_similarity",
    "trait_similarity",
    "traits_for_model_type",
    "traits_from_config",
]


def _data(name: str) -> dict[str, Any]:
    from kb.dataload import load_json_data

    return load_json_data(name)


def _arch() -> dict[str, Any]:
    return _data("arch_traits.json")


def _gpus() -> dict[str, Any]:
    return _data("gpus.json")


# --------------------------------------------------------------------------------------------
# Architecture traits
# --------------------------------------------------------------------------------------------


def normalise_model_type(model_type: str | None) -> str | None:
    """``"GLM-MoE-DSA "`` -> ``"glm_moe_dsa"``; empty -> None."""
    if model_type is None:
        return None
    text = re.sub(r"[\s\-]+", "_", str(model_type).strip().lower())
    return text or None


def _truthy(value: Any) -> bool:
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value > 0
    if isinstance(value, (str, list, tuple, dict)):
        return len(value) > 0
    return bool(value)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "x".join(_fmt(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _ordered(traits: set[str]) -> tuple[str, ...]:
    order = _arch()["trait_order"]
    known = [t for t in order if t in traits]
    return tuple(known + sorted(traits - set(order)))


def _text_view(config: Mapping[str, Any]) -> dict[str, Any]:
    """The text model's fields: ``text_config`` (multimodal wrappers) merged over the top level."""
    view = {k: v for k, v in config.items() if k != "text_config"}
    text = config.get("text_config")
    if isinstance(text, Mapping):
        view.update(text)
    return view


def quantization_from_config(
    config: Mapping[str, Any],
) -> tuple[str | None, str | None, tuple[tuple[str, str], ...]]:
    """``(quantization, scale_format, details)`` from ``quantization_config``.

    The block is read at the top level, else inside ``text_config``. ``quantization`` is a short
    name (``nvfp4``, ``fp8``, ``int4``, ``mxfp4``, ``awq``, ``gptq`` ...), ``scale_format`` the
    checkpoint's ``scale_fmt`` (``ue8m0``) when it declares one.
    """
    qc = config.get("quantization_config")
    text = config.get("text_config")
    if not isinstance(qc, Mapping) and isinstance(text, Mapping):
        qc = text.get("quantization_config")
    if not isinstance(qc, Mapping):
        return None, None, ()
    if isinstance(qc.get("quantization"), Mapping):  # legacy ModelOpt hf_quant_config nesting
        qc = {**qc, **qc["quantization"]}
    table = _arch()["quantization"]
    method = str(qc.get("quant_method") or "").strip().lower()
    algo = str(qc.get("quant_algo") or "").strip()
    details: list[tuple[str, str]] = []
    if method:
        details.append(("quant_method", method))
    if algo:
        details.append(("quant_algo", algo))

    name: str | None = None
    if algo:
        name = table["quant_algo"].get(algo.upper(), algo.lower())
    elif method == "compressed-tensors":
        fmt = str(qc.get("format") or "")
        if fmt:
            details.append(("format", fmt))
        name = table["compressed_tensors_format"].get(fmt) or _compressed_tensors_weights(qc)
    elif method:
        name = table["quant_method"].get(method, method)
    bits = qc.get("bits")
    if method in ("awq", "gptq") and bits is not None:
        details.append(("bits", _fmt(bits)))
    for key in ("fmt", "weight_block_size", "group_size"):
        if qc.get(key) is not None:
            details.append((key, _fmt(qc[key])))
    scale = qc.get("scale_fmt")
    scale_format = str(scale).strip().lower() if scale else None
    return name, scale_format, tuple(details)


def _compressed_tensors_weights(qc: Mapping[str, Any]) -> str | None:
    groups = qc.get("config_groups")
    if not isinstance(groups, Mapping):
        return None
    table = _arch()["quantization"]["compressed_tensors_weights"]
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping):
            continue
        kind = f"{weights.get('type', '')}{weights.get('num_bits', '')}"
        found = table.get(f"{kind}/{weights.get('group_size')}") or table.get(kind)
        if found:
            return found
    return None


def traits_from_config(config: Mapping[str, Any]) -> ArchTraits:
    """Read a model's ``config.json`` (as a dict) into ``ArchTraits``.

    Multimodal wrappers (``kimi_k25``, ``qwen3_5_moe`` ``...ForConditionalGeneration``) keep their
    top-level ``model_type``; the traits come from ``text_config``. When the config names a known
    ``model_type`` but carries none of the trait keys (a trimmed config), the known traits are used.
    """
    if not isinstance(config, Mapping):
        raise InputError(
            f"config.json must be a JSON object, got {type(config).__name__}; "
            "pass the model's config.json"
        )
    view = _text_view(config)
    text = config.get("text_config")
    model_type = normalise_model_type(config.get("model_type"))
    text_type = normalise_model_type(text.get("model_type")) if isinstance(text, Mapping) else None
    model_type = model_type or text_type

    layer_types = view.get("layer_types")
    layer_types = [str(x) for x in layer_types] if isinstance(layer_types, list) else []

    traits: set[str] = set()
    details: list[tuple[str, str]] = []
    seen_labels: set[str] = set()

    def add_detail(label: str, value: Any) -> None:
        if label not in seen_labels and value is not None:
            seen_labels.add(label)
            details.append((label, _fmt(value)))

    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures:
        add_detail("class", architectures[0])
    if text_type and text_type != model_type:
        add_detail("text_model_type", text_type)

    for name in _arch()["trait_order"]:
        rule = _arch()["traits"][name]
        off = any(view.get(k, object()) == v for k, v in rule.get("off_when", {}).items())
        by_key = not off and any(_truthy(view.get(k)) for k in rule.get("keys", []))
        by_layer = [t for t in layer_types if t in rule.get("layer_types", [])]
        if not (by_key or by_layer):
            continue
        traits.add(name)
        for key, label in rule.get("details", {}).items():
            if view.get(key) is not None and not isinstance(view.get(key), Mapping):
                add_detail(label, view.get(key))
        if by_layer:
            add_detail(f"{by_layer[0]}_layers", f"{len(by_layer)} of {len(layer_types)}")

    if not traits and model_type in _arch()["model_types"]:
        traits = set(_arch()["model_types"][model_type]["traits"])

    quantization, scale_format, quant_details = quantization_from_config(config)
    for label, value in quant_details:
        add_detail(label, value)
    return ArchTraits(
        model_type=model_type,
        traits=_ordered(traits),
        details=tuple(details),
        quantization=quantization,
        scale_format=scale_format,
    )


def traits_for_model_type(model_type: str | None) -> ArchTraits:
    """Traits of a known ``model_type`` (a finding's ``architecture``); unknown -> no traits."""
    mt = normalise_model_type(model_type)
    entry = _arch()["model_types"].get(mt) if mt else None
    if entry is None:
        return ArchTraits(model_type=mt)
    return ArchTraits(model_type=mt, traits=_ordered(set(entry["traits"])))


def _family(model_type: str | None) -> str | None:
    entry = _arch()["model_types"].get(model_type or "")
    return entry.get("family") if entry else None


def trait_similarity(a: ArchTraits, b: ArchTraits) -> tuple[float, tuple[str, ...]]:
    """How alike two architectures are, 0..1, and why (shared traits as sentences).

    Half the score is identity: the same ``model_type`` counts fully, the same family (e.g.
    ``deepseek_v32`` and ``glm_moe_dsa``, both DeepSeek MLA/MoE lineage) counts 0.4. The other half
    is the weighted Jaccard overlap of the traits, where kernel-shaping traits (DSA, hybrid linear
    attention, MLA) weigh more than common ones (MoE, MTP).
    """
    reasons: list[str] = []
    type_a, type_b = normalise_model_type(a.model_type), normalise_model_type(b.model_type)
    identity = 0.0
    if type_a and type_a == type_b:
        identity = 1.0
        reasons.append(f"same architecture ({type_a})")
    elif type_a and type_b and _family(type_a) and _family(type_a) == _family(type_b):
        identity = 0.4
        label = _arch()["families"].get(_family(type_a), _family(type_a))
        reasons.append(f"related architectures ({type_a} and {type_b}: {label})")

    rules = _arch()["traits"]
    set_a, set_b = set(a.traits), set(b.traits)
    union = set_a | set_b
    shared = set_a & set_b
    if union:
        weight = lambda t: float(rules.get(t, {}).get("weight", 0.05))  # noqa: E731
        # summed in a fixed order so that the score does not depend on set iteration order
        overlap = sum(weight(t) for t in _ordered(shared)) / sum(weight(t) for t in _ordered(union))
    else:
        overlap = 1.0 if identity else 0.0
    for trait in _ordered(shared):
        reasons.append(rules.get(trait, {}).get("reason", f"both {trait}"))
    score = round(0.5 * identity + 0.5 * overlap, 3)
    return score, tuple(reasons)


def normalise_quantization(text: str | None) -> str | None:
    """Free text (``"nvfp4 (modelopt_fp4)"``, ``"W4A16 (AutoRound)"``, ``"fp8, kv cache fp8"``) -> a
    short name (``nvfp4``, ``int4``, ``fp8``); None when nothing is recognised."""
    if not text:
        return None
    low = str(text).lower()
    for pattern, name in _arch()["quantization"]["aliases"]:
        if re.search(pattern, low):
            return name
    return None


def quantization_similarity(a: str | None, b: str | None) -> float:
    """1.0 for the same quantization, 0.5 for the same family (nvfp4/mxfp4, awq/gptq/int4),
    else 0."""
    qa, qb = normalise_quantization(a), normalise_quantization(b)
    if not qa or not qb:
        return 0.0
    if qa == qb:
        return 1.0
    families = _arch()["quantization"]["families"]
    return 0.5 if families.get(qa) and families.get(qa) == families.get(qb) else 0.0


# --------------------------------------------------------------------------------------------
# GPUs
# --------------------------------------------------------------------------------------------

_SM_RE = re.compile(r"^(?:sm|compute[ _]?capability|cc)?[\s_:=-]*(\d{2,3})([af])?$")
_CC_RE = re.compile(r"^(?:sm|compute[ _]?capability|cc)?[\s_:=-]*(\d{1,2})\.(\d)$")
_GFX_RE = re.compile(r"^gfx\d{3}[a-z0-9]*$")
_SM_IN_TEXT = re.compile(r"\bsm[ _]?(\d{2,3})[af]?\b")
_DROP_WORDS = {"nvidia", "geforce", "tesla", "amd", "instinct", "radeon"}
_COUNT_PREFIX = re.compile(r"^\s*(\d+)\s*[x×*]\s*")
_COUNT_SUFFIX = re.compile(r"(?:\s+[x×*]\s*\d+|\s*\(\s*\d+\s*[x×]\s*\))\s*$")


def normalise_sm(text: str | None) -> str | None:
    """``"sm120"``, ``"sm_120"``, ``"SM120"``, ``"12.0"`` -> ``"sm120"``; ``"sm_100a"`` ->
    ``"sm100"``; AMD targets (``"gfx942"``) pass through; anything else -> None."""
    if text is None:
        return None
    value = str(text).strip().lower()
    if _GFX_RE.match(value):
        return value
    m = _CC_RE.match(value)
    if m:
        return f"sm{int(m.group(1))}{m.group(2)}"
    if value.startswith(("sm", "cc", "compute")):
        m = _SM_RE.match(value)
        if m:
            return f"sm{int(m.group(1))}"
    return None


def _words(text: str) -> str:
    value = _COUNT_SUFFIX.sub("", _COUNT_PREFIX.sub("", text.lower()))
    words = [w for w in re.split(r"[^a-z0-9]+", value) if w and w not in _DROP_WORDS]
    return " ".join(words)


@lru_cache(maxsize=None)
def _alias_table() -> tuple[tuple[str, str, str], ...]:
    """(alias words, canonical name, sm), longest alias first."""
    rows: list[tuple[str, str, str]] = []
    for gpu in _gpus()["gpus"]:
        for alias in [gpu["name"], *gpu.get("aliases", [])]:
            key = _words(alias)
            if key:
                rows.append((key, gpu["name"], gpu["sm"]))
    rows.sort(key=lambda r: -len(r[0]))
    return tuple(rows)


def match_gpu(text: str | None) -> tuple[str | None, str] | None:
    """Lenient lookup for free text such as a finding's ``hardware.gpu``: ``(name, sm)`` or None.

    A GPU alias wins; otherwise an SM token in the text (``"Blackwell (SM100-class)"``) gives
    ``(None, "sm100")``.
    """
    if not text or not str(text).strip():
        return None
    sm = normalise_sm(text)
    if sm:
        return None, sm
    words = f" {_words(str(text))} "
    for alias, name, alias_sm in _alias_table():
        if f" {alias} " in words:
            return name, alias_sm
    m = _SM_IN_TEXT.search(str(text).lower())
    if m:
        return None, f"sm{int(m.group(1))}"
    return None


def sm_of(sm: str | None, gpu: str | None) -> str | None:
    """A deployment's SM: the one recorded (``hardware.sm``), else the one its GPU name gives
    (``"AMD Instinct MI300X / MI325X"`` -> ``"gfx942"``); None when neither says."""
    found = normalise_sm(sm)
    if found:
        return found
    named = match_gpu(gpu) if gpu else None
    return named[1] if named else None


def gpu_count(value: str | None) -> int | None:
    """The count a GPU option starts with (``"8x RTX PRO 6000"`` -> 8), else None."""
    m = _COUNT_PREFIX.match(value or "")
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def resolve_gpu(value: str) -> tuple[str | None, str | None]:
    """A ``--gpu`` value -> ``(canonical name or None, sm)``.

    Accepts names and aliases (``"B200"``, ``"8x B200"``, ``"rtx pro 6000"``,
    ``"NVIDIA RTX PRO 6000 Blackwell Server Edition"``) and compute capabilities (``"sm120"``,
    ``"sm_120"``, ``"12.0"``). A bare compute capability names no single GPU, so the name is None.
    """
    found = match_gpu(value)
    if found is None:
        raise InputError(
            f"--gpu '{value}': unknown GPU; use a name like 'B200' or a compute capability "
            "like 'sm120'"
        )
    if found[1] not in {sm for _, _, sm in _alias_table()}:  # sm999: no GPU has it
        raise InputError(
            f"--gpu '{value}': no GPU deploykb knows has compute capability {found[1]}; use a "
            "name like 'B200' or a compute capability like 'sm120'"
        )
    return found


def detect_gpu(
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
    which: Callable[[str], str | None] = shutil.which,
) -> tuple[str, str] | None:
    """The local GPU as ``(name, sm)`` from ``nvidia-smi``, or None when there is none to ask.

    Uses the first GPU listed (deployments use identical GPUs). Returns None when ``nvidia-smi`` is
    not installed or cannot talk to a driver: detection is a convenience, ``--gpu`` is the answer.
    Drivers too old for the ``compute_cap`` field are asked for the name only.
    """
    exe = which("nvidia-smi")
    if not exe:
        return None
    for fields in ("name,compute_cap", "name"):
        try:
            proc = run(
                [exe, f"--query-gpu={fields}", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        lines = [ln.strip() for ln in (proc.stdout or "").splitlines() if ln.strip()]
        if proc.returncode != 0 or not lines:
            continue
        parts = [p.strip() for p in lines[0].split(",")]
        raw_name = parts[0]
        sm = normalise_sm(parts[1]) if len(parts) > 1 else None
        known = match_gpu(raw_name)
        name = known[0] if known and known[0] else raw_name
        sm = sm or (known[1] if known else None)
        if sm:
            return name, sm
        return None
    return None


def _sm_group(sm: str) -> dict[str, str]:
    return _gpus()["sm_groups"].get(sm, {})


def sm_similarity(a: str | None, b: str | None) -> float:
    """1.0 same target; 0.7 same family (sm120/sm121, sm100/sm103); 0.3 same generation
    (Blackwell datacenter vs consumer, gfx942 vs gfx950); else 0."""
    sa, sb = normalise_sm(a), normalise_sm(b)
    if not sa or not sb:
        return 0.0
    if sa == sb:
        return 1.0
    ga, gb = _sm_group(sa), _sm_group(sb)
    if ga.get("family") and ga.get("family") == gb.get("family"):
        return 0.7
    if ga.get("generation") and ga.get("generation") == gb.get("generation"):
        return 0.3
    return 0.0
