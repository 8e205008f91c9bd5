"""``deploykb ingest``: index the findings, embedding only what changed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agent.cli.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app
from agent.cli.index import ingest_file, split_dirs
from kb.paths import findings_dirs, resolve_db_path

if TYPE_CHECKING:  # pragma: no cover
    from kb.ingest import IngestReport


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
