"""Differential diagnosis: the user's failing deployment against the nearest one that works.

When the best matching case is unresolved, or its fix is already in the user's command, or the
user says it was tried, the useful question is no longer "what fixed this error last time" but
"what does a deployment that works on this hardware do differently". This module answers it:

* :func:`nearest_working` ranks the recorded working deployments by closeness to the user's
  context (same GPU generation first, then architecture traits, quantization, framework and
  version as one score, then the same model, the same GPU, a quoted command, ``works``);
* :func:`command_diff` diffs the user's command against a working command through the flag
  registry, in the user's release, and splits descriptive settings (model, layout, endpoint,
  parsers, logging, device selection) from behavioural ones;
* :func:`make_plan` orders the behavioural differences into experiments, ranked by the knowledge
  base's evidence and by architecture-trait couplings, minus what was already tried (flags, and
  dead ends written as prose, read through the phrases of ``data/differential.json``).

Pure functions over records. The facts (descriptive settings, checkpoint-format flags, nearness
weights, prose phrases, trait couplings) live in ``data/differential.json``; nothing here names a
model, a flag value or a story.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from agent import match as M
from kb.errors import CommandParseError, InputError
from kb.records import (
    ArchTraits,
    Candidate,
    Differential,
    Finding,
    Fix,
    FlagChange,
    LaunchConfig,
    PlanStep,
    Proposal,
    QueryContext,
    Triage,
    WorkingDeployment,
)

__all__ = [
    "command_diff",
    "differential",
    "lead_reason",
    "make_plan",
    "nearest_working",
    "parse_tried",
    "read_tried",
    "same_change",
    "working_command",
]

WORKING = ("works", "works-with-flags")
UNLISTED = "not among the flags recorded for the working deployment: unknown whether it ran with it"
UNLISTED_EXPLAINED = (
    "not among the flags recorded for the working deployment; an architecture-trait difference "
    "makes it worth trying without"
)
UNKNOWN_GPU = "your GPU is unknown (pass --gpu): GPU generations not compared"
_VAGUE = frozenset({"crash", "warning"})
_PROVENANCE_RANK = {"quoted": 2, "reconstructed": 1, "flags": 0}


# --- the data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Coupling:
    id: str
    trait: str
    framework: str | None
    flags: frozenset[str]
    reason: str


@dataclass(frozen=True)
class Phrase:
    """Prose for a change ("disabling CUDA graphs") and the change, in ``framework``'s terms."""

    pattern: re.Pattern[str]
    framework: str | None
    change: str  # "--disable-cuda-graph", "--attention-backend {value}"


@dataclass(frozen=True)
class Nearness:
    """The weights of quantization, framework and version next to the trait similarity."""

    quantization: float
    framework: float
    version: float


@dataclass(frozen=True)
class Rules:
    descriptive: dict[str, frozenset[str]]
    descriptive_env: dict[str, frozenset[str]]
    checkpoint_format: dict[str, frozenset[str]]
    nearness: Nearness
    phrases: tuple[Phrase, ...]
    couplings: tuple[Coupling, ...]
    max_steps: int

    def is_descriptive(self, change: FlagChange, framework: str | None) -> bool:
        """Does the change only name the model or the service (``data/differential.json``)?"""
        if change.kind == "flag":
            return change.name in self.descriptive.get(framework or "", frozenset())
        if change.kind != "env":
            return False
        from agent.registry import load_registry

        names = self.descriptive_env.get("any", frozenset()) | self.descriptive_env.get(
            framework or "", frozenset()
        )
        return load_registry().canonical_env(change.name, framework) in names


@lru_cache(maxsize=1)
def rules() -> Rules:
    """``data/differential.json`` as records."""
    from kb.dataload import load_json_data as load_data

    raw = load_data("differential.json")
    near = raw["nearness"]

    def sets(block: dict) -> dict[str, frozenset[str]]:
        return {k: frozenset(v) for k, v in block.items() if not k.startswith("_")}

    return Rules(
        descriptive=sets(raw["descriptive"]),
        descriptive_env=sets(raw["descriptive_env"]),
        checkpoint_format=sets(raw["checkpoint_format"]),
        nearness=Nearness(
            float(near["quantization"]), float(near["framework"]), float(near["version"])
        ),
        phrases=tuple(
            Phrase(re.compile(ph["pattern"]), ph.get("framework"), ph["change"])
            for ph in raw["tried_phrases"]["phrases"]
        ),
        couplings=tuple(
            Coupling(
                id=c["id"],
                trait=c["trait"],
                framework=c.get("framework"),
                flags=frozenset(c["flags"]),
                reason=c["reason"],
            )
            for c in raw["couplings"]
        ),
        max_steps=int(raw["ranking"]["max_steps"]),
    )


def change_components(change: FlagChange, framework: str | None = None) -> frozenset[str]:
    """The components a change touches (``--kv-cache-dtype`` -> ``fp8-kv-cache``), whatever
    release's spelling it has."""
    from agent.components import from_flags

    return from_flags([(_canonical_name(change, framework), change.value)])


def _canonical_name(change: FlagChange, framework: str | None) -> str:
    """The setting's newest canonical name (a release's older spelling resolved)."""
    from agent.registry import load_registry

    reg = load_registry()
    if change.kind == "flag" and framework:
        return reg.canonical(change.name, framework)
    if change.kind == "env":
        return reg.canonical_env(change.name, framework)
    return change.name


# --- working deployments ---------------------------------------------------------------------


def working_command(finding: Finding) -> tuple[str, str] | None:
    """``(command, provenance)`` of a deployment that works: the working command as recorded
    (``quoted`` unless the finding says ``reconstructed``); else the failing command with the fix
    applied (``reconstructed``); else the flags its record lists (``flags``: not a full command)."""
    if finding.status not in WORKING or finding.fix.confirmed is False:
        return None
    fw = (finding.framework.name or "").lower() or None
    if finding.working_command and finding.working_command.strip():
        return finding.working_command.strip(), finding.command_provenance or "quoted"
    if finding.fix.is_empty():
        return None
    if finding.failing_command and finding.failing_command.strip():
        from agent.flags import apply_changes, diff, parse_command

        try:
            failing = parse_command(finding.failing_command, fw, source=finding.id)
            return apply_changes(
                failing, diff(failing, finding.fix, finding_framework=fw)
            ).strip(), "reconstructed"
        except CommandParseError:
            pass
    flags = " ".join((*finding.fix.add, *finding.fix.changed_to))
    return (flags, "flags") if flags else None


def nearest_working(
    ctx: QueryContext,
    findings: Iterable[Finding],
    traits_of: Callable[[Finding], ArchTraits],
    *,
    exclude: Iterable[str] = (),
    limit: int = 3,
) -> tuple[WorkingDeployment, ...]:
    """The working deployments nearest to the user's: same GPU generation first, then one score
    of architecture-trait similarity, quantization, framework and version (weights in
    ``data/differential.json``), then the same model, the same GPU, a quoted command over a
    reconstructed one over a list of flags, ``works`` over ``works-with-flags``. A deployment
    that shares neither the GPU generation nor any architecture trait is not near."""
    skip = set(exclude)
    ranked = []
    for f in findings:
        if f.id in skip or not _may_work(f):
            continue
        near = _nearness(ctx, f, traits_of)
        if near is not None:
            ranked.append((near[0], f.id, f, near[1]))
    ranked.sort(key=lambda t: (tuple(-k for k in t[0]), t[1]))
    out: list[WorkingDeployment] = []
    for _, _, f, reasons in ranked:  # commands are built for the nearest only: parsing costs
        found = working_command(f)
        if found is not None:
            out.append(WorkingDeployment(f, found[0], found[1], reasons))
            if len(out) == limit:
                break
    return tuple(out)


def finding_traits(f: Finding, traits_of: Callable[[Finding], ArchTraits]) -> ArchTraits:
    """A finding's architecture traits; one that records no architecture gets those its model's
    name implies (``MiniMaxAI/MiniMax-M2.5`` is ``minimax_m2``), as the user's context does."""
    traits = traits_of(f)
    if traits.model_type or traits.traits or not f.model:
        return traits
    from agent.context import traits_for_model_type
    from agent.prose import model_type_of_name

    model_type = model_type_of_name(f.model)
    return traits_for_model_type(model_type) if model_type else traits


def _nearness(
    ctx: QueryContext, f: Finding, traits_of: Callable[[Finding], ArchTraits]
) -> tuple[tuple[float, ...], tuple[str, ...]] | None:
    """How near ``f`` runs to the user's deployment (the sort key: GPU generation, closeness,
    same model, same GPU, the command's provenance, works), and why; None when it shares
    neither the GPU generation nor any architecture trait."""
    from agent.context import (
        match_gpu,
        quantization_similarity,
        sm_of,
        sm_similarity,
        trait_similarity,
    )
    from kb.frameworks import normalise_framework

    weights = rules().nearness
    reasons: list[str] = []
    theirs = sm_of(f.hardware.sm, f.hardware.gpu)
    sm = sm_similarity(ctx.sm, theirs) if ctx.sm and theirs else 0.0
    where = ", ".join(x for x in (theirs, f.hardware.gpu) if x)
    if not ctx.sm:
        reasons.append(UNKNOWN_GPU)
    elif sm == 1.0:
        reasons.append(f"same GPU generation ({where})")
    elif sm > 0:
        reasons.append(f"related GPU ({theirs} vs {ctx.sm})")
    traits = 0.0
    if ctx.arch is not None and (ctx.arch.model_type or ctx.arch.traits):
        traits, why = trait_similarity(ctx.arch, finding_traits(f, traits_of))
        reasons.extend(why)
    if sm == 0.0 and traits == 0.0:
        return None
    user_quant = ctx.quantization or (ctx.arch.quantization if ctx.arch else None)
    quant = quantization_similarity(user_quant, f.quantization) if user_quant else 0.0
    if quant == 1.0:
        reasons.append(f"same quantization ({f.quantization})")
    user_fw = ctx.framework or (ctx.command.framework if ctx.command else None)
    same_fw = bool(user_fw) and normalise_framework(f.framework.name) == normalise_framework(
        user_fw
    )
    if same_fw:
        reasons.append(f"same framework ({f.framework.name})")
    same_version = same_fw and _same_text(ctx.framework_version, f.framework.version)
    if same_version:
        reasons.append(f"same version ({f.framework.version})")
    closeness = round(
        traits
        + weights.quantization * quant
        + weights.framework * same_fw
        + weights.version * same_version,
        6,
    )
    model = ctx.model or (ctx.command.model if ctx.command else None)
    same_model = bool(model and f.model) and M.model_key(model) == M.model_key(f.model)
    if same_model:
        reasons.append(f"same model ({f.model})")
    named = match_gpu(f.hardware.gpu) if ctx.gpu and f.hardware.gpu else None
    same_gpu = named is not None and named[0] == ctx.gpu
    if same_gpu:
        reasons.append(f"same GPU ({ctx.gpu})")
    key = (
        sm,
        closeness,
        float(same_model),
        float(same_gpu),
        float(_PROVENANCE_RANK[_provenance(f)]),
        float(f.status == "works"),
    )
    return key, tuple(reasons)


def _provenance(f: Finding) -> str:
    """What :func:`working_command` will give, without parsing: ``quoted``, ``reconstructed``
    (recorded so, or the failing command with the fix applied) or ``flags``."""
    if f.working_command and f.working_command.strip():
        return "reconstructed" if f.command_provenance == "reconstructed" else "quoted"
    if f.failing_command and f.failing_command.strip():
        return "reconstructed"
    return "flags"


def _same_text(a: str | None, b: str | None) -> bool:
    return bool(a and b) and a.strip().lower() == b.strip().lower()  # type: ignore[union-attr]


def _may_work(f: Finding) -> bool:
    """Cheap test: could :func:`working_command` give this finding a command, on a framework
    whose flags the registry knows (another server's flags cannot be compared with yours)?"""
    from kb.frameworks import normalise_framework

    return (
        f.status in WORKING
        and f.fix.confirmed is not False
        and bool(f.working_command or not f.fix.is_empty())
        and normalise_framework(f.framework.name) is not None
    )


# --- the diff --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandDiff:
    descriptive: tuple[FlagChange, ...]
    behavioural: tuple[FlagChange, ...]
    notes: tuple[str, ...]
    unlisted: tuple[FlagChange, ...] = ()  # the user's settings a record of flags does not list


def _model_flag(framework: str | None) -> str:
    return {"sglang": "--model-path", "vllm": "--model"}.get(framework or "", "model")


def command_diff(
    current: LaunchConfig,
    working: LaunchConfig,
    *,
    complete: bool = True,
    working_framework: str | None = None,
    checkpoint: str | None = None,
    version: str | None = None,
) -> CommandDiff:
    """What to change in ``current`` so that it launches like ``working``: flags and variables
    to add or change (translated to the user's framework through the registry, with a note, and
    with ``version`` as that release of it takes them), and the user's flags and variables the
    working command does not have, to remove. When ``working`` is not ``complete`` (a record of
    some flags, not a command) the user's settings it does not list are ``unlisted``: unknown,
    never removals. A change that would make a checkpoint-format flag disagree with the user's
    ``checkpoint`` format (``nvfp4``) is not proposed (a note says so). Descriptive settings
    (see ``data/differential.json``) come back apart from the behavioural ones."""
    from agent.flags import diff_changes
    from agent.flags.diff import in_release, translate
    from agent.registry import load_registry
    from kb.frameworks import normalise_framework

    reg = load_registry()
    src = normalise_framework(working.framework or working_framework)
    dst = normalise_framework(current.framework) or src
    src = src or dst
    adds = _as_changes(working, src, reg)
    changes, diff_notes = diff_changes(
        current, adds, source_framework=src, target_framework=dst, target_version=version
    )
    out = list(changes)
    settings = in_release(translate(adds, src, dst, reg, version, []), dst, version, reg, [])
    names = {(c.kind, c.name) for c in settings}
    theirs: list[FlagChange] = []  # what the user has that the working command has not
    for f in current.flags:
        if ("flag", f.name) not in names:
            theirs.append(FlagChange("flag", "remove", f.name, f.value, text=f.written))
    for name, value in current.env:
        if ("env", reg.canonical_env(name, dst)) not in names:
            theirs.append(FlagChange("env", "remove", name, value, text=f"{name}={value}"))
    table = rules()
    if complete:
        out += theirs
        unlisted: tuple[FlagChange, ...] = ()
    else:
        unlisted = tuple(
            replace(c, action="keep", note=UNLISTED)
            for c in theirs
            if not table.is_descriptive(c, dst)
        )
    if current.model and working.model and M.model_key(current.model) != M.model_key(working.model):
        name = _model_flag(dst)
        out.insert(
            0,
            FlagChange(
                "flag", "change", name, working.model, current.model, text=f"{name} {working.model}"
            ),
        )
    notes = [n for n in diff_notes if not n.startswith(("already set", "already off"))]
    formats = table.checkpoint_format.get(dst or "", frozenset())
    for c in [c for c in out if c.kind == "flag" and c.name in formats]:
        why = _format_conflict(c, checkpoint)
        if why:
            out.remove(c)
            notes.append(why)
    model_flag = _model_flag(dst)
    desc = tuple(
        c
        for c in out
        if (c.kind == "flag" and c.name == model_flag) or table.is_descriptive(c, dst)
    )
    behav = tuple(c for c in out if c not in desc)
    return CommandDiff(desc, behav, tuple(notes), unlisted)


def checkpoint_format(ctx: QueryContext) -> str | None:
    """The user's checkpoint format (``nvfp4``): config.json's, else the context's."""
    from agent.context import normalise_quantization

    given = ctx.arch.quantization if ctx.arch and ctx.arch.quantization else ctx.quantization
    return normalise_quantization(given)


def _format_of(method: str | None) -> str | None:
    """The format a quantization method names (``modelopt_fp4`` -> ``nvfp4``); None: unknown."""
    from agent.context import normalise_quantization

    return normalise_quantization(method)


def _format_conflict(change: FlagChange, checkpoint: str | None) -> str | None:
    """Why a change to a checkpoint-format flag is not proposed, or None when it may be."""
    if not checkpoint:
        return None
    if change.action == "remove":
        if _format_of(change.value) in (checkpoint, None):
            return (
                f"kept {change.text}: it names your checkpoint's format ({checkpoint}), "
                "whatever the working deployment's command says"
            )
        return None
    theirs = _format_of(change.value)
    if theirs and theirs != checkpoint:
        return (
            f"not proposed: {change.text}: it names the working deployment's format ({theirs}), "
            f"not your checkpoint's ({checkpoint})"
        )
    return None


def _as_changes(working: LaunchConfig, framework: str | None, reg) -> list[FlagChange]:
    """The working command's flags and variables as changes that add them, in its own terms."""
    from agent.flags import render_flag

    flags = [
        FlagChange("flag", "add", f.name, f.value, text=render_flag(f, framework, registry=reg))
        for f in working.flags
    ]
    env = [
        FlagChange("env", "add", reg.canonical_env(k, framework), v, text=f"{k}={v}")
        for k, v in working.env
    ]
    return flags + env


# --- what was tried --------------------------------------------------------------------------


def parse_tried(
    items: Sequence[str],
    framework: str | None,
    *,
    origin: str = "--tried",
    version: str | None = None,
) -> tuple[FlagChange, ...]:
    """The user's ``--tried`` entries as changes: ``--flag [value]``, ``remove --flag``,
    ``NAME=value``, ``pkg==1.2`` (as release ``version`` takes them, when given). A bad entry is
    an input error naming it."""
    return tuple(c for item in items for c in _tried_item(item, framework, origin, version))


def _tried_item(
    item: str, framework: str | None, origin: str, version: str | None
) -> tuple[FlagChange, ...]:
    from agent.flags import diff_changes, parse_fix_item

    text = " ".join(item.split())
    removing = text.lower().startswith("remove ")
    body = text.split(None, 1)[1] if removing else text
    try:
        changes = parse_fix_item(body, framework, action="remove" if removing else "add")
    except CommandParseError:
        raise InputError(
            f"{origin} '{item}': not a change; write '--flag value', 'remove --flag', "
            "NAME=value or pkg==1.2"
        ) from None
    if version is None:
        return changes
    adds = [c for c in changes if c.action == "add"]
    removes = [c for c in changes if c.action == "remove"]
    return diff_changes(
        None,
        adds,
        removes,
        source_framework=framework,
        target_framework=framework,
        target_version=version,
    )[0]


def read_tried(
    item: str,
    finding_framework: str | None,
    framework: str | None,
    version: str | None = None,
) -> tuple[FlagChange, ...]:
    """A case's ``tried_without_effect`` entry as the changes it names, in ``framework``'s
    terms (and ``version``'s): a flag, variable or pin as written, else the change its prose
    describes (``disabling CUDA graphs`` is ``--disable-cuda-graph``, see ``tried_phrases`` in
    ``data/differential.json``); empty when it names none."""
    from agent.flags import diff

    text = " ".join(item.split())
    removing = text.lower().startswith("remove ") and " " in text
    fix = Fix(remove=(text.split(None, 1)[1],)) if removing else Fix(add=(text,))
    options = {"target_framework": framework, "target_version": version}
    try:
        return diff(None, fix, finding_framework=finding_framework, **options)
    except CommandParseError:
        pass
    for phrase in rules().phrases:
        change = _phrase_change(phrase, text.lower())
        if change is None:
            continue
        try:
            found = diff(None, Fix(add=(change,)), finding_framework=phrase.framework, **options)
        except CommandParseError:
            continue
        if found:
            return found
    return ()


def _phrase_change(phrase: Phrase, text: str) -> str | None:
    """The change ``phrase`` reads in ``text``, or None (a ``{value}`` must be a choice of the
    flag in the phrase's framework)."""
    from agent.registry import load_registry

    m = phrase.pattern.search(text)
    if m is None:
        return None
    if "{value}" not in phrase.change:
        return phrase.change
    value = m.groupdict().get("value")
    flag = phrase.change.split()[0]
    spec = load_registry().spec(flag, phrase.framework)
    if not value or spec is None:
        return None
    if spec.choices and value not in spec.choices:
        return None
    return phrase.change.replace("{value}", value)


@lru_cache(maxsize=4096)
def _case_tried(
    finding: Finding, framework: str | None, version: str | None = None
) -> tuple[FlagChange, ...]:
    """A case's dead ends as changes (flags as written, prose read through the phrases)."""
    fw = (finding.framework.name or "").lower() or None
    return tuple(
        c for item in finding.tried_without_effect for c in read_tried(item, fw, framework, version)
    )


def same_change(a: FlagChange, b: FlagChange, framework: str | None) -> bool:
    """Does change ``b`` (tried, or a case's fix) do what ``a`` does? Names are compared as
    settings (a release's older spelling is the same setting), values through the registry."""
    from agent.registry import load_registry

    if a.kind != b.kind:
        return False
    if a.name != b.name and _canonical_name(a, framework) != _canonical_name(b, framework):
        return False
    if a.action == "remove" or b.action == "remove":
        return a.action == b.action
    if a.kind == "flag":
        name = _canonical_name(a, framework)
        return load_registry().same_value(name, a.value, b.value, framework)
    return (a.value or "") == (b.value or "")


_same = same_change


def _tried_text(change: FlagChange) -> str:
    text = change.text or (change.name if change.value is None else f"{change.name} {change.value}")
    return f"remove {text}" if change.action == "remove" else text


def tried_list(
    entries: Sequence[tuple[str, tuple[FlagChange, ...]]], framework: str | None
) -> tuple[str, ...]:
    """What was tried, each change once: an entry that names changes is shown as them in the
    user's terms (``disabling CUDA graphs`` and ``--disable-cuda-graph`` are one line); prose
    that names none is shown as written."""
    seen: list[FlagChange] = []
    out: list[str] = []
    for text, changes in entries:
        fresh = [c for c in changes if not any(_same(c, s, framework) for s in seen)]
        seen += fresh
        shown = [_tried_text(c) for c in fresh] if changes else [" ".join(text.split())]
        out += [t for t in shown if t not in out]
    return tuple(out)


# --- evidence and the plan -------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    """What the rest of the knowledge base says about one change, for this kind of failure."""

    fixed: tuple[str, ...]
    failed: tuple[str, ...]


@lru_cache(maxsize=4096)
def _fix_changes(
    finding: Finding, framework: str | None, version: str | None = None
) -> tuple[FlagChange, ...]:
    """The changes of a case's fix and of its alternatives that are not recorded as
    unconfirmed, in ``framework``'s terms (and ``version``'s)."""
    from agent.flags import diff

    fw = (finding.framework.name or "").lower() or None
    out: list[FlagChange] = []
    for fix in (finding.fix, *(a for a in finding.alternatives if a.confirmed is not False)):
        try:
            out.extend(
                diff(
                    None,
                    fix,
                    finding_framework=fw,
                    target_framework=framework,
                    target_version=version,
                )
            )
        except CommandParseError:
            continue
    return tuple(out)


def evidence(
    change: FlagChange,
    findings: Iterable[Finding],
    *,
    classes: frozenset[str],
    components: frozenset[str],
    framework: str | None,
    version: str | None = None,
) -> Evidence:
    """The recorded cases of the same kind of failure (symptom classes that agree; components
    that overlap when both sides name any) that ``change`` fixed, and those where it was tried
    without effect (in the user's ``framework`` and release ``version``)."""
    from agent.components import of_finding

    touched = components | change_components(change, framework)
    fixed: list[str] = []
    failed: list[str] = []
    for f in findings:
        recorded = frozenset(s.cls for s in f.symptoms)
        if M.class_agreement(classes, recorded) != 1.0:
            continue
        if touched and not of_finding(f) & touched:
            continue
        if (
            f.status in WORKING
            and f.fix.confirmed is not False
            and any(_same(change, c, framework) for c in _fix_changes(f, framework, version))
        ):
            fixed.append(f.id)
        elif any(_same(change, c, framework) for c in _case_tried(f, framework, version)):
            failed.append(f.id)
    return Evidence(tuple(fixed), tuple(failed))


def _trait_reason(
    change: FlagChange,
    framework: str | None,
    user: ArchTraits | None,
    working: ArchTraits,
    working_name: str,
) -> tuple[str | None, str | None]:
    """(coupling id, sentence) when an architecture-trait difference explains the change."""
    if user is None:
        return None, None
    from kb.dataload import load_json_data as load_data

    labels = load_data("arch_traits.json")["traits"]
    for c in rules().couplings:
        if c.framework and framework and c.framework != framework:
            continue
        if _canonical_name(change, framework) not in c.flags:
            continue
        mine, theirs = c.trait in user.traits, c.trait in working.traits
        if mine == theirs:
            continue
        label = labels.get(c.trait, {}).get("label", c.trait)
        who = "your model has" if mine else f"{working_name} has"
        other = working_name if mine else "your model"
        return c.id, f"{who} {label} and {other} has not: {c.reason}"
    return None, None


def candidates(
    behavioural: Sequence[FlagChange],
    *,
    tried: Sequence[tuple[FlagChange, str]],
    findings: Sequence[Finding],
    classes: frozenset[str],
    components: frozenset[str],
    framework: str | None,
    user_traits: ArchTraits | None,
    working_traits: ArchTraits,
    working_name: str,
    version: str | None = None,
) -> tuple[tuple[Candidate, str | None], ...]:
    """Each behavioural difference with who tried it, the trait that explains it (and its
    coupling id), and the knowledge base's evidence."""
    out = []
    for change in behavioural:
        by = tuple(dict.fromkeys(who for t, who in tried if _same(change, t, framework)))
        coupling, trait = _trait_reason(
            change, framework, user_traits, working_traits, working_name
        )
        ev = evidence(
            change,
            findings,
            classes=classes,
            components=components,
            framework=framework,
            version=version,
        )
        out.append((Candidate(change, by, trait, ev.fixed, ev.failed), coupling))
    return tuple(out)


def evidence_candidates(
    ctx: QueryContext,
    findings: Sequence[Finding],
    *,
    working: Finding,
    exclude: Iterable[str],
    have: Sequence[Candidate],
    tried: Sequence[tuple[FlagChange, str]],
    classes: frozenset[str],
    components: frozenset[str],
    framework: str | None,
    version: str | None = None,
) -> tuple[tuple[Candidate, None], ...]:
    """Changes that are no difference from the working command as recorded, yet touch a
    component the working deployment's record names (``components``) and fixed the same kind
    of failure on the same GPU generation: a record that says "the FP4 GEMM went through
    cuDNN" without the flag still points at the FP4 GEMM backend that fixed a NaN elsewhere.
    Left out: what the user's command already has, what a diff candidate already covers."""
    from agent.components import label, of_finding
    from agent.context import sm_of, sm_similarity
    from agent.flags import diff_changes
    from kb.frameworks import normalise_framework

    wcomps = of_finding(working)
    if not wcomps or not ctx.sm or ctx.command is None:
        return ()
    dst = ctx.command.framework or normalise_framework(framework)
    src = normalise_framework(framework) or dst
    skip = set(exclude) | {working.id}
    covered = {(c.change.kind, c.change.name) for c in have}
    out: dict[tuple[str, str, str | None], Candidate] = {}
    for f in findings:
        if f.id in skip or f.status not in WORKING or f.fix.confirmed is False:
            continue
        theirs = sm_of(f.hardware.sm, f.hardware.gpu)
        if not theirs or sm_similarity(ctx.sm, theirs) < 1.0:
            continue
        if M.class_agreement(classes, frozenset(s.cls for s in f.symptoms)) != 1.0:
            continue
        for change in _fix_changes(f, framework, version):
            shared = change_components(change, framework) & wcomps
            key = (change.kind, change.name, change.value)
            if not shared or change.action == "remove" or key in out:
                continue
            if (change.kind, change.name) in covered:
                continue
            needed, _ = diff_changes(
                ctx.command,
                [change],
                source_framework=src,
                target_framework=dst,
                target_version=version,
            )
            if not needed:
                continue  # the user's command already has it, or its release has no such thing
            (proposed,) = needed
            ev = evidence(
                proposed,
                findings,
                classes=classes,
                components=components,
                framework=framework,
                version=version,
            )
            by = tuple(dict.fromkeys(who for t, who in tried if _same(proposed, t, framework)))
            names = ", ".join(label(c) for c in sorted(shared))
            out[key] = Candidate(
                proposed,
                by,
                None,
                ev.fixed,
                ev.failed,
                origin="evidence",
                why=f"the record of {working.id} names the {names} it ran through",
            )
    return tuple((c, None) for c in out.values())


def _net(c: Candidate) -> int:
    return len(c.fixed) - len(c.failed)


def _who(by: Sequence[str]) -> str:
    return ", ".join("you" if b == "you" else b for b in by)


def _direction(c: Candidate, working_id: str) -> str:
    if c.origin != "diff":
        return f"not a difference from {working_id}'s recorded flags"
    if c.change.action == "remove":
        if c.change.note == UNLISTED_EXPLAINED:
            return f"the flags recorded for {working_id} do not include it"
        return f"{working_id} runs without it"
    return f"{working_id} runs with it"


def _why(c: Candidate, members: Sequence[Candidate], working_id: str) -> str:
    """Why one change is in its step: what tried it, what it fixed, the trait behind it."""
    name = c.change.text or c.change.name
    if c.tried_by:
        alone = (
            " rather than alone"
            if any(not m.tried_by for m in members)
            else "; the changes of this step are recorded as tried separately, not together"
        )
        return (
            f"{name}: tried without effect ({_who(c.tried_by)}), "
            f"but {_direction(c, working_id)}, so it goes with this step" + alone
        )
    parts = [p for p in (c.why, c.trait) if p]
    if c.fixed:
        k = len(c.fixed)
        parts.append(
            f"fixed {k} recorded case{'s' if k != 1 else ''} of the same kind of failure "
            f"({', '.join(c.fixed)})"
        )
    if c.failed:
        parts.append(f"tried without effect in {', '.join(c.failed)}")
    if not parts:
        parts.append(
            f"{_direction(c, working_id)}; the knowledge base has no other evidence about it"
        )
    else:
        parts.append(_direction(c, working_id))
    return f"{name}: " + "; ".join(parts)


def make_plan(
    cands: Sequence[tuple[Candidate, str | None]],
    *,
    working_id: str,
    symptom: str | None,
    max_steps: int | None = None,
) -> tuple[PlanStep, ...]:
    """Candidates into experiments, one change or one coupled group per step (see the ranking
    in ``data/differential.json``). Steps are cumulative: each keeps the previous ones, so the
    last step launches like the working deployment."""
    limit = max_steps or rules().max_steps
    tried = [c for c, _ in cands if c.tried_by]
    groups: dict[str, list[tuple[int, Candidate]]] = {}
    for i, (c, coupling) in enumerate(cands):
        if c.tried_by:
            continue
        key = f"coupling:{coupling}" if coupling else f"change:{i}"
        groups.setdefault(key, []).append((i, c))

    def rank(members: list[tuple[int, Candidate]]) -> tuple:
        explained = any(c.trait for _, c in members)
        return (not explained, -sum(_net(c) for _, c in members), members[0][0])

    ordered = sorted(groups.values(), key=rank)
    steps: list[list[Candidate]] = [[c for _, c in g] for g in ordered]
    if steps and tried:
        steps[0] = steps[0] + tried
    elif tried:
        steps = [tried]
    steps = steps[:limit]

    plan: list[PlanStep] = []
    for n, members in enumerate(steps, 1):
        why = [_why(c, members, working_id) for c in members]
        failure = f"the failure ({symptom})" if symptom else "the failure"
        later = (
            f"go on to step {n + 1}, keeping this step's changes"
            if n < len(steps)
            else "the cause lies outside the launch flags compared here (model code, checkpoint,"
            " versions)"
        )
        expect = (
            f"confirmed if {failure} is gone and the output is correct; ruled out if it comes "
            f"back unchanged: then {later}"
        )
        plan.append(
            PlanStep(
                n,
                tuple(c.change for c in members),
                " ".join(w if w.endswith(".") else w + "." for w in why),
                expect,
            )
        )
    return tuple(plan)


# --- when it leads ---------------------------------------------------------------------------


def lead_reason(best: Proposal, tried: Sequence[FlagChange], framework: str | None) -> str | None:
    """Why the differential comes before the best match, or None when the match's fix stands."""
    f = best.match.finding
    if f.status not in WORKING:
        return f"the best match ({f.id}) is unresolved: status {f.status}" + (
            ", its fix is not confirmed" if f.fix.confirmed is False else ""
        )
    if f.fix.confirmed is False:
        return f"the fix of the best match ({f.id}) is not confirmed"
    if f.fix.is_empty():
        return f"the best match ({f.id}) records no fix to apply"
    if not best.changes and not f.fix.is_empty():
        return f"your command already has the fix of the best match ({f.id})"
    done = [c for c in best.changes if any(_same(c, t, framework) for t in tried)]
    if done:
        return f"you already tried the fix of the best match ({f.id}): " + ", ".join(
            c.text or c.name for c in done
        )
    return None


# --- putting it together ---------------------------------------------------------------------


def _classes(triage: Triage, best: Finding) -> frozenset[str]:
    mine = frozenset(ln.cls for ln in triage.lines if ln.cls) - _VAGUE
    return mine or frozenset(s.cls for s in best.symptoms) - _VAGUE


def _symptom(triage: Triage, best: Finding) -> str | None:
    for ln in triage.lines:
        if ln.cls and ln.cls not in _VAGUE:
            return _short(ln.text)
    for s in best.symptoms:
        if s.cls not in _VAGUE:
            return _short(s.text)
    return None


def _short(text: str, n: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _shares_a_line(p: Proposal) -> bool:
    """The match shares an informative error line with the user's log (see ``agent.search``)."""
    from agent.rank import load_ranker

    ranker = load_ranker()
    signals = dict(p.match.signals)
    return (
        signals.get("lines", 0.0) >= ranker.line_shared
        and signals.get("line_info", 0.0) >= ranker.boilerplate_below
    )


def _with_commands(command: LaunchConfig, plan: Sequence[PlanStep]) -> tuple[PlanStep, ...]:
    """Each step with the full command it launches (the steps before it included)."""
    from dataclasses import replace

    from agent.flags import apply_changes

    out: list[PlanStep] = []
    done: list[FlagChange] = []
    for step in plan:
        done += step.changes
        try:
            out.append(replace(step, command=apply_changes(command, done)))
        except CommandParseError:
            out.append(step)
    return tuple(out)


def differential(
    proposals: Sequence[Proposal],
    ctx: QueryContext,
    triage: Triage,
    findings: Sequence[Finding],
    traits_of: Callable[[Finding], ArchTraits],
) -> Differential | None:
    """The differential section of an answer: None without a current command, without a match,
    or without a working deployment near enough to compare."""
    from agent.flags import parse_command

    if ctx.command is None or not proposals:
        return None
    best = proposals[0]
    framework = ctx.command.framework or ctx.framework
    version = user_release(ctx, framework)
    ctx, notes = _gpu_from_command(ctx)
    user_tried = parse_tried(ctx.tried, framework, version=version)
    shared = [best] + [p for p in proposals[1:] if _shares_a_line(p)]
    tried: list[tuple[FlagChange, str]] = [(t, "you") for t in user_tried]
    entries = [(t, _tried_item(t, framework, "--tried", version)) for t in ctx.tried]
    for p in shared:
        case = p.match.finding
        tried += [(t, case.id) for t in _case_tried(case, framework, version)]
        fw = (case.framework.name or "").lower() or None
        entries += [(t, read_tried(t, fw, framework, version)) for t in case.tried_without_effect]
    from agent.components import from_text, of_finding

    components = from_text("\n".join(ln.text for ln in triage.lines)).union(
        *(of_finding(p.match.finding) for p in shared)
    )

    exclude = {best.match.finding.id}
    near = nearest_working(ctx, findings, traits_of, exclude=exclude)
    chosen = None
    for w in near:
        wfw = (w.finding.framework.name or "").lower() or None
        try:
            parsed = parse_command(w.command, wfw, source=f"{w.finding.id}: working command")
        except CommandParseError:
            continue
        chosen = (w, parsed)
        break
    if chosen is None:
        return None
    against, working = chosen
    cd = command_diff(
        ctx.command,
        working,
        complete=against.provenance != "flags",
        working_framework=(against.finding.framework.name or "").lower() or None,
        checkpoint=checkpoint_format(ctx),
        version=version,
    )
    notes += cd.notes
    if against.provenance == "flags":
        notes.append(
            f"{against.finding.id} records its flags, not a full command: a flag of yours that "
            "they do not list may have been set there too (listed as unknown, not tried, unless "
            "an architecture-trait difference explains it)"
        )
    working_traits = finding_traits(against.finding, traits_of)
    working_name = against.finding.model or against.finding.id
    explained, unlisted = _explained(cd.unlisted, framework, ctx.arch, working_traits, working_name)
    classes = _classes(triage, best.match.finding)
    cands = candidates(
        cd.behavioural + explained,
        tried=tried,
        findings=findings,
        classes=classes,
        components=components,
        framework=framework,
        user_traits=ctx.arch,
        working_traits=working_traits,
        working_name=working_name,
        version=version,
    )
    cands += evidence_candidates(
        ctx,
        findings,
        working=against.finding,
        exclude={best.match.finding.id},
        have=[c for c, _ in cands],
        tried=tried,
        classes=classes,
        components=components,
        framework=framework,
        version=version,
    )
    plan = _with_commands(
        ctx.command,
        make_plan(
            cands, working_id=against.finding.id, symptom=_symptom(triage, best.match.finding)
        ),
    )
    why = lead_reason(best, user_tried, framework)
    return Differential(
        against=against,
        leads=why is not None,
        lead_reason=why,
        descriptive=cd.descriptive,
        candidates=tuple(c for c, _ in cands),
        plan=plan,
        tried=tried_list(entries, framework),
        notes=tuple(notes),
        others=tuple(w for w in near if w is not against),
        unlisted=unlisted,
    )


def _explained(
    unlisted: Sequence[FlagChange],
    framework: str | None,
    user: ArchTraits | None,
    working: ArchTraits,
    working_name: str,
) -> tuple[tuple[FlagChange, ...], tuple[FlagChange, ...]]:
    """The user's settings a record of flags does not list, split: those an architecture-trait
    difference explains (removals worth trying: a DSA model's FP8 KV cache against a working
    model without DSA) and the rest, which stay unknown."""
    explained: list[FlagChange] = []
    rest: list[FlagChange] = []
    for c in unlisted:
        coupling, _ = _trait_reason(c, framework, user, working, working_name)
        if coupling:
            explained.append(replace(c, action="remove", note=UNLISTED_EXPLAINED))
        else:
            rest.append(c)
    return tuple(explained), tuple(rest)


def user_release(ctx: QueryContext, framework: str | None) -> str | None:
    """The release of the user's framework the registry checks against (None: no version, a
    version that is no release, or a version given for another framework)."""
    from agent.registry import load_registry
    from kb.frameworks import normalise_framework

    if not ctx.framework_version or not framework:
        return None
    if ctx.framework and normalise_framework(ctx.framework) != normalise_framework(framework):
        return None
    release = load_registry().release(framework, ctx.framework_version)
    return release.version if release is not None else None


def _gpu_from_command(ctx: QueryContext) -> tuple[QueryContext, list[str]]:
    """The context with the GPU the command names (a served name, an image tag, a path) when
    neither the options nor the text gave one, and the note saying so."""
    if ctx.sm or ctx.command is None or not ctx.command.raw:
        return ctx, []
    from agent.prose import read_context

    found = read_context(ctx.command.raw)
    if not found.sm:
        return ctx, []
    named = found.gpu or found.sm
    return replace(ctx, gpu=found.gpu, sm=found.sm), [f"GPU read from your command: {named}"]
