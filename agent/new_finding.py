"""Recording a new finding: what the options say, what can be derived, where it is written.

:func:`start` folds the options of ``deploykb add`` and what can be derived (a saved answer, the
two launch commands, the log, config.json, the GPU) into a :class:`~agent.draft.Draft`;
:func:`record` completes, redacts and writes it. The edges are parameters: the ``httpx`` client
for config.json, ``detect`` for nvidia-smi, the stdin a log may come from, the question of which
plan step fixed it. Whatever is worth saying comes back as warnings for the command to print.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from agent.draft import (
    Draft,
    FieldRedaction,
    build_finding,
    check_status,
    default_status,
    default_title,
    make_id,
    merge,
    parse_symptom,
    redact_draft,
    symptoms_from_triage,
)
from agent.saved_answer import ChooseStep
from kb.errors import DeployKBError, InputError
from kb.records import Finding, Fix


@dataclass(frozen=True)
class Request:
    """What the options of ``deploykb add`` say (None, or empty, where they say nothing)."""

    title: str | None = None
    model: str | None = None
    model_id: str | None = None  # the id to record when ``model`` is a folder
    arch: str | None = None
    quant: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    interconnect: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    status: str | None = None
    symptoms: tuple[str, ...] = ()
    failed_at: str | None = None  # the step that failed, when the log does not show it
    root_cause: str | None = None
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    tried: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    notes: str | None = None
    log: str | None = None  # a file, or "-" for stdin
    failing_cmd: str | None = None
    working_cmd: str | None = None
    from_ask: Path | None = None
    fixed_by: str | None = None
    id: str | None = None
    directory: Path | None = None
    findings: tuple[Path, ...] = ()  # the --findings folders
    force: bool = False
    mkdir: bool = False  # create the folder written to when it does not exist


@dataclass(frozen=True)
class Folder:
    """The folder the finding is written to, and the ids the other indexed folders hold."""

    path: Path
    taken: dict[str, Path]


@dataclass(frozen=True)
class Started:
    request: Request
    folder: Folder
    draft: Draft
    warnings: tuple[str, ...]


@dataclass(frozen=True)
class Recorded:
    finding: Finding
    path: Path
    backup: Path | None  # the replaced file, kept (--force)
    redactions: tuple[FieldRedaction, ...]
    problems: tuple[str, ...]  # what ``deploykb lint`` will say about the file


def start(
    request: Request,
    *,
    prompting: bool,
    client: Any = None,
    detect: bool = True,
    stdin: IO[str] | None = None,
    choose_step: ChooseStep | None = None,
    today: str | None = None,
) -> Started:
    """Check the options, choose the folder, derive what can be derived and lay the options
    over it (an option always wins). ``prompting``: the command will ask for the rest."""
    if request.log == "-" and prompting:
        raise InputError("--log - reads the log from stdin, so prompts cannot: add --no-input")
    if request.status is not None:
        check_status(request.status)
    if request.fixed_by is not None and request.from_ask is None:
        raise InputError("--fixed-by names a step of a saved answer's plan: add --from-ask FILE")
    folder = choose_folder(request.directory, list(request.findings), create=request.mkdir)
    if request.id is not None:
        check_explicit_id(request.id, folder, request.force)
    saved = None
    if request.from_ask is not None:
        from agent.saved_answer import read_saved_answer

        saved = read_saved_answer(request.from_ask)
    draft, warnings = derive_draft(request, saved, client=client, detect=detect, stdin=stdin)
    if saved is not None:
        from agent.saved_answer import with_plan_step

        draft = with_plan_step(draft, saved, str(request.from_ask), request.fixed_by, choose_step)
    draft = with_options(draft, request, today or dt.date.today().isoformat())
    kept = tuple(s for s in draft.sources if not is_the_log(s, request.log))
    if kept != draft.sources:
        warnings.append(
            f"--source {request.log}: the log given with --log is a file on this machine, not a "
            "source a reader can open; not recorded (its error lines are the symptoms)"
        )
        draft = replace(draft, sources=kept)
    if draft.model_path and not draft.model and not prompting:
        why = _no_id_why(draft.model_path)
        if _unless_folder(request.model) is None and request.model:
            raise InputError(
                f"--model {draft.model_path}: a folder on one machine, and {why}: pass --model-id "
                "org/name (the id the finding records; the folder is still read for config.json)"
            )
        warnings.append(
            f"the commands name the model by a folder, {draft.model_path}, and {why}: no model "
            "recorded (pass --model-id org/name)"
        )
    return Started(request, folder, draft, tuple(warnings))


def is_the_log(source: str, log: str | None) -> bool:
    """Whether ``source`` names the file ``--log`` read (never a source: see ``start``)."""
    if not log or log == "-":
        return False
    try:
        return Path(source.strip()).expanduser().resolve() == Path(log).expanduser().resolve()
    except (OSError, ValueError):
        return False


def _no_id_why(path: str) -> str:
    """Why a model folder gave no Hugging Face id."""
    from agent.hub import model_reference

    if model_reference(path) != "local":
        return "it is not on this machine"
    if Path(path).expanduser().is_dir() and not (Path(path).expanduser() / "config.json").is_file():
        return "it has no config.json"
    return "its config.json names no Hugging Face id (_name_or_path)"


def record(started: Started, draft: Draft, *, redact: bool = True) -> Recorded:
    """Status, title and id given or derived, secrets and addresses redacted, the file written
    atomically (see :func:`write_unique`)."""
    request, folder = started.request, started.folder
    draft = complete(draft, folder, request.force)
    redactions: tuple[FieldRedaction, ...] = ()
    if redact:
        draft, redactions = redact_draft(draft)
    finding, path, backup, problems = write_unique(
        draft, folder, request.force, explicit=request.id is not None
    )
    return Recorded(finding, path, backup, redactions, problems)


# --- deriving --------------------------------------------------------------------------------


def derive_draft(
    request: Request,
    saved: Any = None,
    *,
    client: Any = None,
    detect: bool = True,
    stdin: IO[str] | None = None,
) -> tuple[Draft, list[str]]:
    """Defaults from a saved ask answer (``saved``, read from ``--from-ask``), the commands, the
    log, config.json and the GPU, in increasing order of precedence; the warnings of what could
    not be derived."""
    warnings: list[str] = []
    draft = Draft()
    if saved is not None:
        from agent.saved_answer import draft_from_ask

        draft = merge(draft, draft_from_ask(saved, str(request.from_ask)))
    draft = _from_commands(draft, request.failing_cmd, request.working_cmd)
    if request.log is not None:
        draft, warning = _from_log(draft, request.log, stdin)
        warnings += [warning] if warning else []
    model = request.model or draft.model
    if model:
        facts, warning = model_facts(model, client=client)
        draft = merge(draft, facts)
        if facts.model_path:  # a folder: the id it stands for, or nothing (asked for)
            draft = replace(draft, model=facts.model)
        # with --arch the architecture is known: a config.json that cannot be read is no news
        warnings += [warning] if warning and not request.arch else []
    if request.gpu:
        facts, warning = gpu_facts(request.gpu)
        draft = merge(draft, facts)
        warnings += [warning] if warning else []
    elif not draft.gpu and not draft.sm and detect:
        from agent.context import detect_gpu

        found = detect_gpu()
        if found:
            draft = replace(draft, gpu=found[0], sm=found[1])
    return draft, warnings


def _from_commands(draft: Draft, failing_cmd: str | None, working_cmd: str | None) -> Draft:
    """What the launch commands say, and the fix when both are given (their difference)."""
    for option, value in (("--failing-cmd", failing_cmd), ("--working-cmd", working_cmd)):
        if value is not None and not value.strip():
            raise InputError(f"{option} is empty: pass the launch command, or leave the option out")
    if failing_cmd is None and working_cmd is None:
        return draft
    from agent.fixes import draft_from_command, fix_from_commands
    from agent.flags import parse_command

    failing = parse_command(failing_cmd, source="--failing-cmd") if failing_cmd else None
    working = parse_command(working_cmd, source="--working-cmd") if working_cmd else None
    draft = merge(draft, draft_from_command(working or failing))  # type: ignore[arg-type]
    draft = replace(draft, failing_command=failing_cmd, working_command=working_cmd)
    if failing is not None and working is not None:
        draft = replace(draft, fix=fix_from_commands(failing, working))
    return draft


def _from_log(draft: Draft, log: str, stdin: IO[str] | None) -> tuple[Draft, str | None]:
    """The log's error lines as the symptoms, and the step it failed at (read a second time up
    to its first error line: stdin is read into memory first)."""
    import io
    import sys

    from agent.logs import read_input, triage
    from agent.stages import failed_stage, first_error_line

    stream = stdin if stdin is not None else sys.stdin
    if log == "-":
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data

        def lines():  # type: ignore[no-untyped-def]
            return read_input("-", None, io.StringIO(text))
    else:

        def lines():  # type: ignore[no-untyped-def]
            return read_input(None, Path(log), stream)

    tri = triage(lines())
    symptoms = symptoms_from_triage(tri)
    warning = None
    if not symptoms:
        warning = f"--log {log}: no error lines found; add the symptoms with --symptom"
    stage = failed_stage(lines(), first_error_line(tri)) if tri.lines else None
    return replace(draft, symptoms=symptoms, stage=stage), warning


def model_facts(model: str, *, client: Any = None) -> tuple[Draft, str | None]:
    """Architecture, quantization and traits from config.json (see ``agent.hub.model_context``);
    one that cannot be read is a warning: the finding is recorded without them.

    A folder (here, or on the serving host as a command names it) is not what a finding records:
    ``model`` is the Hugging Face id its config.json or its Hub-cache name gives
    (``agent.hub.hub_id_of_folder``), else None, and ``model_path`` keeps the folder."""
    from agent.hub import model_context, model_reference
    from kb.errors import ConfigFetchError

    if model_reference(model) in ("local", "missing"):
        return _folder_facts(model)
    try:
        traits = model_context(model, client=client)
    except ConfigFetchError as exc:
        return Draft(), f"{exc} (the finding gets no architecture or quantization from it)"
    if traits is None:
        return Draft(), None  # a bare name: nothing to look up
    return Draft(
        architecture=traits.model_type, quantization=traits.quantization, tags=traits.traits
    ), None


def _folder_facts(path: str) -> tuple[Draft, str | None]:
    """A model folder: its config.json's traits (when it is here) and the id it stands for."""
    from agent.context import traits_from_config
    from agent.hub import hub_id_of_folder, load_model_config, model_reference
    from kb.errors import ConfigFetchError

    config, warning = None, None
    if model_reference(path) == "local":
        try:
            config = load_model_config(path)
        except ConfigFetchError as exc:
            warning = f"{exc} (the finding gets no architecture or quantization from it)"
    facts = Draft(model=hub_id_of_folder(path, config), model_path=path)
    if config is None:
        return facts, warning
    traits = traits_from_config(config)
    return replace(
        facts,
        architecture=traits.model_type,
        quantization=traits.quantization,
        tags=traits.traits,
    ), None


def gpu_facts(value: str) -> tuple[Draft, str | None]:
    """``--gpu '8x RTX PRO 6000'`` -> name, SM and count; an unknown name is kept as written,
    with a warning."""
    from agent.context import resolve_gpu

    m = re.match(r"^\s*(\d+)\s*[x×*]\s*", value)
    count = int(m.group(1)) if m and int(m.group(1)) > 0 else None
    try:
        name, sm = resolve_gpu(value)
    except InputError:
        warning = (
            f"--gpu '{value}': not a GPU deploykb knows; kept as written, SM left empty "
            "(add it, e.g. --gpu 'sm120')"
        )
        return Draft(gpu=value[m.end() :] if m else value, gpu_count=count), warning
    return Draft(gpu=name, sm=sm, gpu_count=count), None


def with_options(draft: Draft, request: Request, today: str) -> Draft:
    """The draft with what the options say laid over it (options win; lists are joined)."""
    from agent.logs import classify
    from kb.frameworks import split_framework

    fw_name, fw_version = split_framework(request.framework)
    draft = merge(
        draft,
        Draft(
            id=request.id,
            title=request.title,
            status=request.status,
            model=request.model_id or _unless_folder(request.model),
            architecture=request.arch,
            quantization=request.quant,
            gpu_count=request.gpu_count,
            interconnect=request.interconnect,
            framework=fw_name,
            framework_version=request.framework_version or fw_version,
            root_cause=request.root_cause,
            stage=request.failed_at,
            notes=request.notes,
        ),
    )
    fix = draft.fix
    for kind in ("add", "remove", "env", "pins"):
        for value in getattr(request, kind):
            fix = _add_explicit(fix, kind, value)
    return replace(
        draft,
        symptoms=unique(
            tuple(parse_symptom(s, classify) for s in request.symptoms) + draft.symptoms
        ),
        fix=fix,
        tried=unique(request.tried + draft.tried),
        sources=request.sources,
        related=unique(request.related + draft.related),
        tags=unique(request.tags + draft.tags),
        date=today,
    )


def _unless_folder(model: str | None) -> str | None:
    """``--model`` as the id to record; a folder is not one (see ``model_facts``)."""
    from agent.hub import model_reference

    return model if model and model_reference(model) not in ("local", "missing") else None


def _add_explicit(fix: Fix, kind: str, value: str) -> Fix:
    """One ``--add-flag``/``--remove-flag``/``--env``/``--pin`` value in its list; ``--add-flag
    '--flag OLD -> NEW'`` and ``--env 'NAME=OLD -> NEW'`` are changes."""
    from kb.records import change_sides

    value = " ".join(value.split())
    if not value:
        return fix
    option = {"add": "--add-flag", "remove": "--remove-flag", "env": "--env", "pins": "--pin"}[kind]
    if kind in ("add", "env") and re.search(r"\s(?:->|→)(?:\s|$)", value):
        try:
            change_sides(value)
        except ValueError:
            raise InputError(
                f"{option} '{value}': a change is written '--flag OLD -> NEW' or 'NAME=OLD -> NEW'"
            ) from None
        return replace(fix, change=(*fix.change, value))
    if kind == "env" and "=" not in value:
        raise InputError(f"--env '{value}': write NAME=value")
    return replace(fix, **{kind: (*getattr(fix, kind), value)})


def unique(items: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


# --- where to write --------------------------------------------------------------------------


def choose_folder(directory: Path | None, extra: list[Path], *, create: bool = False) -> Folder:
    """``--dir``, else the first ``--findings``/``DEPLOYKB_FINDINGS`` folder, else ./findings;
    and the ids already taken in the other indexed folders. A folder that does not exist is
    refused (a typo would scatter findings in new folders nobody indexes) unless ``create``
    (``--mkdir``): then writing the finding creates it."""
    from kb.paths import findings_dirs

    if directory is not None or extra:
        target = Path(directory if directory is not None else extra[0]).expanduser()
        named = "--dir" if directory is not None else "--findings"
        if not target.exists() and not create:
            raise InputError(
                f"{named} {target}: no such folder; create it (mkdir -p {target}) or pass --mkdir"
            )
        if target.exists() and not target.is_dir():
            raise InputError(f"{named} {target}: not a folder")
    elif Path("findings").is_dir():
        target = Path("findings")
    else:
        raise InputError(
            "no findings folder: pass --findings DIR (or set DEPLOYKB_FINDINGS), or --dir DIR, "
            "or run from a folder that has findings/"
        )
    others = [d for d in findings_dirs([*extra, target]) if d.resolve() != target.resolve()]
    return Folder(target, ids_in(others))


def ids_in(dirs: Any) -> dict[str, Path]:
    """Ids taken in these folders (a finding file is named after its id) and their files, found
    the way ``ingest`` finds them."""
    from kb.ingest import finding_files

    out: dict[str, Path] = {}
    for p in finding_files([d for d in dirs if Path(d).is_dir()]):
        out.setdefault(p.stem, p)
    return out


def check_explicit_id(fid: str, folder: Folder, force: bool) -> None:
    from kb.serialize import ID_RE

    if not ID_RE.match(fid):
        raise InputError(
            f"--id '{fid}': not a slug; use lower-case letters, digits, '-', '_' and '.'"
        )
    if fid in folder.taken:
        raise InputError(
            f"--id '{fid}' is already used by {shown(folder.taken[fid])}; choose another id"
        )
    existing = folder.path / f"{fid}.md"
    if existing.exists() and not force:
        raise InputError(
            f"{existing} already exists; use --force to replace it "
            f"(the old file is kept as {existing.name}.bak)"
        )


def shown(path: Path) -> str:
    """A path as the user sees it: relative to the working folder when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def complete(draft: Draft, folder: Folder, force: bool) -> Draft:
    """Status, title and id: given, else derived."""
    if not draft.status:
        draft = replace(draft, status=default_status(draft))
    if not draft.title:
        draft = replace(draft, title=default_title(draft))
        if not draft.title:
            raise InputError("--title is required: there is no model, symptom or fix to name it by")
    if not draft.id:
        taken = set(folder.taken) if force else {*folder.taken, *ids_in([folder.path])}
        draft = replace(draft, id=make_id(draft, taken))
    return draft


def write_unique(
    draft: Draft, folder: Folder, force: bool, *, explicit: bool
) -> tuple[Finding, Path, Path | None, tuple[str, ...]]:
    """Write the finding, with what ``lint`` will say about it; a derived id that another
    ``add`` took meanwhile (the file appeared between the check and the write) moves on to the
    next free one, ``-2``, ``-3``..., so two adds at the same moment both keep their finding. An
    id given with ``--id`` is not changed."""
    from agent.checks import lint_text
    from kb.errors import FindingExistsError
    from kb.write import render_finding, write_finding

    problems: list[str] = []
    for _ in range(1000):
        finding = build_finding(draft)
        label = shown(folder.path / f"{finding.id}.md")
        problems += [str(p) for p in lint_text(render_finding(finding), label).problems]
        try:
            path, backup = write_finding(finding, folder.path, force=force)
        except FindingExistsError:
            if explicit or force:
                raise
            used = {*folder.taken, *ids_in([folder.path]), draft.id}
            draft = replace(draft, id=make_id(replace(draft, id=None), used))
            continue
        return finding, path, backup, tuple(problems)
    raise DeployKBError(f"no free id for the new finding in {folder.path}; pass --id")


def written_dict(done: Recorded, indexed: bool) -> dict[str, Any]:
    """The JSON shape of ``deploykb add --json``."""
    return {
        "id": done.finding.id,
        "path": str(done.path),
        "backup": str(done.backup) if done.backup else None,
        "indexed": indexed,
        "redactions": [
            {
                "field": r.field,
                "kind": r.redaction.kind,
                "preview": r.redaction.preview(),
                "replacement": r.redaction.placeholder,
            }
            for r in done.redactions
        ],
    }
