"""The typer application and the options every command shares."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from kb.errors import DeployKBError


class _Group(TyperGroup):
    """Turns the ``DeployKBError`` family into one line on stderr and a non-zero exit."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except DeployKBError as exc:
            typer.echo(f"Error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except sqlite3.DatabaseError as exc:  # damage found past the checks of open_db
            typer.echo(
                f"Error: the index file is damaged ({exc}); delete it (see --db) and run "
                "`deploykb ingest`",
                err=True,
            )
            raise typer.Exit(3) from None
        except KeyboardInterrupt:
            typer.echo("Error: interrupted; nothing was written.", err=True)
            raise typer.Exit(130) from None


app = typer.Typer(
    cls=_Group,
    name="deploykb",
    help=(
        "Match LLM deployment failures against past findings and get the flags that fixed them.\n\n"
        'Example: deploykb ask "probability tensor contains either inf, nan or element < 0" '
        "--model nvidia/GLM-5-NVFP4 --gpu sm120"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

DbOption = Annotated[
    Optional[Path],
    typer.Option(
        "--db",
        envvar="DEPLOYKB_DB",
        help="SQLite index file. Default: $XDG_DATA_HOME/deploykb/deploykb.db.",
        show_default=False,
    ),
]

FindingsOption = Annotated[
    Optional[list[Path]],
    typer.Option(
        "--findings",
        envvar="DEPLOYKB_FINDINGS",
        help="Extra findings folder indexed beside the shipped ones (repeatable; env: colon-separated).",
        show_default=False,
    ),
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]

EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder",
        envvar="DEPLOYKB_EMBEDDER",
        help="Embedding runtime: auto (onnx), onnx, sentence-transformers or hash (tests only).",
    ),
]



def _version(value: bool) -> None:
    if value:
        from kb import __version__

        typer.echo(f"deploykb {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Match LLM deployment failures against past findings and get the flags that fixed them."""
