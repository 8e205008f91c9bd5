"""``deploykb triage``: the lines of a server log worth reading, de-duplicated across ranks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from agent.cli.app import JsonOption, app
from kb.records import Triage

if TYPE_CHECKING:
    from rich.console import Console

TRIAGE_HELP = """Pick the error lines out of a server log: kernel assertions (re-joined when GPU
threads garbled them), exceptions, known causal warnings and the lines just before a crash, each
once with how often and on which ranks it appeared. Reads a log of any size as a stream.

Examples:

  deploykb triage --log ~/sglang-glm5.log

  journalctl -u sglang -o cat | deploykb triage - --json

  deploykb triage '"matched_stop": "NaN happened"'
"""

_CLASS_STYLE = {
    "nan": "bold red",
    "device-assert": "bold red",
    "illegal-memory-access": "bold red",
    "crash": "red",
    "oom": "red",
    "hang": "yellow",
    "garbage-output": "magenta",
    "empty-output": "magenta",
    "accuracy": "magenta",
    "slow": "yellow",
    "warning": "yellow",
}


@app.command("triage", help=TRIAGE_HELP)
def triage_command(
    text: Annotated[
        Optional[str],
        typer.Argument(
            help="Error text or a pasted log; - reads the log from stdin.",
            metavar="[TEXT|-]",
            show_default=False,
        ),
    ] = None,
    log: Annotated[
        Optional[Path],
        typer.Option("--log", metavar="FILE", help="Read the log from FILE.", show_default=False),
    ] = None,
    max_lines: Annotated[
        int, typer.Option("--max-lines", min=1, help="Show at most this many lines.")
    ] = 40,
    as_json: JsonOption = False,
) -> None:
    from agent.cli.streams import stdin_for
    from agent.logs import read_input, triage
    from kb.redact import redact_record

    stream = stdin_for(text, sys.stdin)
    result = redact_record(triage(read_input(text, log, stream), max_lines=max_lines))
    if as_json:
        import json

        typer.echo(json.dumps(triage_dict(result), indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    render_triage(result, Console(highlight=False, soft_wrap=True))


def triage_dict(result: Triage) -> dict:
    """The JSON shape of ``deploykb triage --json``."""
    from dataclasses import asdict

    lines = []
    for line in result.lines:
        d = asdict(line)
        lines.append({("class" if k == "cls" else k): v for k, v in d.items()})  # as in ask --json
    return {"total_lines": result.total_lines, "lines": lines}


def render_triage(result: Triage, console: Console) -> None:
    """Human output: one block per line (class, count, ranks; the text; the signature, dimmed).
    On a terminal a long log line wraps under its indent; in a pipe each stays one line, so
    ``grep`` finds it whole."""
    from rich.text import Text

    from agent.cli.terminal import hang

    def indented(text: Text) -> None:
        if console.is_terminal:
            console.print(hang("    ", text))
        else:
            console.print(Text("    ") + text, soft_wrap=True)

    if not result.lines:
        console.print(f"no error lines found in {result.total_lines} lines")
        return
    n = len(result.lines)
    console.print(
        f"{n} salient line{'s' if n != 1 else ''} in {result.total_lines} lines", style="bold"
    )
    for i, line in enumerate(result.lines, 1):
        head = Text(f"{i:>2}. ")
        head.append(line.cls or "unclassified", style=_CLASS_STYLE.get(line.cls or "", "bold"))
        head.append(f"  x{line.count}")
        if line.ranks:
            head.append("  " + " ".join(line.ranks), style="cyan")
        where = f"line {line.line}" if line.line else ""
        head.append(f"  ({line.reason}{', ' + where if where else ''})", style="dim")
        console.print(head)
        indented(Text(line.text))
        indented(Text("signature: " + line.signature, style="dim"))
