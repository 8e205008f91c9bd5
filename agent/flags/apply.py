"""Changes applied to the user's own text: the corrected command, in the user's layout.

The command was read once, by :func:`agent.flags.launch.parse_command`, which recorded where each
flag and variable stands (:class:`agent.flags.layout.Layout`); the edits are made at those spans.
A change is matched to the command's flags by the canonical name both were given; the registry is
asked only about the change (the setting a release's spelling names, how a setting is typed).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.flags.launch import parse_command
from agent.flags.layout import EnvSpan, FlagSpan, Layout
from agent.flags.spelling import is_config, py_literal, render_flag, shell_quote
from agent.registry import Registry, bool_literal, load_registry
from kb.records import Flag, FlagChange, LaunchConfig

Edit = tuple[int, int, str]  # replace text[start:end] with the string


def apply_changes(
    current: LaunchConfig,
    changes: Sequence[FlagChange],
    *,
    registry: Registry | None = None,
) -> str:
    """The corrected full command: the user's text with changed values replaced, removed flags
    and variables cut out, new flags appended in the user's layout (same line, one per continued
    line, or as keyword arguments), new environment variables added as prefixes (``-e`` for
    ``docker run``), and a pinned image swapped when the command runs that image.
    TensorRT-LLM config keys, package pins, and new variables for a bare flag list cannot be
    expressed in the text and are skipped.
    """
    reg = registry or load_registry()
    text, layout, fw = _read(current, reg)
    edits: list[Edit] = []
    inserts: list[str] = []
    env_prefix: list[str] = []
    pairs = [list(p) for p in layout.model_args.pairs] if layout.model_args else None
    for ch in changes:
        if ch.kind == "flag" and not is_config(ch):
            name = reg.canonical(ch.name, fw)  # ch.name may be a release's own spelling
            if layout.style == "lm_eval" and pairs is not None:
                _apply_model_args(pairs, ch, name, fw, reg)
            else:
                _apply_flag(text, layout, ch, name, fw, reg, edits, inserts)
        elif ch.kind == "env":
            _apply_env(text, layout, ch, fw, reg, edits, env_prefix)
        elif ch.kind == "pin" and layout.image is not None and ch.action != "remove":
            edits.extend(_image_edit(layout, ch))
    if pairs is not None and layout.model_args is not None:
        new = ",".join(f"{k}={v}" if v != "" else k for k, v, _ in pairs)
        edits.append((layout.model_args.value_start, layout.model_args.value_end, shell_quote(new)))
    if inserts:
        edits.append((layout.insert_at, layout.insert_at, "".join(inserts)))
    if env_prefix and layout.style != "flags":  # a bare flag list has nowhere to put them
        edits.append(_env_insert(text, layout, env_prefix))
    return _apply_edits(text, edits)


def _read(current: LaunchConfig, reg: Registry) -> tuple[str, Layout, str | None]:
    """The text to edit, its layout and framework. A config the parser made carries its layout;
    one built otherwise (no ``raw``, or rebuilt with ``replace``) is written out and read once."""
    layout = current.layout
    if isinstance(layout, Layout):
        return current.raw, layout, current.framework
    text = current.raw if current.raw.strip() else _synthesize(current, reg)
    read = parse_command(text, current.framework, registry=reg)
    assert isinstance(read.layout, Layout)
    return text, read.layout, read.framework or current.framework


def _synthesize(current: LaunchConfig, reg: Registry) -> str:
    parts = [f"{k}={shell_quote(v)}" for k, v in current.env]
    if current.program:
        parts.append(current.program)
    if current.model:
        if current.framework == "sglang" or (current.program or "").endswith("launch_server"):
            parts.append(f"--model-path {shell_quote(current.model)}")
        else:
            parts.append(shell_quote(current.model))
    parts += [render_flag(f, current.framework, registry=reg) for f in current.flags]
    return " ".join(parts)


def _apply_flag(
    text: str,
    layout: Layout,
    ch: FlagChange,
    name: str,
    fw: str | None,
    reg: Registry,
    edits: list[Edit],
    inserts: list[str],
) -> None:
    items = [it for it in layout.items if it.flag.name == name and not it.is_model]
    if ch.action == "remove":
        edits.extend(_removal(layout, it) for it in items)
    elif items:
        edits.extend(_value_edit(text, layout, items[-1], ch, fw, reg))
    else:
        # ch.name: the spelling the change was made for (a release may need an old one)
        inserts.append(_render_new(layout, Flag(ch.name, ch.value, ""), fw, reg))


def _apply_env(
    text: str,
    layout: Layout,
    ch: FlagChange,
    fw: str | None,
    reg: Registry,
    edits: list[Edit],
    env_prefix: list[str],
) -> None:
    setting = reg.canonical_env(ch.name, fw)
    found = [e for e in layout.envs if e.setting == setting]
    if ch.action == "remove":
        edits.extend((e.remove_start, _eat_space(text, e.remove_end, e.style), "") for e in found)
    elif found:
        edits.append(_env_edit(text, found[-1], ch.value or ""))
    else:
        env_prefix.append(f"{ch.name}={shell_quote(ch.value or '')}")


def _env_edit(text: str, e: EnvSpan, value: str) -> Edit:
    if e.style == "python":
        return e.start, e.end, f'os.environ["{e.name}"] = {value!r}'
    return e.start, e.end, _rewrite_assignment(text[e.start : e.end], e.name, value)


def _image_edit(layout: Layout, ch: FlagChange) -> list[Edit]:
    image = layout.image
    assert image is not None
    last = image.text.rsplit("/", 1)[-1]
    repo = image.text.rsplit(":", 1)[0] if ":" in last else image.text
    if ch.name == repo and ch.value:
        return [(image.start, image.end, f"{repo}:{ch.value}")]
    return []


def _apply_edits(text: str, edits: list[Edit]) -> str:
    out = text
    last_start = len(text) + 1
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        end = min(end, last_start)
        out = out[:start] + new + out[end:]
        last_start = start
    return out


def _eat_space(text: str, end: int, style: str) -> int:
    if style in ("prefix", "docker", "systemd"):
        while end < len(text) and text[end] in " \t":
            end += 1
    return end


def _rewrite_assignment(token: str, name: str, value: str) -> str:
    """``NAME=old`` -> ``NAME=new`` inside one raw token, keeping surrounding quotes and any
    ``Environment=``/``-e`` prefix."""
    k = token.find(name + "=")
    prefix = token[:k] if k >= 0 else ""
    quote = token[-1] if token[-1:] in "\"'" and token[-1] in prefix else ""
    new = value if quote and quote not in value else shell_quote(value)
    return f"{prefix}{name}={new}{quote}"


def _env_insert(text: str, layout: Layout, assignments: list[str]) -> Edit:
    if layout.style == "python":
        lines = "".join(
            f'os.environ["{a.split("=", 1)[0]}"] = {a.split("=", 1)[1]!r}\n' for a in assignments
        )
        prefix = "" if "import os" in text else "import os\n"
        return 0, 0, prefix + lines
    if layout.docker_run_end is not None:
        at = layout.docker_run_end
        return at, at, "".join(f" -e {a}" for a in assignments)
    at = layout.program_start if layout.program_start is not None else 0
    return at, at, " ".join(assignments) + " "


def _removal(layout: Layout, it: FlagSpan) -> Edit:
    if it.style == "kwarg":
        idx = layout.items.index(it)
        if idx > 0:
            return layout.items[idx - 1].end, it.end, ""
        nxt = layout.items[idx + 1].start if idx + 1 < len(layout.items) else it.end
        return it.start, nxt, ""
    return it.prev_end, it.end, ""


def _value_edit(
    text: str, layout: Layout, it: FlagSpan, ch: FlagChange, fw: str | None, reg: Registry
) -> list[Edit]:
    """The edits that give the flag ``it`` the value (and the spelling) of the change."""
    if it.style == "kwarg":
        return [(it.value_start or it.start, it.end, py_literal(ch.value, layout.py_quote))]
    if reg.takes_value(it.flag.name, fw) is False:
        return [_switch_edit(layout, it, ch, fw, reg)]
    new = shell_quote(ch.value) if ch.value is not None else ""
    if reg.nargs(it.flag.name, fw) == "+" and ch.value:
        new = " ".join(shell_quote(v) for v in ch.value.split())
    name = it.name_written
    if not reg.is_registered_spelling(name, fw):  # e.g. --fp8-gemm-runner-backend: fix it too
        name = it.flag.name
    if ch.name.startswith("-") and (ch.name != it.flag.name or ch.old == ch.value):
        name = ch.name  # the spelling of the user's release, or a change of spelling only
    if it.eq:
        return [(it.start, it.end, f"{name}={new}")]
    if it.value_start is not None and it.value_end is not None:
        edits = [(it.value_start, it.value_end, new)]
        if name != it.name_written:
            edits.append((it.start, it.start + len(it.name_written), name))
        return edits
    return [(it.end, it.end, f" {new}")] if new else [(it.start, it.end, text[it.start : it.end])]


def _switch_edit(
    layout: Layout, it: FlagSpan, ch: FlagChange, fw: str | None, reg: Registry
) -> Edit:
    """A switch turned on (written without its ``--no-``) or off (``--no-x``, else removed)."""
    if bool_literal(ch.value) is False:
        spec = reg.spec(it.flag.name, fw)
        if spec is not None and spec.negatable:
            return it.start, it.end, "--no-" + spec.name[2:]
        return _removal(layout, it)
    name = it.name_written
    if name.startswith("--no-"):
        name = "--" + name[5:]
    return it.start, it.end, name


def _render_new(layout: Layout, flag: Flag, fw: str | None, reg: Registry) -> str:
    if layout.style == "python":
        kw = flag.name.lstrip("-").replace("-", "_")
        return (
            f"{layout.flag_sep}{kw}={py_literal(flag.value, layout.py_quote)}{layout.flag_suffix}"
        )
    return layout.flag_sep + render_flag(flag, fw, registry=reg)


def _apply_model_args(
    pairs: list[list[str]], ch: FlagChange, name: str, fw: str | None, reg: Registry
) -> None:
    """The change made in ``--model_args`` (each pair: key as written, value, canonical name)."""
    key = name.lstrip("-").replace("-", "_")
    hits = [p for p in pairs if p[2] == name]
    value = "True" if ch.value is None else ch.value
    if bool_literal(ch.value) is False and reg.takes_value(name, fw) is False:
        value = "False"
    if ch.action == "remove":
        for p in hits:
            pairs.remove(p)
    elif hits:
        hits[-1][1] = value
    else:
        pairs.append([key, value, reg.canonical("--" + key, fw)])
