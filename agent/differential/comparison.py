"""The user's command against the working one: the flags and variables to add, change or
remove (through the flag registry, in the user's release), the descriptive settings apart from
the behavioural ones, the user's settings a record of flags does not list, the checkpoint-format
flags left alone, and the architecture-trait differences that explain a change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent import match as M
from agent.differential.changes import canonical_name
from agent.differential.facts import rules
from kb.records import ArchTraits, FlagChange, LaunchConfig, QueryContext

UNLISTED = "not among the flags recorded for the working deployment: unknown whether it ran with it"
UNLISTED_EXPLAINED = (
    "not among the flags recorded for the working deployment; an architecture-trait difference "
    "makes it worth trying without"
)


@dataclass(frozen=True)
class CommandDiff:
    descriptive: tuple[FlagChange, ...]
    behavioural: tuple[FlagChange, ...]
    notes: tuple[str, ...]
    unlisted: tuple[FlagChange, ...] = ()  # the user's settings a record of flags does not list


def _model_flag(framework: str | None) -> str:
    return {"sglang": "--model-path", "vllm": "--model"}.get(framework or "", "model")


def command_diff(
    current: LaunchConfig,
    working: LaunchConfig,
    *,
    complete: bool = True,
    working_framework: str | None = None,
    checkpoint: str | None = None,
    version: str | None = None,
) -> CommandDiff:
    """What to change in ``current`` so that it launches like ``working``: flags and variables
    to add or change (translated to the user's framework through the registry, with a note, and
    with ``version`` as that release of it takes them), and the user's flags and variables the
    working command does not have, to remove. When ``working`` is not ``complete`` (a record of
    some flags, not a command) the user's settings it does not list are ``unlisted``: unknown,
    never removals. A change that would make a checkpoint-format flag disagree with the user's
    ``checkpoint`` format (``nvfp4``) is not proposed (a note says so). Descriptive settings
    (see ``data/differential.json``) come back apart from the behavioural ones."""
    from agent.flags import diff_changes
    from agent.registry import load_registry
    from kb.frameworks import normalise_framework

    reg = load_registry()
    src = normalise_framework(working.framework or working_framework)
    dst = normalise_framework(current.framework) or src
    src = src or dst
    adds = _as_changes(working, src, reg)
    changes, diff_notes = diff_changes(
        current, adds, source_framework=src, target_framework=dst, target_version=version
    )
    out = list(changes)
    theirs = _not_in_working(current, adds, src, dst, version, reg)
    if complete:
        out += theirs
        unlisted: tuple[FlagChange, ...] = ()
    else:
        unlisted = tuple(
            replace(c, action="keep", note=UNLISTED)
            for c in theirs
            if not rules().is_descriptive(c, dst)
        )
    model = _model_change(current, working, dst)
    if model is not None:
        out.insert(0, model)
    notes = [n for n in diff_notes if not n.startswith(("already set", "already off"))]
    out, conflicts = _format_conflicts(out, dst, checkpoint)
    descriptive, behavioural = _split_descriptive(out, dst)
    return CommandDiff(descriptive, behavioural, tuple(notes + conflicts), unlisted)


def _not_in_working(
    current: LaunchConfig,
    adds: Sequence[FlagChange],
    src: str | None,
    dst: str | None,
    version: str | None,
    reg,
) -> list[FlagChange]:
    """What the user has that the working command has not (its settings as the user's release
    names them), as removals."""
    from agent.flags.diff import in_release, translate

    settings = in_release(translate(adds, src, dst, reg, version, []), dst, version, reg, [])
    names = {(c.kind, c.name) for c in settings}
    theirs: list[FlagChange] = []
    for f in current.flags:
        if ("flag", f.name) not in names:
            theirs.append(FlagChange("flag", "remove", f.name, f.value, text=f.written))
    for name, value in current.env:
        if ("env", reg.canonical_env(name, dst)) not in names:
            theirs.append(FlagChange("env", "remove", name, value, text=f"{name}={value}"))
    return theirs


def _model_change(
    current: LaunchConfig, working: LaunchConfig, framework: str | None
) -> FlagChange | None:
    """The working deployment's model in place of the user's, when the two differ."""
    if not (current.model and working.model):
        return None
    if M.model_key(current.model) == M.model_key(working.model):
        return None
    name = _model_flag(framework)
    return FlagChange(
        "flag", "change", name, working.model, current.model, text=f"{name} {working.model}"
    )


def _format_conflicts(
    changes: list[FlagChange], framework: str | None, checkpoint: str | None
) -> tuple[list[FlagChange], list[str]]:
    """The changes without those that would make a checkpoint-format flag disagree with the
    user's ``checkpoint``, and a note for each one left out."""
    formats = rules().checkpoint_format.get(framework or "", frozenset())
    kept: list[FlagChange] = []
    notes: list[str] = []
    for c in changes:
        why = _format_conflict(c, checkpoint) if c.kind == "flag" and c.name in formats else None
        if why:
            notes.append(why)
        else:
            kept.append(c)
    return kept, notes


def _split_descriptive(
    changes: Sequence[FlagChange], framework: str | None
) -> tuple[tuple[FlagChange, ...], tuple[FlagChange, ...]]:
    """The changes that only name the model or the service, and the behavioural rest."""
    table = rules()
    model_flag = _model_flag(framework)
    desc = tuple(
        c
        for c in changes
        if (c.kind == "flag" and c.name == model_flag) or table.is_descriptive(c, framework)
    )
    return desc, tuple(c for c in changes if c not in desc)


def checkpoint_format(ctx: QueryContext) -> str | None:
    """The user's checkpoint format (``nvfp4``): config.json's, else the context's."""
    from agent.context import normalise_quantization

    given = ctx.arch.quantization if ctx.arch and ctx.arch.quantization else ctx.quantization
    return normalise_quantization(given)


def _format_of(method: str | None) -> str | None:
    """The format a quantization method names (``modelopt_fp4`` -> ``nvfp4``); None: unknown."""
    from agent.context import normalise_quantization

    return normalise_quantization(method)


def _format_conflict(change: FlagChange, checkpoint: str | None) -> str | None:
    """Why a change to a checkpoint-format flag is not proposed, or None when it may be."""
    if not checkpoint:
        return None
    if change.action == "remove":
        if _format_of(change.value) in (checkpoint, None):
            return (
                f"kept {change.text}: it names your checkpoint's format ({checkpoint}), "
                "whatever the working deployment's command says"
            )
        return None
    theirs = _format_of(change.value)
    if theirs and theirs != checkpoint:
        return (
            f"not proposed: {change.text}: it names the working deployment's format ({theirs}), "
            f"not your checkpoint's ({checkpoint})"
        )
    return None


def _as_changes(working: LaunchConfig, framework: str | None, reg) -> list[FlagChange]:
    """The working command's flags and variables as changes that add them, in its own terms."""
    from agent.flags import render_flag

    flags = [
        FlagChange("flag", "add", f.name, f.value, text=render_flag(f, framework, registry=reg))
        for f in working.flags
    ]
    env = [
        FlagChange("env", "add", reg.canonical_env(k, framework), v, text=f"{k}={v}")
        for k, v in working.env
    ]
    return flags + env


def trait_reason(
    change: FlagChange,
    framework: str | None,
    user: ArchTraits | None,
    working: ArchTraits,
    working_name: str,
) -> tuple[str | None, str | None]:
    """(coupling id, sentence) when an architecture-trait difference explains the change."""
    if user is None:
        return None, None
    from kb.dataload import load_json_data as load_data

    labels = load_data("arch_traits.json")["traits"]
    for c in rules().couplings:
        if c.framework and framework and c.framework != framework:
            continue
        if canonical_name(change, framework) not in c.flags:
            continue
        mine, theirs = c.trait in user.traits, c.trait in working.traits
        if mine == theirs:
            continue
        label = labels.get(c.trait, {}).get("label", c.trait)
        who = "your model has" if mine else f"{working_name} has"
        other = working_name if mine else "your model"
        return c.id, f"{who} {label} and {other} has not: {c.reason}"
    return None, None


def explained(
    unlisted: Sequence[FlagChange],
    framework: str | None,
    user: ArchTraits | None,
    working: ArchTraits,
    working_name: str,
) -> tuple[tuple[FlagChange, ...], tuple[FlagChange, ...]]:
    """The user's settings a record of flags does not list, split: those an architecture-trait
    difference explains (removals worth trying: a DSA model's FP8 KV cache against a working
    model without DSA) and the rest, which stay unknown."""
    found: list[FlagChange] = []
    rest: list[FlagChange] = []
    for c in unlisted:
        coupling, _ = trait_reason(c, framework, user, working, working_name)
        if coupling:
            found.append(replace(c, action="remove", note=UNLISTED_EXPLAINED))
        else:
            rest.append(c)
    return tuple(found), tuple(rest)
