"""What the rest of the knowledge base says about a change, for this kind of failure: the cases
it fixed and those where it was tried without effect; each behavioural difference as a candidate
with that evidence, who tried it and the trait behind it; and the changes that are no difference
from the working command as recorded, yet fixed the same kind of failure on the same GPU
generation through a component the working deployment's record names."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent import match as M
from agent.differential.changes import change_components, same_change
from agent.differential.comparison import trait_reason
from agent.differential.facts import WORKING
from agent.differential.tried import case_tried
from kb.errors import CommandParseError
from kb.records import ArchTraits, Candidate, Finding, FlagChange, LaunchConfig, QueryContext


@dataclass(frozen=True)
class Failure:
    """The failure a plan is for, as the evidence reads it: its symptom classes and the
    components it touches, what was tried without effect and by whom (``you`` or a case id),
    the user's framework and release, and the knowledge base's findings."""

    findings: Sequence[Finding]
    classes: frozenset[str]
    components: frozenset[str]
    tried: Sequence[tuple[FlagChange, str]]
    framework: str | None
    version: str | None = None


@dataclass(frozen=True)
class Evidence:
    """What the rest of the knowledge base says about one change, for this kind of failure."""

    fixed: tuple[str, ...]
    failed: tuple[str, ...]


@lru_cache(maxsize=4096)
def fix_changes(
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


def evidence(change: FlagChange, failure: Failure) -> Evidence:
    """The recorded cases of the same kind of failure (symptom classes that agree; components
    that overlap when both sides name any) that ``change`` fixed, and those where it was tried
    without effect (in the user's framework and release)."""
    from agent.components import of_finding

    framework, version = failure.framework, failure.version
    touched = failure.components | change_components(change, framework)
    fixed: list[str] = []
    failed: list[str] = []
    for f in failure.findings:
        recorded = frozenset(s.cls for s in f.symptoms)
        if M.class_agreement(failure.classes, recorded) != 1.0:
            continue
        if touched and not of_finding(f) & touched:
            continue
        if (
            f.status in WORKING
            and f.fix.confirmed is not False
            and any(same_change(change, c, framework) for c in fix_changes(f, framework, version))
        ):
            fixed.append(f.id)
        elif any(same_change(change, c, framework) for c in case_tried(f, framework, version)):
            failed.append(f.id)
    return Evidence(tuple(fixed), tuple(failed))


def tried_by(
    change: FlagChange, tried: Sequence[tuple[FlagChange, str]], framework: str | None
) -> tuple[str, ...]:
    """Who tried ``change`` without effect (``you``, case ids), each once, in order."""
    return tuple(dict.fromkeys(who for t, who in tried if same_change(change, t, framework)))


def candidates(
    behavioural: Sequence[FlagChange],
    failure: Failure,
    *,
    user_traits: ArchTraits | None,
    working_traits: ArchTraits,
    working_name: str,
) -> tuple[tuple[Candidate, str | None], ...]:
    """Each behavioural difference with who tried it, the trait that explains it (and its
    coupling id), and the knowledge base's evidence."""
    framework = failure.framework
    out = []
    for change in behavioural:
        by = tried_by(change, failure.tried, framework)
        coupling, trait = trait_reason(change, framework, user_traits, working_traits, working_name)
        ev = evidence(change, failure)
        out.append((Candidate(change, by, trait, ev.fixed, ev.failed), coupling))
    return tuple(out)


def evidence_candidates(
    ctx: QueryContext,
    failure: Failure,
    *,
    working: Finding,
    exclude: Iterable[str],
    have: Sequence[Candidate],
) -> tuple[tuple[Candidate, None], ...]:
    """Changes that are no difference from the working command as recorded, yet touch a
    component the working deployment's record names (``components``) and fixed the same kind
    of failure on the same GPU generation: a record that says "the FP4 GEMM went through
    cuDNN" without the flag still points at the FP4 GEMM backend that fixed a NaN elsewhere.
    Left out: what the user's command already has, what a diff candidate already covers."""
    from agent.components import label, of_finding
    from kb.frameworks import normalise_framework

    framework, version = failure.framework, failure.version
    wcomps = of_finding(working)
    if not wcomps or not ctx.sm or ctx.command is None:
        return ()
    dst = ctx.command.framework or normalise_framework(framework)
    src = normalise_framework(framework) or dst
    skip = set(exclude) | {working.id}
    covered = {(c.change.kind, c.change.name) for c in have}
    out: dict[tuple[str, str, str | None], Candidate] = {}
    for f in _fixed_here(ctx, failure.findings, skip, failure.classes):
        for change in fix_changes(f, framework, version):
            shared = change_components(change, framework) & wcomps
            key = (change.kind, change.name, change.value)
            if not shared or change.action == "remove" or key in out:
                continue
            if (change.kind, change.name) in covered:
                continue
            proposed = _needed(ctx.command, change, src, dst, version)
            if proposed is None:
                continue  # the user's command already has it, or its release has no such thing
            ev = evidence(proposed, failure)
            names = ", ".join(label(c) for c in sorted(shared))
            out[key] = Candidate(
                proposed,
                tried_by(proposed, failure.tried, framework),
                None,
                ev.fixed,
                ev.failed,
                origin="evidence",
                why=f"the record of {working.id} names the {names} it ran through",
            )
    return tuple((c, None) for c in out.values())


def _fixed_here(
    ctx: QueryContext, findings: Iterable[Finding], skip: set[str], classes: frozenset[str]
) -> Iterator[Finding]:
    """The working cases (their fixes confirmed or unrecorded) of the same kind of failure on
    the user's GPU generation, those in ``skip`` left out."""
    from agent.context import sm_of, sm_similarity

    for f in findings:
        if f.id in skip or f.status not in WORKING or f.fix.confirmed is False:
            continue
        theirs = sm_of(f.hardware.sm, f.hardware.gpu)
        if not theirs or sm_similarity(ctx.sm, theirs) < 1.0:
            continue
        if M.class_agreement(classes, frozenset(s.cls for s in f.symptoms)) != 1.0:
            continue
        yield f


def _needed(
    command: LaunchConfig,
    change: FlagChange,
    src: str | None,
    dst: str | None,
    version: str | None,
) -> FlagChange | None:
    """``change`` as the user's command and release need it, or None when the command already
    has it or the release has no such setting."""
    from agent.flags import diff_changes

    needed, _ = diff_changes(
        command, [change], source_framework=src, target_framework=dst, target_version=version
    )
    if not needed:
        return None
    (proposed,) = needed
    return proposed
