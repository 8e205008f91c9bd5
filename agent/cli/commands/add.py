"""``deploykb add``: record a new finding after a fix, in one command.

The options go to :mod:`agent.new_finding`, which derives what it can (log -> symptoms, two
commands -> fix, model -> architecture, nvidia-smi -> GPU, a saved ``ask --json`` -> context and
related case); the rest is asked (:mod:`agent.cli.prompts`); the finding is redacted, written to
``<dir>/<id>.md`` atomically and indexed. Nothing is written until every answer is in: an
interrupted session leaves no file.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agent.cli.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app
from agent.cli.index import split_dirs
from kb.errors import DeployKBError
from kb.records import STATUSES

if TYPE_CHECKING:  # pragma: no cover
    from agent.draft import FieldRedaction
    from agent.new_finding import Recorded

ADD_HELP = """Record a new finding after a fix: derive what can be derived, ask for the rest,
redact secrets and addresses, write findings/<id>.md and index it.

Examples:

\b
  deploykb add --log server.log --model nvidia/GLM-5-NVFP4 \\
      --failing-cmd "$(cat failing.sh)" --working-cmd "$(cat working.sh)"

\b
  deploykb add --no-input --dir findings --model nvidia/GLM-5-NVFP4 \\
      --gpu "8x RTX PRO 6000" --framework sglang --status works-with-flags \\
      --title "GLM-5-NVFP4 on 8x RTX PRO 6000: NaN at first decode" \\
      --symptom "device-assert: CUDA error: device-side assert triggered" \\
      --add-flag="--fp8-gemm-backend cutlass" \\
      --source sgl-project/sglang#14311
"""

_Text = Optional[str]
_List = Optional[list[str]]


def _opt(*names: str, help: str, **kw: Any) -> Any:  # noqa: A002 - typer's own word
    return typer.Option(*names, help=help, show_default=False, **kw)


@app.command("add", help=ADD_HELP)
def add_command(
    title: Annotated[
        _Text, _opt("--title", help="One line: model, hardware, symptom, fix.")
    ] = None,
    model: Annotated[
        _Text, _opt("--model", help="Hugging Face id or local model folder (config.json is read).")
    ] = None,
    model_id: Annotated[
        _Text, _opt("--model-id", help="Hub id to record when the model is a local folder.")
    ] = None,
    arch: Annotated[_Text, _opt("--arch", help="Architecture (config.json model_type).")] = None,
    quant: Annotated[_Text, _opt("--quant", help="Quantization: nvfp4, fp8, awq, ...")] = None,
    gpu: Annotated[
        _Text,
        _opt("--gpu", help="GPU name or SM: '8x RTX PRO 6000', B200, sm120. Default: nvidia-smi."),
    ] = None,
    gpu_count: Annotated[
        Optional[int], _opt("--gpu-count", min=1, help="GPUs used. Default: the command's --tp.")
    ] = None,
    interconnect: Annotated[_Text, _opt("--interconnect", help="PCIe, NVLink, ...")] = None,
    framework: Annotated[
        _Text,
        _opt("--framework", help="sglang, vllm, tensorrt-llm or a fork; 'sglang 0.5.9' works."),
    ] = None,
    framework_version: Annotated[
        _Text, _opt("--framework-version", help="Version, commit or image tag.")
    ] = None,
    status: Annotated[_Text, _opt("--status", help=f"One of: {', '.join(STATUSES)}.")] = None,
    symptom: Annotated[
        _List,
        _opt(
            "--symptom", help="'class: error line' (repeatable). Classes: see findings/README.md."
        ),
    ] = None,
    failed_at: Annotated[
        _Text,
        _opt(
            "--failed-at",
            help="Step that failed (CUDA-graph capture, under load...). Default: from --log.",
        ),
    ] = None,
    root_cause: Annotated[_Text, _opt("--root-cause", help="Why it failed.")] = None,
    add_flag: Annotated[
        _List, _opt("--add-flag", help="Flag added, or '--flag OLD -> NEW' (repeatable).")
    ] = None,
    remove_flag: Annotated[_List, _opt("--remove-flag", help="Flag dropped (repeatable).")] = None,
    env: Annotated[_List, _opt("--env", help="NAME=value set for the fix (repeatable).")] = None,
    pin: Annotated[_List, _opt("--pin", help="pkg==1.2 or org/image:tag (repeatable).")] = None,
    tried: Annotated[_List, _opt("--tried", help="Tried without effect (repeatable).")] = None,
    source: Annotated[
        _List, _opt("--source", help="URL, owner/repo#N or a file path (repeatable).")
    ] = None,
    related: Annotated[
        _List, _opt("--related", help="Id of a related finding (repeatable).")
    ] = None,
    tag: Annotated[_List, _opt("--tag", help="Free word (repeatable).")] = None,
    notes: Annotated[_Text, _opt("--notes", help="Anything else worth knowing (## Notes).")] = None,
    log: Annotated[
        _Text,
        _opt("--log", help="Server log (or - for stdin): its error lines become the symptoms."),
    ] = None,
    failing_cmd: Annotated[
        _Text, _opt("--failing-cmd", help="The launch command that failed.")
    ] = None,
    working_cmd: Annotated[
        _Text,
        _opt("--working-cmd", help="The launch command that works: the fix is the difference."),
    ] = None,
    from_ask: Annotated[
        Optional[Path],
        _opt("--from-ask", help="A saved `deploykb ask --json` answer to start from."),
    ] = None,
    fixed_by: Annotated[
        _Text,
        _opt(
            "--fixed-by",
            help="With --from-ask: the plan step that fixed it (a number), 'match' (the best "
            "match's fix) or 'none'. Steps tried before it become tried_without_effect.",
        ),
    ] = None,
    finding_id: Annotated[
        _Text, _opt("--id", help="File name without .md. Default: model-sm-symptom, made unique.")
    ] = None,
    directory: Annotated[
        Optional[Path],
        _opt(
            "--dir",
            help="Folder to write to. Default: the first --findings folder, else ./findings.",
        ),
    ] = None,
    mkdir: Annotated[
        bool, typer.Option("--mkdir", help="Create the folder to write to if it does not exist.")
    ] = False,
    findings: FindingsOption = None,
    db: DbOption = None,
    embedder: EmbedderOption = "auto",
    force: Annotated[
        bool, typer.Option("--force", help="Replace an existing file (kept as <id>.md.bak).")
    ] = False,
    no_redact: Annotated[
        bool, typer.Option("--no-redact", help="Keep addresses, hosts and tokens as written.")
    ] = False,
    no_input: Annotated[
        bool, typer.Option("--no-input", help="Never prompt: options and derived values only.")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    from agent.cli.prompts import ask_for_the_rest, choose_step
    from agent.new_finding import Request, record, start

    # one option a field, as the signature lists them
    request = Request(
        title=title, model=model, model_id=model_id, arch=arch, quant=quant, gpu=gpu,
        gpu_count=gpu_count, interconnect=interconnect, framework=framework, framework_version=framework_version,
        status=status, symptoms=tuple(symptom or ()), failed_at=failed_at, root_cause=root_cause,
        add=tuple(add_flag or ()), remove=tuple(remove_flag or ()), env=tuple(env or ()),
        pins=tuple(pin or ()), tried=tuple(tried or ()), sources=tuple(source or ()),
        related=tuple(related or ()), tags=tuple(tag or ()), notes=notes, log=log,
        failing_cmd=failing_cmd, working_cmd=working_cmd, from_ask=from_ask, fixed_by=fixed_by,
        id=finding_id, directory=directory, findings=tuple(split_dirs(findings)), force=force,
        mkdir=mkdir,
    )  # fmt: skip
    try:
        from kb.redact import safe_text

        # warnings quote paths and values; prompts show what was derived from the log
        shown_text = (lambda t: t) if no_redact else safe_text
        asks = None if no_input else partial(choose_step, shown=shown_text)
        started = start(request, prompting=not no_input, stdin=sys.stdin, choose_step=asks)
        for warning in started.warnings:
            typer.echo(f"warning: {shown_text(warning)}", err=True)
        draft = started.draft
        if not no_input:
            draft = ask_for_the_rest(draft, request, shown=shown_text)
    except typer.Abort:
        raise KeyboardInterrupt from None
    done = record(started, draft, redact=not no_redact)
    _report_redactions(done.redactions)
    for problem in done.problems:
        typer.echo(f"warning: {shown_text(problem)}", err=True)
    _write_and_index(done, started.folder.path, db, embedder, json_out)


def _report_redactions(redactions: tuple[FieldRedaction, ...]) -> None:
    if not redactions:
        return
    n = len(redactions)
    typer.echo(
        f"redacted {n} value{'s' if n != 1 else ''} before writing (--no-redact keeps them):",
        err=True,
    )
    for r in redactions:
        typer.echo(f"  {r}", err=True)


def _write_and_index(
    done: Recorded, target: Path, db: Path | None, embedder: str, json_out: bool
) -> None:
    """Say where the file was written, index it with the shipped findings, say how to share it."""
    from agent.cli.index import index_with_shipped
    from agent.new_finding import shown, written_dict

    path, backup = done.path, done.backup
    if not json_out:
        kept = f" (the old file is kept as {shown(backup)})" if backup else ""
        typer.echo(f"wrote {shown(path)}{kept}")
    try:
        report = index_with_shipped(target, db, embedder)
    except KeyboardInterrupt:
        typer.echo(
            f"Error: interrupted while indexing; {shown(path)} was written: run `deploykb ingest`",
            err=True,
        )
        raise typer.Exit(130) from None
    except DeployKBError as exc:
        typer.echo(f"Error: {shown(path)} was written but not indexed: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    own = [e for e in report.errors if Path(e.path).resolve() == path.resolve()]
    for error in report.errors:
        if error not in own:
            typer.echo(f"warning: {error}", err=True)
    if json_out:
        typer.echo(json.dumps(written_dict(done, not own), indent=2, ensure_ascii=False))
    else:
        if not own:
            typer.echo(
                f"indexed: {report.total} findings ({report.added} added, {report.updated} updated)"
            )
        typer.echo(f"share it: git add {shown(path)}")
    for error in own:
        typer.echo(f"Error: {error}", err=True)
    if own:
        raise typer.Exit(1)
