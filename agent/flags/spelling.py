"""A setting as it is typed: a flag on a command line, a keyword argument, a config key."""

from __future__ import annotations

import re
import shlex

from agent.flags.tokens import NUMBER
from agent.registry import Registry, bool_literal, load_registry
from kb.frameworks import normalise_framework
from kb.records import Flag, FlagChange


def render_flag(
    flag: Flag, framework: str | None = None, *, registry: Registry | None = None
) -> str:
    """A flag as it would be typed: ``--tp-size 8``, ``--enforce-eager``, ``--no-x`` (a
    negatable switch turned off), ``--kv-transfer-config '{"a": 1}'``, ``key: value`` for a
    config key."""
    if not flag.name.startswith("-"):
        return f"{flag.name}: {flag.value}" if flag.value is not None else flag.name
    if flag.value is None:
        return flag.name
    reg = registry or load_registry()
    fw = normalise_framework(framework)
    if bool_literal(flag.value) is False and fw and reg.takes_value(flag.name, fw) is False:
        spec = reg.spec(flag.name, fw)
        if spec is not None and spec.negatable:
            return "--no-" + spec.name[2:]
    if fw and reg.nargs(flag.name, fw) == "+":
        return " ".join([flag.name, *(shell_quote(v) for v in flag.value.split())])
    return f"{flag.name} {shell_quote(flag.value)}"


def is_config(change: FlagChange) -> bool:
    """A TensorRT-LLM config key (``enable_chunked_prefill``), not a command-line flag."""
    return change.kind == "flag" and not change.name.startswith("-")


def shell_quote(value: str) -> str:
    """``value`` as one shell word: as written when it needs no quotes."""
    if value and re.fullmatch(r"[\w@%+=:,./\-\[\]$]+", value):
        return value
    return shlex.quote(value)


def py_literal(value: str | None, quote: str = '"') -> str:
    """A flag value as a Python keyword argument's value (``True``, ``8``, ``"fp8"``)."""
    if value is None:
        return "True"
    b = bool_literal(value)
    if b is not None and value.strip().lower() in ("true", "false"):
        return "True" if b else "False"
    if NUMBER.match(value):
        return value
    text = repr(value)
    if quote == '"' and '"' not in value and "\\" not in text:
        text = '"' + text[1:-1] + '"'
    return text
