"""``deploykb show``: one finding, laid out for a terminal (or as JSON)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from agent.cli.app import DbOption, JsonOption, app
from agent.cli.index import open_index
from agent.cli.terminal import stdout_console

if TYPE_CHECKING:  # pragma: no cover
    from kb.records import Finding


@app.command("show")
def show_command(
    finding_id: Annotated[str, typer.Argument(metavar="ID", help="A finding id from `list`.")],
    db: DbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Show one finding: deployment, symptoms, root cause, fix and sources.

    Example: deploykb show glm5-nvfp4-sm120-deepgemm-ue8m0-nan
    """
    from kb.redact import redact_record
    from kb.serialize import finding_to_dict
    from kb.store import get_finding

    f = redact_record(get_finding(open_index(db), finding_id))
    if json_out:
        typer.echo(json.dumps({**finding_to_dict(f), "body": f.body, "path": f.path}, indent=2))
        return
    _print_finding(f)


def _print_finding(f: Finding, console=None) -> None:  # type: ignore[no-untyped-def]
    """The finding for a person: lines wrap on words and keep their indent; commands wrap
    between shell words with `` \\`` continuations, so they paste as one command."""
    from rich.markdown import Markdown
    from rich.text import Text

    from agent.cli.terminal import ShellCommand, hang, paragraphs
    from kb.document import fix_strings, source_url

    console = console or stdout_console()

    def heading(title: str) -> None:
        console.print()
        console.print(Text(title, style="bold underline"))

    def field(label: str, value: object) -> None:
        if value not in (None, "", ()):
            console.print(hang(Text(f"{label}: ", style="bold"), Text(str(value))))

    console.print(hang("", Text(f.title, style="bold")))
    field("id", f.id)
    field("status", f.status)
    field("date", f.date)
    field("model", f.model)
    field("architecture", f.architecture)
    field("quantization", f.quantization)
    hw = f.hardware
    extra = ", ".join(p for p in (hw.sm, hw.interconnect) if p)
    gpu = " ".join(p for p in (f"{hw.count}x" if hw.count else None, hw.gpu) if p)
    field("hardware", f"{gpu} ({extra})" if gpu and extra else gpu or extra)
    field("framework", " ".join(p for p in (f.framework.name, f.framework.version) if p))
    field("file", f"{f.path}:{f.line}" if f.line else f.path)

    if f.symptoms:
        heading("Symptoms")
        for s in f.symptoms:
            console.print(hang(Text.assemble("  ", (f"[{s.cls}] ", "yellow")), Text(s.text)))
    if f.root_cause:
        heading("Root cause")
        for i, para in enumerate(paragraphs(f.root_cause)):
            if i:
                console.print()
            console.print(hang("  ", Text(para)))
    if not f.fix.is_empty():
        heading("Fix")
        for text in fix_strings(f.fix):
            console.print(hang("  ", Text(text, style="green")))
    for alt in f.alternatives:
        heading(f"Alternative fix{': ' + alt.note if alt.note else ''}")
        for text in fix_strings(alt):
            console.print(hang("  ", Text(text)))
    if f.tried_without_effect:
        heading("Tried without effect")
        for text in f.tried_without_effect:
            console.print(hang("  ", Text(text)))
    for label, command in (
        ("Failing command", f.failing_command),
        ("Working command", f.working_command),
    ):
        if command:
            heading(label)
            console.print(ShellCommand(command))
    p = f.performance
    if not p.is_empty():
        heading("Performance")
        field("  throughput", f"{p.throughput_tok_s:g} tok/s" if p.throughput_tok_s else None)
        field("  concurrency", p.concurrency)
        field("  baseline", p.baseline)
        field("  notes", p.notes)
    if f.sources:
        heading("Sources")
        for source in f.sources:
            url = source_url(source)
            line = Text(source)
            if url and url != source:
                line.append(" -> ")
                line.append(url, style=f"link {url}")
            elif url:
                line.stylize(f"link {url}")
            console.print(hang("  ", line))
    field("related", ", ".join(f.related))
    field("tags", ", ".join(f.tags))
    body = body_without_root_cause(f.body) if f.root_cause else f.body
    if body.strip():
        console.print()
        # on a terminal the story is rendered; in a pipe its Markdown source reads fine as is
        console.print(Markdown(body) if console.is_terminal else Text(body.strip()), soft_wrap=True)


def body_without_root_cause(body: str) -> str:
    """The Markdown story minus its ``## Root cause`` section (shown on its own above it)."""
    from kb.serialize import sections

    lines = body.split("\n")
    found = sections(body)
    for n, (heading, start, _text) in enumerate(found):
        if heading.strip().rstrip(":").lower() == "root cause":
            end = found[n + 1][1] if n + 1 < len(found) else len(lines)
            return "\n".join(lines[:start] + lines[end:])
    return body
