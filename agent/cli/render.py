"""Render an ``Answer``: a rich view for people, a stable JSON document for scripts."""

from __future__ import annotations

from agent.cli.terminal import ShellCommand, group, hang, paragraphs
from kb.records import Answer, Differential, FlagChange, Proposal, TrackRecord, WorkingDeployment

ANSWER_SCHEMA_VERSION = 1  # the "schema_version" of ``ask --json``


def source_link(source: str) -> str:
    """A source as a link where it is one (``owner/repo#N`` expanded); file paths as written."""
    from kb.document import source_url

    return source_url(source) or source


def source_links(sources) -> list[str]:
    """Each source once, as a link where it is one (a URL and its ``owner/repo#N`` are one)."""
    return list(dict.fromkeys(source_link(s) for s in sources))


def _redacted(text: str) -> str:
    """Log lines are shown with addresses and secrets masked, so the output can be pasted on."""
    from kb.redact import safe_text

    return safe_text(text)


def change_dict(c: FlagChange) -> dict:
    out = {"kind": c.kind, "action": c.action, "name": c.name, "value": c.value, "text": c.text}
    if c.old is not None:
        out["old"] = c.old
    if c.note:
        out["note"] = c.note
    return out


def proposal_dict(p: Proposal) -> dict:
    f = p.match.finding
    return {
        "id": f.id,
        "title": f.title,
        "status": f.status,
        "score": p.match.score,
        "reasons": list(p.match.reasons),
        "sources": source_links(f.sources),
        "path": f.path,
        "root_cause": unwrap(f.root_cause) if f.root_cause else None,
        "changes": [change_dict(c) for c in p.changes],
        "confirmed": f.fix.confirmed is not False,
        "fix_note": f.fix.note,
        "alternatives": [[change_dict(c) for c in alt] for alt in p.alternatives],
        "alternatives_confirmed": [alt.confirmed is not False for alt in f.alternatives],
        "already_tried": [c.text or c.name for c in p.already_tried],
        "translated_from": p.translated_from,
        "tried_without_effect": list(f.tried_without_effect),
        "tried_without_effect_in_your_command": list(p.dead_ends_in_command),
        "not_carried": list(p.not_carried),
        "command": p.command,
    }


def track_dict(t: TrackRecord | None) -> dict | None:
    if t is None:
        return None
    return {"probability_band": [t.low, t.high], "right": t.right, "reports": t.reports}


def track_line(t: TrackRecord) -> str:
    """How often an answer this probable was right: the figure a reader can weigh the answer by."""
    return (
        f"a top answer scoring {t.low:.1f}–{t.high:.1f} was right for {t.right} of {t.reports} "
        "real reports it was fitted on (out-of-fold)"
    )


def answer_dict(a: Answer) -> dict:
    ctx = a.context
    return {
        "schema_version": ANSWER_SCHEMA_VERSION,
        "confident": a.confident,
        "verdict": a.verdict,
        "track_record": track_dict(a.track),
        "matches": [proposal_dict(p) for p in a.proposals],
        "triage": [
            {
                "text": _redacted(ln.text),
                "class": ln.cls,
                "count": ln.count,
                "ranks": list(ln.ranks),
            }
            for ln in a.triage.lines
        ],
        "context": {
            "model": ctx.model,
            "architecture": ctx.arch.model_type if ctx.arch else None,
            "traits": list(ctx.arch.traits) if ctx.arch else [],
            "quantization": ctx.quantization,
            "gpu": ctx.gpu,
            "sm": ctx.sm,
            "framework": ctx.framework,
            "framework_version": ctx.framework_version,
            "gpu_count": ctx.gpu_count,
            "command": _redacted(ctx.command.raw) if ctx.command and ctx.command.raw else None,
        },
        "warnings": list(a.warnings),
        "notices": list(a.notices),
        "tried": list(ctx.tried),
        "differential": differential_dict(a.differential) if a.differential else None,
    }


def deployment_dict(w: WorkingDeployment) -> dict:
    f = w.finding
    return {
        "id": f.id,
        "title": f.title,
        "status": f.status,
        "model": f.model,
        "architecture": f.architecture,
        "quantization": f.quantization,
        "gpu": f.hardware.gpu,
        "sm": f.hardware.sm,
        "count": f.hardware.count,
        "framework": f.framework.name,
        "framework_version": f.framework.version,
        "command": w.command,
        "command_provenance": w.provenance,
        "reasons": list(w.reasons),
        "path": f.path,
    }


def differential_dict(d: Differential) -> dict:
    return {
        "against": d.against.finding.id,
        "leads": d.leads,
        "lead_reason": d.lead_reason,
        "reasons": list(d.against.reasons),
        "deployment": deployment_dict(d.against),
        "descriptive": [change_dict(c) for c in d.descriptive],
        "unlisted": [change_dict(c) for c in d.unlisted],
        "candidates": [
            {
                **change_dict(c.change),
                "tried_by": list(c.tried_by),
                "trait": c.trait,
                "fixed": list(c.fixed),
                "failed": list(c.failed),
                "origin": c.origin,
            }
            for c in d.candidates
        ],
        "plan": [
            {
                "step": s.step,
                "changes": [change_dict(c) for c in s.changes],
                "why": s.why,
                "expect": s.expect,
                "command": _redacted(s.command) if s.command else None,
            }
            for s in d.plan
        ],
        "tried": list(d.tried),
        "notes": list(d.notes),
        "others": [w.finding.id for w in d.others],
    }


def unwrap(text: str) -> str:
    """Join a Markdown paragraph's hard-wrapped lines; paragraphs stay apart."""
    return "\n\n".join(" ".join(p.split()) for p in text.strip().split("\n\n") if p.strip())


_ACTION_STYLE = {"add": "green", "change": "yellow", "remove": "red"}


def _change_line(c: FlagChange, tag: str = ""):  # type: ignore[no-untyped-def]
    from rich.markup import escape

    style = _ACTION_STYLE.get(c.action, "white")
    if c.action == "change" and c.old is not None:
        body = f"{escape(c.name)} {escape(c.old)} → {escape(c.value or '')}"
    else:
        body = escape(c.text or c.name)
    kind = "" if c.kind == "flag" else f" [dim]({c.kind})[/dim]"
    note = f" [dim]— {escape(c.note)}[/dim]" if c.note else ""
    return hang(f"  [{style}]{c.action:>6}[/{style}]  ", f"{body}{kind}{note}{tag}")


def render_triage_lines(lines, console, limit: int = 5) -> None:  # type: ignore[no-untyped-def]
    """The salient lines: class, then the text wrapped under itself."""
    from rich.text import Text

    shown = lines[:limit]
    width = max((len(ln.cls or "-") for ln in shown), default=1)
    for ln in shown:
        text = Text(_redacted(ln.text)[:200])
        if ln.ranks:
            text.append(f" ({', '.join(ln.ranks)})", style="dim")
        console.print(hang(Text(f"  {ln.cls or '-':<{width}}  ", style="dim"), text))


def say_warnings(a: Answer) -> None:
    """The answer's warnings and notices, one line each on stderr (stdout carries only the answer,
    so ``deploykb ask ... > answer.txt`` or ``| jq`` gets data alone)."""
    import sys

    for w in a.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for n in a.notices:
        print(f"note: {n}", file=sys.stderr)


def render_answer(a: Answer, console) -> None:
    """The answer on ``console`` (stdout); its warnings and notices go to stderr (``say_warnings``)."""
    from rich.panel import Panel

    if not a.proposals:
        import sys

        print("No findings in the index. Run `deploykb ingest`.", file=sys.stderr)
        return
    if a.triage.lines:
        console.print("[bold]Salient lines from your input[/bold]")
        render_triage_lines(a.triage.lines, console)
        console.print()
    if a.differential is not None and a.differential.leads:
        render_differential(a.differential, console)
    best = a.proposals[0]
    lines = _best_head(a, best) + _what_to_change(a, best) + _best_tail(best)
    console.print(Panel(group(lines), expand=True))
    if a.differential is not None and not a.differential.leads:
        render_differential(a.differential, console)
    _also_close(a.proposals[1:], console)


def _best_head(a: Answer, best: Proposal) -> list:
    """The best match's title (or why there is no close match), why it matches, its root cause."""
    from rich.markup import escape

    f = best.match.finding
    if a.confident:
        header = f"[bold green]Best match[/bold green]  {escape(f.title)}"
    else:
        header = (
            "[bold yellow]No close match.[/bold yellow] "
            f"{escape(a.verdict)}.\n\nNearest: {escape(f.title)}"
        )
    lines: list = [
        header,
        f"[dim]{f.id} · status {f.status} · score {best.match.score:.2f}[/dim]",
    ]
    if a.track is not None:
        lines.append(hang("", f"[dim]{escape(track_line(a.track))}[/dim]"))
    lines.append("")
    lines.append("[bold]Why it matches[/bold]")
    lines += [hang("  • ", escape(r)) for r in best.match.reasons] or ["  • (weak evidence)"]
    if f.root_cause:
        lines += ["", "[bold]Root cause[/bold]"]
        for i, para in enumerate(paragraphs(f.root_cause)):
            lines += ([""] if i else []) + [hang("  ", escape(para))]
    return lines


def _what_to_change(a: Answer, best: Proposal) -> list:
    """The changes the best match implies for the user's command, and its alternatives; a fix
    the case records as unconfirmed says so, and so does a change you already tried."""
    from rich.markup import escape

    f = best.match.finding
    whole = "" if best.command or a.context.command else _WHOLE_FIX
    lines: list = ["", "[bold]What to change[/bold]" + _unconfirmed(f.fix) + whole]
    if best.translated_from:
        lines.append(
            hang(
                "  ",
                f"[dim]translated from {escape(best.translated_from)} to "
                f"{escape(a.context.framework or '')} through the flag registry[/dim]",
            )
        )
    lines += [_change_line(c, _tried_tag(c, best)) for c in best.changes]
    lines += [hang("  [yellow]![/yellow] ", escape(n)) for n in best.not_carried]
    if f.fix.note and (f.fix.confirmed is False or f.fix.is_empty()):
        lines.append(hang("  [dim]the case's fix:[/dim] ", escape(f.fix.note)))
    if not best.changes and not best.not_carried:
        if not f.fix.is_empty():
            lines.append("  (nothing to change: your command already has the fix)")
        elif not f.fix.note:
            lines.append("  (the case records no fix)")
    for i, (alt, fix) in enumerate(zip(best.alternatives, f.alternatives, strict=False), 1):
        note = f" {escape(fix.note)}" if fix.note else ""
        lines.append(hang("  ", f"[dim]alternative {i}{_unconfirmed(fix)}:{note}[/dim]"))
        lines += [_change_line(c, _tried_tag(c, best)) for c in alt]
    return lines


def _unconfirmed(fix) -> str:  # type: ignore[no-untyped-def]
    return " [yellow](unconfirmed)[/yellow]" if fix.confirmed is False else ""


def _tried_tag(c: FlagChange, p: Proposal) -> str:
    return (
        " [yellow](you tried it without effect: --tried)[/yellow]" if c in p.already_tried else ""
    )


_WHOLE_FIX = " [dim](the case's whole fix: no current command given)[/dim]"


def _best_tail(best: Proposal) -> list:
    """What was tried without effect, the corrected (or recorded working) command, the sources."""
    from rich.markup import escape

    f = best.match.finding
    lines: list = []
    if f.tried_without_effect:
        lines += ["", "[bold]Tried without effect last time[/bold] (skip these)"]
        mine = " [yellow](in your command)[/yellow]"
        lines += [
            hang("  ✗ ", escape(t) + (mine if t in best.dead_ends_in_command else ""))
            for t in f.tried_without_effect
        ]
    if best.command:
        lines += ["", "[bold]Corrected command[/bold]", ShellCommand(best.command)]
    if f.working_command and not best.command:
        lines += [
            "",
            "[bold]Working command recorded in the case[/bold]",
            ShellCommand(f.working_command.strip()),
        ]
    lines += ["", "[bold]Source[/bold]", hang("  ", escape(f.path or f.id))]
    lines += [hang("  ", escape(link)) for link in source_links(f.sources)]
    return lines


def _also_close(rest: tuple[Proposal, ...], console) -> None:  # type: ignore[no-untyped-def]
    from rich.markup import escape

    if not rest:
        return
    console.print("[bold]Also close[/bold]")
    for p in rest:
        g = p.match.finding
        fix = ", ".join(_change_text(c) for c in p.changes[:3])
        console.print(
            hang(f"  {p.match.score:.2f}  ", f"[cyan]{escape(g.id)}[/cyan]  {escape(g.title)}")
        )
        if fix:
            console.print(hang("        fix: ", escape(fix)))


def _change_text(c: FlagChange) -> str:
    """A change in one line, its action first: ``remove --x 1``, ``--x 1 → 2``."""
    if c.action == "change" and c.old is not None:
        return f"{c.name} {c.old} → {c.value}"
    return f"{c.action} {c.text or c.name}"


_PROVENANCE = {
    "quoted": "as recorded",
    "reconstructed": "reconstructed, not quoted from the source",
    "flags": "only the flags its record lists, not a full command",
}


def render_differential(d: Differential, console) -> None:
    """The user's deployment against the nearest working one, and the experiment plan."""
    from rich.markup import escape
    from rich.panel import Panel

    w = d.against
    f = w.finding
    hw = " ".join(
        x
        for x in (
            f"{f.hardware.count}x" if f.hardware.count else None,
            f.hardware.gpu,
            f"({f.hardware.sm})" if f.hardware.sm else None,
        )
        if x
    )
    fw = " ".join(x for x in (f.framework.name, f.framework.version) if x)
    lines: list = [
        f"[bold cyan]Differential[/bold cyan]  against a deployment that works: {escape(f.title)}",
        f"[dim]{f.id} · {escape(f.model or '?')} · {escape(f.quantization or '?')} · "
        f"{escape(hw or '?')} · {escape(fw or '?')}[/dim]",
    ]
    if d.lead_reason:
        lines.append(f"[yellow]shown first:[/yellow] {escape(d.lead_reason)}")
    lines += ["", "[bold]Why this deployment[/bold]"]
    lines += [hang("  • ", escape(r)) for r in w.reasons]
    lines += [
        "",
        f"[bold]Working command[/bold] [dim]({_PROVENANCE.get(w.provenance, w.provenance)})[/dim]",
        ShellCommand(w.command),
    ]
    if d.descriptive:
        lines += ["", "[bold]Describes the model or the service[/bold] [dim](not tried)[/dim]"]
        lines += [_change_line(c) for c in d.descriptive]
    if d.unlisted:
        lines += [
            "",
            "[bold]Not in the record[/bold] [dim](unknown whether it ran with them; not tried)"
            "[/dim]",
        ]
        lines += [hang("  ", f"[dim]?[/dim] {escape(c.text or c.name)}") for c in d.unlisted]
    lines += ["", "[bold]Behaviour differences[/bold]"]
    for c in d.candidates:
        tag = (
            f" [yellow](tried without effect: {escape(', '.join(c.tried_by))})[/yellow]"
            if c.tried_by
            else ""
        )
        if c.origin != "diff":
            tag += " [dim](not a difference: from the knowledge base, see the plan)[/dim]"
        lines.append(_change_line(c.change, tag))
    if not d.candidates:
        lines.append("  (none: your command launches like the working one)")
    if d.tried:
        lines += ["", "[bold]Already tried without effect[/bold] (yours and the matched cases')"]
        lines += [hang("  ✗ ", escape(t)) for t in d.tried]
    if d.plan:
        lines += ["", "[bold]Plan[/bold] [dim](each step keeps the previous ones)[/dim]"]
        for s in d.plan:
            changes = ", ".join(_change_text(c) for c in s.changes)
            lines.append(hang(f"  [bold]{s.step}.[/bold] ", escape(changes)))
            lines.append(hang("     [dim]why:[/dim] ", escape(s.why)))
            lines.append(hang("     [dim]expect:[/dim] ", escape(s.expect)))
    for n in d.notes:
        lines.append(hang("  [dim]note:[/dim] ", f"[dim]{escape(n)}[/dim]"))
    if d.others:
        lines += [
            "",
            "[dim]other working deployments: "
            + escape(", ".join(o.finding.id for o in d.others))
            + "[/dim]",
        ]
    console.print(Panel(group(lines), expand=True))
