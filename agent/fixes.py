"""A new finding's fix from what the engineer has: two launch commands, changes, typed entries.

Two parsed commands are compared by the canonical names their flags were given when parsed
(``--tp`` and ``--tp-size`` are one flag) and by the meaning of their values (``0.80`` is
``0.8``); a typed entry is classified by the parser that reads findings' fixes.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.draft import Draft, short
from kb.errors import InputError
from kb.records import Fix, FlagChange, LaunchConfig

if TYPE_CHECKING:  # pragma: no cover
    from agent.registry import Registry

IDENTICAL_COMMANDS = "--working-cmd is identical to --failing-cmd: nothing to record as a fix"
_TP_FLAGS = ("--tp-size", "--tensor-parallel-size", "--tp_size", "--tp")
_PIP_PIN = re.compile(r"^[A-Za-z0-9][\w.-]*(?:\[[\w,.-]+\])?(?:==|>=|<=|~=|!=|===)[\w.*+!-]+$")


def pins_of(config: LaunchConfig) -> tuple[str, ...]:
    """The container image (``docker run ... org/image:tag``) and the package pins
    (``flashinfer-python==0.6.1``) a parsed command names, as written."""
    try:
        tokens = shlex.split(config.raw, comments=False, posix=True)
    except ValueError:
        tokens = config.raw.split()
    out = [config.image] if config.image else []
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
    from agent.flags import flags_in

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

    changes = _compared(
        "flag",
        flags_in(failing, fw, registry),
        flags_in(working, fw, registry),
        value=lambda flag: flag.value,
        text=lambda name, flag: _flag_text(flag),
        same=lambda name, a, b: _same(registry, name, a, b, fw),
    )
    changes += _compared(
        "env",
        dict(failing.env),
        dict(working.env),
        value=lambda value: value,
        text=lambda name, value: f"{name}={value}",
        same=lambda name, a, b: a == b,
    )
    pins_old = set(pins_of(failing))
    for pin in pins_of(working):
        if pin not in pins_old:
            changes.append(FlagChange("pin", "add", pin, None, text=pin))
    return tuple(changes)


def _compared(
    kind: str,
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    value: Callable[[Any], str | None],
    text: Callable[[str, Any], str],
    same: Callable[[str, str | None, str | None], bool],
) -> list[FlagChange]:
    """Settings of ``kind`` by name, before and after: added or changed (written as the new
    command has them), then removed (as the old one had them)."""
    out: list[FlagChange] = []
    for name, item in new.items():
        if name not in old:
            out.append(FlagChange(kind, "add", name, value(item), text=text(name, item)))
        elif not same(name, value(old[name]), value(item)):
            before = value(old[name])
            out.append(FlagChange(kind, "change", name, value(item), before, text(name, item)))
    for name, item in old.items():
        if name not in new:
            out.append(FlagChange(kind, "remove", name, value(item), text=text(name, item)))
    return out


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
    """``FlagChange``s -> ``Fix``: additions under ``add``, a value changed under ``change``
    (``--mem-fraction-static 0.9 -> 0.82``, old value first), removed flags and variables under
    ``remove``, set variables under ``env``, pins under ``pins``."""
    add: list[str] = []
    change: list[str] = []
    remove: list[str] = []
    env: list[str] = []
    pins: list[str] = []
    for c in changes:
        text = c.text or (c.name if c.value is None else f"{c.name} {c.value}")
        entry = change_entry(c) if c.action == "change" else None
        if c.kind == "pin":
            pins.append(text)
        elif entry is not None:
            change.append(entry)
        elif c.kind == "env":
            (remove if c.action == "remove" else env).append(text)
        else:
            (remove if c.action == "remove" else add).append(text)
    return Fix(
        add=tuple(add), change=tuple(change), remove=tuple(remove), env=tuple(env), pins=tuple(pins)
    )


def change_entry(c: FlagChange) -> str | None:
    """A changed value as a ``fix.change`` entry, in the spelling of the command it ends in:
    ``--mem-fraction-static 0.9 -> 0.82``, ``--dtype=half -> bfloat16``, ``NCCL_ALGO=Ring ->
    Tree``. None when one side has no value to write (a switch turned on)."""
    if c.old is None or c.value is None:
        return None
    if c.kind == "env":
        return f"{c.name}={c.old} -> {c.value}"
    written = (c.text or c.name).strip()
    m = re.match(r"^(-{1,2}[^\s=]+)(=|\s+)", written)
    name, sep = (m.group(1), "=" if m.group(2) == "=" else " ") if m else (c.name, " ")
    return f"{name}{sep}{_shell_word(c.old)} -> {_shell_word(c.value)}"


def _shell_word(value: str) -> str:
    """A value as a command would have it: quoted when it holds a space."""
    return shlex.quote(value) if re.search(r"\s", value) else value


def fix_from_commands(
    failing: LaunchConfig, working: LaunchConfig, registry: Registry | None = None
) -> Fix:
    """The fix that turns the failing command into the working one; identical commands are an
    input error (there is nothing to record)."""
    fix = fix_from_changes(command_changes(failing, working, registry))
    if fix.is_empty():
        raise InputError(IDENTICAL_COMMANDS)
    return fix


def draft_from_command(cfg: LaunchConfig) -> Draft:
    """What a launch command says about the deployment: framework, model, GPU count (its
    tensor-parallel size), quantization, and the version when it runs a framework's image."""
    count = None
    quant = None
    for flag in cfg.flags:
        if flag.name in _TP_FLAGS and flag.value and flag.value.isdigit() and int(flag.value) > 0:
            count = int(flag.value)
        if flag.name == "--quantization" and flag.value:
            quant = flag.value
    version = None
    image = cfg.image
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
    """One typed fix entry -> ``(field, text)``: ``--flag value`` is added, ``--flag OLD -> NEW``
    (or ``NAME=OLD -> NEW``) changed, ``remove --flag`` removed, ``NAME=value`` an environment
    variable, ``pkg==1.2`` or ``org/image:tag`` a pin (classified by the same parser that reads
    findings' fixes)."""
    from agent.flags import parse_fix_item
    from kb.errors import CommandParseError
    from kb.records import change_sides

    text = " ".join(text.split())
    removing = text.lower().startswith("remove ")
    item = text.split(None, 1)[1] if removing else text
    after = None
    if _ARROW.search(item):
        try:
            after = None if removing else change_sides(item)[1]
        except ValueError:
            pass
        if after is None:
            raise InputError(
                f"'{short(text)}': a change is written '--flag OLD -> NEW' or 'NAME=OLD -> NEW'"
            )
    try:
        changes = parse_fix_item(after or item, framework)
    except CommandParseError:
        raise InputError(
            f"'{short(text)}': not a change; write '--flag value', '--flag OLD -> NEW', "
            "'remove --flag', NAME=value, pkg==1.2 or org/image:tag"
        ) from None
    if removing:
        return "remove", item
    if after is not None:
        return "change", item
    kinds = {c.kind for c in changes}
    if kinds == {"env"}:
        return "env", item
    if kinds == {"pin"}:
        return "pins", item
    return "add", item


_ARROW = re.compile(r"\s(?:->|→)(?:\s|$)")


def add_change(fix: Fix, text: str, framework: str | None = None) -> Fix:
    """``fix`` with one typed entry (see ``parse_change``) appended to the right list."""
    name, item = parse_change(text, framework)
    return replace(fix, **{name: (*getattr(fix, name), item)})
