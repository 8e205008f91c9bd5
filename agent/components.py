"""The failure mechanism: which components (kernel libraries, backends, features) a text implicates.

The vocabulary lives in ``data/components.json``. A finding names its components in the front-matter
key ``components``; a query's components are read from its text (error lines, prose), the file paths
of its tracebacks (``vllm/utils/deep_gemm.py``) and its launch command's flags and environment.
A shared component is evidence across models and GPUs: two failures in DeepGEMM's FP8 warmup are
alike even when one is Qwen on an RTX PRO 5000 and the other GLM on a B300.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from kb.errors import DeployKBError
from kb.records import Finding, LaunchConfig


@dataclass(frozen=True)
class Component:
    id: str
    family: str
    label: str
    pattern: re.Pattern[str] | None  # one alternation of the entry's patterns
    flags: tuple[str, ...]  # "--flag", "--flag value", "ENV", "ENV=value"


@dataclass(frozen=True)
class Vocabulary:
    components: tuple[Component, ...]
    families: tuple[tuple[str, str], ...]  # (family id, description), in the file's order

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(c.id for c in self.components)

    def get(self, cid: str) -> Component | None:
        for c in self.components:
            if c.id == cid:
                return c
        return None


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    from kb.dataload import load_json_data

    raw = load_json_data("components.json")
    comps = []
    for i, entry in enumerate(raw.get("components", [])):
        where = f"data/components.json: components[{i}]"
        try:
            cid, family = entry["id"], entry["family"]
        except (KeyError, TypeError):
            raise DeployKBError(f"{where}: needs 'id' and 'family'") from None
        patterns = entry.get("patterns", [])
        try:
            rx = (
                re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
                if patterns
                else None
            )
        except re.error as exc:
            raise DeployKBError(f"{where} ({cid}): bad pattern: {exc}") from None
        comps.append(
            Component(cid, family, entry.get("label", cid), rx, tuple(entry.get("flags", [])))
        )
    families = tuple((k, v) for k, v in raw.get("families", {}).items())
    return Vocabulary(tuple(comps), families)


def from_text(text: str) -> frozenset[str]:
    """Components a text names: error lines, prose, traceback paths."""
    if not text:
        return frozenset()
    return frozenset(c.id for c in vocabulary().components if c.pattern and c.pattern.search(text))


def _flag_keys(flag_text: str) -> tuple[str, str | None]:
    """'--attention-backend flashinfer' -> ('--attention-backend', 'flashinfer');
    'VLLM_ATTENTION_BACKEND=FLASHINFER' -> ('vllm_attention_backend', 'flashinfer')."""
    text = flag_text.strip()
    if "=" in text and not text.startswith("-"):
        name, _, value = text.partition("=")
        return name.lower(), value.lower() or None
    name, _, value = text.replace("=", " ", 1).partition(" ")
    return name.lower(), value.strip().lower() or None


@lru_cache(maxsize=1)
def _flag_index() -> tuple[tuple[str, str | None, str], ...]:
    rows = []
    for c in vocabulary().components:
        for f in c.flags:
            name, value = _flag_keys(f)
            rows.append((name, value, c.id))
    return tuple(rows)


def from_flags(items: Iterable[tuple[str, str | None]]) -> frozenset[str]:
    """Components implicated by (name, value) pairs of flags or environment variables."""
    found = set()
    index = _flag_index()
    for name, value in items:
        n, v = name.lower(), (value or "").lower() or None
        for fname, fvalue, cid in index:
            if fname == n and (fvalue is None or fvalue == v):
                found.add(cid)
    return frozenset(found)


def from_command(command: LaunchConfig | None) -> frozenset[str]:
    if command is None:
        return frozenset()
    items = [(f.name, f.value) for f in command.flags]
    items += [(name, value) for name, value in command.env]
    return from_flags(items)


def _fix_items(finding: Finding) -> list[tuple[str, str | None]]:
    items = []
    for fix in (finding.fix, *finding.alternatives):
        for text in (*fix.add, *fix.changed_to, *fix.remove, *fix.env):
            items.append(_flag_keys(text))
    return items


def of_finding(finding: Finding) -> frozenset[str]:
    """The finding's recorded components; when it records none, what its symptoms, root cause and
    fix name."""
    if finding.components:
        return frozenset(finding.components)
    text = "\n".join([s.text for s in finding.symptoms] + [finding.root_cause or "", finding.title])
    return from_text(text) | from_flags(_fix_items(finding))


def label(cid: str) -> str:
    comp = vocabulary().get(cid)
    return comp.label if comp else cid


def family_of(cid: str) -> str | None:
    comp = vocabulary().get(cid)
    return comp.family if comp else None
