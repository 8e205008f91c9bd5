"""Render an ``Answer``: a rich view for people, a stable JSON document for scripts."""

from __future__ import annotations

from kb.records import Answer, Differential, FlagChange, Proposal, WorkingDeployment

SCHEMA_VERSION = 1


def source_url(source: str) -> str:
    """A source as a link where it is one (``owner/repo#N`` expanded); file paths as written."""
    from kb.document import source_url as link

    return link(source) or source


def source_links(sources) -> list[str]:
    """Each source once, as a link where it is one (a URL and its ``owner/repo#N`` are one)."""
    return list(dict.fromkeys(source_url(s) for s in sources))


def _redacted(text: str) -> str:
    """Log lines are shown with addresses and secrets masked, so the output can be pasted on."""
    from kb.redact import redact

    return redact(text)[0]


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
        "alternatives": [[change_dict(c) for c in alt] for alt in p.alternatives],
        "translated_from": p.translated_from,
        "tried_without_effect": list(f.tried_without_effect),
        "tried_without_effect_in_your_command": list(p.dead_ends_in_command),
        "not_carried": list(p.not_carried),
        "command": p.command,
    }


def answer_dict(a: Answer) -> dict:
    ctx = a.context
    return {
        "schema_version": SCHEMA_VERSION,
        "confident": a.confident,
        "verdict": a.verdict,
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


def reflow(text: str) -> str:
    """Markdown paragraphs as single lines (the terminal wraps them), blank lines kept."""
    paragraphs = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n  ".join(p for p in paragraphs if p)


_ACTION_STYLE = {"add": "green", "change": "yellow", "remove": "red"}


def _change_line(c: FlagChange) -> str:
    from rich.markup import escape

    style = _ACTION_STYLE.get(c.action, "white")
    if c.action == "change" and c.old is not None:
        body = f"{escape(c.name)} {escape(c.old)} → {escape(c.value or '')}"
    else:
        body = escape(c.text or c.name)
    kind = "" if c.kind == "flag" else f" [dim]({c.kind})[/dim]"
    note = f" [dim]— {escape(c.note)}[/dim]" if c.note else ""
    return f"  [{style}]{c.action:>6}[/{style}]  {body}{kind}{note}"


def render_answer(a: Answer, console) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    for w in a.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
    for n in a.notices:
        console.print(f"[dim]note: {escape(n)}[/dim]")
    if not a.proposals:
        console.print("No findings in the index. Run `deploykb ingest`.")
        return

    if a.triage.lines:
        console.print("[bold]Salient lines from your input[/bold]")
        for ln in a.triage.lines[:5]:
            ranks = f" [dim]({', '.join(ln.ranks)})[/dim]" if ln.ranks else ""
            text = escape(_redacted(ln.text)[:200])
            console.print(f"  [dim]{ln.cls or '-':<22}[/dim] {text}{ranks}")
        console.print()

    if a.differential is not None and a.differential.leads:
        render_differential(a.differential, console)
    best, rest = a.proposals[0], a.proposals[1:]
    f = best.match.finding
    if a.confident:
        header = f"[bold green]Best match[/bold green]  {escape(f.title)}"
    else:
        header = (
            "[bold yellow]No close match.[/bold yellow] "
            f"{escape(a.verdict)}.\n\nNearest: {escape(f.title)}"
        )
    lines = [header, f"[dim]{f.id} · status {f.status} · score {best.match.score:.2f}[/dim]", ""]
    lines.append("[bold]Why it matches[/bold]")
    lines += [f"  • {escape(r)}" for r in best.match.reasons] or ["  • (weak evidence)"]
    if f.root_cause:
        lines += ["", "[bold]Root cause[/bold]", f"  {escape(reflow(f.root_cause))}"]
    lines += [
        "",
        "[bold]What to change[/bold]"
        + (
            ""
            if best.command or a.context.command
            else " [dim](the case's whole fix: no current command given)[/dim]"
        ),
    ]
    if best.translated_from:
        lines.append(
            f"  [dim]translated from {escape(best.translated_from)} to "
            f"{escape(a.context.framework or '')} through the flag registry[/dim]"
        )
    lines += [_change_line(c) for c in best.changes]
    lines += [f"  [yellow]![/yellow] {escape(n)}" for n in best.not_carried]
    if not best.changes and not best.not_carried:
        lines.append(
            "  (nothing to change: your command already has the fix)"
            if not f.fix.is_empty()
            else "  (the case records no fix)"
        )
    for i, alt in enumerate(best.alternatives, 1):
        lines.append(f"  [dim]alternative {i}:[/dim]")
        lines += [_change_line(c) for c in alt]
    if f.tried_without_effect:
        lines += ["", "[bold]Tried without effect last time[/bold] (skip these)"]
        lines += [
            f"  ✗ {escape(t)}"
            + (" [yellow](in your command)[/yellow]" if t in best.dead_ends_in_command else "")
            for t in f.tried_without_effect
        ]
    if best.command:
        lines += ["", "[bold]Corrected command[/bold]", f"  {escape(best.command)}"]
    if f.working_command and not best.command:
        lines += [
            "",
            "[bold]Working command recorded in the case[/bold]",
            f"  {escape(f.working_command.strip())}",
        ]
    lines += ["", "[bold]Source[/bold]", f"  {escape(f.path or f.id)}"]
    lines += [f"  {escape(link)}" for link in source_links(f.sources)]
    console.print(Panel("\n".join(lines), expand=True))

    if a.differential is not None and not a.differential.leads:
        render_differential(a.differential, console)
    if rest:
        console.print("[bold]Also close[/bold]")
        for p in rest:
            g = p.match.finding
            fix = ", ".join(c.text or c.name for c in p.changes[:3])
            console.print(
                f"  {p.match.score:.2f}  [cyan]{escape(g.id)}[/cyan]  {escape(g.title)}"
                + (f"\n        fix: {escape(fix)}" if fix else "")
            )


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
    lines = [
        f"[bold cyan]Differential[/bold cyan]  against a deployment that works: {escape(f.title)}",
        f"[dim]{f.id} · {escape(f.model or '?')} · {escape(f.quantization or '?')} · "
        f"{escape(hw or '?')} · {escape(fw or '?')}[/dim]",
    ]
    if d.lead_reason:
        lines.append(f"[yellow]shown first:[/yellow] {escape(d.lead_reason)}")
    lines += ["", "[bold]Why this deployment[/bold]"]
    lines += [f"  • {escape(r)}" for r in w.reasons]
    lines += [
        "",
        f"[bold]Working command[/bold] [dim]({_PROVENANCE.get(w.provenance, w.provenance)})[/dim]",
        f"  {escape(w.command)}",
    ]
    if d.descriptive:
        lines += ["", "[bold]Describes the model or the service[/bold] [dim](not tried)[/dim]"]
        lines += [_change_line(c) for c in d.descriptive]
    lines += ["", "[bold]Behaviour differences[/bold]"]
    for c in d.candidates:
        tag = (
            f" [yellow](tried without effect: {escape(', '.join(c.tried_by))})[/yellow]"
            if c.tried_by
            else ""
        )
        if c.origin != "diff":
            tag += " [dim](not a difference: from the knowledge base, see the plan)[/dim]"
        lines.append(_change_line(c.change) + tag)
    if not d.candidates:
        lines.append("  (none: your command launches like the working one)")
    if d.tried:
        lines += ["", "[bold]Already tried without effect[/bold] (yours and the matched cases')"]
        lines += [f"  ✗ {escape(t)}" for t in d.tried]
    if d.plan:
        lines += ["", "[bold]Plan[/bold] [dim](each step keeps the previous ones)[/dim]"]
        for s in d.plan:
            changes = ", ".join(
                f"{c.action} {c.text or c.name}"
                if c.action != "change"
                else f"{c.name} {c.old} → {c.value}"
                for c in s.changes
            )
            lines.append(f"  [bold]{s.step}.[/bold] {escape(changes)}")
            lines.append(f"     [dim]why:[/dim] {escape(s.why)}")
            lines.append(f"     [dim]expect:[/dim] {escape(s.expect)}")
    for n in d.notes:
        lines.append(f"  [dim]note: {escape(n)}[/dim]")
    if d.others:
        lines += [
            "",
            "[dim]other working deployments: "
            + escape(", ".join(o.finding.id for o in d.others))
            + "[/dim]",
        ]
    console.print(Panel("\n".join(lines), expand=True))
