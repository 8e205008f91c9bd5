"""The questions ``deploykb add`` asks about what its options and the derivation left open.

Each prompt is pre-filled with what was derived; a bad entry is reported and skipped, so a typo
does not end the session. The facts a typed answer implies (config.json for a model, the SM of a
GPU) come from :mod:`agent.new_finding`, as for the options.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import typer

from agent.draft import Draft, default_status, default_title, parse_symptom
from agent.new_finding import Request
from agent.saved_answer import AskStep, change_as_tried
from kb.errors import InputError
from kb.records import STATUSES, SYMPTOM_CLASSES, Fix, Symptom

# one question: the draft and the options in, the draft out
Question = Callable[[Draft, Request], Draft]

# how a value derived from the log or the commands is shown at a prompt: through the redaction
# pass (kb.redact.safe_text) unless --no-redact; set by ask_for_the_rest for its questions
_shown: list[Callable[[str], str]] = [lambda text: text]


def choose_step(
    steps: tuple[AskStep, ...], leads: bool, shown: Callable[[str], str] = lambda t: t
) -> str:
    """Which step of a saved answer's plan fixed it: a number, ``match`` or ``none``. The changes
    are printed through ``shown`` (the redaction pass)."""
    typer.echo("The plan in the answer:", err=True)
    for s in steps:
        changes = ", ".join(change_as_tried(c) for c in s.changes)
        typer.echo(f"  {s.step}. " + shown(changes), err=True)
    while True:
        choice = str(
            typer.prompt(
                "Which step fixed it (a number, 'match' for the best match's fix, 'none')",
                default="match" if not leads else "",
                show_default=not leads,
            )
        ).strip()
        if choice in ("match", "none") or choice.isdigit():
            return choice
        typer.echo("  a step number, 'match' or 'none'", err=True)


def ask_for_the_rest(
    draft: Draft, request: Request, shown: Callable[[str], str] = lambda t: t
) -> Draft:
    """Ask for each field the options did not give, pre-filled with what was derived. What was
    derived is printed through ``shown`` (the redaction pass, so that a token in the log is not
    put back on the screen); what the user types is taken as typed."""
    given = {
        "title": request.title,
        # a folder given with --model is asked about when nothing said its Hugging Face id
        "model": request.model_id or (request.model and draft.model),
        "gpu": request.gpu,
        "framework": request.framework,
        "framework_version": request.framework_version,
        "status": request.status,
        "symptoms": request.symptoms,
        "stage": request.failed_at,
        "root_cause": request.root_cause,
        "fix": request.add or request.remove or request.env or request.pins,
        "tried": request.tried,
        "sources": request.sources,
        "notes": request.notes,
    }
    _shown[0] = shown
    try:
        for field, ask in _QUESTIONS:
            if not given[field]:
                draft = ask(draft, request)
    finally:
        _shown[0] = lambda text: text
    return draft


def _asked(field: str, label: str) -> Question:
    """The question for one text field, pre-filled with the draft's value."""
    return lambda draft, _request: replace(draft, **{field: _text(label, getattr(draft, field))})


def _tried(draft: Draft, _request: Request) -> Draft:
    return replace(draft, tried=(*draft.tried, *_items("Tried without effect")))


def _sources(draft: Draft, request: Request) -> Draft:
    from agent.new_finding import is_the_log

    sources = []
    for source in _items("Source (URL, owner/repo#N, a file in the repository)"):
        if is_the_log(source, request.log):
            typer.echo("  skipped: the log is a file on this machine, not a source")
        else:
            sources.append(source)
    return replace(draft, sources=(*draft.sources, *sources))


def _title(draft: Draft, _request: Request) -> Draft:
    return replace(
        draft, title=_text("Title (one line)", draft.title or default_title(draft), True)
    )


def _text(label: str, default: str | None, required: bool = False) -> str | None:
    default = _shown[0](default) if default else default
    while True:
        value = typer.prompt(label, default=default or "", show_default=bool(default))
        value = " ".join(str(value).split()) if "\n" not in str(value) else str(value).strip()
        if value or not required:
            return value or None
        typer.echo("  a value is needed here")


def _items(label: str) -> list[str]:
    out: list[str] = []
    while True:
        value = typer.prompt(f"{label} (empty to finish)", default="", show_default=False)
        if not str(value).strip():
            return out
        out.append(str(value).strip())


def _model(draft: Draft, request: Request) -> Draft:
    """The model's Hugging Face id. A folder typed here is read for config.json, and its id is
    what is recorded: asked for again when nothing in the folder says it."""
    from agent.hub import is_hub_id
    from agent.new_finding import model_facts, unique

    while True:
        unnamed = bool(draft.model_path) and not draft.model
        label = (
            f"Model: the Hugging Face id (org/name) of {draft.model_path}"
            if unnamed
            else "Model (Hugging Face id or local folder)"
        )
        answer = _text(label, draft.model, required=unnamed)
        if not answer or answer == draft.model:
            return replace(draft, model=answer)
        if unnamed and is_hub_id(answer):
            return replace(draft, model=answer)  # the folder's config.json gave the traits
        facts, warning = model_facts(answer)
        if warning and not request.arch:  # with --arch, the architecture is known
            typer.echo(f"warning: {warning}", err=True)
        draft = replace(
            draft,
            model=facts.model if facts.model_path else answer,
            model_path=facts.model_path or draft.model_path,
            architecture=request.arch or facts.architecture or draft.architecture,
            quantization=facts.quantization or draft.quantization,
            tags=unique(draft.tags + facts.tags),
        )
        if draft.model:
            return draft
        typer.echo("  nothing in that folder names its Hugging Face id: type it (org/name)")


def _gpu(draft: Draft, _request: Request) -> Draft:
    from agent.new_finding import gpu_facts

    answer = _text("GPU (name or SM, e.g. '8x RTX PRO 6000' or sm120)", _gpu_label(draft))
    if not answer or answer == _gpu_label(draft):
        return draft
    facts, warning = gpu_facts(answer)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    return replace(draft, gpu=facts.gpu, sm=facts.sm, gpu_count=facts.gpu_count or draft.gpu_count)


def _gpu_label(draft: Draft) -> str | None:
    name = draft.gpu or draft.sm
    if name and draft.gpu_count:
        return f"{draft.gpu_count}x {name}"
    return name


def _symptoms(draft: Draft, _request: Request) -> Draft:
    from agent.logs import classify

    symptoms = draft.symptoms
    if symptoms:
        typer.echo("Symptoms found:")
        for i, s in enumerate(symptoms, 1):
            typer.echo(f"  {i}. {s.cls}: {_shown[0](s.text)}")
        dropped = _numbers("Drop which (e.g. 2,4; 'all'; empty keeps them all)", len(symptoms))
        symptoms = tuple(s for i, s in enumerate(symptoms, 1) if i not in dropped)
    for entry in _items(f"Add a symptom as 'class: error line' ({', '.join(SYMPTOM_CLASSES)})"):
        symptoms = (*symptoms, _prompted(lambda e=entry: parse_symptom(e, classify)))
    return replace(draft, symptoms=tuple(s for s in symptoms if isinstance(s, Symptom)))


def _numbers(label: str, count: int) -> set[int]:
    """Item numbers typed as ``2,4`` or ``2 4`` (``all``: every one; empty: none); anything else
    is reported and asked again."""
    while True:
        answer = str(typer.prompt(label, default="", show_default=False)).strip().lower()
        if answer in ("all", "*"):
            return set(range(1, count + 1))
        parts = [p for p in answer.replace(",", " ").split() if p]
        if all(p.isdigit() and 1 <= int(p) <= count for p in parts):
            return {int(p) for p in parts}
        typer.echo(f"  numbers from 1 to {count}, e.g. 2,4, or 'all'")


def _stage(draft: Draft, _request: Request) -> Draft:
    """The step that failed, pre-filled with what the log shows."""
    from agent.stages import stage_names

    label = f"The step that failed ({', '.join(stage_names())}, or your words)"
    return replace(draft, stage=_text(label, draft.stage))


def _fix(draft: Draft, _request: Request) -> Draft:
    from agent.fixes import add_change

    fix = draft.fix
    if not fix.is_empty():
        typer.echo("Fix found:")
        for line in _fix_lines(fix):
            typer.echo(f"  {_shown[0](line)}")
        if not typer.confirm("Keep it?", default=True):
            fix = Fix()
    label = (
        "Add a change ('--flag value', '--flag OLD -> NEW', 'remove --flag', NAME=value, pkg==1.2)"
    )
    for entry in _items(label):
        fix = _prompted(lambda e=entry, f=fix: add_change(f, e, draft.framework)) or fix
    return replace(draft, fix=fix)


def _status(draft: Draft, _request: Request) -> Draft:
    default = draft.status or default_status(draft)
    while True:
        answer = _text(f"Status ({', '.join(STATUSES)})", default, required=True)
        if answer in STATUSES:
            return replace(draft, status=answer)
        typer.echo(f"  '{answer}' is not one of: {', '.join(STATUSES)}")


def _prompted(make: Any) -> Any:
    """An entry typed at a prompt: a bad one is reported and skipped, not fatal."""
    try:
        return make()
    except InputError as exc:
        typer.echo(f"  skipped: {exc}")
        return None


def _fix_lines(fix: Fix) -> list[str]:
    from kb.records import shown_change

    return [
        *(f"+ {x}" for x in fix.add),
        *(f"~ {shown_change(x)}" for x in fix.change),
        *(f"- {x}" for x in fix.remove),
        *(f"env {x}" for x in fix.env),
        *(f"pin {x}" for x in fix.pins),
    ]


# (the option that answers it, the question), in the order they are asked
_QUESTIONS: tuple[tuple[str, Question], ...] = (
    ("model", _model),
    ("gpu", _gpu),
    ("framework", _asked("framework", "Framework (sglang, vllm, tensorrt-llm)")),
    ("framework_version", _asked("framework_version", "Framework version")),
    ("symptoms", _symptoms),
    ("stage", _stage),
    ("root_cause", _asked("root_cause", "Root cause")),
    ("fix", _fix),
    ("tried", _tried),
    ("status", _status),
    ("sources", _sources),
    ("notes", _asked("notes", "Notes")),
    ("title", _title),
)
