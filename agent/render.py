"""Render an ``Answer``: a rich view for people, a stable JSON document for scripts."""

from __future__ import annotations

from kb.records import Answer, FlagChange, Proposal

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
        },
        "warnings": list(a.warnings),
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

    if rest:
        console.print("[bold]Also close[/bold]")
        for p in rest:
            g = p.match.finding
            fix = ", ".join(c.text or c.name for c in p.changes[:3])
            console.print(
                f"  {p.match.score:.2f}  [cyan]{escape(g.id)}[/cyan]  {escape(g.title)}"
                + (f"\n        fix: {escape(fix)}" if fix else "")
            )
