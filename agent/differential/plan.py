"""The experiment plan: the candidates in steps (one change or one coupled group each, ranked by
the knowledge base's evidence and by architecture-trait couplings, what was tried kept together
with the first step), why each change is in its step, what to expect, and the command each step
launches."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.differential.comparison import UNLISTED_EXPLAINED
from agent.differential.facts import rules
from kb.errors import CommandParseError
from kb.records import Candidate, FlagChange, LaunchConfig, PlanStep


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
    steps = _steps(cands, max_steps or rules().max_steps)
    return tuple(
        PlanStep(
            n,
            tuple(c.change for c in members),
            _reasons(members, working_id),
            _expect(n, len(steps), symptom),
        )
        for n, members in enumerate(steps, 1)
    )


def _steps(cands: Sequence[tuple[Candidate, str | None]], limit: int) -> list[list[Candidate]]:
    """The candidates grouped (one coupling's changes together) and ordered: groups a trait
    explains first, then by net evidence, then as they came; what was tried goes with the first
    step; at most ``limit`` steps."""
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
    return steps[:limit]


def _reasons(members: Sequence[Candidate], working_id: str) -> str:
    """Why each change of a step is in it, one sentence each."""
    why = [_why(c, members, working_id) for c in members]
    return " ".join(w if w.endswith(".") else w + "." for w in why)


def _expect(n: int, total: int, symptom: str | None) -> str:
    """What step ``n`` of ``total`` confirms or rules out, and what comes after it."""
    failure = f"the failure ({symptom})" if symptom else "the failure"
    later = (
        f"go on to step {n + 1}, keeping this step's changes"
        if n < total
        else "the cause lies outside the launch flags compared here (model code, checkpoint,"
        " versions)"
    )
    return (
        f"confirmed if {failure} is gone and the output is correct; ruled out if it comes "
        f"back unchanged: then {later}"
    )


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


def with_commands(command: LaunchConfig, plan: Sequence[PlanStep]) -> tuple[PlanStep, ...]:
    """Each step with the full command it launches (the steps before it included)."""
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
