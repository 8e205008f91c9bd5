"""``deploykb list``: the indexed findings, filtered, as a table (or blocks at 80 columns), or
the coverage of the knowledge base (``--families``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agent.cli.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app
from agent.cli.index import open_index
from agent.cli.terminal import stdout_console

if TYPE_CHECKING:  # pragma: no cover
    from kb.records import Finding


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

    if gpu:
        _say_unknown_gpu(gpu)
    if findings:
        from agent.cli.index import ready_index

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


def _say_unknown_gpu(gpu: str) -> None:
    """A GPU filter that names no GPU deploykb knows is said, as ``ask`` says it; the filter
    still applies as written (a substring of the GPU name or SM)."""
    from agent.context import resolve_gpu
    from kb.errors import InputError

    try:
        resolve_gpu(gpu)
    except InputError as exc:
        typer.echo(
            f"warning: {exc}; listing the findings whose GPU or SM contains '{gpu}'", err=True
        )


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

    console = stdout_console()
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left")
    table.add_column("family", no_wrap=True)
    table.add_column("findings", justify="right", no_wrap=True)
    table.add_column("what", overflow="fold")
    for fam, desc, n in cov.families:
        table.add_row(fam, str(n) if n >= 5 else f"[yellow]{n}[/yellow]", desc)
    console.print(table)
    console.print("\nGPU generations: " + ", ".join(f"{g} {n}" for g, n in cov.generations))
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
    GPU columns at least 16 wide; otherwise one block per finding (the id on its own line, whole
    even when it is wider than the terminal, then status, model, GPU, framework), so nothing is
    cut at 80 columns."""
    from rich.table import Table
    from rich.text import Text

    from agent.cli.terminal import hang, print_whole

    console = console or stdout_console()
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
        print_whole(console, Text(fid, style="bold"))  # an id is never folded nor cut
        rest = [status, model, gpu, framework, f"{sources} source{'' if sources == '1' else 's'}"]
        console.print(hang("  ", Text(" · ".join(p for p in rest if p))))
