"""``ask``: from a pasted error/log/question plus deployment context to an ``Answer``.

``build_context`` gathers what the user told us (and what can be fetched or detected);
``answer`` triages the text, retrieves, decides confidence and diffs flags. Both receive their
dependencies (database, searcher, httpx client) as parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from agent import match as M
from agent.search import Searcher
from kb.errors import ConfigFetchError, HubOfflineError, InputError, ModelNotFoundError
from kb.frameworks import split_framework
from kb.records import (
    Answer,
    ArchTraits,
    Finding,
    FlagChange,
    LaunchConfig,
    Proposal,
    QueryContext,
    Triage,
)

HEAD_CHARS = 8000  # of the raw input kept for question-style queries (the rest is streamed)


class _Head:
    """Pass lines through while keeping the first ``HEAD_CHARS`` characters of the input."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.parts: list[str] = []
        self._size = 0
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.count += 1
            if self._size < HEAD_CHARS:
                self.parts.append(line)
                self._size += len(line)
            yield line

    def segments(self, rules) -> Iterator[str | int]:
        """``LogStream.segments`` of the input when it has them (a file or stdin), keeping the head
        of the lines passed through (the ``int`` items count lines passed over)."""
        inner = getattr(self._lines, "segments", None)
        items = inner(rules) if callable(inner) else iter(self._lines)
        for item in items:
            if isinstance(item, int):
                self.count += item
                continue
            self.count += 1
            if self._size < HEAD_CHARS:
                self.parts.append(item)
                self._size += len(item)
            yield item

    @property
    def text(self) -> str:
        return "".join(p if p.endswith("\n") else p + "\n" for p in self.parts)[:HEAD_CHARS]


def build_context(
    *,
    model: str | None = None,
    arch: str | None = None,
    quant: str | None = None,
    gpu: str | None = None,
    framework: str | None = None,
    cmd: str | None = None,
    server: str | None = None,
    tried: Sequence[str] = (),
    client=None,
    detect=True,
    warnings: list[str],
    notices: list[str] | None = None,
) -> QueryContext:
    """Fold the options, the launch command, the live server and fetched config.json into one context.

    Raises for bad input (unknown GPU, unparsable command, a model the Hub says does not exist);
    a network failure only adds a warning. When ``notices`` is given and the model's name gives
    the architecture, that architecture is used and said so: in a notice when HF_HUB_OFFLINE kept
    config.json from being fetched, in the warning otherwise.
    """
    from agent.context import gpu_count, traits_for_model_type

    command, served = _current_command(cmd, server, client, warnings)
    fw_name, fw_version = _framework(framework, command, served, detect, warnings)
    given_model = model
    model = model or (command.model if command else None) or (served.model if served else None)
    if quant is None and command is not None:
        for flag in command.flags:
            if flag.name == "--quantization" and flag.value:
                quant = flag.value
    traits: ArchTraits | None = None
    if model:
        # a path in --cmd names the model on the serving host, which need not be this machine
        # with --arch, a config.json that cannot be read costs nothing worth a warning: the
        # architecture and its traits come from --arch
        traits = _model_traits(
            model,
            client,
            warnings if not arch else [],
            strict=model == given_model,
            notices=notices if not arch else None,  # --arch, when given, says it instead
        )
    if arch:
        given = traits_for_model_type(arch)
        traits = given if traits is None else replace(traits, model_type=arch)
    if traits is not None and quant is None:
        quant = traits.quantization
    gpu_name, sm = _gpu(gpu, detect, warnings)
    if tried:
        from agent.differential import parse_tried

        parse_tried(tried, command.framework if command else fw_name)  # bad entries fail here
    return QueryContext(
        model=model,
        arch=traits,
        quantization=quant,
        gpu=gpu_name,
        sm=sm,
        framework=fw_name,
        framework_version=fw_version,
        command=command,
        tried=tuple(tried),
        gpu_count=gpu_count(gpu),
    )


def _current_command(
    cmd: str | None, server: str | None, client, warnings: list[str]
) -> tuple[LaunchConfig | None, Any]:
    """The current launch command (``--cmd``, else what a live SGLang server reports) and what
    ``--server`` says about itself (None without one, or when it cannot be asked)."""
    from agent.flags import parse_command

    command: LaunchConfig | None = None
    served = None
    if server:
        from agent.hub import fetch_server, server_args_to_command

        try:
            served = fetch_server(server, client=client)
            if served.args:  # SGLang reports its arguments: they are the current command
                command = parse_command(server_args_to_command(served.args), "sglang")
        except ConfigFetchError as exc:
            warnings.append(f"--server: {exc}; continuing without the live server's arguments")
    if cmd:
        command = parse_command(cmd)
    return command, served


def _framework(
    framework: str | None,
    command: LaunchConfig | None,
    served: Any,
    detect: bool,
    warnings: list[str],
) -> tuple[str | None, str | None]:
    """The framework and its version: ``--framework``, else the command's; the version given,
    else the live server's, else the installed package's (when ``detect``)."""
    fw_name, fw_version = split_framework(framework)
    if fw_name is None and command is not None:
        fw_name = command.framework
    if served is not None and served.version:
        if fw_name in (None, served.framework):
            if fw_version is None:  # the running server's own version
                fw_name, fw_version = served.framework, served.version
        else:
            warnings.append(
                f"--server reports {served.framework} {served.version}, but the framework "
                f"given is {fw_name}; using {fw_name}"
            )
    if fw_version is None and fw_name and detect:
        from agent.registry import installed_version

        fw_version = installed_version(fw_name)  # the package's metadata, never an import
    return fw_name, fw_version


def _gpu(gpu: str | None, detect: bool, warnings: list[str]) -> tuple[str | None, str | None]:
    """The GPU's name and SM: ``--gpu`` (an unknown one is a warning), else nvidia-smi's."""
    from agent.context import detect_gpu, resolve_gpu

    if gpu:
        try:
            return resolve_gpu(gpu)
        except InputError as exc:
            warnings.append(f"{exc}; matching without the GPU")
            return None, None
    if detect:
        found = detect_gpu()
        if found:
            return found
    return None, None


def _model_traits(
    model: str,
    client,
    warnings: list[str],
    *,
    strict: bool,
    notices: list[str] | None = None,
) -> ArchTraits | None:
    """Architecture traits from the model's config.json. ``strict`` (the user named the model
    with --model): a local path that does not exist is an error; otherwise it is a name only.
    A Hub config that cannot be fetched is a warning; with ``notices``, when the model's name
    gives its architecture, that architecture is used and said so: in one notice when
    HF_HUB_OFFLINE kept the Hub from being asked (the user's choice), in the warning otherwise.
    A local config that cannot be read is an error."""
    from agent.context import traits_for_model_type
    from agent.hub import FALLBACK, model_context, model_reference
    from agent.prose import model_type_of_name

    try:
        return model_context(model, client=client, must_exist=strict)
    except ModelNotFoundError:
        raise
    except ConfigFetchError as exc:
        if model_reference(model) != "hub":
            raise
        model_type = model_type_of_name(model)
        if notices is None or model_type is None:
            warnings.append(f"{exc}; matching without the model's architecture")
            return None
        why = str(exc).removesuffix(f"; {FALLBACK}")
        if isinstance(exc, HubOfflineError):
            notices.append(f"architecture {model_type} read from the model's name ({why})")
        else:
            warnings.append(f"{why}; the architecture {model_type} is read from the model's name")
        return traits_for_model_type(model_type)


def answer(
    lines: Iterable[str],
    ctx: QueryContext,
    searcher: Searcher,
    *,
    top: int = 3,
    warnings: list[str] | None = None,
    use: tuple[str, ...] = ("lines", "bm25", "embedding"),
    notices: Sequence[str] = (),
) -> Answer:
    """Triage the input, retrieve, decide confidence, and turn each match into flag changes
    (``notices``: what :func:`build_context` noted, shown with what the text adds)."""
    from agent.logs import triage as run_triage

    warnings = list(warnings or [])
    head = _Head(lines)
    tri: Triage = run_triage(head)
    text = head.text
    if not text.strip():
        raise InputError("empty input: paste an error, a log, or a question")
    if not tri.lines and head.count > 20:
        warnings.append(
            f"no error lines found in {head.count} lines of log; matching on its text as a question"
        )
    notices = list(notices)
    ctx = context_from_text(ctx, text, notices)
    query = _with_context_words(text if not tri.lines else "", ctx)
    matches, evidence = searcher.search(query or text, tri, ctx, top=top, use=use)
    if not matches:
        return Answer(
            False,
            (),
            tri,
            ctx,
            tuple(warnings),
            "the knowledge base is empty",
            notices=tuple(notices),
        )
    from agent.rank import load_ranker

    ranker = load_ranker()
    confident, why = M.is_confident(evidence, ranker)
    release = _release(ctx)
    if release is not None and release.note:
        warnings.append(release.note)
    version = release.version if release is not None else None
    proposals = tuple(propose(m, ctx, version) for m in matches)
    from agent.differential import differential

    # the differential compares with the user's command (none given: no differential), and only
    # then reads every finding: a plain ``ask`` reads the candidates it scores, not the index
    diff = (
        differential(proposals, ctx, tri, tuple(searcher.findings.values()), searcher.traits_of)
        if ctx.command is not None
        else None
    )
    track = ranker.record_at(evidence.probability) if evidence.mode == "ask" else None
    return Answer(confident, proposals, tri, ctx, tuple(warnings), why, diff, tuple(notices), track)


def _release(ctx: QueryContext):
    """The known release of the user's framework that flags are spelled for (None: no version
    given, or a framework the registry has no releases of)."""
    if not ctx.framework or not ctx.framework_version:
        return None
    from agent.registry import load_registry

    return load_registry().release(ctx.framework, ctx.framework_version)


def context_from_text(ctx: QueryContext, text: str, notices: list[str]) -> QueryContext:
    """Fill what no option gave (model, GPU, quantization, framework) from what the text names:
    "Qwen3.5 on B200", "2x RTX 5090D", "vLLM 0.10". Options always win; a notice says what was read."""
    from agent.context import traits_for_model_type
    from agent.prose import read_context

    found = read_context(text)
    changes: dict[str, object] = {}
    read: list[str] = []
    if not ctx.model and found.model:
        changes["model"] = found.model
        read.append(f"model {found.model}")
    if ctx.arch is None:
        # no config.json could be read (offline, or a bare name): the model's name says its type
        from agent.prose import model_type_of_name

        model_type = model_type_of_name(ctx.model) if ctx.model else found.model_type
        if model_type:
            changes["arch"] = traits_for_model_type(model_type)
            read.append(f"architecture {model_type} (from the model's name)")
    if not ctx.sm and found.sm:
        changes["gpu"], changes["sm"] = found.gpu, found.sm
        read.append(f"GPU {found.gpu or found.sm}")
    if not ctx.quantization and found.quantization and not (ctx.arch and ctx.arch.quantization):
        changes["quantization"] = found.quantization
        read.append(f"quantization {found.quantization}")
    if not ctx.framework and found.framework:
        changes["framework"] = found.framework
        changes["framework_version"] = ctx.framework_version or found.framework_version
        read.append(
            f"framework {found.framework}"
            + (f" {found.framework_version}" if found.framework_version else "")
        )
    if not changes:
        return ctx
    notices.append("context read from your text: " + ", ".join(read))
    return replace(ctx, **changes)


def _with_context_words(text: str, ctx: QueryContext) -> str:
    """For question-style input, the model and GPU names help the keyword and vector search."""
    extra = " ".join(x for x in (ctx.model, ctx.gpu, ctx.quantization) if x)
    return f"{text}\n{extra}".strip() if text else ""


def propose(match, ctx: QueryContext, version: str | None = None) -> Proposal:
    """The flag changes the matched case implies for the user's deployment (spelled for release
    ``version`` of the user's framework when given)."""
    from agent.flags import apply_changes, diff, diff_with_notes

    finding: Finding = match.finding
    source_fw = (finding.framework.name or "").lower() or None
    target_fw = ctx.framework or (ctx.command.framework if ctx.command else None) or source_fw
    if ctx.framework and target_fw != ctx.framework:
        version = None  # the version is of the user's framework
    changes, notes = diff_with_notes(
        ctx.command,
        finding.fix,
        finding_framework=source_fw,
        target_framework=target_fw,
        target_version=version,
    )
    not_carried = tuple(n for n in notes if n.startswith(("no ", "dropped")))
    alternatives = tuple(
        diff(
            ctx.command,
            alt,
            finding_framework=source_fw,
            target_framework=target_fw,
            target_version=version,
        )
        for alt in finding.alternatives
    )
    command = apply_changes(ctx.command, changes) if ctx.command is not None else None
    translated = source_fw if (target_fw and source_fw and target_fw != source_fw) else None
    dead_ends = _dead_ends_in(ctx.command, finding.tried_without_effect, source_fw)
    already = _already_tried(ctx, (*changes, *(c for alt in alternatives for c in alt)), version)
    return Proposal(
        match,
        tuple(changes),
        command,
        translated,
        alternatives,
        dead_ends,
        not_carried,
        already,
    )


def _already_tried(
    ctx: QueryContext, changes: Sequence[FlagChange], version: str | None
) -> tuple[FlagChange, ...]:
    """The changes that the user says (``--tried``) they made without effect."""
    if not ctx.tried or not changes:
        return ()
    from agent.differential import parse_tried, same_change

    fw = (ctx.command.framework if ctx.command else None) or ctx.framework
    tried = parse_tried(ctx.tried, fw, version=version)
    return tuple(c for c in changes if any(same_change(c, t, fw) for t in tried))


def _dead_ends_in(
    command: LaunchConfig | None, tried: tuple[str, ...], framework
) -> tuple[str, ...]:
    """The items the past case tried without effect that the user's command already has (a
    flag as written, or the flag its prose names: ``disabling CUDA graphs``)."""
    if command is None or not tried:
        return ()
    from agent.differential import read_tried
    from agent.registry import load_registry

    registry = load_registry()
    fw = command.framework or framework
    have = {(f.name, f.value) for f in command.flags}
    found = []
    for item in tried:
        parts = read_tried(item, framework, fw)  # prose that names no change: nothing to compare
        flags = [p for p in parts if p.kind == "flag" and p.action == "add"]
        if flags and all(
            any(
                name == p.name and registry.same_value(name, value, p.value, fw)
                for name, value in have
            )
            for p in flags
        ):
            found.append(item)
    return tuple(found)
