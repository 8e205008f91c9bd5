"""Coverage of the knowledge base: findings per failure family, per GPU generation, per framework.

Families come from ``data/components.json``: a finding counts in the family of each component it
names, and in three families that are not components: ``oom`` (an ``oom`` symptom), ``rocm`` (an AMD
GPU) and ``multi-node`` (more than 8 GPUs, i.e. more than one node). Working deployments (status
``works`` / ``works-with-flags`` with a working command) are counted apart: they are what the
differential diagnosis diffs against.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kb.records import Finding


@dataclass(frozen=True)
class Coverage:
    families: tuple[tuple[str, str, int], ...]  # (family, description, findings), vocabulary order
    generations: tuple[tuple[str, int], ...]  # (GPU generation, findings), most first
    frameworks: tuple[tuple[str, int], ...]
    working_deployments: int
    total: int

    def gaps(self, minimum: int = 5) -> tuple[str, ...]:
        return tuple(f for f, _, n in self.families if n < minimum)


def families_of(finding: Finding) -> frozenset[str]:
    from agent.components import family_of, of_finding

    fams = {family_of(c) for c in of_finding(finding)}
    if any(s.cls == "oom" for s in finding.symptoms):
        fams.add("oom")
    if (finding.hardware.sm or "").startswith("gfx") or "mi3" in (
        finding.hardware.gpu or ""
    ).lower():
        fams.add("rocm")
    if finding.hardware.count and finding.hardware.count > 8:
        fams.add("multi-node")
    return frozenset(f for f in fams if f)


def generation_of(finding: Finding) -> str:
    from agent.context import _sm_group, sm_of

    sm = sm_of(finding.hardware.sm, finding.hardware.gpu)
    if not sm:
        return _named_generation(finding.hardware.gpu) or "unknown"
    group = _sm_group(sm)
    if group.get("generation") == "blackwell":
        return f"blackwell {sm}"
    return group.get("generation") or sm


def _named_generation(gpu: str | None) -> str | None:
    """The generation a GPU name without a model gives ("NVIDIA Ampere", "AMD (ROCm 7.0)"), from
    ``data/gpus.json`` ``generation_words``; the most specific word wins (Instinct over AMD)."""
    import re

    from agent.context import _gpus

    table = {k: v for k, v in _gpus().get("generation_words", {}).items() if not k.startswith("_")}
    words = set(re.split(r"[^a-z0-9]+", (gpu or "").lower()))
    found = [table[w] for w in table if w in words]
    specific = [g for g in found if "not stated" not in g]
    return (specific or found or [None])[0]


def coverage(findings: Iterable[Finding]) -> Coverage:
    from agent.components import vocabulary
    from kb.frameworks import normalise_framework

    findings = list(findings)
    fam_count: dict[str, int] = {}
    gen_count: dict[str, int] = {}
    fw_count: dict[str, int] = {}
    working = 0
    for f in findings:
        for fam in families_of(f):
            fam_count[fam] = fam_count.get(fam, 0) + 1
        gen = generation_of(f)
        gen_count[gen] = gen_count.get(gen, 0) + 1
        fw = normalise_framework(f.framework.name) or (f.framework.name or "unknown").lower()
        fw_count[fw] = fw_count.get(fw, 0) + 1
        if f.status in ("works", "works-with-flags") and f.working_command:
            working += 1
    families = tuple((fam, desc, fam_count.get(fam, 0)) for fam, desc in vocabulary().families)

    def ranked(d: dict[str, int]) -> tuple[tuple[str, int], ...]:
        return tuple(sorted(d.items(), key=lambda kv: (-kv[1], kv[0])))

    return Coverage(families, ranked(gen_count), ranked(fw_count), working, len(findings))
