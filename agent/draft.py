"""The draft of a new finding: everything known about it before it is built, and the build.

Pure functions: a triaged log becomes symptoms, the options and the derived facts become a
:class:`Draft` (the fix from two commands: :mod:`agent.fixes`; defaults from a saved answer:
:mod:`agent.saved_answer`), the draft gets an id, a title and a status, and becomes a redacted
``Finding`` whose file parses back to the same record. :mod:`agent.new_finding` does the I/O
around them (the log, the Hub, nvidia-smi, the folder written to).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from kb.errors import InputError
from kb.records import (
    STATUSES,
    SYMPTOM_CLASSES,
    Finding,
    Fix,
    Framework,
    Hardware,
    Redaction,
    Symptom,
    Triage,
    shown_change,
)
from kb.serialize import ID_RE

MAX_SYMPTOMS = 8  # symptom lines kept from a triaged log

# Why triage kept a line -> the class a line of that kind gets when its words name none.
_DEFAULT_CLASS = {
    "assertion": "device-assert",
    "exception": "crash",
    "error": "crash",
    "scheduler-exception": "crash",
    "error-log": "crash",
}
# Classes that say what failed: a line of one is a symptom even when its words are common to
# failures of every kind (the ranking's statistics call it boilerplate; add keeps it)
_SPECIFIC = frozenset(SYMPTOM_CLASSES) - {"crash", "warning"}
_SHELL_PROMPT = re.compile(r"^(?:\$|[\w.@~:/-]*[$#]) ")


@dataclass(frozen=True)
class Draft:
    """Everything known about the new finding before it is built: options, derived facts, answers.

    ``None`` (or an empty tuple) means "not known yet". ``fix`` holds the changes as written.
    """

    id: str | None = None
    title: str | None = None
    status: str | None = None
    date: str | None = None
    model: str | None = None  # the Hugging Face id recorded
    # the folder the model was named by (--model, a command's model path): read for config.json,
    # never recorded; the id it stands for is ``model`` once known
    model_path: str | None = None
    architecture: str | None = None
    quantization: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    sm: str | None = None
    interconnect: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    symptoms: tuple[Symptom, ...] = ()
    stage: str | None = None  # the step that failed: "CUDA-graph capture" (see agent.stages)
    root_cause: str | None = None
    fix: Fix = field(default_factory=Fix)
    tried: tuple[str, ...] = ()
    failing_command: str | None = None
    working_command: str | None = None
    sources: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    notes: str | None = None


def merge(base: Draft, over: Draft) -> Draft:
    """``base`` with every field that ``over`` knows replaced (the later source wins)."""
    changes: dict[str, Any] = {}
    for f in fields(Draft):
        value = getattr(over, f.name)
        if isinstance(value, Fix):
            if not value.is_empty():
                changes[f.name] = value
        elif value not in (None, "", ()):
            changes[f.name] = value
    return replace(base, **changes)


# --- symptoms --------------------------------------------------------------------------------


def symptoms_from_triage(tri: Triage, limit: int = MAX_SYMPTOMS) -> tuple[Symptom, ...]:
    """The triaged lines worth recording, most important first, each with a symptom class.

    Lines kept only as context (the lines before a traceback) are recorded when their words
    name a class; error lines whose words name none get the class their kind implies (an
    exception is a crash). Lines with the same text are recorded once. Framework boilerplate
    (``Scheduler hit an exception: Traceback ...``, ``WorkerProc hit an exception.``: lines whose
    words occur in failures of every kind, see ``agent.informative``) is not recorded when it
    names no failure of its own (no class, or only crash/warning): it would make every later log
    of any failure look like this one. A line whose words name a specific failure
    (``RuntimeError: CUDA error: an illegal memory access was encountered``: illegal memory
    access, a device assert, NaN, OOM, a hang...) is the error itself and is recorded, however
    common its words are across failures.
    """
    from agent.informative import is_boilerplate

    out: list[Symptom] = []
    seen: set[str] = set()
    for line in tri.lines:
        cls = line.cls or _DEFAULT_CLASS.get(line.reason)
        text = one_line(line.text)
        if cls is None or cls not in SYMPTOM_CLASSES or not text or text in seen:
            continue
        if is_pasted_command(text):
            continue  # a pasted command (`$ ssh host 'grep "hit an exception" ...'`), not an error
        kept_anyway = line.reason in ("assertion", "causal-warning") or line.cls in _SPECIFIC
        if not kept_anyway and is_boilerplate(line.signature):
            continue
        seen.add(text)
        out.append(Symptom(cls=cls, text=text))
        if len(out) >= limit:
            break
    return tuple(out)


def one_line(text: str) -> str:
    """A symptom line as written, surrounding space dropped; a pasted multi-line text joined."""
    return (
        " ".join(part.strip() for part in text.strip().splitlines())
        if "\n" in text.strip()
        else text.strip()
    )


_CLASS_PREFIX = re.compile(r"^\s*\[?([a-z-]+)\]?\s*:\s*(.+)$", re.S)


def parse_symptom(text: str, classify: Callable[[str], str | None] | None = None) -> Symptom:
    """``"device-assert: Assertion ... failed."`` -> ``Symptom``.

    Without a class prefix the line's words decide (``classify``, the triage classifier);
    when they name no class the user is asked to give one.
    """
    text = one_line(text)
    if not text:
        raise InputError("--symptom: empty symptom; write 'class: text'")
    m = _CLASS_PREFIX.match(text)
    if m and m.group(1) in SYMPTOM_CLASSES:
        return Symptom(cls=m.group(1), text=m.group(2).strip())
    cls = classify(text) if classify is not None else None
    if cls in SYMPTOM_CLASSES:
        return Symptom(cls=cls, text=text)
    raise InputError(
        f"--symptom '{short(text)}': start it with its class, e.g. 'crash: {short(text, 30)}' "
        f"(classes: {', '.join(SYMPTOM_CLASSES)})"
    )


def short(text: str, n: int = 60) -> str:
    """``text`` cut to ``n`` characters for a message, an ellipsis where it was cut."""
    return text if len(text) <= n else text[: n - 1] + "…"


def is_pasted_command(text: str) -> bool:
    """A pasted shell command (``$ ssh host 'grep ...'``), not an error line."""
    return bool(_SHELL_PROMPT.match(text))


# --- id, title, status -----------------------------------------------------------------------


def _slug_part(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def model_slug(model: str | None) -> str:
    """``nvidia/GLM-5-NVFP4`` -> ``glm-5-nvfp4``; a local path gives its last folder name."""
    if not model:
        return ""
    name = model.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
    return _slug_part(name)


def make_id(draft: Draft, taken: Iterable[str] = ()) -> str:
    """A slug from model, SM and the main symptom class (``glm-5-nvfp4-sm120-device-assert``),
    made unique against ``taken`` with ``-2``, ``-3``...; the title's words without a model."""
    parts = [
        model_slug(draft.model),
        draft.sm or "",
        draft.symptoms[0].cls if draft.symptoms else "",
    ]
    base = "-".join(p for p in parts if p)
    if not model_slug(draft.model) and draft.title:
        base = "-".join(p for p in (_slug_part(draft.title), base) if p)
    base = base[:80].rsplit("-", 1)[0] if len(base) > 80 else base
    base = base.strip("-.") or "finding"
    used = set(taken)
    slug, n = base, 2
    while slug in used:
        slug, n = f"{base}-{n}", n + 1
    return slug


def default_status(draft: Draft) -> str:
    """``works-with-flags`` when flags or variables fixed it, ``works`` for a pin alone (or a
    working command with nothing else recorded), else ``broken``."""
    fix = draft.fix
    if fix.add or fix.change or fix.remove or fix.env:
        return "works-with-flags"
    if fix.pins or draft.working_command:
        return "works"
    return "broken"


def default_title(draft: Draft) -> str | None:
    """``GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell: device-assert at the first request, fixed by
    --fp8-gemm-backend cutlass``, from whatever of model (its id, never a folder), GPU, main
    symptom, the step that failed and the fix is known."""
    model = (draft.model or "").rstrip("/").rsplit("/", 1)[-1]
    gpu = (draft.gpu or "").removeprefix("NVIDIA ").strip() or (draft.sm or "")
    if gpu and draft.gpu_count:
        gpu = f"{draft.gpu_count}x {gpu}"
    what = " on ".join(p for p in (model, gpu) if p)
    symptom = draft.symptoms[0].cls if draft.symptoms else None
    if draft.stage:
        from agent.stages import phrase

        symptom = f"{symptom or 'failed'} {phrase(draft.stage)}"
    fix = draft.fix
    first = next(
        iter(
            (
                *fix.add,
                *(shown_change(c) for c in fix.change),
                *(f"removing {r}" for r in fix.remove),
                *fix.env,
                *fix.pins,
            )
        ),
        None,
    )
    tail = ", ".join(
        p
        for p in (symptom, f"fixed by {first}" if first and draft.status != "broken" else None)
        if p
    )
    if not what and not tail:
        return None
    return f"{what}: {tail}" if what and tail else what or tail


def check_status(status: str) -> str:
    status = status.strip()
    if status not in STATUSES:
        raise InputError(f"--status '{status}' is not one of: {', '.join(STATUSES)}")
    return status


# --- building the finding --------------------------------------------------------------------


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = "\n".join(line.rstrip() for line in text.strip().split("\n"))
    return text or None


def _items(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))


def build_finding(draft: Draft) -> Finding:
    """The ``Finding`` for a complete draft (``id``, ``title`` and ``status`` set), with a
    Markdown body made from its fields (``## What happened``, ``## Root cause``, ``## Fix``)
    plus ``## Notes``. Values are normalised the way the parser reads them back."""
    from kb.write import generate_body

    if not draft.id or not ID_RE.match(draft.id):
        raise InputError(
            f"--id '{draft.id}': not a slug; use lower-case letters, digits, '-', '_' and '.'"
        )
    title = " ".join((draft.title or "").split())
    if not title:
        raise InputError("a title is required: pass --title")
    status = check_status(draft.status or "")
    finding = Finding(
        id=draft.id,
        title=title,
        status=status,
        date=draft.date,
        model=_clean(draft.model),
        architecture=_clean(draft.architecture),
        quantization=_clean(draft.quantization),
        hardware=Hardware(
            gpu=_clean(draft.gpu),
            count=draft.gpu_count,
            sm=draft.sm,
            interconnect=_clean(draft.interconnect),
        ),
        framework=Framework(name=_clean(draft.framework), version=_clean(draft.framework_version)),
        symptoms=tuple(
            Symptom(cls=s.cls, text=one_line(s.text)) for s in draft.symptoms if s.text.strip()
        ),
        root_cause=_clean(draft.root_cause),
        fix=Fix(
            add=_items(draft.fix.add),
            change=_items(draft.fix.change),
            remove=_items(draft.fix.remove),
            env=_items(draft.fix.env),
            pins=_items(draft.fix.pins),
        ),
        tried_without_effect=_items(draft.tried),
        failing_command=_clean(draft.failing_command),
        working_command=_clean(draft.working_command),
        sources=_items(draft.sources),
        related=_items(r for r in draft.related if r != draft.id),
        tags=_items(draft.tags),
    )
    failed_at = None
    if draft.stage and draft.stage.strip():
        from agent.stages import phrase

        failed_at = phrase(draft.stage)
    body = generate_body(finding, failed_at=failed_at)
    notes = _clean(draft.notes)
    if notes:
        body = f"{body}\n\n## Notes\n\n{notes}" if body else f"## Notes\n\n{notes}"
    return replace(finding, body=body)


# --- redaction -------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldRedaction:
    """One replacement made in one field of the draft (``symptoms[2]``, ``failing_command``)."""

    field: str
    redaction: Redaction

    def __str__(self) -> str:
        r = self.redaction
        return f"{self.field}: {r.kind} {r.preview()} -> {r.placeholder}"


def redact_draft(draft: Draft) -> tuple[Draft, tuple[FieldRedaction, ...]]:
    """Every free-text field and command of ``draft`` through ``kb.redact.redact``.

    Public links in ``sources`` are left alone by the redactor's own rules; ids (``id``,
    ``related``) are slugs and are not touched.
    """
    from kb.redact import neutralise, redact

    found: list[FieldRedaction] = []

    def one(name: str, value: str | None) -> str | None:
        if not value:
            return value
        out, reds = redact(value)
        found.extend(FieldRedaction(name, r) for r in reds)
        return neutralise(out)  # a pasted ESC is written as \x1b: the file lints clean

    def many(name: str, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(one(f"{name}[{i + 1}]", v) or "" for i, v in enumerate(values))

    fix = draft.fix
    new = replace(
        draft,
        title=one("title", draft.title),
        model=one("model", draft.model),
        gpu=one("gpu", draft.gpu),
        interconnect=one("interconnect", draft.interconnect),
        framework_version=one("framework.version", draft.framework_version),
        symptoms=tuple(
            Symptom(cls=s.cls, text=one(f"symptoms[{i + 1}]", s.text) or "")
            for i, s in enumerate(draft.symptoms)
        ),
        root_cause=one("root_cause", draft.root_cause),
        fix=replace(
            fix,
            add=many("fix.add", fix.add),
            change=many("fix.change", fix.change),
            remove=many("fix.remove", fix.remove),
            env=many("fix.env", fix.env),
            pins=many("fix.pins", fix.pins),
        ),
        tried=many("tried_without_effect", draft.tried),
        failing_command=one("failing_command", draft.failing_command),
        working_command=one("working_command", draft.working_command),
        sources=many("sources", draft.sources),
        tags=many("tags", draft.tags),
        notes=one("notes", draft.notes),
    )
    return new, tuple(found)
