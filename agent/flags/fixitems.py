"""A finding's fix items in, canonical changes out: ``--flag value``, ``NAME=value``, pins.

A fix item is one string as a finding writes it (``fix.add``, ``fix.env``, ``fix.pins``, a
``tried_without_effect`` entry, a ``--tried`` option). :func:`parse_fix_item` reads it into one
:class:`FlagChange` per setting, flags named through the registry as a command's are.
"""

from __future__ import annotations

import ast
import re
import shlex

from agent.flags.pycall import py_value
from agent.flags.scan import flag_spans
from agent.flags.tokens import ASSIGN, statements, tokenize
from agent.registry import Registry, load_registry
from kb.errors import CommandParseError
from kb.frameworks import normalise_framework
from kb.records import FlagChange

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_INSTALL = re.compile(
    r"^(?:sudo\s+)?(?:uv\s+pip|pip3?|python3?\s+-m\s+pip|conda|mamba|apt(?:-get)?)\s+install\b"
)
_INSTALL_OPTS_WITH_VALUE = frozenset(
    "-r --requirement -c --constraint -i --index-url --extra-index-url -f --find-links "
    "-t --target --python -p --prefix -n --name -e --editable".split()
)
_PIN = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._\-]*(?:\[[^\]]*\])?)\s*(===|==|>=|<=|~=|!=|>|<)\s*(\S+)$"
)
_IMAGE = re.compile(
    r"^((?:[A-Za-z0-9.\-]+(?::\d+)?/)?[a-z0-9][a-z0-9._\-]*(?:/[a-z0-9][a-z0-9._\-]*)*)"
    r"(?::([\w][\w.\-]{0,127}))?(?:@(sha256:[0-9a-f]{16,}))?$"
)
_CONFIG_LINE = re.compile(r"^([A-Za-z_][\w.]*)\s*:\s+(\S.*)$")
_KWARG = re.compile(r"^([a-z_][a-z0-9_]*)\s*=\s*(.+)$", re.S)
_TRAILING_NOTE = re.compile(r"^(.*?\S)\s+\(([^()]*)\)$")

_Changes = "tuple[FlagChange, ...] | None"  # None: not an item of this kind


def parse_fix_item(
    text: str,
    framework: str | None = None,
    *,
    action: str = "add",
    registry: Registry | None = None,
) -> tuple[FlagChange, ...]:
    """Classify one fix string as a finding writes it; one :class:`FlagChange` per setting.

    * ``--flag value`` (several flags allowed), ``-O.cudagraph_mode=PIECEWISE`` -> kind "flag",
      canonical name; ``note`` says when the written spelling is a renamed one;
    * ``NAME=value`` (``export`` allowed) -> kind "env";
    * ``pkg==1.2``, ``pkg>=1.2``, ``cuDNN>=9.23.1`` -> kind "pin", value ``"==1.2"``;
      ``org/image:tag`` -> kind "pin", value the tag, note "image";
      ``uv pip install ...`` -> kind "pin" per package, note "install command";
    * ``enforce_eager=True`` -> kind "flag" ``--enforce-eager`` (note "python kwarg");
    * ``enable_chunked_prefill: false`` -> kind "flag" named ``enable_chunked_prefill``,
      note "config" (a YAML config key, not a command-line flag).

    A trailing ``(...)`` is kept as the note. Anything else raises :class:`CommandParseError`.
    """
    reg = registry or load_registry()
    fw = normalise_framework(framework) or (framework if framework in reg.frameworks else None)
    s = text.strip()
    if not s:
        raise CommandParseError(
            "fix item is empty: write a flag, NAME=value, a pin or a config line"
        )
    note: str | None = None
    m = _TRAILING_NOTE.match(s)
    if m and not s.startswith("-"):
        s, note = m.group(1), m.group(2)
    for read in (_install, _flags, _pin, _env, _image, _config_line, _kwargs):
        found = read(s, action, note, fw, reg)
        if found is not None:
            return found
    raise CommandParseError(
        f'fix item "{text.strip()}": not a flag, NAME=value, package pin, image or config line'
    )


def _install(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``uv pip install pkg==1.2 other``: a pin per package."""
    if not _INSTALL.match(s):
        return None
    try:
        parts = shlex.split(s)
    except ValueError:
        parts = s.split()
    k = parts.index("install") + 1
    out = []
    while k < len(parts):
        p = parts[k]
        if p in _INSTALL_OPTS_WITH_VALUE:
            k += 2
            continue
        if not p.startswith("-"):
            name, value = _pin_parts(p) or (p, None)
            out.append(
                FlagChange(
                    kind="pin",
                    action=action,
                    name=name,
                    value=value,
                    text=s,
                    note=note or "install command",
                )
            )
        k += 1
    if out:
        return tuple(out)
    raise CommandParseError(f'fix item "{s}": install command names no package')


def _flags(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``--flag value --other``: one change per flag, named as a command's flags are."""
    if not s.startswith("-"):
        return None
    words = [w for ws, _ in statements(tokenize(s, "fix item")) for w in ws]
    items, stray = flag_spans(s, words, fw, reg, 0)
    if stray:
        raise CommandParseError(
            f'fix item "{s}": "{stray[0].text}" is neither a flag nor a flag value'
        )
    out = []
    for it in items:
        rename = reg.rename_note(it.name_written, fw) if fw else None
        item_note = f"written as {it.name_written}: {rename}" if rename else note
        out.append(
            FlagChange(
                kind="flag",
                action=action,
                name=it.flag.name,
                value=it.flag.value,
                text=it.flag.written,
                note=item_note,
            )
        )
    return tuple(out)


def _pin_parts(token: str) -> tuple[str, str | None] | None:
    m = _PIN.match(token)
    if m:
        return m.group(1), m.group(2) + m.group(3)
    return None


def _pin(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``pkg==1.2``, ``cuDNN>=9.23.1``."""
    pin = _pin_parts(s) if " " not in s else None
    if pin is None:
        return None
    return (FlagChange(kind="pin", action=action, name=pin[0], value=pin[1], text=s, note=note),)


def _env(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``NAME=value`` (several, ``export`` allowed): variables by their canonical names."""
    try:
        parts = shlex.split(s)
    except ValueError:
        return None
    if parts and parts[0] == "export":
        parts = parts[1:]
    out = []
    for p in parts:
        m = ASSIGN.match(p)
        if not m or not _ENV_NAME.match(m.group(1)):
            return None
        name = reg.canonical_env(m.group(1), fw)
        out.append(
            FlagChange(
                kind="env",
                action=action,
                name=name,
                value=m.group(2),
                text=f"{m.group(1)}={m.group(2)}",
                note=note,
            )
        )
    return tuple(out) or None


def _image(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``org/image:tag`` or ``image@sha256:...``: a pin of the image."""
    im = _IMAGE.match(s)
    if not (im and (im.group(2) or im.group(3)) and ("/" in im.group(1) or im.group(2))):
        return None
    value = im.group(2) or im.group(3)
    return (FlagChange("pin", action, im.group(1), value, text=s, note=_labelled("image", note)),)


def _config_line(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``enable_chunked_prefill: false``: a YAML config key (TensorRT-LLM's options file)."""
    cm = _CONFIG_LINE.match(s)
    if not cm:
        return None
    value = cm.group(2).strip().strip("'\"")
    return (FlagChange("flag", action, cm.group(1), value, text=s, note=_labelled("config", note)),)


def _labelled(label: str, note: str | None) -> str:
    """The kind of item a change was read from, with the item's own note: ``image (cu130)``."""
    return f"{label} ({note})" if note else label


def _kwargs(s: str, action: str, note: str | None, fw: str | None, reg: Registry) -> _Changes:
    """``enforce_eager=True, max_model_len=8192``: Python keyword arguments as flags."""
    out = []
    for part in _split_top_level(s):
        km = _KWARG.match(part.strip())
        if not km:
            return None
        source_value = km.group(2).strip()
        try:
            value = py_value(ast.parse(source_value, mode="eval").body, source_value)
        except SyntaxError:
            value = source_value
        name = reg.canonical("--" + km.group(1), fw)
        out.append(
            FlagChange(
                kind="flag",
                action=action,
                name=name,
                value=value,
                text=part.strip(),
                note=note or "python kwarg",
            )
        )
    return tuple(out) or None


def _split_top_level(s: str) -> list[str]:
    parts, depth, quote, cur = [], 0, None, []
    for c in s:
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return [p for p in parts if p.strip()]
