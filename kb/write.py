"""Finding records out to Markdown files: ``render_finding`` is pure, ``write_finding`` writes.

What is rendered parses back to the same record:
``parse_text(render_finding(f), path).findings[0]`` equals ``f`` apart from ``path``/``line``
(and ``body``, when ``f`` had none and one was generated from its fields).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from kb.atomic import atomic_create, atomic_write
from kb.errors import DeployKBError, FindingError, FindingExistsError
from kb.records import Finding, Fix, shown_change
from kb.serialize import ID_RE, finding_to_dict

_COMMAND_KEYS = ("failing_command", "working_command")
_FLOW_KEYS = ("tags",)


class _FlowList(list):
    """A list written on one line: ``tags: [blackwell, nvfp4]``."""


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Indent block sequences under their key, as the README example does.
        return super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_flow(dumper: yaml.SafeDumper, value: list) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_FlowList, _represent_flow)


def render_finding(f: Finding) -> str:
    """The finding file for ``f``: YAML front matter, then the Markdown body.

    An empty body is generated from the fields: ``## What happened`` (the symptoms),
    ``## Root cause`` and ``## Fix``.
    """
    if not f.body.strip():
        f = replace(f, body=generate_body(f))
    front = yaml.dump(
        _yaml_ready(finding_to_dict(f)),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        default_flow_style=False,
    )
    text = f"---\n{front}---\n"
    if f.body:
        text += f"\n{f.body}\n"
    return text


def _yaml_ready(d: dict[str, Any]) -> dict[str, Any]:
    out = dict(d)
    for key in _COMMAND_KEYS:
        if key in out:  # always a `|` block, as commands are pasted and copied as blocks
            out[key] = out[key].rstrip("\n") + "\n"
    for key in _FLOW_KEYS:
        if key in out:
            out[key] = _FlowList(out[key])
    date = out.get("date")
    if isinstance(date, str) and len(date) == 10:
        out["date"] = dt.date.fromisoformat(date)  # written unquoted: date: 2026-02-19
    return out


def generate_body(f: Finding, *, failed_at: str | None = None) -> str:
    """Markdown sections made from the structured fields, for findings that have no story.

    ``## What happened`` says the step that failed (``failed_at``: "at CUDA-graph capture"), the
    error lines, what was tried without effect and how the working command differs from the
    failing one; then ``## Root cause`` and ``## Fix``."""
    parts: list[str] = []
    happened = _what_happened(f, failed_at)
    if happened:
        parts.append("## What happened\n\n" + "\n\n".join(happened))
    if f.root_cause:
        parts.append(f"## Root cause\n\n{f.root_cause.strip()}")
    bullets = _fix_bullets(f.fix)
    for alt in f.alternatives:
        alt_bullets = _fix_bullets(alt)
        what = "; ".join(b.removeprefix("- ") for b in alt_bullets) or "see the note"
        note = f" ({alt.note})" if alt.note else ""
        bullets.append(f"- Alternatively: {what}{note}")
    if bullets:
        parts.append("## Fix\n\n" + "\n".join(bullets))
    return "\n\n".join(parts)


def _what_happened(f: Finding, failed_at: str | None) -> list[str]:
    """The paragraphs of ``## What happened``."""
    out: list[str] = []
    if f.symptoms:
        lines = "\n".join(s.text for s in f.symptoms)
        fence = "~~~" if "```" in lines else "```"
        block = f"{fence}text\n{lines}\n{fence}"
        out.append(f"It failed {failed_at}:\n\n{block}" if failed_at else block)
    elif failed_at:
        out.append(f"It failed {failed_at}.")
    if f.tried_without_effect:
        tried = ", ".join(f"`{t}`" for t in f.tried_without_effect)
        out.append(f"Tried without effect: {tried}.")
    if f.failing_command and f.working_command and not f.fix.is_empty():
        changes = [
            *(f"`{x}` added" for x in f.fix.add),
            *(f"`{shown_change(x)}`" for x in f.fix.change),
            *(f"`{x}` removed" for x in f.fix.remove),
            *(f"`{x}` set" for x in f.fix.env),
            *(f"`{x}` pinned" for x in f.fix.pins),
        ]
        out.append("The working command is the failing one with " + ", ".join(changes) + ".")
    return out


def _fix_bullets(fix: Fix) -> list[str]:
    out = [f"- Add `{x}`" for x in fix.add]
    out += [f"- Change `{shown_change(x)}`" for x in fix.change]
    out += [f"- Remove `{x}`" for x in fix.remove]
    out += [f"- Set `{x}`" for x in fix.env]
    out += [f"- Pin `{x}`" for x in fix.pins]
    return out


def write_finding(f: Finding, directory: Path, *, force: bool = False) -> tuple[Path, Path | None]:
    """Write ``<directory>/<id>.md`` atomically; return its path and the backup's, if one was made.

    An existing file is never replaced without ``force`` (``FindingExistsError``, even when another
    process creates it a moment before this one: the file is linked into place, not renamed
    over); with ``force``, the old file is kept as ``<id>.md.bak``. The text is parsed back before
    anything touches the disk, so a finding that would not load again is refused.
    """
    from kb.parse import parse_text  # kb.parse is heavier (markdown-it, yaml loaders)

    directory = Path(directory)
    if not ID_RE.match(f.id or ""):
        raise FindingError(
            str(directory), None, f"id '{f.id}' is not a slug; cannot name a file after it"
        )
    target = directory / f"{f.id}.md"
    text = render_finding(f)
    parse_text(text, str(target))  # raises FindingError for a record that would not load back

    backup: Path | None = None
    exists = FindingExistsError(
        f"{target} already exists; use --force to replace it "
        f"(the old file is kept as {target.name}.bak)",
        str(target),
    )
    if target.exists():
        if not force:
            raise exists
        backup = target.with_name(target.name + ".bak")

    try:
        directory.mkdir(parents=True, exist_ok=True)
        if backup is None:
            atomic_create(target, text.encode("utf-8"))  # never replaces a file made meanwhile
        else:
            atomic_write(target, text.encode("utf-8"), backup=backup)
    except FileExistsError:
        raise exists from None
    except OSError as exc:
        raise DeployKBError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target, backup
