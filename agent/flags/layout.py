"""Where the parts of a parsed launch command stand in its text.

The scanners record it once, with the canonical records; :func:`agent.flags.apply.apply_changes`
edits the user's text at these positions, so a command is never read twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from agent.flags.tokens import Token
from kb.records import Flag, LaunchConfig

if TYPE_CHECKING:  # pragma: no cover
    from agent.registry import Registry


@dataclass(frozen=True)
class FlagSpan:
    """One flag: its canonical record and where it is written."""

    flag: Flag
    start: int  # span of the whole flag (name and values)
    end: int
    name_written: str
    prev_end: int  # end of whatever precedes the flag (for clean removal)
    value_start: int | None = None  # span of separate value token(s)
    value_end: int | None = None
    eq: bool = False  # written --name=value in one token
    style: str = "shell"  # "shell" | "kwarg" | "model_args"
    is_model: bool = False


@dataclass(frozen=True)
class EnvSpan:
    """One environment variable the command sets."""

    name: str  # as written
    value: str
    start: int  # span of the NAME=value token
    end: int
    style: str  # "prefix" | "export" | "docker" | "systemd" | "python"
    remove_start: int = -1  # span to delete when the variable is dropped
    remove_end: int = -1
    setting: str = ""  # its canonical name in the command's framework (SGL_X is SGLANG_X)


@dataclass(frozen=True)
class ModelArgs:
    """``lm_eval --model_args k=v,...``: the token, the span of its value, the pairs."""

    token: Token
    value_start: int
    value_end: int
    pairs: tuple[tuple[str, str, str], ...]  # (key as written, value, canonical flag name)


@dataclass(frozen=True)
class Layout:
    """The command's flags and variables with their spans, and how new ones are written."""

    style: str  # "shell" | "python" | "lm_eval" | "flags" (a bare list of flags)
    items: tuple[FlagSpan, ...] = ()
    envs: tuple[EnvSpan, ...] = ()
    insert_at: int = 0  # where new flags go
    flag_sep: str = " "  # what goes before each new flag: " ", " \\\n  ", ", "...
    flag_suffix: str = ""  # what goes after it (a trailing "," in a Python call)
    py_quote: str = '"'  # quote style of the user's string keyword arguments
    program_start: int | None = None  # where a new NAME=value prefix goes
    docker_run_end: int | None = None  # where a new ``-e NAME=value`` goes
    image: Token | None = None  # the image a ``docker run`` runs
    model_args: ModelArgs | None = None


def launch_config(
    text: str,
    framework: str | None,
    program: str | None,
    model: str | None,
    layout: Layout,
    registry: Registry,
) -> LaunchConfig:
    """The record of a scanned command, its layout attached (see ``LaunchConfig.layout``) with
    each variable's canonical name, now that the command's framework is known."""
    envs = tuple(replace(e, setting=registry.canonical_env(e.name, framework)) for e in layout.envs)
    layout = replace(layout, envs=envs)
    env: dict[str, str] = {}
    for e in layout.envs:
        env[e.name] = e.value
    config = LaunchConfig(
        framework=framework,
        program=program,
        model=model,
        flags=tuple(it.flag for it in layout.items if not it.is_model),
        env=tuple(env.items()),
        raw=text,
        image=layout.image.text if layout.image is not None else None,
    )
    object.__setattr__(config, "layout", layout)  # a field only the parser sets
    return config
