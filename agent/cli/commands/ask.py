"""``deploykb ask``: the closest past case for an error, a log or a question, and the flags to change."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from agent.cli.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app

ASK_HELP = """Match an error, a whole server log or a question against past deployment findings.

Examples:

\b
  deploykb ask --model nvidia/GLM-5-NVFP4 --gpu sm120 \\
      "probability tensor contains either inf, nan or element < 0"

\b
  journalctl -u sglang -o cat | deploykb ask - \\
      --model nvidia/GLM-5-NVFP4 --cmd "$(cat launch.sh)"

\b
  deploykb ask --json \\
      "what works for Kimi K2 Thinking NVFP4 on RTX PRO 6000?"

\b
  deploykb ask --log server.log --cmd "$(cat launch.sh)" \\
      --tried --disable-cuda-graph

Read from a terminal, - waits for the pasted log until Ctrl-D.
"""


@app.command("ask", help=ASK_HELP)
def ask_command(
    text: Annotated[
        Optional[str],
        typer.Argument(
            help="Error text, a question, or - to read a log from stdin.", show_default=False
        ),
    ] = None,
    log: Annotated[Optional[Path], typer.Option("--log", help="Read the log from FILE.")] = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            help="Hugging Face id or local model directory (its config.json gives the architecture)."
        ),
    ] = None,
    arch: Annotated[
        Optional[str], typer.Option(help="Architecture (config.json model_type), e.g. glm_moe_dsa.")
    ] = None,
    quant: Annotated[Optional[str], typer.Option(help="Quantization, e.g. nvfp4, fp8.")] = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            help="GPU name or compute capability (B200, 'RTX PRO 6000', sm120). Default: nvidia-smi."
        ),
    ] = None,
    framework: Annotated[
        Optional[str],
        typer.Option(
            help="Framework and version, e.g. 'sglang 0.5.9': flags are spelled as that release "
            "accepts them. Default version: the --server's, else the installed package's."
        ),
    ] = None,
    cmd: Annotated[Optional[str], typer.Option("--cmd", help="The current launch command.")] = None,
    server: Annotated[
        Optional[str],
        typer.Option(
            help="URL of a running SGLang or vLLM server: the version it reports is the framework "
            "version; SGLang's arguments are used as the current command."
        ),
    ] = None,
    tried: Annotated[
        Optional[list[str]],
        typer.Option(
            "--tried",
            help="A change already tried without effect (repeatable): '--flag value', "
            "'remove --flag', NAME=value or pkg==1.2. Shapes the differential's plan.",
            show_default=False,
        ),
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, max=20, help="How many matches to show.")] = 3,
    db: DbOption = None,
    findings: FindingsOption = None,
    embedder: EmbedderOption = "auto",
    as_json: JsonOption = False,
) -> None:
    from agent.answer import answer, build_context
    from agent.cli.index import ready_index
    from agent.cli.render import answer_dict, render_answer, say_warnings
    from agent.cli.streams import stdin_for
    from agent.logs import read_input
    from agent.search import Searcher

    lines = read_input(text, log, stdin_for(text, sys.stdin))
    warnings: list[str] = []
    notices: list[str] = []
    ctx = build_context(
        model=model,
        arch=arch,
        quant=quant,
        gpu=gpu,
        framework=framework,
        cmd=cmd,
        server=server,
        tried=tuple(tried or ()),
        warnings=warnings,
        notices=notices,
    )
    database = ready_index(db, findings, embedder)
    searcher = Searcher(database, lambda: _load_embedder(embedder))
    from kb.redact import redact_record

    # one redaction pass over everything shown: the corrected command echoes --cmd
    result = redact_record(
        answer(lines, ctx, searcher, top=top, warnings=warnings, notices=notices)
    )
    say_warnings(result)  # stderr, with --json too: the JSON also holds them
    if as_json:
        import json

        typer.echo(json.dumps(answer_dict(result), indent=2, ensure_ascii=False))
        return
    from rich.console import Console

    render_answer(result, Console(soft_wrap=False))


def _load_embedder(kind: str):
    from kb.embed import load_embedder

    return load_embedder(kind)
