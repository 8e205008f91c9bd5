"""``add``: turn what an engineer has after a fix into a ``Finding``, safely.

Pure functions: a triaged log becomes symptoms, two parsed launch commands become a ``Fix``, a
saved ``ask --json`` answer becomes defaults, the options and the derived facts become a draft,
and the draft becomes a redacted ``Finding`` whose file parses back to the same record. The
command in ``agent/commands/add.py`` does the I/O (reading the log, the Hub, nvidia-smi, prompts,
writing and indexing) around them.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from kb.errors import InputError
from kb.records import (
    STATUSES,
    SYMPTOM_CLASSES,
    Finding,
    Fix,
    FlagChange,
    Framework,
    Hardware,
    LaunchConfig,
    Redaction,
    Symptom,
    Triage,
)
from kb.serialize import ID_RE

if TYPE_CHECKING:  # pragma: no cover
    from agent.registry import Registry

MAX_SYMPTOMS = 8  # symptom lines kept from a triaged log
IDENTICAL_COMMANDS = "--working-cmd is identical to --failing-cmd: nothing to record as a fix"

# Why triage kept a line -> the class a line of that kind gets when its words name none.
_DEFAULT_CLASS = {
    "assertion": "device-assert",
    "exception": "crash",
    "error": "crash",
    "scheduler-exception": "crash",
    "error-log": "crash",
}
_SHELL_PROMPT = re.compile(r"^(?:\$|[\w.@~:/-]*[$#]) ")
_TP_FLAGS = ("--tp-size", "--tensor-parallel-size", "--tp_size", "--tp")


@dataclass(frozen=True)
class Draft:
    """Everything known about the new finding before it is built: options, derived facts, answers.

    ``None`` (or an empty tuple) means "not known yet". ``fix`` holds the changes as written.
    """

    id: str | None = None
    title: str | None = None
    status: str | None = None
    date: str | None = None
    model: str | None = None
    architecture: str | None = None
    quantization: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    sm: str | None = None
    interconnect: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    symptoms: tuple[Symptom, ...] = ()
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
    words occur in failures of every kind, see ``agent.informative``) is not recorded: it would
    make every later log of any failure look like this one.
    """
    from agent.informative import is_boilerplate

    out: list[Symptom] = []
    seen: set[str] = set()
    for line in tri.lines:
        cls = line.cls or _DEFAULT_CLASS.get(line.reason)
        text = one_line(line.text)
        if cls is None or cls not in SYMPTOM_CLASSES or not text or text in seen:
            continue
        if _SHELL_PROMPT.match(text):
            continue  # a pasted command (`$ ssh host 'grep "hit an exception" ...'`), not an error
        if line.reason not in ("assertion", "causal-warning") and is_boilerplate(line.signature):
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
        f"--symptom '{_short(text)}': start it with its class, e.g. 'crash: {_short(text, 30)}' "
        f"(classes: {', '.join(SYMPTOM_CLASSES)})"
    )


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# --- the fix from two launch commands --------------------------------------------------------

_PIP_PIN = re.compile(r"^[A-Za-z0-9][\w.-]*(?:\[[\w,.-]+\])?(?:==|>=|<=|~=|!=|===)[\w.*+!-]+$")


def pins_of(command: str, registry: Registry | None = None) -> tuple[str, ...]:
    """The container image (``docker run ... org/image:tag``) and the package pins
    (``flashinfer-python==0.6.1``) a command line names, as written."""
    from agent.flags import docker_image

    try:
        tokens = shlex.split(command, comments=False, posix=True)
    except ValueError:
        tokens = command.split()
    image = docker_image(command, registry=registry)
    out = [image] if image else []
    out += [t for t in tokens if _PIP_PIN.match(t)]
    return tuple(dict.fromkeys(out))


def command_changes(
    failing: LaunchConfig,
    working: LaunchConfig,
    registry: Registry | None = None,
) -> tuple[FlagChange, ...]:
    """What changed from the failing to the working command: flags added, changed or removed,
    environment variables set or dropped, packages or images pinned.

    Flags are compared by their canonical name in the registry (``--tp`` and ``--tp-size`` are
    one flag) and values by meaning (``0.80`` is ``0.8``); ``text`` keeps the spelling of the
    command it comes from: the working one for additions and changes, the failing one for
    removals.
    """
    if registry is None:
        from agent.registry import load_registry

        registry = load_registry()
    fw_a, fw_b = failing.framework, working.framework
    if fw_a and fw_b and fw_a != fw_b:
        raise InputError(
            f"--failing-cmd runs {fw_a} and --working-cmd runs {fw_b}: the flags cannot be "
            "compared; give the fix with --add-flag/--remove-flag/--env instead"
        )
    fw = fw_b or fw_a

    def by_name(cfg: LaunchConfig) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for flag in cfg.flags:
            out[registry.canonical(flag.name, fw) if fw else flag.name] = flag  # last one wins
        return out

    old, new = by_name(failing), by_name(working)
    changes: list[FlagChange] = []
    for name, flag in new.items():
        before = old.get(name)
        text = _flag_text(flag)
        if before is None:
            changes.append(FlagChange("flag", "add", name, flag.value, text=text))
        elif not _same(registry, name, before.value, flag.value, fw):
            changes.append(FlagChange("flag", "change", name, flag.value, before.value, text))
    for name, flag in old.items():
        if name not in new:
            changes.append(FlagChange("flag", "remove", name, flag.value, text=_flag_text(flag)))

    env_old, env_new = dict(failing.env), dict(working.env)
    for name, value in env_new.items():
        if name not in env_old:
            changes.append(FlagChange("env", "add", name, value, text=f"{name}={value}"))
        elif env_old[name] != value:
            changes.append(
                FlagChange("env", "change", name, value, env_old[name], f"{name}={value}")
            )
    for name, value in env_old.items():
        if name not in env_new:
            changes.append(FlagChange("env", "remove", name, value, text=f"{name}={value}"))

    pins_old = set(pins_of(failing.raw, registry))
    for pin in pins_of(working.raw, registry):
        if pin not in pins_old:
            changes.append(FlagChange("pin", "add", pin, None, text=pin))
    return tuple(changes)


def _same(registry: Registry, name: str, a: str | None, b: str | None, fw: str | None) -> bool:
    if fw:
        return bool(registry.same_value(name, a, b, fw))
    return a == b


def _flag_text(flag: Any) -> str:
    """A flag as its command wrote it, value included (``--tp 8``, ``--dtype=half``)."""
    if flag.written:
        return flag.written.strip()
    return flag.name if flag.value is None else f"{flag.name} {flag.value}"


def fix_from_changes(changes: Iterable[FlagChange]) -> Fix:
    """``FlagChange``s -> ``Fix``: additions and changes under ``add`` (new value included),
    removed flags and variables under ``remove``, set variables under ``env``, pins under
    ``pins``."""
    add: list[str] = []
    remove: list[str] = []
    env: list[str] = []
    pins: list[str] = []
    for c in changes:
        text = c.text or (c.name if c.value is None else f"{c.name} {c.value}")
        if c.kind == "pin":
            pins.append(text)
        elif c.kind == "env":
            (remove if c.action == "remove" else env).append(text)
        else:
            (remove if c.action == "remove" else add).append(text)
    return Fix(add=tuple(add), remove=tuple(remove), env=tuple(env), pins=tuple(pins))


def fix_from_commands(
    failing: LaunchConfig, working: LaunchConfig, registry: Registry | None = None
) -> Fix:
    """The fix that turns the failing command into the working one; identical commands are an
    input error (there is nothing to record)."""
    fix = fix_from_changes(command_changes(failing, working, registry))
    if fix.is_empty():
        raise InputError(IDENTICAL_COMMANDS)
    return fix


def draft_from_command(cfg: LaunchConfig, registry: Registry | None = None) -> Draft:
    """What a launch command says about the deployment: framework, model, GPU count (its
    tensor-parallel size), quantization, and the version when it runs a framework's image."""
    from agent.flags import docker_image

    count = None
    quant = None
    for flag in cfg.flags:
        if flag.name in _TP_FLAGS and flag.value and flag.value.isdigit() and int(flag.value) > 0:
            count = int(flag.value)
        if flag.name == "--quantization" and flag.value:
            quant = flag.value
    version = None
    image = docker_image(cfg.raw, registry=registry) if cfg.raw else None
    if image:
        repo, _, tag = image.split("@", 1)[0].rpartition(":")
        if repo and "/" not in tag:
            version = tag
    return Draft(
        framework=cfg.framework,
        framework_version=version,
        model=cfg.model,
        gpu_count=count,
        quantization=quant,
    )


def parse_change(text: str, framework: str | None = None) -> tuple[str, str]:
    """One typed fix entry -> ``(field, text)``: ``--flag value`` is added, ``remove --flag``
    removed, ``NAME=value`` an environment variable, ``pkg==1.2`` or ``org/image:tag`` a pin
    (classified by the same parser that reads findings' fixes)."""
    from agent.flags import parse_fix_item
    from kb.errors import CommandParseError

    text = " ".join(text.split())
    removing = text.lower().startswith("remove ")
    item = text.split(None, 1)[1] if removing else text
    try:
        changes = parse_fix_item(item, framework)
    except CommandParseError:
        raise InputError(
            f"'{_short(text)}': not a change; write '--flag value', 'remove --flag', NAME=value, "
            "pkg==1.2 or org/image:tag"
        ) from None
    if removing:
        return "remove", item
    kinds = {c.kind for c in changes}
    if kinds == {"env"}:
        return "env", item
    if kinds == {"pin"}:
        return "pins", item
    return "add", item


def add_change(fix: Fix, text: str, framework: str | None = None) -> Fix:
    """``fix`` with one typed entry (see ``parse_change``) appended to the right list."""
    name, item = parse_change(text, framework)
    return replace(fix, **{name: (*getattr(fix, name), item)})


# --- a saved `ask --json` answer -------------------------------------------------------------


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
        if line_text and not _SHELL_PROMPT.match(line_text):
            symptoms.append(Symptom(cls=line["class"], text=line_text))
    tried = tuple(one_line(t) for t in data.get("tried") or [] if isinstance(t, str) and t.strip())
    return Draft(
        tried=tried,
        model=text(ctx.get("model")),
        architecture=text(ctx.get("architecture")),
        quantization=text(ctx.get("quantization")),
        gpu=text(ctx.get("gpu")),
        sm=text(ctx.get("sm")),
        framework=text(ctx.get("framework")),
        framework_version=text(ctx.get("framework_version")),
        symptoms=tuple(symptoms[:MAX_SYMPTOMS]),
        fix=fix,
        related=related,
    )


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
    against = diff.get("against") if isinstance(diff.get("against"), str) else None
    failing = ctx.get("command") if isinstance(ctx.get("command"), str) else None
    return Draft(
        fix=fix_from_changes(chosen.changes) if chosen else Fix(),
        tried=tuple(dict.fromkeys((*prior, *tried))),
        failing_command=failing,
        working_command=chosen.command if chosen else None,
        related=(against,) if against and ID_RE.match(against) else (),
    )


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
    if fix.add or fix.remove or fix.env:
        return "works-with-flags"
    if fix.pins or draft.working_command:
        return "works"
    return "broken"


def default_title(draft: Draft) -> str | None:
    """``GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell: device-assert, fixed by --fp8-gemm-backend
    cutlass``, from whatever of model, GPU, main symptom and fix is known."""
    model = (draft.model or "").rstrip("/").rsplit("/", 1)[-1]
    gpu = (draft.gpu or "").removeprefix("NVIDIA ").strip() or (draft.sm or "")
    if gpu and draft.gpu_count:
        gpu = f"{draft.gpu_count}x {gpu}"
    what = " on ".join(p for p in (model, gpu) if p)
    symptom = draft.symptoms[0].cls if draft.symptoms else None
    fix = draft.fix
    first = next(
        iter((*fix.add, *(f"removing {r}" for r in fix.remove), *fix.env, *fix.pins)), None
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
    body = generate_body(finding)
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
