"""``deploykb add``: record a new finding after a fix, in one command.

Reads options, derives what it can (log -> symptoms, two commands -> fix, model -> architecture,
nvidia-smi -> GPU, a saved ``ask --json`` -> context and related case), asks for the rest,
redacts, writes ``<dir>/<id>.md`` atomically and indexes it. Nothing is written until every
answer is in: an interrupted session leaves no file.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agent.app import DbOption, EmbedderOption, FindingsOption, JsonOption, app
from agent.index import split_dirs
from kb.errors import DeployKBError, InputError
from kb.records import STATUSES, SYMPTOM_CLASSES, Fix, Symptom

if TYPE_CHECKING:  # pragma: no cover
    from agent.add import Draft, FieldRedaction
    from kb.ingest import IngestReport

ADD_HELP = """Record a new finding after a fix: derive what can be derived, ask for the rest,
redact secrets and addresses, write findings/<id>.md and index it.

Examples:

\b
  deploykb add --log server.log --model nvidia/GLM-5-NVFP4 \\
      --failing-cmd "$(cat failing.sh)" --working-cmd "$(cat working.sh)"

\b
  deploykb add --no-input --dir findings --model nvidia/GLM-5-NVFP4 --gpu "8x RTX PRO 6000" \\
      --framework sglang --status works-with-flags \\
      --title "GLM-5-NVFP4 on 8x RTX PRO 6000: NaN at first decode" \\
      --symptom "device-assert: probability tensor contains either inf, nan or element < 0" \\
      --add-flag="--fp8-gemm-backend cutlass" --source sgl-project/sglang#14311
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
    root_cause: Annotated[_Text, _opt("--root-cause", help="Why it failed.")] = None,
    add_flag: Annotated[
        _List, _opt("--add-flag", help="Flag added or changed, with its value (repeatable).")
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
    from agent import add as A

    if log == "-" and not no_input:
        raise InputError("--log - reads the log from stdin, so prompts cannot: add --no-input")
    if status is not None:
        A.check_status(status)
    if fixed_by is not None and from_ask is None:
        raise InputError("--fixed-by names a step of a saved answer's plan: add --from-ask FILE")
    target, taken_elsewhere = _folders(directory, split_dirs(findings))
    if finding_id is not None:
        _check_explicit_id(finding_id, target, taken_elsewhere, force)

    draft, warnings = _derive(
        A,
        model=model,
        gpu=gpu,
        log=log,
        failing_cmd=failing_cmd,
        working_cmd=working_cmd,
        from_ask=from_ask,
    )
    if from_ask is not None:
        draft = _from_plan(A, draft, from_ask, fixed_by, no_input)
    from agent.ask import split_framework
    from agent.triage import classify

    fw_name, fw_version = split_framework(framework)
    draft = A.merge(
        draft,
        A.Draft(
            id=finding_id,
            title=title,
            status=status,
            model=model,
            architecture=arch,
            quantization=quant,
            gpu_count=gpu_count,
            interconnect=interconnect,
            framework=fw_name,
            framework_version=framework_version or fw_version,
            root_cause=root_cause,
            notes=notes,
        ),
    )
    fix = draft.fix
    for kind, values in (("add", add_flag), ("remove", remove_flag), ("env", env), ("pins", pin)):
        for value in values or ():
            fix = _add_explicit(fix, kind, value)
    draft = replace(
        draft,
        symptoms=_unique(
            tuple(A.parse_symptom(s, classify) for s in symptom or ()) + draft.symptoms
        ),
        fix=fix,
        tried=_unique(tuple(tried or ()) + draft.tried),
        sources=tuple(source or ()),
        related=_unique(tuple(related or ()) + draft.related),
        tags=_unique(tuple(tag or ()) + draft.tags),
        date=dt.date.today().isoformat(),
    )
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)

    if not no_input:
        given = {
            "title": title,
            "model": model,
            "gpu": gpu,
            "framework": framework,
            "framework_version": framework_version,
            "status": status,
            "symptoms": symptom,
            "root_cause": root_cause,
            "fix": add_flag or remove_flag or env or pin,
            "tried": tried,
            "sources": source,
            "notes": notes,
        }
        try:
            draft = _ask(A, draft, given)
        except typer.Abort:
            raise KeyboardInterrupt from None

    draft = _complete(A, draft, taken_elsewhere, target, force)
    redactions: tuple[FieldRedaction, ...] = ()
    if not no_redact:
        draft, redactions = A.redact_draft(draft)
        _report_redactions(redactions)
    finding, path, backup = _write_unique(
        A, draft, target, force, explicit=finding_id is not None, taken=taken_elsewhere
    )
    _write_and_index(finding, path, backup, target, db, embedder, redactions, json_out)


def _write_unique(
    A: Any, draft: Draft, target: Path, force: bool, *, explicit: bool, taken: dict[str, Path]
) -> tuple[Any, Path, Path | None]:
    """Write the finding; a derived id that another ``add`` took meanwhile (the file appeared
    between the check and the write) moves on to the next free one, ``-2``, ``-3``..., so two
    adds at the same moment both keep their finding. An id given with ``--id`` is not changed."""
    from kb.errors import FindingExistsError
    from kb.write import write_finding

    for _ in range(1000):
        finding = A.build_finding(draft)
        _report_lint(finding, target)
        try:
            path, backup = write_finding(finding, target, force=force)
        except FindingExistsError:
            if explicit or force:
                raise
            used = {*taken, *_ids_in([target]), draft.id}
            draft = replace(draft, id=A.make_id(replace(draft, id=None), used))
            continue
        return finding, path, backup
    raise DeployKBError(f"no free id for the new finding in {target}; pass --id")


def _complete(
    A: Any, draft: Draft, taken_elsewhere: dict[str, Path], target: Path, force: bool
) -> Draft:
    """Status, title and id: given, else derived."""
    if not draft.status:
        draft = replace(draft, status=A.default_status(draft))
    if not draft.title:
        draft = replace(draft, title=A.default_title(draft))
        if not draft.title:
            raise InputError("--title is required: there is no model, symptom or fix to name it by")
    if not draft.id:
        taken = set(taken_elsewhere) if force else {*taken_elsewhere, *_ids_in([target])}
        draft = replace(draft, id=A.make_id(draft, taken))
    return draft


def _write_and_index(
    finding: Any,
    path: Path,
    backup: Path | None,
    target: Path,
    db: Path | None,
    embedder: str,
    redactions: tuple[FieldRedaction, ...],
    json_out: bool,
) -> None:
    """Say where the file was written, index it with the shipped findings, say how to share it."""
    shown = _display(path)
    if not json_out:
        kept = f" (the old file is kept as {_display(backup)})" if backup else ""
        typer.echo(f"wrote {shown}{kept}")
    try:
        report = _index(target, db, embedder)
    except KeyboardInterrupt:
        typer.echo(
            f"Error: interrupted while indexing; {shown} was written: run `deploykb ingest`",
            err=True,
        )
        raise typer.Exit(130) from None
    except DeployKBError as exc:
        typer.echo(f"Error: {shown} was written but not indexed: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    own = [e for e in report.errors if Path(e.path).resolve() == path.resolve()]
    for error in report.errors:
        if error not in own:
            typer.echo(f"warning: {error}", err=True)
    if json_out:
        out = {
            "id": finding.id,
            "path": str(path),
            "backup": str(backup) if backup else None,
            "indexed": not own,
            "redactions": [
                {
                    "field": r.field,
                    "kind": r.redaction.kind,
                    "preview": r.redaction.preview(),
                    "replacement": r.redaction.placeholder,
                }
                for r in redactions
            ],
        }
        typer.echo(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        if not own:
            typer.echo(
                f"indexed: {report.total} findings ({report.added} added, {report.updated} updated)"
            )
        typer.echo(f"share it: git add {shown}")
    for error in own:
        typer.echo(f"Error: {error}", err=True)
    if own:
        raise typer.Exit(1)


# --- where to write ----------------------------------------------------------------------------


def _folders(directory: Path | None, extra: list[Path]) -> tuple[Path, dict[str, Path]]:
    """The folder to write to, and the ids already taken in the other indexed folders."""
    from kb.paths import findings_dirs

    target = _target_dir(directory, extra)
    others = [d for d in findings_dirs([*extra, target]) if d.resolve() != target.resolve()]
    return target, _ids_in(others)


def _target_dir(directory: Path | None, extra: list[Path]) -> Path:
    """``--dir``, else the first ``--findings``/``DEPLOYKB_FINDINGS`` folder, else ./findings."""
    if directory is not None:
        return Path(directory).expanduser()
    if extra:
        return Path(extra[0]).expanduser()
    local = Path("findings")
    if local.is_dir():
        return local
    raise InputError(
        "no findings folder: pass --findings DIR (or set DEPLOYKB_FINDINGS), or --dir DIR, "
        "or run from a folder that has findings/"
    )


def _indexed_dirs(target: Path) -> list[Path]:
    """The folders indexed beside the new finding: the shipped findings and ``target``."""
    from kb.paths import findings_dirs

    return findings_dirs([target])


def _ids_in(dirs: Any) -> dict[str, Path]:
    """Ids taken in these folders (a finding file is named after its id) and their files, found
    the way ``ingest`` finds them."""
    from kb.ingest import finding_files

    out: dict[str, Path] = {}
    for p in finding_files([d for d in dirs if Path(d).is_dir()]):
        out.setdefault(p.stem, p)
    return out


def _check_explicit_id(fid: str, target: Path, elsewhere: dict[str, Path], force: bool) -> None:
    from kb.serialize import ID_RE

    if not ID_RE.match(fid):
        raise InputError(
            f"--id '{fid}': not a slug; use lower-case letters, digits, '-', '_' and '.'"
        )
    if fid in elsewhere:
        raise InputError(
            f"--id '{fid}' is already used by {_display(elsewhere[fid])}; choose another id"
        )
    existing = target / f"{fid}.md"
    if existing.exists() and not force:
        raise InputError(
            f"{existing} already exists; use --force to replace it "
            f"(the old file is kept as {existing.name}.bak)"
        )


def _display(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# --- deriving ----------------------------------------------------------------------------------


def _derive(
    A: Any,
    *,
    model: str | None,
    gpu: str | None,
    log: str | None,
    failing_cmd: str | None,
    working_cmd: str | None,
    from_ask: Path | None,
) -> tuple[Draft, list[str]]:
    """Defaults from a saved ask answer, the commands, the log, config.json and the GPU, in
    increasing order of precedence."""
    warnings: list[str] = []
    draft = A.Draft()
    if from_ask is not None:
        draft = A.merge(draft, A.draft_from_ask(_read_json(from_ask), str(from_ask)))

    for option, value in (("--failing-cmd", failing_cmd), ("--working-cmd", working_cmd)):
        if value is not None and not value.strip():
            raise InputError(f"{option} is empty: pass the launch command, or leave the option out")
    if failing_cmd is not None or working_cmd is not None:
        from agent.flags import parse_command

        failing = parse_command(failing_cmd, source="--failing-cmd") if failing_cmd else None
        working = parse_command(working_cmd, source="--working-cmd") if working_cmd else None
        draft = A.merge(draft, A.draft_from_command(working or failing))
        draft = replace(draft, failing_command=failing_cmd, working_command=working_cmd)
        if failing is not None and working is not None:
            draft = replace(draft, fix=A.fix_from_commands(failing, working))

    if log is not None:
        from agent.triage import read_input, triage

        lines = (
            read_input("-", None, sys.stdin)
            if log == "-"
            else read_input(None, Path(log), sys.stdin)
        )
        symptoms = A.symptoms_from_triage(triage(lines))
        if not symptoms:
            warnings.append(f"--log {log}: no error lines found; add the symptoms with --symptom")
        draft = replace(draft, symptoms=symptoms)

    model = model or draft.model
    if model:
        draft = A.merge(draft, _model_facts(model, warnings))

    if gpu:
        draft = A.merge(draft, _gpu_facts(gpu))
    elif not draft.gpu and not draft.sm:
        from agent.context import detect_gpu

        found = detect_gpu()
        if found:
            draft = replace(draft, gpu=found[0], sm=found[1])
    return draft, warnings


def _from_plan(A: Any, draft: Draft, path: Path, fixed_by: str | None, no_input: bool) -> Draft:
    """Which step of a saved answer's plan fixed it (``--fixed-by``, else asked): that step's
    changes become the fix, the steps before it ``tried_without_effect``. Without a plan, or
    with ``match``, the best match's changes stay the fix."""
    data = _read_json(path)
    steps, leads = A.plan_from_ask(data, str(path))
    if not steps:
        if fixed_by not in (None, "match"):
            raise InputError(f"--fixed-by {fixed_by}: {path} has no plan (ask with --cmd)")
        return draft
    if fixed_by is None and no_input:
        if leads:
            numbers = ", ".join(str(s.step) for s in steps)
            raise InputError(
                f"--from-ask {path} has a plan (steps {numbers}): say which step fixed it with "
                "--fixed-by STEP, or --fixed-by match / none"
            )
        fixed_by = "match"
    if fixed_by is None:
        typer.echo("The plan in the answer:", err=True)
        for s in steps:
            typer.echo(
                f"  {s.step}. " + ", ".join(A.change_as_tried(c) for c in s.changes), err=True
            )
        while True:
            fixed_by = str(
                typer.prompt(
                    "Which step fixed it (a number, 'match' for the best match's fix, 'none')",
                    default="match" if not leads else "",
                    show_default=not leads,
                )
            ).strip()
            if fixed_by in ("match", "none") or fixed_by.isdigit():
                break
            typer.echo("  a step number, 'match' or 'none'", err=True)
    return A.apply_fixed_by(draft, data, steps, fixed_by, str(path))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"--from-ask {path}: no such file") from None
    except OSError as exc:
        raise InputError(f"--from-ask {path}: cannot read ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else str(path)
        raise InputError(
            f"--from-ask {where}: not JSON; save it with `deploykb ask --json`"
        ) from None


def _model_facts(model: str, warnings: list[str]) -> Draft:
    """Architecture and quantization from config.json; a failure to fetch is only a warning."""
    import re

    from agent import add as A
    from agent.context import traits_from_config
    from agent.hub import load_model_config
    from kb.errors import ConfigFetchError

    local = Path(model).expanduser().exists()
    if not local and not re.fullmatch(r"[\w.-]+/[\w.-]+", model):
        return A.Draft()  # a bare name: nothing to look up
    try:
        traits = traits_from_config(load_model_config(model))
    except ConfigFetchError as exc:
        warnings.append(f"{exc} (the finding gets no architecture or quantization from it)")
        return A.Draft()
    return A.Draft(
        architecture=traits.model_type,
        quantization=traits.quantization,
        tags=tuple(traits.traits),
    )


def _gpu_facts(value: str) -> Draft:
    """``--gpu '8x RTX PRO 6000'`` -> name, SM and count; an unknown name is kept as written."""
    import re

    from agent import add as A
    from agent.context import resolve_gpu

    m = re.match(r"^\s*(\d+)\s*[x×*]\s*", value)
    count = int(m.group(1)) if m and int(m.group(1)) > 0 else None
    try:
        name, sm = resolve_gpu(value)
    except InputError:
        typer.echo(
            f"warning: --gpu '{value}': not a GPU deploykb knows; kept as written, SM left empty "
            "(add it, e.g. --gpu 'sm120')",
            err=True,
        )
        return A.Draft(gpu=value[m.end() :] if m else value, gpu_count=count)
    return A.Draft(gpu=name, sm=sm, gpu_count=count)


def _add_explicit(fix: Fix, kind: str, value: str) -> Fix:
    value = " ".join(value.split())
    if not value:
        return fix
    if kind == "env" and "=" not in value:
        raise InputError(f"--env '{value}': write NAME=value")
    return replace(fix, **{kind: (*getattr(fix, kind), value)})


def _unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


# --- prompts -----------------------------------------------------------------------------------


def _ask(A: Any, draft: Draft, given: dict[str, Any]) -> Draft:
    """Ask for each field the options did not give, pre-filled with what was derived."""

    def text(label: str, default: str | None, required: bool = False) -> str | None:
        while True:
            value = typer.prompt(label, default=default or "", show_default=bool(default))
            value = " ".join(str(value).split()) if "\n" not in str(value) else str(value).strip()
            if value or not required:
                return value or None
            typer.echo("  a value is needed here")

    def items(label: str) -> list[str]:
        out: list[str] = []
        while True:
            value = typer.prompt(f"{label} (empty to finish)", default="", show_default=False)
            if not str(value).strip():
                return out
            out.append(str(value).strip())

    if not given["model"]:
        answer = text("Model (Hugging Face id or local folder)", draft.model)
        if answer and answer != draft.model:
            warnings: list[str] = []
            facts = _model_facts(answer, warnings)
            for warning in warnings:
                typer.echo(f"warning: {warning}", err=True)
            draft = replace(
                draft,
                architecture=facts.architecture,
                quantization=facts.quantization or draft.quantization,
                tags=_unique(draft.tags + facts.tags),
            )
        draft = replace(draft, model=answer)
    if not given["gpu"]:
        answer = text("GPU (name or SM, e.g. '8x RTX PRO 6000' or sm120)", _gpu_label(draft))
        if answer and answer != _gpu_label(draft):
            facts = _gpu_facts(answer)
            draft = replace(
                draft, gpu=facts.gpu, sm=facts.sm, gpu_count=facts.gpu_count or draft.gpu_count
            )
    if not given["framework"]:
        draft = replace(
            draft, framework=text("Framework (sglang, vllm, tensorrt-llm)", draft.framework)
        )
    if not given["framework_version"]:
        draft = replace(draft, framework_version=text("Framework version", draft.framework_version))

    if not given["symptoms"]:
        from agent.triage import classify

        symptoms = draft.symptoms
        if symptoms:
            typer.echo("Symptoms found:")
            for s in symptoms:
                typer.echo(f"  {s.cls}: {s.text}")
            if not typer.confirm("Keep them?", default=True):
                symptoms = ()
        for entry in items(f"Add a symptom as 'class: error line' ({', '.join(SYMPTOM_CLASSES)})"):
            symptoms = (*symptoms, _prompted(lambda e=entry: A.parse_symptom(e, classify)))
        draft = replace(draft, symptoms=tuple(s for s in symptoms if isinstance(s, Symptom)))

    if not given["root_cause"]:
        draft = replace(draft, root_cause=text("Root cause", draft.root_cause))

    if not given["fix"]:
        fix = draft.fix
        if not fix.is_empty():
            typer.echo("Fix found:")
            for line in _fix_lines(fix):
                typer.echo(f"  {line}")
            if not typer.confirm("Keep it?", default=True):
                fix = Fix()
        for entry in items("Add a change ('--flag value', 'remove --flag', NAME=value, pkg==1.2)"):
            fix = _prompted(lambda e=entry, f=fix: A.add_change(f, e, draft.framework)) or fix
        draft = replace(draft, fix=fix)

    if not given["tried"]:
        draft = replace(draft, tried=(*draft.tried, *items("Tried without effect")))

    if not given["status"]:
        default = draft.status or A.default_status(draft)
        while True:
            answer = text(f"Status ({', '.join(STATUSES)})", default, required=True)
            if answer in STATUSES:
                draft = replace(draft, status=answer)
                break
            typer.echo(f"  '{answer}' is not one of: {', '.join(STATUSES)}")

    if not given["sources"]:
        draft = replace(
            draft, sources=(*draft.sources, *items("Source (URL, owner/repo#N or file path)"))
        )
    if not given["notes"]:
        draft = replace(draft, notes=text("Notes", draft.notes))
    if not given["title"]:
        draft = replace(
            draft, title=text("Title (one line)", draft.title or A.default_title(draft), True)
        )
    return draft


def _prompted(make: Any) -> Any:
    """An entry typed at a prompt: a bad one is reported and skipped, not fatal."""
    try:
        return make()
    except InputError as exc:
        typer.echo(f"  skipped: {exc}")
        return None


def _gpu_label(draft: Draft) -> str | None:
    name = draft.gpu or draft.sm
    if name and draft.gpu_count:
        return f"{draft.gpu_count}x {name}"
    return name


def _fix_lines(fix: Fix) -> list[str]:
    return [
        *(f"+ {x}" for x in fix.add),
        *(f"- {x}" for x in fix.remove),
        *(f"env {x}" for x in fix.env),
        *(f"pin {x}" for x in fix.pins),
    ]


# --- output and index --------------------------------------------------------------------------


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


def _report_lint(finding: Any, target: Path) -> None:
    """What ``deploykb lint`` will say about the new file (an unknown flag, a link that is not one),
    said now, while it is easy to fix."""
    from agent.lint import lint_text
    from kb.write import render_finding

    path = _display(target / f"{finding.id}.md")
    for problem in lint_text(render_finding(finding), path).problems:
        typer.echo(f"warning: {problem}", err=True)


def _index(target: Path, db: Path | None, embedder: str) -> IngestReport:
    """Ingest the folder written to plus the shipped findings, so the index stays complete."""
    from agent.index import build_index
    from kb.paths import resolve_db_path
    from kb.store import open_db

    database = open_db(resolve_db_path(db))
    try:
        return build_index(database, _indexed_dirs(target), embedder)
    finally:
        database.close()
