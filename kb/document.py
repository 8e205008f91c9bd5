"""The text a finding is searched by: one document for full-text search and the finding's vector.

The embedding model reads only its first ~256 word pieces, so the most telling fields come first
(title, deployment, symptoms, cause, fix) and the free Markdown story comes last.
"""

from __future__ import annotations

import re

from kb.records import Finding, Fix

_GITHUB_REF = re.compile(r"^(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)#(?P<num>\d+)$")


def symptom_texts(f: Finding) -> list[str]:
    """The verbatim error lines (or silent-failure descriptions), one text per symptom."""
    return [s.text for s in f.symptoms]


def fix_strings(fix: Fix) -> list[str]:
    """Every change a fix records, as written: flags added, values changed (``--flag 0.9 →
    0.82``), flags removed, env vars, pins."""
    from kb.records import shown_change

    return [
        *fix.add,
        *(shown_change(c) for c in fix.change),
        *(f"remove {flag}" for flag in fix.remove),
        *fix.env,
        *fix.pins,
    ]


def document_text(f: Finding) -> str:
    """One plain-text document for a finding: the FTS column and the input of its "doc" vector."""
    hw = f.hardware
    fw = f.framework
    gpu = " ".join(
        part
        for part in (
            f"{hw.count}x" if hw.count else None,
            hw.gpu,
            hw.sm,
            hw.interconnect,
        )
        if part
    )
    lines: list[str] = [f.title]
    for label, value in (
        ("model", f.model),
        ("architecture", f.architecture),
        ("quantization", f.quantization),
        ("GPU", gpu or None),
        ("framework", " ".join(p for p in (fw.name, fw.version) if p) or None),
    ):
        if value:
            lines.append(f"{label}: {value}")
    lines.extend(symptom_texts(f))
    if f.root_cause and f.root_cause not in f.body:
        lines.append(f"root cause: {f.root_cause}")
    if f.tried_without_effect:
        lines.append("tried without effect: " + "; ".join(f.tried_without_effect))
    fixes = fix_strings(f.fix)
    if fixes:
        lines.append("fix: " + "; ".join(fixes))
    for alt in f.alternatives:
        strings = fix_strings(alt)
        if strings:
            note = f" ({alt.note})" if alt.note else ""
            lines.append(f"alternative fix{note}: " + "; ".join(strings))
    if f.body.strip():
        lines.append(f.body.strip())
    return "\n".join(lines)


def source_url(source: str) -> str | None:
    """A link for a source: a URL as is, ``owner/repo#N`` as a GitHub issue, a file path none."""
    source = source.strip()
    if source.startswith(("http://", "https://")):
        return source
    m = _GITHUB_REF.match(source)
    if m:
        return f"https://github.com/{m['owner']}/{m['repo']}/issues/{m['num']}"
    return None
