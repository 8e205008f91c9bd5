"""``deploykb export``: the compatibility table as Markdown, CSV, JSON or one HTML page."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from agent.app import DbOption, app
from kb.errors import InputError
from kb.paths import resolve_db_path
from kb.records import STATUSES, Finding

_SUFFIX_FORMAT = {
    ".md": "md",
    ".markdown": "md",
    ".csv": "csv",
    ".json": "json",
    ".html": "html",
    ".htm": "html",
}


def _load_findings(db_path: Path, **filters: str | None) -> list[Finding]:
    """The edge: findings from the existing, current index (a missing one is an error)."""
    from agent.index import open_index
    from kb import store

    return store.load_findings(open_index(db_path), **filters)


def _choose_format(fmt: str | None, output: Path | None) -> str:
    if fmt is None:
        suffix = output.suffix.lower() if output is not None and str(output) != "-" else ""
        return _SUFFIX_FORMAT.get(suffix, "md")
    from kb.export import FORMATS  # the table code loads only when exporting

    if fmt.lower() not in FORMATS:
        raise InputError(f"--format {fmt!r}: choose md, csv, json or html")
    return fmt.lower()


def _check_status(status: str | None) -> str | None:
    if status is None:
        return None
    key = status.strip().lower().replace("_", "-").replace(" ", "-")
    if key not in STATUSES:
        raise InputError(f"--status {status!r}: choose works, works-with-flags, partial or broken")
    return key


@app.command("export")
def export_command(
    fmt: Annotated[
        Optional[str],
        typer.Option(
            "--format",
            "-f",
            help="md, csv, json or html. Default: from the -o suffix, else md.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Optional[Path],
        typer.Option(
            "--output",
            "-o",
            help="Write to FILE (atomically) instead of stdout.",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        Optional[str], typer.Option("--model", help="Only findings for this model.")
    ] = None,
    gpu: Annotated[
        Optional[str], typer.Option("--gpu", help="Only findings for this GPU or SM (sm120).")
    ] = None,
    framework: Annotated[
        Optional[str], typer.Option("--framework", help="Only findings for this framework.")
    ] = None,
    status: Annotated[
        Optional[str],
        typer.Option(
            "--status",
            help="Only findings with this status: works, works-with-flags, partial or broken.",
        ),
    ] = None,
    link_base: Annotated[
        str,
        typer.Option(
            "--link-base",
            envvar="DEPLOYKB_LINK_BASE",
            help="Prefix of the links to finding files, e.g. "
            "https://github.com/org/kb/blob/main/findings/",
        ),
    ] = "findings/",
    db: DbOption = None,
) -> None:
    """Export the compatibility table: what runs where, with which flags, and the evidence.

    Rows are model × GPU (SM) × quantization × framework; each cell gives the status (absent means
    untested), the key flags, the best throughput, the date and links to every finding behind it.

    Example: deploykb export --format html -o compat.html --gpu sm120
    """
    chosen = _choose_format(fmt, output)
    status = _check_status(status)
    filters = [
        (k, v)
        for k, v in (("model", model), ("gpu", gpu), ("framework", framework), ("status", status))
        if v
    ]
    findings = _load_findings(
        resolve_db_path(db), model=model, gpu=gpu, status=status, framework=framework
    )
    from kb.export import build_table, filter_description, render, write_export
    from kb.redact import redact_record

    findings = redact_record(findings, skip=frozenset({"body"}))  # the table shows no bodies
    table = build_table(findings, generated=_dt.date.today().isoformat(), filters=filters)
    text = render(table, chosen, link_base)
    if not findings:
        if filters:
            typer.echo(
                f"No findings match {filter_description(filters)}; the table is empty.", err=True
            )
        else:
            typer.echo("The index holds no findings; the table is empty.", err=True)
    if output is None or str(output) == "-":
        typer.echo(text, nl=False)
        return
    write_export(output, text)
    typer.echo(
        f"Wrote {output} ({chosen}, {len(table.rows)} rows from {len(findings)} findings).",
        err=True,
    )
