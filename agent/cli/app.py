"""The typer application and the options every command shares."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from kb.errors import DeployKBError


class _Group(TyperGroup):
    """Turns the ``DeployKBError`` family into one line on stderr and a non-zero exit."""

    def _main_shell_completion(self, ctx_args, prog_name, complete_var=None):  # type: ignore[no-untyped-def]
        """A shell asking for completions (``_DEPLOYKB_COMPLETE`` set by the script that
        ``--show-completion`` prints): typer's bash/zsh/fish classes answer it."""
        if complete_var is None:
            complete_var = f"_{prog_name}_COMPLETE".replace("-", "_").upper()
        if os.environ.get(complete_var):
            from typer._completion_classes import completion_init

            completion_init()
        return super()._main_shell_completion(ctx_args, prog_name, complete_var)

    # the order of the top-level help: the main job first, whatever order the command modules
    # happened to be imported in (a test importing one command first must not reorder it)
    ORDER = ("ask", "triage", "add", "ingest", "list", "show", "lint", "export")

    def list_commands(self, ctx):  # type: ignore[no-untyped-def]
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(self.ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

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
        "Example:\n\n\b\n"
        "  deploykb ask --model nvidia/GLM-5-NVFP4 --gpu sm120 \\\n"
        '      "probability tensor contains either inf, nan or element < 0"\n\n'
        "Exit codes: 0 done, 1 problems found (lint, ingest) or an internal error, 2 bad input, "
        "3 the index or the embedding model missing or unusable, 4 a model's config.json "
        "unreadable, 130 interrupted."
    ),
    no_args_is_help=True,
    # -h is --help on every command (click's contexts inherit the names from the group's)
    context_settings={"help_option_names": ["-h", "--help"]},
    add_completion=False,  # our own --show/--install-completion take the shell by name (below)
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


SHELLS = ("bash", "zsh", "fish")


def _completion_shell(value: str) -> str:
    if value not in SHELLS:
        raise typer.BadParameter(f"{value!r}: choose {', '.join(SHELLS)}")
    return value


def _show_completion(ctx: typer.Context, value: Optional[str]) -> None:
    if value is None or ctx.resilient_parsing:
        return
    from typer._completion_shared import get_completion_script

    prog = ctx.find_root().info_name or "deploykb"
    shell = _completion_shell(value)
    var = "_{}_COMPLETE".format(prog.replace("-", "_").upper())
    typer.echo(get_completion_script(prog_name=prog, complete_var=var, shell=shell))
    raise typer.Exit()


def _install_completion(ctx: typer.Context, value: Optional[str]) -> None:
    if value is None or ctx.resilient_parsing:
        return
    from typer._completion_shared import install

    shell, path = install(shell=_completion_shell(value), prog_name=ctx.find_root().info_name)
    typer.echo(f"{shell} completion installed in {path}; it takes effect in a new shell", err=True)
    raise typer.Exit()


def _shell_option(name: str, callback, help: str):  # type: ignore[no-untyped-def]  # noqa: A002
    """An eager option that takes a shell's name and does its work in ``callback``."""
    return typer.Option(
        name,
        metavar="SHELL",
        callback=callback,
        expose_value=False,
        is_eager=True,
        help=help,
        show_default=False,
    )


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    show_completion: Annotated[
        Optional[str],
        _shell_option(
            "--show-completion",
            _show_completion,
            "Print the tab-completion script for SHELL (bash, zsh or fish) and exit.",
        ),
    ] = None,
    install_completion: Annotated[
        Optional[str],
        _shell_option(
            "--install-completion",
            _install_completion,
            "Install tab completion for SHELL (bash, zsh or fish) where that shell loads it.",
        ),
    ] = None,
) -> None:
    """Match LLM deployment failures against past findings and get the flags that fixed them."""
