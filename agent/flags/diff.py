"""What a finding's fix changes in the user's command, in the user's framework and release.

The fix's items are read into canonical changes (:mod:`agent.flags.fixitems`), translated to the
target framework through the registry's equivalents, and compared with the command's canonical
flags (:func:`agent.flags.launch.flags_in`): a setting already in place is left out with a note,
one with another value becomes a "change", and with a target release every flag is spelled as
that release accepts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.flags.fixitems import parse_fix_item
from agent.flags.launch import flags_in
from agent.flags.spelling import is_config, render_flag
from agent.registry import DISPLAY, Registry, bool_literal, load_registry
from kb.frameworks import normalise_framework
from kb.records import Fix, Flag, FlagChange, LaunchConfig, change_sides


def diff(current: LaunchConfig | None, fix: Fix, **options: Any) -> tuple[FlagChange, ...]:
    """What to change in ``current`` to apply a finding's ``fix``.

    Flags absent from ``current`` are "add", present with another value "change" (``old`` holds
    the user's value), ``fix.remove`` items present in ``current`` "remove"; items already in
    place are left out. With ``current=None`` every item is listed (a removal paired with an add
    of the same flag becomes one "change"). Both sides are compared through the registry, and
    ``text`` uses the target framework's canonical spelling; when ``finding_framework`` differs
    from the target (``target_framework``, else the command's framework) the fix is translated
    and ``note`` says so; items with no equivalent are left out (see :func:`diff_with_notes`).
    With ``target_version`` (e.g. ``"0.5.9"``) flags are spelled as that release of the target
    framework accepts them, and ``note`` warns about a flag or value that release lacks. The
    keyword ``options`` are those of :func:`diff_with_notes`.
    """
    return diff_with_notes(current, fix, **options)[0]


def diff_with_notes(
    current: LaunchConfig | None,
    fix: Fix,
    *,
    finding_framework: str | None = None,
    target_framework: str | None = None,
    registry: Registry | None = None,
    target_version: str | None = None,
) -> tuple[tuple[FlagChange, ...], tuple[str, ...]]:
    """:func:`diff` plus one line per item left out (already set, nothing to remove, no
    equivalent in the target framework)."""
    reg = registry or load_registry()
    src = normalise_framework(finding_framework)
    dst = normalise_framework(target_framework) or (current.framework if current else None) or src
    src = src or dst

    def read(items: Iterable[str], action: str) -> list[FlagChange]:
        return [
            ch for item in items for ch in parse_fix_item(item, src, action=action, registry=reg)
        ]

    def changed(entry: str) -> list[FlagChange]:
        """A ``fix.change`` entry: against a command, its new setting (the command decides
        add or change); listed alone, a "change" from the entry's old value."""
        before, after = change_sides(entry)
        if current is not None:
            return read([after], "add")
        old = {(c.kind, c.name): c.value for c in read([before], "add")}
        return [
            replace(c, action="change", old=old.get((c.kind, c.name))) for c in read([after], "add")
        ]

    return diff_changes(
        current,
        read(fix.add, "add")
        + [c for e in fix.change for c in changed(e)]
        + read([*fix.env, *fix.pins], "add"),
        read(fix.remove, "remove"),
        source_framework=src,
        target_framework=dst,
        registry=reg,
        target_version=target_version,
    )


def diff_changes(
    current: LaunchConfig | None,
    adds: Sequence[FlagChange],
    removes: Sequence[FlagChange] = (),
    *,
    source_framework: str | None,
    target_framework: str | None,
    registry: Registry | None = None,
    target_version: str | None = None,
) -> tuple[tuple[FlagChange, ...], tuple[str, ...]]:
    """:func:`diff_with_notes` for changes already read (in ``source_framework``'s terms): the
    changes to make in ``current`` (in ``target_framework``'s) and the notes on what was left out."""
    reg = registry or load_registry()
    src, dst = source_framework, target_framework
    notes: list[str] = []
    release = reg.release(dst, target_version) if target_version else None
    version = release.version if release is not None else None
    adds = in_release(translate(adds, src, dst, reg, version, notes), dst, version, reg, notes)
    removes = translate(removes, src, dst, reg, version, notes)
    paired: dict[tuple[str, str], FlagChange] = {}
    add_keys = {_key_of(a) for a in adds}
    leftover: list[FlagChange] = []
    for rem in removes:
        key = _key_of(rem)
        if key in add_keys and key not in paired:
            paired[key] = rem
        else:
            leftover.append(rem)
    adds = [_canonical_text(a, dst, reg) for a in adds]
    if current is None:
        changes = [_paired(a, paired) for a in adds] + leftover
    else:
        against = _Against(
            flags_in(current, dst, reg),
            _env_in(current, dst, reg),
            current.image,
            dst,
            reg,
            version,
            notes,
        )
        changes = [c for a in adds if (c := _compare_add(a, against))]
        changes += [c for r in leftover if (c := _compare_remove(r, against))]
    if version is not None:
        changes = [_for_release(ch, dst, version, reg) for ch in changes]
    return tuple(changes), tuple(notes)


def translate(
    changes: Iterable[FlagChange],
    src: str | None,
    dst: str | None,
    reg: Registry,
    version: str | None,
    notes: list[str],
) -> list[FlagChange]:
    """The changes in ``dst``'s terms; each one without an equivalent there adds a note."""
    out = []
    for ch in changes:
        moved, why = _retarget(ch, src, dst, reg, version)
        if moved is None:
            notes.append(why or f"dropped: {ch.text}")
        else:
            out.append(moved)
    return out


def in_release(
    changes: Iterable[FlagChange],
    fw: str | None,
    version: str | None,
    reg: Registry,
    notes: list[str],
) -> list[FlagChange]:
    """The changes that add a setting, as release ``version`` of ``fw`` takes it: a flag it
    does not have yet becomes the variable it reads instead, a variable it no longer reads the
    flag that replaced it; one with no such counterpart is left out, with a note saying why
    (the corrected command must launch on that release). Removals pass through."""
    if version is None or fw is None:
        return list(changes)
    out = []
    for ch in changes:
        moved, why = _in_release(ch, fw, version, reg)
        if moved is None:
            notes.append(f"dropped: {ch.text}: {why}")
        else:
            out.append(moved)
    return out


def _in_release(
    ch: FlagChange, fw: str, version: str, reg: Registry
) -> tuple[FlagChange | None, str | None]:
    shown = f"{DISPLAY.get(fw, fw)} {version}"
    if ch.action == "remove" or ch.kind not in ("flag", "env") or is_config(ch):
        return ch, None
    if ch.kind == "flag":
        if not reg.is_known(ch.name, fw) or reg.spelling_in(ch.name, fw, version) is not None:
            return ch, None
        missing = (
            next((i.message for i in reg.version_issues(ch.name, ch.value, fw, version)), None)
            or f"{shown} does not accept {ch.name}"
        )
        eq = reg.flag_env_counterpart(ch.name, ch.value, fw, version)
        if eq is None:
            return None, f"{missing}, and no setting of {shown} is known to do the same"
        why = missing.split("; ")[0] + f"; {eq.note}"
        note = "; ".join(n for n in (ch.note, why) if n)
        text = f"{eq.name}={eq.value}"
        return FlagChange("env", ch.action, eq.name, eq.value, text=text, note=note), None
    if reg.env_in(ch.name, fw, version) is not False:
        return ch, None
    eq = reg.env_counterpart(ch.name, ch.value, fw, version)
    if eq is None:
        return None, (
            f"{shown} does not read {reg.canonical_env(ch.name, fw)}, and no setting of "
            f"{shown} is known to do the same"
        )
    text = render_flag(Flag(eq.name, eq.value, ""), fw, registry=reg)
    note = "; ".join(n for n in (ch.note, eq.note) if n)
    return FlagChange("flag", ch.action, eq.name, eq.value, text=text, note=note), None


def _retarget(
    ch: FlagChange, src: str | None, dst: str | None, reg: Registry, version: str | None = None
) -> tuple[FlagChange | None, str | None]:
    """The change in the target framework's terms, or (None, why it was dropped)."""
    if src is None or dst is None or src == dst:
        return ch, None
    if ch.kind == "pin":
        owner = (
            reg.framework_of_image(ch.name)
            if ch.note and ch.note.startswith("image")
            else reg.framework_of_package(ch.name)
        )
        if owner is not None and owner != dst:
            return None, f"dropped: {ch.text} is a {owner} pin, not for {dst}"
        return ch, None
    if ch.kind == "env":
        owner = reg.env_framework(ch.name)
        if owner is None or owner == dst:
            return ch, None
        eq = (
            reg.equivalent(ch.name, ch.value, src, dst, kind="env", target_version=version)
            if owner == src
            else None
        )
    else:
        eq = reg.equivalent(
            ch.name,
            ch.value,
            src,
            dst,
            kind="config" if is_config(ch) else "flag",
            target_version=version,
        )
    if eq is None:
        return None, f"no {dst} equivalent known for {src} {ch.text}"
    if eq.kind == "env":
        text = f"{eq.name}={eq.value}"
        return FlagChange(
            kind="env", action=ch.action, name=eq.name, value=eq.value, text=text, note=eq.note
        ), None
    flag = Flag(eq.name, eq.value, "")
    note = eq.note + ("; config key" if eq.kind == "config" else "")
    return FlagChange(
        kind="flag",
        action=ch.action,
        name=eq.name,
        value=eq.value,
        text=render_flag(flag, dst, registry=reg),
        note=note,
    ), None


def _key_of(ch: FlagChange) -> tuple[str, str]:
    if ch.kind == "pin":
        return "pin", ch.name.lower().replace("_", "-")
    return ch.kind, ch.name


def _paired(add: FlagChange, paired: dict[tuple[str, str], FlagChange]) -> FlagChange:
    """Without a command: an add and a removal of the same setting are one "change"."""
    rem = paired.get(_key_of(add))
    return add if rem is None else replace(add, action="change", old=rem.value)


@dataclass(frozen=True)
class _Against:
    """What the user's command has, by canonical name, in the target framework (and release)
    the fix is compared in; ``notes`` collects what the comparison leaves out."""

    flags: dict[str, Flag]
    env: dict[str, str]
    image: str | None
    dst: str | None
    reg: Registry
    version: str | None
    notes: list[str]


def _env_in(config: LaunchConfig, framework: str | None, reg: Registry) -> dict[str, str]:
    """The command's variables by the names ``framework`` reads them by (``SGL_X`` is
    ``SGLANG_X`` to SGLang): the target framework decides, as for the fix's own variables."""
    return {reg.canonical_env(name, framework): value for name, value in config.env}


def _compare_add(add: FlagChange, have: _Against) -> FlagChange | None:
    """The change an add makes to the command, or None (with a note) when it is in place."""
    if add.kind == "flag":
        return _compare_flag(add, have)
    if add.kind == "env":
        value = have.env.get(add.name)
        if value is None:
            return add
        if value == add.value:
            have.notes.append(f"already set: {add.name}={value}")
            return None
        return replace(add, action="change", old=value)
    if have.image and add.note and add.note.startswith("image"):
        if have.image == f"{add.name}:{add.value}" or have.image == add.text:
            have.notes.append(f"already set: image {have.image}")
            return None
    return add


def _compare_flag(add: FlagChange, have: _Against) -> FlagChange | None:
    reg, dst, version = have.reg, have.dst, have.version
    cur = have.flags.get(add.name)
    switch = reg.takes_value(add.name, dst) is False
    if cur is None:
        if switch and bool_literal(add.value) is False:
            have.notes.append(f"already off: {add.text}")
            return None
        return add
    if reg.same_value(add.name, cur.value, add.value, dst):
        written_name = cur.written.split(None, 1)[0].split("=", 1)[0]
        issues = reg.version_issues(written_name, None, dst, version) if version else ()
        if dst and (issues or not reg.is_registered_spelling(written_name, dst)):
            why = issues[0].message if issues else reg.rename_note(written_name, dst)
            note = f"your command spells it {written_name}: {why}"
            return replace(add, action="change", old=cur.value, note=note)
        have.notes.append(f"already set: {cur.written}")
        return None
    if switch and bool_literal(add.value) is False and not _negatable(add, dst, reg):
        return replace(add, action="remove", value=None, text=cur.written)
    return replace(add, action="change", old=cur.value if cur.value is not None else "true")


def _compare_remove(rem: FlagChange, have: _Against) -> FlagChange | None:
    """The removal a fix's ``remove`` item makes, or None (with a note) when there is none."""
    if rem.kind == "pin":
        return rem
    if rem.kind == "flag":
        cur = have.flags.get(rem.name)
        if cur is None:
            have.notes.append(f"not in your command: {rem.text} (nothing to remove)")
        elif rem.value is not None and not _unknown(rem.value) and not _same(have, rem, cur):
            have.notes.append(f"your command has {cur.written}, not {rem.text}: left as is")
        else:
            return replace(rem, value=cur.value, text=cur.written)
        return None
    value = have.env.get(rem.name)
    if value is None:
        have.notes.append(f"not in your command: {rem.text} (nothing to remove)")
    elif rem.value is not None and not _unknown(rem.value) and value != rem.value:
        have.notes.append(f"your command has {rem.name}={value}, not {rem.text}: left as is")
    else:
        return replace(rem, value=value, text=f"{rem.name}={value}")
    return None


def _unknown(value: str) -> bool:
    """A value written ``<...>`` (``NCCL_BUFFSIZE=<too-large-value>``): the source names the setting
    to drop but not its value, so the item removes it whatever the user set."""
    return value.startswith("<") and value.endswith(">") and "<" not in value[1:-1]


def _same(have: _Against, rem: FlagChange, cur: Flag) -> bool:
    return have.reg.same_value(rem.name, cur.value, rem.value, have.dst)


def _for_release(ch: FlagChange, fw: str | None, version: str, reg: Registry) -> FlagChange:
    """A flag change spelled as release ``version`` accepts it (its name for the setting there,
    a value alias it knows), with a warning in ``note`` when that release lacks the flag or
    the value."""
    if ch.kind != "flag" or is_config(ch) or ch.action == "remove":
        return ch
    warnings: list[str] = []
    name, value = ch.name, ch.value
    for issue in reg.version_issues(ch.name, ch.value, fw, version):
        if issue.kind == "renamed" and issue.spelling:
            name = issue.spelling
            warnings.append(f"{issue.message}")
        else:
            warnings.append(f"warning: {issue.message}")
    if reg.spelling_in(ch.name, fw, version) is not None:
        fixed = reg.value_in(ch.name, ch.value, fw, version)
        if fixed != value:
            warnings.append(f"{ch.value} is {fixed} in {fw} {version}")
            value = fixed
    if name == ch.name and value == ch.value and not warnings:
        return ch
    text = render_flag(Flag(name, value, ""), fw, registry=reg)
    note = "; ".join([n for n in (ch.note, *warnings) if n])
    return replace(ch, name=name, value=value, text=text, note=note or None)


def _canonical_text(ch: FlagChange, fw: str | None, reg: Registry) -> FlagChange:
    """``text`` in the target framework's canonical spelling (the written form stays in the
    note when it differs)."""
    if ch.kind == "env":
        return replace(ch, text=f"{ch.name}={ch.value}")
    if ch.kind != "flag" or is_config(ch):
        return ch
    return replace(ch, text=render_flag(Flag(ch.name, ch.value, ""), fw, registry=reg))


def _negatable(ch: FlagChange, fw: str | None, reg: Registry) -> bool:
    spec = reg.spec(ch.name, fw)
    return bool(spec and spec.negatable)
