"""The differential section of an answer, put together: what was tried (by the user and by the
cases that share the failure), the nearest working deployment whose command parses, the diff
against it, the candidates and the plan, and whether the differential leads the answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from agent.differential.changes import same_change
from agent.differential.comparison import CommandDiff, checkpoint_format, command_diff, explained
from agent.differential.evidence import Failure, candidates, evidence_candidates
from agent.differential.facts import WORKING
from agent.differential.nearest import finding_traits, nearest_working
from agent.differential.plan import make_plan, with_commands
from agent.differential.tried import case_tried, parse_tried, read_tried, tried_item, tried_list
from kb.errors import CommandParseError
from kb.records import (
    ArchTraits,
    Candidate,
    Differential,
    Finding,
    FlagChange,
    LaunchConfig,
    Proposal,
    QueryContext,
    Triage,
    WorkingDeployment,
)

_VAGUE = frozenset({"crash", "warning"})


def differential(
    proposals: Sequence[Proposal],
    ctx: QueryContext,
    triage: Triage,
    findings: Sequence[Finding],
    traits_of: Callable[[Finding], ArchTraits],
) -> Differential | None:
    """The differential section of an answer: None without a current command, without a match,
    or without a working deployment near enough to compare."""
    command = ctx.command
    if command is None or not proposals:
        return None
    best = proposals[0]
    framework = command.framework or ctx.framework
    version = user_release(ctx, framework)
    ctx, notes = _gpu_from_command(ctx)
    user_tried = parse_tried(ctx.tried, framework, version=version)
    shared = [best] + [p for p in proposals[1:] if _shares_a_line(p)]
    tried, entries = _tried(ctx.tried, user_tried, shared, framework, version)
    failure = Failure(
        findings,
        _classes(triage, best.match.finding),
        _components(triage, shared),
        tried,
        framework,
        version,
    )
    near = nearest_working(ctx, findings, traits_of, exclude={best.match.finding.id})
    chosen = _first_parsed(near)
    if chosen is None:
        return None
    against, working = chosen
    cd = _diff(command, against, working, checkpoint_format(ctx), version)
    notes += cd.notes
    cands, unlisted = _candidates(ctx, failure, cd, against.finding, traits_of, best)
    symptom = _symptom(triage, best.match.finding)
    plan = with_commands(command, make_plan(cands, working_id=against.finding.id, symptom=symptom))
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


def _tried(
    items: Sequence[str],
    user_tried: Sequence[FlagChange],
    shared: Sequence[Proposal],
    framework: str | None,
    version: str | None,
) -> tuple[list[tuple[FlagChange, str]], list[tuple[str, tuple[FlagChange, ...]]]]:
    """What was tried without effect, by whom (``you``, then each case that shares the failure),
    and the entries as written with the changes each names (for the list shown)."""
    tried: list[tuple[FlagChange, str]] = [(t, "you") for t in user_tried]
    entries = [(t, tried_item(t, framework, "--tried", version)) for t in items]
    for p in shared:
        case = p.match.finding
        tried += [(t, case.id) for t in case_tried(case, framework, version)]
        fw = (case.framework.name or "").lower() or None
        entries += [(t, read_tried(t, fw, framework, version)) for t in case.tried_without_effect]
    return tried, entries


def _components(triage: Triage, shared: Sequence[Proposal]) -> frozenset[str]:
    """The components the user's log names and those of the cases that share the failure."""
    from agent.components import from_text, of_finding

    return from_text("\n".join(ln.text for ln in triage.lines)).union(
        *(of_finding(p.match.finding) for p in shared)
    )


def _first_parsed(
    near: Sequence[WorkingDeployment],
) -> tuple[WorkingDeployment, LaunchConfig] | None:
    """The nearest working deployment whose command parses, with the parsed command."""
    from agent.flags import parse_command

    for w in near:
        wfw = (w.finding.framework.name or "").lower() or None
        try:
            return w, parse_command(w.command, wfw, source=f"{w.finding.id}: working command")
        except CommandParseError:
            continue
    return None


def _diff(
    command: LaunchConfig,
    against: WorkingDeployment,
    working: LaunchConfig,
    checkpoint: str | None,
    version: str | None,
) -> CommandDiff:
    """:func:`command_diff` against the working deployment, its notes ending with the caveat
    of a record of flags (not a full command) when that is what it has."""
    cd = command_diff(
        command,
        working,
        complete=against.provenance != "flags",
        working_framework=(against.finding.framework.name or "").lower() or None,
        checkpoint=checkpoint,
        version=version,
    )
    if against.provenance != "flags":
        return cd
    caveat = (
        f"{against.finding.id} records its flags, not a full command: a flag of yours that "
        "they do not list may have been set there too (listed as unknown, not tried, unless "
        "an architecture-trait difference explains it)"
    )
    return replace(cd, notes=(*cd.notes, caveat))


def _candidates(
    ctx: QueryContext,
    failure: Failure,
    cd: CommandDiff,
    working: Finding,
    traits_of: Callable[[Finding], ArchTraits],
    best: Proposal,
) -> tuple[tuple[tuple[Candidate, str | None], ...], tuple[FlagChange, ...]]:
    """The plan's candidates (the behavioural differences, the unlisted settings a trait
    difference explains, then the evidence's), and the unlisted settings that stay unknown."""
    working_traits = finding_traits(working, traits_of)
    working_name = working.model or working.id
    found, unlisted = explained(
        cd.unlisted, failure.framework, ctx.arch, working_traits, working_name
    )
    cands = candidates(
        cd.behavioural + found,
        failure,
        user_traits=ctx.arch,
        working_traits=working_traits,
        working_name=working_name,
    )
    cands += evidence_candidates(
        ctx,
        failure,
        working=working,
        exclude={best.match.finding.id},
        have=[c for c, _ in cands],
    )
    return cands, unlisted


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
    done = [c for c in best.changes if any(same_change(c, t, framework) for t in tried)]
    if done:
        return f"you already tried the fix of the best match ({f.id}): " + ", ".join(
            c.text or c.name for c in done
        )
    return None


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
