"""A saved ``deploykb ask --json`` answer as the start of a new finding.

Its context, triaged lines and best match give a draft's defaults; its differential's plan, once
the engineer says which step fixed it, gives the fix, the working command and what was tried
without effect.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent.draft import MAX_SYMPTOMS, Draft, is_pasted_command, one_line
from agent.fixes import fix_from_changes
from kb.errors import InputError
from kb.records import SYMPTOM_CLASSES, Fix, FlagChange, Symptom
from kb.serialize import ID_RE


def draft_from_ask(data: Any, origin: str) -> Draft:
    """Defaults from a saved ``deploykb ask --json`` answer: the deployment context the question
    was asked with, the triaged lines as symptoms, and the best match linked as related.

    The best match's changes are taken as the fix (it is the case that helped).
    """
    if not isinstance(data, Mapping) or not isinstance(data.get("matches"), list):
        raise InputError(
            f"--from-ask {origin}: not a saved `deploykb ask --json` answer (no 'matches' list)"
        )
    ctx = data.get("context") if isinstance(data.get("context"), Mapping) else {}

    def text(value: Any) -> str | None:
        return value.strip() or None if isinstance(value, str) else None

    related: tuple[str, ...] = ()
    fix = Fix()
    best = data["matches"][0] if data["matches"] else None
    if isinstance(best, Mapping) and isinstance(best.get("id"), str) and ID_RE.match(best["id"]):
        related = (best["id"],)
        changes = []
        for c in best.get("changes") or []:
            if isinstance(c, Mapping) and c.get("kind") in ("flag", "env", "pin"):
                changes.append(
                    FlagChange(
                        kind=c["kind"],
                        action=str(c.get("action") or "add"),
                        name=str(c.get("name") or ""),
                        value=text(c.get("value")),
                        text=text(c.get("text")) or "",
                    )
                )
        fix = fix_from_changes(changes)
    symptoms = []
    for line in data.get("triage") or []:
        if not isinstance(line, Mapping) or line.get("class") not in SYMPTOM_CLASSES:
            continue
        line_text = one_line(str(line.get("text") or ""))
        if line_text and not is_pasted_command(line_text):
            symptoms.append(Symptom(cls=line["class"], text=line_text))
    tried = tuple(one_line(t) for t in data.get("tried") or [] if isinstance(t, str) and t.strip())
    return Draft(
        tried=tried,
        model=text(ctx.get("model")),
        architecture=text(ctx.get("architecture")),
        quantization=text(ctx.get("quantization")),
        gpu=text(ctx.get("gpu")),
        gpu_count=_gpu_count(ctx),
        sm=text(ctx.get("sm")),
        framework=text(ctx.get("framework")),
        framework_version=text(ctx.get("framework_version")),
        symptoms=tuple(symptoms[:MAX_SYMPTOMS]),
        fix=fix,
        related=related,
    )


def _gpu_count(ctx: Mapping[str, Any]) -> int | None:
    """The GPUs in use: the answer's ``gpu_count`` (``--gpu "8x ..."``), else the
    tensor-parallel size of its command, as ``add --failing-cmd`` reads it."""
    count = ctx.get("gpu_count")
    if isinstance(count, int) and not isinstance(count, bool) and count > 0:
        return count
    command = ctx.get("command")
    if not isinstance(command, str) or not command.strip():
        return None
    from agent.fixes import draft_from_command
    from agent.flags import parse_command
    from kb.errors import CommandParseError

    try:
        return draft_from_command(parse_command(command)).gpu_count
    except CommandParseError:
        return None


@dataclass(frozen=True)
class AskStep:
    """One step of the experiment plan in a saved ``ask --json`` answer."""

    step: int
    changes: tuple[FlagChange, ...]
    command: str | None = None


def plan_from_ask(data: Any, origin: str) -> tuple[tuple[AskStep, ...], bool]:
    """The differential's plan in a saved answer (empty when it has none), and whether the
    differential led the answer (the best match's fix was in place, tried, or unresolved)."""
    diff = data.get("differential") if isinstance(data, Mapping) else None
    if not isinstance(diff, Mapping):
        return (), False
    steps: list[AskStep] = []
    for i, raw in enumerate(diff.get("plan") or [], 1):
        if not isinstance(raw, Mapping) or not isinstance(raw.get("changes"), list):
            raise InputError(f"--from-ask {origin}: differential.plan[{i}] has no 'changes' list")
        changes = tuple(_change_from_json(c) for c in raw["changes"] if isinstance(c, Mapping))
        command = raw.get("command") if isinstance(raw.get("command"), str) else None
        steps.append(AskStep(int(raw.get("step") or i), changes, command))
    return tuple(steps), bool(diff.get("leads"))


def _change_from_json(c: Mapping[str, Any]) -> FlagChange:
    value = c.get("value")
    return FlagChange(
        kind=str(c.get("kind") or "flag"),
        action=str(c.get("action") or "add"),
        name=str(c.get("name") or ""),
        value=value.strip() or None if isinstance(value, str) else None,
        text=str(c.get("text") or "").strip(),
    )


def change_as_tried(change: FlagChange) -> str:
    """A change as a ``tried_without_effect`` entry: ``--flag value``, ``remove --flag value``."""
    text = change.text or (change.name if change.value is None else f"{change.name} {change.value}")
    return f"remove {text}" if change.action == "remove" else text


def draft_from_plan(
    data: Any, steps: tuple[AskStep, ...], fixed_by: int | None, origin: str
) -> Draft:
    """What a plan says once the user knows which step fixed it (``None``: none did): that
    step's changes are the fix and its command the working one; the steps tried before it,
    or all of them, become ``tried_without_effect``, after what the answer already lists as
    tried. The working deployment compared against is linked as related."""
    numbers = [s.step for s in steps]
    if fixed_by is not None and fixed_by not in numbers:
        raise InputError(
            f"--fixed-by {fixed_by}: the plan in {origin} has steps "
            f"{', '.join(map(str, numbers))}; give one of them, 'match' or 'none'"
        )
    before = [s for s in steps if fixed_by is None or s.step < fixed_by]
    chosen = next((s for s in steps if s.step == fixed_by), None)
    ctx = data.get("context") if isinstance(data.get("context"), Mapping) else {}
    diff = data.get("differential") or {}
    prior = tuple(t for t in data.get("tried") or [] if isinstance(t, str) and t.strip())
    tried = tuple(change_as_tried(c) for s in before for c in s.changes)
    if chosen is not None:  # a change of the step that fixed it is in the fix, not a dead end
        prior = _not_in(prior, chosen.changes, ctx)
        tried = _not_in(tried, chosen.changes, ctx)
    against = diff.get("against") if isinstance(diff.get("against"), str) else None
    failing = ctx.get("command") if isinstance(ctx.get("command"), str) else None
    return Draft(
        fix=fix_from_changes(chosen.changes) if chosen else Fix(),
        tried=tuple(dict.fromkeys((*prior, *tried))),
        failing_command=failing,
        working_command=chosen.command if chosen else None,
        related=(against,) if against and ID_RE.match(against) else (),
    )


def _not_in(
    tried: tuple[str, ...], fix: tuple[FlagChange, ...], ctx: Mapping[str, Any]
) -> tuple[str, ...]:
    """The ``tried`` entries that are not one of the ``fix``'s changes."""
    from agent.differential import parse_tried, same_change
    from kb.frameworks import normalise_framework

    framework = normalise_framework(ctx.get("framework"))
    if framework is None and isinstance(ctx.get("command"), str):
        from agent.flags import parse_command
        from kb.errors import CommandParseError

        try:
            framework = parse_command(ctx["command"]).framework
        except CommandParseError:
            pass
    out = []
    for item in tried:
        try:
            changes = parse_tried((item,), framework)
        except InputError:
            changes = ()  # prose: kept as written
        if not changes or not all(any(same_change(c, f, framework) for f in fix) for c in changes):
            out.append(item)
    return tuple(out)


def apply_fixed_by(
    draft: Draft, data: Any, steps: tuple[AskStep, ...], choice: str, origin: str
) -> Draft:
    """``draft`` after the user said which plan step fixed it: a step number, ``none`` (every
    step tried without effect) or ``match`` (the best match's fix, ``draft`` unchanged)."""
    choice = choice.strip().lower()
    if choice == "match":
        return draft
    if choice == "none":
        step = None
    elif choice.isdigit():
        step = int(choice)
    else:
        raise InputError(f"--fixed-by '{choice}': a step number, 'match' or 'none'")
    plan = draft_from_plan(data, steps, step, origin)
    return replace(
        draft,
        fix=plan.fix,
        tried=plan.tried,
        failing_command=draft.failing_command or plan.failing_command,
        working_command=draft.working_command or plan.working_command,
        related=tuple(dict.fromkeys(draft.related + plan.related)),
    )


def read_saved_answer(path: Path) -> Any:
    """The JSON of ``--from-ask FILE``; a file that is not JSON says how to make one."""
    from kb.dataload import read_json

    return read_json(
        path,
        error=InputError,
        origin=f"--from-ask {path}",
        not_json="not JSON; save it with `deploykb ask --json`",
    )


ChooseStep = Callable[[tuple[AskStep, ...], bool], str]  # (steps, the differential led) -> choice


def with_plan_step(
    draft: Draft, data: Any, origin: str, fixed_by: str | None, choose: ChooseStep | None
) -> Draft:
    """Which step of a saved answer's plan fixed it (``fixed_by``, else ``choose``: the question
    put to the engineer; None when nobody can be asked): that step's changes become the fix, the
    steps before it ``tried_without_effect``. Without a plan, or with ``match``, the best match's
    changes stay the fix."""
    steps, leads = plan_from_ask(data, origin)
    if not steps:
        if fixed_by not in (None, "match"):
            raise InputError(f"--fixed-by {fixed_by}: {origin} has no plan (ask with --cmd)")
        return draft
    if fixed_by is None and choose is None:
        if leads:
            numbers = ", ".join(str(s.step) for s in steps)
            raise InputError(
                f"--from-ask {origin} has a plan (steps {numbers}): say which step fixed it with "
                "--fixed-by STEP, or --fixed-by match / none"
            )
        fixed_by = "match"
    if fixed_by is None:
        assert choose is not None
        fixed_by = choose(steps, leads)
    return apply_fixed_by(draft, data, steps, fixed_by, origin)
