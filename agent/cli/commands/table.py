"""``deploykb export``: the compatibility table as Markdown, CSV, JSON or one HTML page."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from agent.cli.app import DbOption, EmbedderOption, FindingsOption, app
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


def _load_findings(
    db_path: Path,
    findings_dirs: list[Path] | None = None,
    embedder: str = "auto",
    **filters: str | None,
) -> list[Finding]:
    """The edge: findings from the index. Without ``findings_dirs`` the existing, current index
    is read as it is (a missing one is an error); with them, the index is first brought in step
    with the shipped and those folders, as ``ask`` does."""
    from agent.cli.index import open_index, ready_index
    from kb import store

    if findings_dirs:
        database = ready_index(db_path, findings_dirs, embedder)
    else:
        database = open_index(db_path)
    return store.load_findings(database, **filters)


def _choose_format(fmt: str | None, output: Path | None) -> str:
    """The format from ``--format``, else from the ``-o`` suffix, else Markdown. An ``-o`` whose
    suffix names a file this command does not write (``x.xlsx``, ``x.pdf``, or ``x.json`` with
    ``--format csv``) is refused rather than filled with text of another kind."""
    to_file = output is not None and str(output) != "-"
    suffix = output.suffix.lower() if to_file else ""
    if fmt is None:
        if suffix and suffix not in _SUFFIX_FORMAT:
            raise InputError(
                f"{output}: export writes .md, .csv, .json or .html, not {output.suffix}; "
                "choose one of those or pass --format"
            )
        return _SUFFIX_FORMAT.get(suffix, "md")
    from kb.export import FORMATS  # the table code loads only when exporting

    chosen = fmt.lower()
    if chosen not in FORMATS:
        raise InputError(f"--format {fmt!r}: choose md, csv, json or html")
    fitting = [s for s, f in _SUFFIX_FORMAT.items() if f == chosen]
    if suffix and suffix not in fitting and suffix != ".txt":
        raise InputError(
            f"{output}: --format {chosen} writes {' or '.join(fitting)}, not {output.suffix}"
        )
    return chosen


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
        Optional[list[str]],
        typer.Option(
            "--link-base",
            envvar="DEPLOYKB_LINK_BASE",
            help="Where finding links point: FOLDER=URL for the findings under FOLDER, or a plain "
            "URL for the shipped ones (repeatable). Default: each finding's own file (file://).",
            show_default=False,
        ),
    ] = None,
    findings: FindingsOption = None,
    embedder: EmbedderOption = "auto",
    db: DbOption = None,
) -> None:
    """Export the compatibility table: what runs where, with which flags, and the evidence.

    First the grid, model family × GPU (SM): each cell a status and the number of findings behind
    it. Then the rows, grouped by family: model × GPU × quantization × framework, each with the
    status (absent means untested), the key flags, the best throughput, the date and links to
    every finding behind it.

    Example: deploykb export --format html -o compat.html --gpu sm120
    """
    from agent.cli.index import split_dirs
    from kb.export import folder_links
    from kb.resources import shipped_findings_dir

    chosen = _choose_format(fmt, output)
    status = _check_status(status)
    links = folder_links(link_base or [], shipped_findings_dir(), Path.cwd())
    filters = [
        (k, v)
        for k, v in (("model", model), ("gpu", gpu), ("framework", framework), ("status", status))
        if v
    ]
    found = _load_findings(
        resolve_db_path(db),
        split_dirs(findings),
        embedder,
        model=model,
        gpu=gpu,
        status=status,
        framework=framework,
    )
    from kb.export import build_table, filter_description, render, write_export
    from kb.redact import redact_record

    found = redact_record(found, skip=frozenset({"body"}))  # the table shows no bodies
    table = build_table(found, generated=_dt.date.today().isoformat(), filters=filters)
    text = render(table, chosen, links)
    if not found:
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
        f"Wrote {output} ({chosen}, {len(table.rows)} rows from {len(found)} findings).",
        err=True,
    )
