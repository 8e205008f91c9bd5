"""``deploykb lint``: check finding files, one ``path:line: message`` per problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agent.cli.app import JsonOption, app

if TYPE_CHECKING:  # pragma: no cover
    from agent.checks import Problem

LINT_HELP = """Check finding files: required fields, status, symptom classes, id = file name,
duplicate ids, unredacted secrets and addresses, a redaction placeholder (<ip>, <redacted>...)
where a value must stand (model, framework.version, a flag, variable or pin), control characters
(a terminal would act on them), symbolic links to files outside the folders checked (errors);
flags unknown to the registry for the
finding's framework, flags or values its framework.version does not accept, sources that are
not links, and a model or source that is a path on one machine (warnings). A version that names no release (main, a commit) is not checked: a note
says so. Exits 1 on errors (with --strict, on warnings too). README.md is skipped.

Example: deploykb lint findings/
"""


@app.command("lint", help=LINT_HELP)
def lint_command(
    paths: Annotated[
        Optional[list[Path]],
        typer.Argument(help="Finding files or folders. Default: findings/.", show_default=False),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Fail on warnings too.")] = False,
    json_out: JsonOption = False,
) -> None:
    from agent.checks import default_paths, lint_paths

    report = lint_paths(list(paths) if paths else default_paths())
    if json_out:
        typer.echo(
            json.dumps(
                {
                    "files": report.files,
                    "errors": [_problem_dict(p) for p in report.errors],
                    "warnings": [_problem_dict(p) for p in report.warnings],
                    "notes": [_problem_dict(p) for p in report.notes],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        for p in report.errors:
            typer.echo(_line(p, "error"))
        for p in report.warnings:
            typer.echo(_line(p, "warning"))
        for p in report.notes:
            typer.echo(_line(p, "note"), err=True)
        typer.echo(_summary(report.files, len(report.errors), len(report.warnings)), err=True)
    if report.failed(strict):
        raise typer.Exit(1)


def _line(p: Problem, severity: str) -> str:
    from kb.errors import located

    return located(p.path, p.line, f"{severity}: {p.message}")  # control characters written out


def _problem_dict(p: Problem) -> dict[str, object]:
    from kb.redact import neutralise

    return {"path": neutralise(p.path), "line": p.line, "message": neutralise(p.message)}


def _summary(files: int, errors: int, warnings: int) -> str:
    def n(count: int, word: str) -> str:
        return f"{count} {word}{'' if count == 1 else 's'}"

    return f"{n(files, 'file')} checked: {n(errors, 'error')}, {n(warnings, 'warning')}"
