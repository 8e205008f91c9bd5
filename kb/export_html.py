"""The compatibility table as one self-contained HTML page: inline CSS and JS, no external assets.

The page opens on the compatibility grid (model family × GPU SM; each cell a status word and the
number of findings behind it, linking to them), refinable by quantization scheme and framework;
below it the rows, grouped by model family. Everything is rendered on the server side (the page
reads fine without JavaScript); the script recomputes the grid for a quantization or framework,
and adds sorting, filtering and copy buttons. The view state lives in the URL hash
(``#filter=GLM&status=broken&gpu=sm120&family=GLM-5&quant=nvfp4&framework=sglang&sort=date:desc``),
so a filtered view can be linked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html import escape

from kb.export import (
    ANY_MODEL,
    CONFLICTING,
    OTHER_FAMILY,
    STATUS_ORDER,
    UNSPECIFIED,
    UNSPECIFIED_GPU,
    UNTESTED,
    CompatTable,
    FindingLinks,
    FindingRef,
    Row,
    _sm_number,
    families_in_order,
    filter_description,
    finding_linker,
)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _slug(label: str) -> str:
    return label.replace(" ", "-")


_COPY_ICON = (
    '<svg viewBox="0 0 16 16" width="12" height="12" aria-hidden="true"><path fill="currentColor" '
    'd="M4 1.5A1.5 1.5 0 0 1 5.5 0h7A1.5 1.5 0 0 1 14 1.5v9a1.5 1.5 0 0 1-1.5 1.5h-7A1.5 1.5 0 0 1 '
    "4 10.5zm1.5-.25a.25.25 0 0 0-.25.25v9c0 .14.11.25.25.25h7a.25.25 0 0 0 .25-.25v-9a.25.25 0 0 "
    "0-.25-.25zM2 4.75a.75.75 0 0 1 1.5 0V14c0 .14.11.25.25.25H10a.75.75 0 0 1 0 1.5H3.75A1.75 "
    '1.75 0 0 1 2 14z"/></svg>'
)


def _copy_button(text: str, label: str) -> str:
    return (
        f'<button type="button" class="copy" data-copy="{_e(text)}" title="{_e(label)}" '
        f'aria-label="{_e(label)}">{_COPY_ICON}</button>'
    )


def _link(url: str, text: str, cls: str = "", title: str = "") -> str:
    attrs = f' class="{cls}"' if cls else ""
    attrs += f' title="{_e(title)}"' if title else ""
    return f'<a href="{_e(url)}"{attrs}>{_e(text)}</a>'


def _status_badge(label: str) -> str:
    return f'<span class="badge s-{_slug(label)}">{_e(label)}</span>'


def _model_cell(row: Row) -> str:
    org, _, name = row.model.partition("/")
    model = f'<span class="org">{_e(org)}/</span>{_e(name)}' if name else _e(org)
    if row.model == ANY_MODEL:
        model = '<span class="muted">(any model)</span>'
    arch = f' <code class="arch">{_e(row.architecture)}</code>' if row.architecture else ""
    family = "" if row.family == ANY_MODEL else _e(row.family)
    return f'<div class="fam">{family}{arch}</div><div class="model">{model}</div>'


def _gpu_cell(row: Row) -> str:
    sm = row.gpu_sm if row.gpu_sm != UNSPECIFIED_GPU else "SM ?"
    name = _e(row.gpu_text) if row.gpu_text else '<span class="muted">unspecified GPU</span>'
    return f'<span class="sm">{_e(sm)}</span><div class="gpu">{name}</div>'


def _framework_cell(row: Row) -> str:
    if not row.framework and not row.framework_versions:
        return '<span class="muted">—</span>'
    versions = "".join(f'<div class="ver">{_e(v)}</div>' for v in row.framework_versions)
    return f'<div class="fw">{_e(row.framework or "?")}</div>{versions}'


def _status_cell(row: Row) -> str:
    cell = row.cell
    html = _status_badge(cell.status)
    if cell.conflict:
        events = "".join(
            f'<li title="{_e(e.finding)}">{_status_badge(e.status)} '
            f"<span class='when'>{_e(e.date or 'undated')}</span></li>"
            for e in cell.history
            if e.status != UNTESTED
        )
        html += (
            f'<div class="conflict" title="{_e(cell.status_text)}">'
            f'<span class="ctitle">conflicting, newest first</span><ol>{events}</ol></div>'
        )
    return html


def _flags_cell(row: Row) -> str:
    flags = row.cell.flags
    if not flags:
        return '<span class="muted">—</span>'
    items = []
    for f in flags:
        kind = {"add": "", "change": "change", "remove": "drop", "env": "env", "pin": "pin"}[f.kind]
        tag = f'<span class="kind k-{f.kind}">{kind}</span>' if kind else ""
        shown = f.display if f.kind == "change" else f.text  # --flag 0.9 → 0.82
        items.append(  # a change copies the setting it ends with
            f'<li class="flag">{tag}<code>{_e(shown)}</code>'
            f"{_copy_button(f.setting, 'Copy ' + f.setting)}</li>"
        )
    adds = [f.setting for f in flags if f.kind in ("add", "change")]
    extra = ""
    if len(adds) > 1:
        joined = " ".join(adds)
        extra = (
            f'<button type="button" class="copy all" data-copy="{_e(joined)}" '
            f'title="Copy {_e(joined)}">{_COPY_ICON} copy all flags</button>'
        )
    return f'<ul class="flags">{"".join(items)}</ul>{extra}'


def _throughput_cell(row: Row) -> str:
    best = row.cell.best
    if best is None:
        return '<span class="muted">—</span>'
    value = f"{best.tok_s:g}"
    conc = f'<div class="conc">@ {best.concurrency} concurrent</div>' if best.concurrency else ""
    return f'<span class="tp">{_e(value)}</span> <span class="unit">tok/s</span>{conc}'


_GITHUB_ISSUE = r"(?:https?://github\.com/)?[\w.-]+/([\w.-]+)(?:#|/(?:issues|pull)/)(\d+)/?"


def _short_source(text: str) -> str:
    """``sgl-project/sglang#14311`` and its issue URL -> ``sglang#14311``; other URLs -> host."""
    m = re.fullmatch(_GITHUB_ISSUE, text)
    if m:
        return f"{m[1]}#{m[2]}"
    m = re.match(r"https?://([^/]+)", text)
    return m[1] if m else text


def _evidence_cell(row: Row, link: Callable[[FindingRef], str]) -> str:
    items = []
    for ref in row.cell.findings:
        sources = " ".join(
            _link(s.url, _short_source(s.text), "src", s.url) for s in ref.sources if s.url
        )
        local = [s.text for s in ref.sources if not s.url]
        if local:
            title = _e("; ".join(local))
            sources += f' <span class="local" title="{title}">+{len(local)} local</span>'
        items.append(
            f'<li><span class="dot s-{_slug(ref.status)}" title="{_e(ref.status)}"></span>'
            f"{_link(link(ref), ref.id, 'fid', ref.title)}"
            f'<div class="srcs">{sources}</div></li>'
        )
    return f'<ul class="ev">{"".join(items)}</ul>'


def _search_text(row: Row) -> str:
    cell = row.cell
    parts = [
        row.family,
        row.model,
        row.architecture or "",
        row.gpu_sm,
        row.gpu_text,
        row.quantization or "",
        row.framework_text,
        cell.status,
        "conflicting" if cell.conflict else "",
        *(f.display for f in cell.flags),
        *(r.id for r in cell.findings),
        *(r.title for r in cell.findings),
        *(s.text for r in cell.findings for s in r.sources),
    ]
    return " ".join(" ".join(parts).split()).lower()


def _row_html(row: Row, link: Callable[[FindingRef], str]) -> str:
    cell = row.cell
    status_rank = STATUS_ORDER.index(cell.status)
    best = cell.best.tok_s if cell.best else -1
    placeholder = row.family in (ANY_MODEL, OTHER_FAMILY)
    attrs = (
        f'class="row s-{_slug(cell.status)}{" conflicted" if cell.conflict else ""}" '
        f'data-status="{_e(cell.status)}" data-conflict="{"1" if cell.conflict else "0"}" '
        f'data-gpu="{_e(row.gpu_sm)}" data-family="{_e(row.family)}" '
        f'data-quant="{_e(row.quant_kind)}" data-framework="{_e(_framework_key(row))}" '
        f'data-ids="{_e(" ".join(ref.id for ref in cell.findings))}" '
        f'data-search="{_e(_search_text(row))}"'
    )
    tds = [
        ("model", f"{placeholder:d} {row.family} {row.model}".lower(), _model_cell(row)),
        ("gpu", f"{_sm_number(row.gpu_sm) + 1:05d} {row.gpu_text.lower()}", _gpu_cell(row)),
        ("quant", (row.quantization or "").lower(), _e(row.quantization or "—")),
        ("framework", row.framework_text.lower(), _framework_cell(row)),
        ("status", f"{status_rank}", _status_cell(row)),
        ("flags", " ".join(f.text for f in cell.flags).lower(), _flags_cell(row)),
        ("throughput", f"{best:016.3f}" if best >= 0 else "", _throughput_cell(row)),
        ("date", cell.date or "", _e(cell.date or "—")),
        ("findings", str(len(cell.findings)), _evidence_cell(row, link)),
    ]
    cells = "".join(
        f'<td class="c-{key}" data-sort="{_e(sort)}">{content}</td>' for key, sort, content in tds
    )
    return f"<tr {attrs}>{cells}</tr>"


_COLUMNS = (
    ("model", "Model", "text"),
    ("gpu", "GPU", "text"),
    ("quant", "Quant", "text"),
    ("framework", "Framework", "text"),
    ("status", "Status", "text"),
    ("flags", "Key flags", "text"),
    ("throughput", "Throughput", "num"),
    ("date", "Date", "text"),
    ("findings", "Findings", "num"),
)

_LEGEND = (
    ("works", "runs as shipped, no flags needed (possibly with a version pin)"),
    ("works-with-flags", "runs once the key flags / env vars are applied"),
    ("partial", "runs with an important cost (eager only, single GPU, lower batch)"),
    ("broken", "no known fix"),
    (UNTESTED, "no finding yet: never read as works"),
    (
        CONFLICTING,
        "findings disagree (one runs, another is partial or broken); in a row the newest sets "
        "the status and all are listed",
    ),
)


def _framework_key(row: Row) -> str:
    return (row.framework or UNSPECIFIED).lower()


def _group_html(family: str, rows: list[Row]) -> str:
    findings = sum(len(r.cell.findings) for r in rows)
    name = {ANY_MODEL: "Any model", OTHER_FAMILY: "Other models"}.get(family, family)
    return (
        f'<tr class="group" data-family="{_e(family)}"><th colspan="{len(_COLUMNS)}" '
        f'scope="rowgroup">{_e(name)} <span class="gcount">{len(rows)} '
        f"{'row' if len(rows) == 1 else 'rows'} · {findings} "
        f"{'finding' if findings == 1 else 'findings'}</span></th></tr>"
    )


def _grid_cell(family: str, sm: str, status: str, counts, findings) -> str:
    n = len(findings)
    detail = ", ".join(f"{k} {label}" for label, k in counts) or "no finding"
    title = f"{family} on {sm}: {detail}"
    if findings:
        title += " · findings: " + ", ".join(findings)
    count = f"{n} finding{'' if n == 1 else 's'}" if n else ""
    href = f"#family={_hash_value(family)}&gpu={_hash_value(sm)}"
    disabled = "" if n else ' aria-disabled="true"'
    return (
        f'<td><a class="mcell s-{_slug(status)}" href="{_e(href)}" '
        f'data-family="{_e(family)}" data-gpu="{_e(sm)}" title="{_e(title)}"{disabled}>'
        f'<span class="mword">{_e(status)}</span><span class="mn">{_e(count)}</span></a></td>'
    )


def _hash_value(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _option_list(values: dict[str, int], everything: str) -> str:
    opts = "".join(
        f'<option value="{_e(v)}">{_e(v)} ({n})</option>'
        for v, n in sorted(values.items(), key=lambda kv: (kv[0] == UNSPECIFIED, kv[0]))
    )
    return f'<option value="">{_e(everything)}</option>{opts}'


def _gpu_label(names: set[str]) -> str:
    short = sorted({re.sub(r"^NVIDIA\s+", "", n) for n in names})
    return ", ".join(short)


def _matrix_html(table: CompatTable, gpus: dict[str, set[str]]) -> str:
    m = table.matrix
    if not m.cells:
        return ""
    quants: dict[str, int] = {}
    frameworks: dict[str, int] = {}
    for row in table.rows:
        quants[row.quant_kind] = quants.get(row.quant_kind, 0) + 1
        frameworks[_framework_key(row)] = frameworks.get(_framework_key(row), 0) + 1
    head = "".join(
        f'<th scope="col" title="{_e(_gpu_label(gpus.get(sm, set())))}">{_e(sm)}'
        f'<span class="gname">{_e(_gpu_label(gpus.get(sm, set())))}</span></th>'
        for sm in m.sms
    )
    body = []
    for family in m.families:
        tds = "".join(
            _grid_cell(family, sm, c.status, c.counts, c.findings)
            for sm in m.sms
            for c in [m.cell(family, sm)]
        )
        body.append(f'<tr><th scope="row">{_e(family)}</th>{tds}</tr>')
    return (
        '<section class="matrix" id="grid" aria-labelledby="mh">'
        '<div class="ghead"><h2 id="mh">Compatibility grid: model family × GPU</h2>'
        '<div class="refine"><span class="muted">Refine:</span>'
        '<label><span class="sr">Quantization</span><select id="f-quant">'
        f"{_option_list(quants, 'All quantizations')}</select></label>"
        '<label><span class="sr">Framework</span><select id="f-framework">'
        f"{_option_list(frameworks, 'All frameworks')}</select></label></div></div>"
        '<p class="hint">Each cell: what the deployments of that family on that GPU generation '
        "come to, and how many findings say so. Click a cell to see its rows and findings.</p>"
        f'<div class="gwrap"><table id="matrix"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div></section>"
    )


def to_html(table: CompatTable, link_base: FindingLinks | str | None = None) -> str:
    """One self-contained page: the grid first, then the rows by family (status colours,
    sortable and filterable, copyable flags), then the legend."""
    link = finding_linker(link_base)
    counts = table.status_counts()
    pills = "".join(
        f'<button type="button" class="pill s-{_slug(label)}" data-status="{_e(label)}">'
        f"<b>{n}</b> {_e(label)}</button>"
        for label, n in counts.items()
        if n
    )
    if table.conflict_count:
        pills += (
            f'<button type="button" class="pill s-{CONFLICTING}" data-status="{CONFLICTING}">'
            f"<b>{table.conflict_count}</b> {CONFLICTING}</button>"
        )
    status_opts = "".join(
        f'<option value="{_e(s)}">{_e(s)}</option>' for s in (*STATUS_ORDER, CONFLICTING)
    )
    gpus: dict[str, set[str]] = {}
    for row in table.rows:
        gpus.setdefault(row.gpu_sm, set()).update(row.gpu_names)
    gpu_opts = "".join(
        f'<option value="{_e(sm)}">{_e(sm)}{_e(" · " + ", ".join(sorted(names))) if names else ""}'
        "</option>"
        for sm, names in sorted(gpus.items(), key=lambda kv: (-_sm_number(kv[0]), kv[0]))
    )
    families = families_in_order(table.rows)
    family_opts = "".join(f'<option value="{_e(f)}">{_e(f)}</option>' for f in families)
    heads = "".join(
        f'<th scope="col" class="c-{key}" data-key="{key}" data-type="{kind}" aria-sort="none">'
        f'<button type="button">{_e(label)}<span class="arrow" aria-hidden="true"></span>'
        "</button></th>"
        for key, label, kind in _COLUMNS
    )
    cols = "".join(f'<col class="c-{key}">' for key, _, _ in _COLUMNS)
    rows = "".join(
        _group_html(family, members) + "".join(_row_html(row, link) for row in members)
        for family in families_in_order(table.rows)
        for members in [[r for r in table.rows if r.family == family]]
    )
    empty = (
        f'<tr class="empty"{"" if not table.rows else " hidden"}><td colspan="{len(_COLUMNS)}">'
        "No rows match these filters.</td></tr>"
    )
    legend = "".join(
        f"<li>{_status_badge(label)} <span>{_e(text)}</span></li>" for label, text in _LEGEND
    )
    grid = _matrix_html(table, gpus)
    meta = [f"{len(table.rows)} rows from {table.finding_count} findings"]
    if table.generated:
        meta.insert(0, f"generated {table.generated}")
    if table.filters:
        meta.append(f"exported with {filter_description(table.filters)}")
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="deploykb">'
        "<title>deploykb · compatibility table</title>"
        f"<style>{_CSS}</style></head><body>"
        '<header class="top"><div class="brand"><span class="logo">dkb</span>'
        "<div><h1>LLM deployment compatibility</h1>"
        f'<p class="meta" id="meta">{_e(" · ".join(meta))}</p></div></div>'
        f'<div class="pills" id="pills">{pills}</div></header>'
        f"<main>{grid}"
        '<section class="rows" aria-labelledby="rh"><h2 id="rh">Deployments by model family</h2>'
        '<div class="controls" role="group" aria-label="Filters">'
        '<label class="search"><span class="sr">Filter rows</span>'
        '<input id="q" type="search" placeholder="Filter by model, GPU, flag, finding…" '
        'autocomplete="off" spellcheck="false"></label>'
        '<label><span class="sr">Status</span><select id="f-status">'
        f'<option value="">All statuses</option>{status_opts}</select></label>'
        '<label><span class="sr">GPU</span><select id="f-gpu">'
        f'<option value="">All GPUs</option>{gpu_opts}</select></label>'
        '<label><span class="sr">Family</span><select id="f-family">'
        f'<option value="">All families</option>{family_opts}</select></label>'
        '<button type="button" id="reset" class="ghost">Reset</button>'
        f'<span class="shown" id="shown" aria-live="polite">{len(table.rows)} of '
        f"{len(table.rows)} rows</span></div>"
        f'<div class="wrap"><table id="compat"><colgroup>{cols}</colgroup>'
        f"<thead><tr>{heads}</tr></thead>"
        f"<tbody>{rows}{empty}</tbody></table></div></section>"
        f'<section class="legend" aria-label="Legend"><h2>Legend</h2><ul>{legend}</ul>'
        '<p class="hint">Key flags are written exactly as the findings have them; '
        "<code>drop --x</code> means remove that flag. Throughput is the best recorded figure "
        "with its concurrency. Finding links point to the finding files; sources to the issues "
        "they came from.</p></section></main>"
        "<footer>Generated by deploykb from its findings. Readable offline: no external assets."
        "</footer>"
        f"<script>{_JS}</script></body></html>\n"
    )


_CSS = """
:root{--bg:#f6f7f9;--panel:#fff;--ink:#1f2328;--muted:#656d76;--line:#d8dee4;--soft:#eef1f4;
--accent:#0969da;--ok:#1a7f37;--ok-bg:#dafbe1;--flag:#0550ae;--flag-bg:#ddf4ff;--part:#9a6700;
--part-bg:#fff3c4;--bad:#cf222e;--bad-bg:#ffebe9;--unt:#6e7781;--unt-bg:#eaeef2;--cf:#8250df;
--cf-bg:#fbefff;--code-bg:#f2f4f7;
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--panel:#161b22;--ink:#e6edf3;--muted:#8d96a0;
--line:#30363d;--soft:#1c2128;--accent:#4493f8;--ok:#3fb950;--ok-bg:#12361f;--flag:#79c0ff;
--flag-bg:#0c2d4f;--part:#d29922;--part-bg:#3a2a06;--bad:#ff7b72;--bad-bg:#4a1616;--unt:#8d96a0;
--unt-bg:#262c33;--cf:#bc8cff;--cf-bg:#2d1f4a;--code-bg:#1f252d}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink)}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code{font:12px/1.4 ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,monospace}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.muted{color:var(--muted)}
header.top{display:flex;flex-wrap:wrap;gap:12px 24px;align-items:center;
justify-content:space-between;padding:16px 24px;background:var(--panel);
border-bottom:1px solid var(--line)}
.brand{display:flex;gap:12px;align-items:center}
.logo{display:grid;place-items:center;width:36px;height:36px;border-radius:8px;background:var(--ink);
color:var(--panel);font:700 12px ui-monospace,monospace;letter-spacing:.5px}
h1{font-size:18px;margin:0;font-weight:650}
.meta{margin:2px 0 0;color:var(--muted);font-size:12.5px}
.pills{display:flex;flex-wrap:wrap;gap:6px}
.pill{border:1px solid transparent;border-radius:999px;padding:3px 10px;font:inherit;
font-size:12.5px;cursor:pointer;color:var(--c);background:var(--b)}
.pill:hover{border-color:var(--c)}.pill.on{box-shadow:0 0 0 2px var(--c) inset}
main{padding:16px 24px 8px;max-width:1680px;margin:0 auto}
.controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin-bottom:12px}
.controls input,.controls select,.ghost{font:inherit;font-size:13px;color:var(--ink);
background:var(--panel);border:1px solid var(--line);border-radius:6px;padding:6px 10px;height:32px}
.search{flex:1 1 280px;max-width:420px}.search input{width:100%}
.controls select{max-width:240px}
.controls input:focus,.controls select:focus{outline:2px solid var(--accent);outline-offset:-1px}
.ghost{cursor:pointer}.ghost:hover{background:var(--soft)}
.shown{margin-left:auto;color:var(--muted);font-size:12.5px}
.wrap{background:var(--panel);border:1px solid var(--line);border-radius:8px;overflow:auto}
table{border-collapse:collapse;width:100%}
#compat thead th{position:sticky;top:0;z-index:1;background:var(--soft);text-align:left;
border-bottom:1px solid var(--line);padding:0;white-space:nowrap}
#compat th button{all:unset;display:block;padding:8px 10px;cursor:pointer;font-size:11.5px;
overflow:hidden;text-overflow:ellipsis;
font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
#compat th button:hover,#compat th[aria-sort=ascending] button,
#compat th[aria-sort=descending] button{color:var(--ink)}
#compat th button:focus-visible{outline:2px solid var(--accent)}
.arrow::after{content:"↕";opacity:.35;margin-left:4px}
th[aria-sort=ascending] .arrow::after{content:"↑";opacity:1}
th[aria-sort=descending] .arrow::after{content:"↓";opacity:1}
#compat td{padding:8px 10px;border-bottom:1px solid var(--line);vertical-align:top}
#compat tbody tr:last-child td{border-bottom:0}
#compat tbody tr.row:hover{background:var(--soft)}
#compat tr.row td:first-child{border-left:4px solid var(--c)}
.s-works{--c:var(--ok);--b:var(--ok-bg)}.s-works-with-flags{--c:var(--flag);--b:var(--flag-bg)}
.s-partial{--c:var(--part);--b:var(--part-bg)}.s-broken{--c:var(--bad);--b:var(--bad-bg)}
.s-untested{--c:var(--unt);--b:var(--unt-bg)}.s-conflicting{--c:var(--cf);--b:var(--cf-bg)}
.badge{display:inline-block;white-space:nowrap;border-radius:999px;padding:1px 8px;font-size:12px;
font-weight:600;color:var(--c);background:var(--b)}
.fam{font-size:11.5px;color:var(--muted);font-weight:600}
.arch{color:var(--muted);font-weight:400;font-size:11px}
.model{font-weight:600;word-break:break-word}.org{color:var(--muted);font-weight:400}
.sm{display:inline-block;font:600 11.5px ui-monospace,monospace;background:var(--soft);
border:1px solid var(--line);border-radius:4px;padding:0 5px}
.gpu{font-size:12.5px;margin-top:2px}
.fw{font-weight:600}.ver{font-size:12px;color:var(--muted);overflow-wrap:anywhere}
#compat{table-layout:fixed;min-width:1180px}#compat td{overflow-wrap:break-word}
col.c-model{width:13%}col.c-gpu{width:9.5%}col.c-quant{width:7%}col.c-framework{width:11%}
col.c-status{width:9%}col.c-flags{width:22%}col.c-throughput{width:8.5%}col.c-date{width:7%}
#compat td.c-date{white-space:nowrap;font-size:13px;font-variant-numeric:tabular-nums}
col.c-findings{width:13%}
.c-throughput{white-space:nowrap}
.conflict{margin-top:6px;font-size:12px;border-left:2px solid var(--cf);padding-left:8px}
.conflict .ctitle{color:var(--cf);font-weight:600}
.conflict ol{margin:2px 0 0;padding:0;list-style:none}.conflict li{margin:2px 0}
.conflict .badge{font-size:11px;padding:0 6px}.when{color:var(--muted)}
.fid{font:12px ui-monospace,monospace;overflow-wrap:anywhere}
ul.flags,ul.ev{list-style:none;margin:0;padding:0}
ul.flags{display:flex;flex-wrap:wrap;gap:4px 6px}
.flag{display:inline-flex;align-items:flex-start;gap:3px;max-width:100%}
.flag code{background:var(--code-bg);border:1px solid var(--line);border-radius:4px;padding:1px 5px;
overflow-wrap:anywhere}
.flag code{min-width:0}.flag .copy{flex:none}
.kind{flex:none;font-size:10.5px;font-weight:700;text-transform:uppercase;padding:2px 4px;
border-radius:3px;color:var(--muted);background:var(--soft)}
.k-remove{color:var(--bad);background:var(--bad-bg)}
.copy{border:1px solid transparent;background:none;color:var(--muted);border-radius:4px;
cursor:pointer;padding:3px 3px;line-height:0;font:inherit;opacity:.6}
tr.row:hover .copy,.copy:focus-visible{opacity:1}
.copy:hover{color:var(--accent);border-color:var(--accent)}
.copy.done{color:var(--ok);border-color:var(--ok)}
.copy.all{border-color:var(--line);opacity:1;line-height:1.3;font-size:11.5px;
padding:2px 6px;margin-top:2px;display:inline-flex;gap:4px;
align-items:center}
.tp{font-size:15px;font-weight:650;font-variant-numeric:tabular-nums}.unit,.conc{color:var(--muted);
font-size:12px}
.ev li{margin:0 0 4px}.dot{display:inline-block;width:8px;height:8px;border-radius:50%;
background:var(--c);margin-right:6px;vertical-align:1px}
.srcs{margin-left:14px;font-size:12px}.src{margin-right:6px}.local{color:var(--muted);font-size:11.5px}
tr.empty td{text-align:center;color:var(--muted);padding:28px}
section.matrix{margin-bottom:22px}section.legend{margin-top:22px}
h2{font-size:14px;margin:0 0 6px;font-weight:650}
.hint{color:var(--muted);font-size:12.5px;margin:0 0 8px}
.ghead{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:baseline}
.refine{display:flex;gap:8px;align-items:center;font-size:12.5px}
.refine select{font:inherit;font-size:13px;color:var(--ink);background:var(--panel);
border:1px solid var(--line);border-radius:6px;padding:4px 8px;height:30px;max-width:220px}
.gwrap{overflow:auto;max-width:100%}
#matrix{width:auto;background:var(--panel);border:1px solid var(--line);border-radius:8px;
border-collapse:separate;border-spacing:0;overflow:hidden}
#matrix th,#matrix td{padding:4px 3px;border-bottom:1px solid var(--line);font-size:12.5px}
#matrix thead th{font:600 12px ui-monospace,monospace;color:var(--ink);background:var(--soft);
vertical-align:bottom;text-align:left}
.gname{display:block;font:400 10.5px system-ui,sans-serif;color:var(--muted);max-width:120px;
white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
#matrix tbody th{text-align:left;padding-right:14px;white-space:nowrap}
#matrix tr:last-child>*{border-bottom:0}
.mcell{display:block;min-width:106px;white-space:nowrap;border-radius:4px;padding:3px 6px;font-size:12px;
font-weight:600;color:var(--c);background:var(--b);text-decoration:none}
.mcell .mn{display:block;font-weight:400;font-size:11px;color:var(--ink);opacity:.75}
.mcell.s-untested{font-weight:400;background:repeating-linear-gradient(135deg,var(--b) 0 6px,
transparent 6px 12px);pointer-events:none}
.mcell:hover{box-shadow:0 0 0 1px var(--c) inset;text-decoration:none}
section.rows h2{margin-bottom:8px}
#compat tr.group th{background:var(--panel);text-align:left;padding:14px 10px 6px;
font-size:13.5px;font-weight:650;border-bottom:2px solid var(--line);position:static}
#compat tr.group:first-child th{padding-top:8px}
.gcount{font-weight:400;color:var(--muted);font-size:12px;margin-left:6px}
.legend ul{list-style:none;margin:0;padding:0;display:grid;
grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:4px 16px;font-size:12.5px}
.legend li span:last-child{color:var(--muted)}
footer{padding:16px 24px 24px;color:var(--muted);font-size:12px;text-align:center}
@media print{.controls,.copy,.pills,.refine{display:none}#compat th{position:static}}
"""

_JS = r"""
(function(){
"use strict";
var tbody=document.querySelector("#compat tbody");
var rows=Array.prototype.slice.call(tbody.querySelectorAll("tr.row"));
var groups=Array.prototype.slice.call(tbody.querySelectorAll("tr.group"));
var order=Array.prototype.slice.call(tbody.children);
var empty=tbody.querySelector("tr.empty");
var q=document.getElementById("q"),fs=document.getElementById("f-status"),
fg=document.getElementById("f-gpu"),ff=document.getElementById("f-family"),
fq=document.getElementById("f-quant"),fw=document.getElementById("f-framework");
var shown=document.getElementById("shown");
var heads=Array.prototype.slice.call(document.querySelectorAll("#compat thead th"));
var sortKey="",sortDir="";
var STATUS=["works","works-with-flags","partial","broken","untested"];
var OUTCOME={"works":"runs","works-with-flags":"runs","partial":"partial","broken":"broken"};
rows.forEach(function(r,i){r.dataset.index=i;});

function val(sel){return sel?sel.value:"";}
function readHash(){
  var out={},h=location.hash.replace(/^#/,"");
  h.split("&").forEach(function(p){
    if(!p)return;var i=p.indexOf("=");
    var k=decodeURIComponent(i<0?p:p.slice(0,i)),v=i<0?"":p.slice(i+1);
    try{v=decodeURIComponent(v.replace(/\+/g," "));}catch(e){}
    out[k]=v;});
  return out;
}
function enc(v){return encodeURIComponent(v).replace(/%3A/g,":");}
function writeHash(){
  var parts=[];
  function add(k,v){if(v)parts.push(k+"="+enc(v));}
  add("filter",q.value.trim());add("status",fs.value);add("gpu",fg.value);add("family",ff.value);
  add("quant",val(fq));add("framework",val(fw));
  if(sortKey)add("sort",sortKey+":"+sortDir);
  var h=parts.length?"#"+parts.join("&"):"";
  if(location.hash!==h&&history.replaceState)
    history.replaceState(null,"",location.pathname+location.search+h);
}
function setSelect(sel,v){
  if(!sel)return;sel.value=v||"";if(sel.value!==(v||""))sel.value="";
}
function refined(r){
  return (!val(fq)||r.dataset.quant===val(fq))&&(!val(fw)||r.dataset.framework===val(fw));
}
function summary(group){
  var tested=group.filter(function(r){return r.dataset.status!=="untested";});
  if(!tested.length)return "untested";
  var outs={},conflict=false,worst=0;
  tested.forEach(function(r){
    outs[OUTCOME[r.dataset.status]]=1;if(r.dataset.conflict==="1")conflict=true;
    worst=Math.max(worst,STATUS.indexOf(r.dataset.status));});
  return conflict||Object.keys(outs).length>1?"conflicting":STATUS[worst];
}
function grid(){
  var extra=(val(fq)?"&quant="+enc(val(fq)):"")+(val(fw)?"&framework="+enc(val(fw)):"");
  document.querySelectorAll("#matrix .mcell").forEach(function(a){
    var fam=a.dataset.family,gpu=a.dataset.gpu;
    var here=rows.filter(function(r){
      return r.dataset.family===fam&&r.dataset.gpu===gpu&&refined(r);});
    var ids=[],counts={};
    here.forEach(function(r){
      ids=ids.concat(r.dataset.ids.split(" ").filter(Boolean));
      counts[r.dataset.status]=(counts[r.dataset.status]||0)+1;});
    var st=summary(here),n=ids.length;
    a.className="mcell s-"+st.replace(/ /g,"-");
    a.querySelector(".mword").textContent=st;
    a.querySelector(".mn").textContent=n?n+(n===1?" finding":" findings"):"";
    a.setAttribute("href","#family="+enc(fam)+"&gpu="+enc(gpu)+extra);
    if(n)a.removeAttribute("aria-disabled");else a.setAttribute("aria-disabled","true");
    var detail=STATUS.filter(function(s){return counts[s];})
      .map(function(s){return counts[s]+" "+s;}).join(", ")||"no finding";
    a.title=fam+" on "+gpu+": "+detail+(n?" · findings: "+ids.join(", "):"");
  });
}
function apply(){
  var terms=q.value.toLowerCase().split(/\s+/).filter(Boolean);
  var st=fs.value,gpu=fg.value,fam=ff.value,n=0;
  rows.forEach(function(r){
    var ok=terms.every(function(t){return r.dataset.search.indexOf(t)>=0;});
    if(ok&&st)ok=st==="conflicting"?r.dataset.conflict==="1":r.dataset.status===st;
    if(ok&&gpu)ok=r.dataset.gpu===gpu;
    if(ok&&fam)ok=r.dataset.family===fam;
    if(ok)ok=refined(r);
    r.hidden=!ok;if(ok)n++;
  });
  groups.forEach(function(g){
    g.hidden=!!sortKey||!rows.some(function(r){
      return !r.hidden&&r.dataset.family===g.dataset.family;});
  });
  empty.hidden=n>0;
  shown.textContent=n+" of "+rows.length+" rows";
  document.querySelectorAll(".pill").forEach(function(p){
    p.classList.toggle("on",p.dataset.status===st);});
  grid();
  writeHash();
}
function sortBy(key,dir){
  var th=document.querySelector('#compat thead th[data-key="'+key+'"]');
  if(!th)return;
  var col=heads.indexOf(th);
  var num=th.dataset.type==="num";
  sortKey=key;sortDir=dir==="desc"?"desc":"asc";
  var sign=sortDir==="desc"?-1:1;
  rows.sort(function(a,b){
    var x=a.children[col].dataset.sort,y=b.children[col].dataset.sort,c;
    if(x===""&&y!=="")return 1;if(y===""&&x!=="")return -1;
    c=num?(parseFloat(x)-parseFloat(y)):(x<y?-1:x>y?1:0);
    return c*sign||(a.dataset.index-b.dataset.index);
  });
  rows.forEach(function(r){tbody.insertBefore(r,empty);});
  heads.forEach(function(h){
    h.setAttribute("aria-sort",h===th?(sortDir==="desc"?"descending":"ascending"):"none");});
}
function unsort(){
  sortKey="";sortDir="";
  rows.sort(function(a,b){return a.dataset.index-b.dataset.index;});
  order.forEach(function(r){tbody.appendChild(r);});
  heads.forEach(function(h){h.setAttribute("aria-sort","none");});
}
function fromHash(){
  var h=readHash();
  q.value=h.filter||"";setSelect(fs,h.status);setSelect(fg,h.gpu);setSelect(ff,h.family);
  setSelect(fq,h.quant);setSelect(fw,h.framework);
  if(h.sort){var s=h.sort.split(":");sortBy(s[0],s[1]);}else if(sortKey)unsort();
  apply();
}
heads.forEach(function(th){
  th.querySelector("button").addEventListener("click",function(){
    var key=th.dataset.key,def=th.dataset.type==="num"||key==="date"?"desc":"asc";
    sortBy(key,sortKey===key?(sortDir==="asc"?"desc":"asc"):def);apply();
  });
});
q.addEventListener("input",apply);
[fs,fg,ff,fq,fw].forEach(function(s){if(s)s.addEventListener("change",apply);});
document.getElementById("reset").addEventListener("click",function(){
  q.value="";fs.value="";fg.value="";ff.value="";setSelect(fq,"");setSelect(fw,"");
  unsort();apply();
});
document.querySelectorAll(".pill").forEach(function(p){
  p.addEventListener("click",function(){
    setSelect(fs,fs.value===p.dataset.status?"":p.dataset.status);apply();});
});
document.querySelectorAll(".mcell").forEach(function(a){
  a.addEventListener("click",function(ev){
    ev.preventDefault();if(a.getAttribute("aria-disabled"))return;
    q.value="";fs.value="";setSelect(ff,a.dataset.family);setSelect(fg,a.dataset.gpu);apply();
    document.querySelector("section.rows").scrollIntoView();
  });
});
function fallbackCopy(text){
  var ta=document.createElement("textarea");ta.value=text;ta.setAttribute("readonly","");
  ta.style.position="fixed";ta.style.opacity="0";document.body.appendChild(ta);ta.select();
  var ok=false;try{ok=document.execCommand("copy");}catch(e){}
  document.body.removeChild(ta);return ok?Promise.resolve():Promise.reject();
}
function copy(text){
  if(navigator.clipboard&&window.isSecureContext){
    return navigator.clipboard.writeText(text).catch(function(){return fallbackCopy(text);});
  }
  return fallbackCopy(text);
}
document.addEventListener("click",function(ev){
  var b=ev.target.closest&&ev.target.closest("button.copy");
  if(!b)return;
  copy(b.dataset.copy).then(function(){
    b.classList.add("done");setTimeout(function(){b.classList.remove("done");},1200);
  },function(){window.prompt("Copy:",b.dataset.copy);});
});
window.addEventListener("hashchange",fromHash);
fromHash();
})();
"""
