"""The nearest working deployment: which recorded deployments that work run closest to the
user's (GPU generation first, then architecture traits, quantization, framework and version as
one score, then the same model, the same GPU, a quoted command, ``works``), why, and the command
each one launches."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agent import match as M
from agent.differential.facts import WORKING, rules
from kb.errors import CommandParseError
from kb.records import ArchTraits, Finding, QueryContext, WorkingDeployment

UNKNOWN_GPU = "your GPU is unknown (pass --gpu): GPU generations not compared"
_PROVENANCE_RANK = {"quoted": 2, "reconstructed": 1, "flags": 0}


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
    sm, reasons = _generation(ctx, f)
    traits, why = _trait_nearness(ctx, f, traits_of)
    reasons += why
    if sm == 0.0 and traits == 0.0:
        return None
    closeness, why = _closeness(ctx, f, traits)
    reasons += why
    same_model, same_gpu, why = _same_model_and_gpu(ctx, f)
    reasons += why
    key = (
        sm,
        closeness,
        float(same_model),
        float(same_gpu),
        float(_PROVENANCE_RANK[_provenance(f)]),
        float(f.status == "works"),
    )
    return key, tuple(reasons)


def _generation(ctx: QueryContext, f: Finding) -> tuple[float, list[str]]:
    """How alike the two GPU generations are (``agent.context.sm_similarity``), and why."""
    from agent.context import sm_of, sm_similarity

    theirs = sm_of(f.hardware.sm, f.hardware.gpu)
    sm = sm_similarity(ctx.sm, theirs) if ctx.sm and theirs else 0.0
    where = ", ".join(x for x in (theirs, f.hardware.gpu) if x)
    if not ctx.sm:
        return sm, [UNKNOWN_GPU]
    if sm == 1.0:
        return sm, [f"same GPU generation ({where})"]
    if sm > 0:
        return sm, [f"related GPU ({theirs} vs {ctx.sm})"]
    return sm, []


def _trait_nearness(
    ctx: QueryContext, f: Finding, traits_of: Callable[[Finding], ArchTraits]
) -> tuple[float, list[str]]:
    """The architecture-trait similarity (0 when the user's architecture is unknown), and why."""
    from agent.context import trait_similarity

    if ctx.arch is None or not (ctx.arch.model_type or ctx.arch.traits):
        return 0.0, []
    traits, why = trait_similarity(ctx.arch, finding_traits(f, traits_of))
    return traits, list(why)


def _closeness(ctx: QueryContext, f: Finding, traits: float) -> tuple[float, list[str]]:
    """One score of the trait similarity, quantization, framework and version (the weights in
    ``data/differential.json``), and why."""
    from agent.context import quantization_similarity
    from kb.frameworks import normalise_framework

    weights = rules().nearness
    reasons: list[str] = []
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
    return closeness, reasons


def _same_model_and_gpu(ctx: QueryContext, f: Finding) -> tuple[bool, bool, list[str]]:
    """Does ``f`` run the user's model, on the user's GPU (by name), and the reasons saying so."""
    from agent.context import match_gpu

    reasons: list[str] = []
    model = ctx.model or (ctx.command.model if ctx.command else None)
    same_model = bool(model and f.model) and M.model_key(model) == M.model_key(f.model)
    if same_model:
        reasons.append(f"same model ({f.model})")
    named = match_gpu(f.hardware.gpu) if ctx.gpu and f.hardware.gpu else None
    same_gpu = named is not None and named[0] == ctx.gpu
    if same_gpu:
        reasons.append(f"same GPU ({ctx.gpu})")
    return same_model, same_gpu, reasons


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
