"""``deploykb ingest``, ``list`` and ``show``: build the index and look at what it holds."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agent.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app
from agent.index import ingest_file, open_index, split_dirs
from kb.paths import findings_dirs, resolve_db_path

if TYPE_CHECKING:  # pragma: no cover

    from kb.ingest import IngestReport
    from kb.records import Finding



# --- ingest --------------------------------------------------------------------------------------


@app.command("ingest")
def ingest_command(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(
            metavar="PATH",
            help="Findings folders or files. Default: the shipped findings plus --findings.",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
    findings: FindingsOption = None,
    embedder: EmbedderOption = "auto",
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also remove findings indexed from folders not read now (a team folder no "
            "longer configured, an old checkout).",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Index findings into the SQLite database, embedding only what changed.

    Example: deploykb ingest --findings ~/team-findings
    """
    dirs = list(paths) if paths else findings_dirs(split_dirs(findings))
    start = time.monotonic()
    report = ingest_file(resolve_db_path(db), dirs, embedder, prune=prune)
    elapsed = time.monotonic() - start
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    for notice in report.notices():
        typer.echo(f"note: {notice}", err=True)
    for error in report.errors:
        typer.echo(str(error), err=True)
    if json_out:
        typer.echo(json.dumps(_report_dict(report, elapsed), indent=2))
    else:
        typer.echo(ingest_summary(report, elapsed))
    if report.errors:
        raise typer.Exit(1)


def ingest_summary(report: IngestReport, seconds: float) -> str:
    """One line: what changed, and what was embedded with which model."""
    if not report.changed:
        return f"{report.total} findings unchanged; nothing to embed"
    counts = (
        f"{report.total} findings: {report.added} added, {report.updated} updated, "
        f"{report.unchanged} unchanged, {report.removed} removed"
    )
    if report.embedded:
        return f"{counts}; embedded {report.embedded} texts with {report.model} in {seconds:.1f} s"
    return f"{counts}; nothing to embed"


def _report_dict(report: IngestReport, seconds: float) -> dict[str, Any]:
    return {
        "findings": report.total,
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "removed": report.removed,
        "embedded": report.embedded,
        "model": report.model,
        "seconds": round(seconds, 2),
        "errors": [str(e) for e in report.errors],
        "warnings": [str(w) for w in report.warnings],
        "notices": report.notices(),
    }


# --- list ----------------------------------------------------------------------------------------


@app.command("list")
def list_command(
    model: Annotated[
        Optional[str], typer.Option("--model", help="Model name contains this (any case).")
    ] = None,
    gpu: Annotated[
        Optional[str], typer.Option("--gpu", help="GPU name or SM contains this: 'sm120', 'H100'.")
    ] = None,
    status: Annotated[
        Optional[str],
        typer.Option("--status", help="works, works-with-flags, broken or partial."),
    ] = None,
    framework: Annotated[
        Optional[str], typer.Option("--framework", help="Framework contains this: sglang, vllm.")
    ] = None,
    families: Annotated[
        bool,
        typer.Option(
            "--families",
            help="Coverage instead of the list: findings per failure family, GPU generation "
            "and framework.",
        ),
    ] = False,
    db: DbOption = None,
    findings: FindingsOption = None,
    embedder: EmbedderOption = "auto",
    json_out: JsonOption = False,
) -> None:
    """List the indexed findings, optionally filtered. With --findings (or DEPLOYKB_FINDINGS),
    as `ask` does: those folders are indexed beside the shipped findings first.

    Example: deploykb list --gpu sm120 --status works-with-flags
    """
    from kb.serialize import finding_to_dict
    from kb.store import load_findings

    if findings:
        from agent.index import ready_index

        database = ready_index(db, findings, embedder)
    else:
        database = open_index(db)
    from kb.redact import redact_record

    found = redact_record(
        load_findings(database, model=model, gpu=gpu, status=status, framework=framework)
    )
    if families:
        _print_coverage(found, json_out)
        return
    if json_out:
        typer.echo(json.dumps([{**finding_to_dict(f), "path": f.path} for f in found], indent=2))
        return
    if not found:
        typer.echo("no findings match these filters", err=True)
        return
    _print_table(found)


def _print_coverage(found: list[Finding], json_out: bool) -> None:
    from agent.coverage import coverage

    cov = coverage(found)
    if json_out:
        typer.echo(
            json.dumps(
                {
                    "total": cov.total,
                    "working_deployments": cov.working_deployments,
                    "families": {f: n for f, _, n in cov.families},
                    "gpu_generations": dict(cov.generations),
                    "frameworks": dict(cov.frameworks),
                    "gaps": list(cov.gaps()),
                },
                indent=2,
            )
        )
        return
    from rich.table import Table

    console = _console()
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
    table.add_column("family", no_wrap=True)
    table.add_column("findings", justify="right", no_wrap=True)
    table.add_column("what", overflow="fold")
    for fam, desc, n in cov.families:
        table.add_row(fam, str(n) if n >= 5 else f"[yellow]{n}[/yellow]", desc)
    console.print(table)
    console.print(
        "\nGPU generations: " + ", ".join(f"{g} {n}" for g, n in cov.generations)
    )
    console.print("Frameworks: " + ", ".join(f"{fw} {n}" for fw, n in cov.frameworks))
    console.print(
        f"{cov.total} findings, {cov.working_deployments} working deployments with their command"
        + (f"; under 5: {', '.join(cov.gaps())}" if cov.gaps() else "")
    )


def _list_rows(found: list[Finding]) -> list[tuple[str, str, str, str, str, str]]:
    rows = []
    for f in found:
        hw = f.hardware
        name = (hw.gpu or "").removeprefix("NVIDIA ")
        gpu = " ".join(p for p in (f"{hw.count}x" if hw.count and name else None, name) if p)
        if hw.sm and hw.sm[2:] not in gpu:
            gpu = f"{gpu} ({hw.sm})" if gpu else hw.sm
        rows.append(
            (f.id, f.status, f.model or "", gpu, f.framework.name or "", str(len(f.sources)))
        )
    return rows


_LIST_HEADERS = ("id", "status", "model", "gpu/sm", "framework", "sources")
_MIN_WRAPPED = 16  # the narrowest the model and GPU columns may wrap to


def _print_table(found: list[Finding], console=None) -> None:  # type: ignore[no-untyped-def]
    """A table when it fits the terminal with id, status and framework whole and the model and
    GPU columns at least 16 wide; otherwise one block per finding (the id on its own line, then
    status, model, GPU, framework), so nothing is cut at 80 columns."""
    from rich.table import Table
    from rich.text import Text

    from agent.render import hang

    console = console or _console()
    rows = _list_rows(found)
    whole = (0, 1, 4, 5)  # never wrapped
    widths = [max(len(r[i]) for r in [_LIST_HEADERS, *rows]) for i in range(6)]
    need = sum(widths[i] for i in whole) + 2 * _MIN_WRAPPED + 2 * 5
    if need <= console.width:
        table = Table(box=None, pad_edge=False, header_style="bold")
        table.add_column("id", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("model", overflow="fold", min_width=_MIN_WRAPPED)
        table.add_column("gpu/sm", overflow="fold", min_width=_MIN_WRAPPED)
        table.add_column("framework", no_wrap=True)
        table.add_column("sources", justify="right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    for fid, status, model, gpu, framework, sources in rows:
        console.print(Text(fid, style="bold", overflow="fold"))
        rest = [status, model, gpu, framework, f"{sources} source{'' if sources == '1' else 's'}"]
        console.print(hang("  ", Text(" · ".join(p for p in rest if p))))


def _console():  # type: ignore[no-untyped-def]
    """stdout console; when piped (not a terminal) lines are not cut at 80 columns."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


# --- show ----------------------------------------------------------------------------------------


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

    from agent.render import ShellCommand, hang, paragraphs
    from kb.document import fix_strings, source_url

    console = console or _console()

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
