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
    from kb.document import fix_strings

    page = _Page(console or stdout_console())
    page.head(f)
    if f.symptoms:
        page.symptoms(f)
    if f.root_cause:
        page.root_cause(f.root_cause)
    if not f.fix.is_empty():
        page.block("Fix", fix_strings(f.fix), style="green")
    for alt in f.alternatives:
        page.block(f"Alternative fix{': ' + alt.note if alt.note else ''}", fix_strings(alt))
    if f.tried_without_effect:
        page.block("Tried without effect", f.tried_without_effect)
    for label, command in (
        ("Failing command", f.failing_command),
        ("Working command", f.working_command),
    ):
        if command:
            page.command(label, command)
    if not f.performance.is_empty():
        page.performance(f)
    if f.sources:
        page.sources(f.sources)
    page.ids("related", f.related)
    page.field("tags", ", ".join(f.tags))
    page.story(body_without_root_cause(f.body) if f.root_cause else f.body)


class _Page:
    """``show``'s layout on one console: bold labels, underlined headings, hanging indents."""

    def __init__(self, console) -> None:  # type: ignore[no-untyped-def]
        self.console = console

    def print(self, prefix, body) -> None:  # type: ignore[no-untyped-def]
        from agent.cli.terminal import hang

        self.console.print(hang(prefix, body))

    def heading(self, title: str) -> None:
        from rich.text import Text

        self.console.print()
        self.console.print(Text(title, style="bold underline"))

    def field(self, label: str, value: object) -> None:
        from rich.text import Text

        if value not in (None, "", ()):
            self.print(Text(f"{label}: ", style="bold"), Text(str(value)))

    def ids(self, label: str, ids: tuple[str, ...]) -> None:
        """``label: a, b`` when it fits the line; otherwise the label, then each id on its own
        line: an id is never folded nor cut, even one wider than the terminal."""
        from rich.text import Text

        from agent.cli.terminal import print_whole

        if not ids:
            return
        one_line = Text(f"{label}: ", style="bold") + Text(", ".join(ids))
        if one_line.cell_len <= self.console.width:
            self.console.print(one_line)
            return
        self.console.print(Text(f"{label}:", style="bold"))
        for fid in ids:
            print_whole(self.console, Text(f"  {fid}"))

    def block(self, title: str, lines, style: str = "") -> None:  # type: ignore[no-untyped-def]
        from rich.text import Text

        self.heading(title)
        for text in lines:
            self.print("  ", Text(text, style=style))

    def head(self, f: Finding) -> None:
        from rich.text import Text

        self.print("", Text(f.title, style="bold"))
        self.ids("id", (f.id,))
        for label in ("status", "date", "model", "architecture", "quantization"):
            self.field(label, getattr(f, label))
        hw = f.hardware
        extra = ", ".join(p for p in (hw.sm, hw.interconnect) if p)
        gpu = " ".join(p for p in (f"{hw.count}x" if hw.count else None, hw.gpu) if p)
        self.field("hardware", f"{gpu} ({extra})" if gpu and extra else gpu or extra)
        self.field("framework", " ".join(p for p in (f.framework.name, f.framework.version) if p))
        self.field("file", f"{f.path}:{f.line}" if f.line else f.path)

    def symptoms(self, f: Finding) -> None:
        from rich.text import Text

        self.heading("Symptoms")
        for s in f.symptoms:
            self.print(Text.assemble("  ", (f"[{s.cls}] ", "yellow")), Text(s.text))

    def root_cause(self, text: str) -> None:
        from rich.text import Text

        from agent.cli.terminal import paragraphs

        self.heading("Root cause")
        for i, para in enumerate(paragraphs(text)):
            if i:
                self.console.print()
            self.print("  ", Text(para))

    def command(self, label: str, command: str) -> None:
        from agent.cli.terminal import ShellCommand

        self.heading(label)
        self.console.print(ShellCommand(command))

    def performance(self, f: Finding) -> None:
        p = f.performance
        self.heading("Performance")
        self.field("  throughput", f"{p.throughput_tok_s:g} tok/s" if p.throughput_tok_s else None)
        self.field("  concurrency", p.concurrency)
        self.field("  baseline", p.baseline)
        self.field("  notes", p.notes)

    def sources(self, sources: tuple[str, ...]) -> None:
        from rich.text import Text

        from kb.document import source_url

        self.heading("Sources")
        for source in sources:
            url = source_url(source)
            line = Text(source)
            if url and url != source:
                line.append(" -> ")
                line.append(url, style=f"link {url}")
            elif url:
                line.stylize(f"link {url}")
            self.print("  ", line)

    def story(self, body: str) -> None:
        """The Markdown story: rendered on a terminal; in a pipe its source reads fine as is."""
        from rich.markdown import Markdown
        from rich.text import Text

        if body.strip():
            self.console.print()
            story = Markdown(body) if self.console.is_terminal else Text(body.strip())
            self.console.print(story, soft_wrap=True)


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
