"""The compatibility table: what runs where, with which flags, and the findings behind each claim.

``build_table`` is pure (findings in, ``CompatTable`` out); the renderers turn a table into
Markdown, CSV, JSON or one self-contained HTML page (``kb.export_html``). ``write_export`` is the
only I/O. The CSV and JSON layouts are documented in docs/export.md; bump ``EXPORT_SCHEMA_VERSION`` when
they change.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kb.document import source_url
from kb.errors import ExportError
from kb.records import Finding, change_sides, shown_change

EXPORT_SCHEMA_VERSION = (
    3  # 3: status "works-with-flags" as in the findings (was "works with flags"); 2: "conflicting"
)

FORMATS = ("md", "csv", "json", "html")

# Status vocabulary of the table. A finding's status maps onto a label; no evidence is "untested".
UNTESTED = "untested"
STATUS_LABELS = {
    "works": "works",
    "works-with-flags": "works-with-flags",
    "partial": "partial",
    "broken": "broken",
}
STATUS_ORDER = ("works", "works-with-flags", "partial", "broken", UNTESTED)
# The one word for findings that disagree, in a row, a grid cell and the legend alike.
CONFLICTING = "conflicting"
# Labels in the same outcome group do not disagree: "works" and "works-with-flags" both run.
_OUTCOME = {"works": "runs", "works-with-flags": "runs", "partial": "partial", "broken": "broken"}

ANY_MODEL = "(any)"
UNSPECIFIED_GPU = "(unspecified)"
OTHER_FAMILY = "(other)"
UNSPECIFIED = "unspecified"  # quantization or framework not given

# Quantization schemes, by the word that names them in a finding's free-text quantization
# ("nvfp4 (modelopt_fp4)", "fp8, kv cache fp8"): the grid is refined by scheme, not by the text.
# A number format or method named anywhere wins over a bit-width pattern ("w8a8_fp8" is fp8).
_QUANT_SCHEMES = (
    ("nvfp4", "mxfp4", "mxfp8", "fp4", "fp8", "int4", "int8", "awq", "gptq"),
    ("w4a16", "w4a8", "w8a8", "w8a16", "bf16", "fp16"),
)

# Model family from a model id (or, failing that, the architecture): first match wins; the
# family is the template with the pattern's groups filled in ("_" read as ".").
_FAMILY_RULES: tuple[tuple[str, str], ...] = (
    (r"qwq", "QwQ"),
    (r"qwen[\s_-]*(\d+(?:[._]\d+)?)(?![\dbB])", "Qwen\\1"),  # "Qwen-32B" is a size
    (r"glm[\s_-]*(\d+)", "GLM-\\1"),
    (r"kimi[\s_-]*k(\d+)", "Kimi K\\1"),
    (r"deepseek", "DeepSeek"),
    (r"minimax", "MiniMax"),
    (r"gpt[\s_-]*oss", "gpt-oss"),
    (r"llama", "Llama"),
    (r"mixtral|mistral|ministral|devstral|magistral", "Mistral"),
    (r"gemma", "Gemma"),
    (r"c4ai|command[\s_-]*r\b|cohere", "Command R"),
    (r"nemotron", "Nemotron"),
    (r"phi[\s_-]*\d", "Phi"),
    (r"kimi", "Kimi"),
    (r"qwen", "Qwen"),
    (r"glm", "GLM"),
)


@dataclass(frozen=True)
class SourceLink:
    text: str  # as the finding wrote it: "sgl-project/sglang#14311", a URL or a file path
    url: str | None  # None for sources that are not on the web (local files)


@dataclass(frozen=True)
class FlagItem:
    kind: str  # "add" | "change" | "remove" | "env" | "pin"
    text: str  # exactly as the finding wrote it

    @property
    def display(self) -> str:
        if self.kind == "change":
            return shown_change(self.text)  # --mem-fraction-static 0.9 → 0.82
        return f"drop {self.text}" if self.kind == "remove" else self.text

    @property
    def setting(self) -> str:
        """What to put in a command: the text, or for a change the setting it ends with."""
        return change_sides(self.text)[1] if self.kind == "change" else self.text


@dataclass(frozen=True)
class FindingRef:
    """One finding behind a cell: enough to cite it and to follow it."""

    id: str
    title: str
    status: str  # label
    date: str | None
    file: str  # file name to link to, relative to the findings folder: "<id>.md"
    sources: tuple[SourceLink, ...] = ()
    flags: tuple[FlagItem, ...] = ()
    framework_version: str | None = None
    path: str | None = None  # the finding's file as indexed (absolute), when known


@dataclass(frozen=True)
class StatusEvent:
    status: str  # label
    date: str | None
    finding: str  # finding id


@dataclass(frozen=True)
class Throughput:
    tok_s: float
    concurrency: int | None
    finding: str

    @property
    def text(self) -> str:
        value = f"{self.tok_s:g}" if self.tok_s < 1e6 else f"{self.tok_s:.0f}"
        return f"{value} tok/s" + (f" @ {self.concurrency}" if self.concurrency is not None else "")


@dataclass(frozen=True)
class Cell:
    status: str  # label of the newest finding with a status; "untested" when there is none
    conflict: bool  # findings disagree (one runs, another breaks)
    history: tuple[StatusEvent, ...]  # one per finding, newest first
    flags: tuple[FlagItem, ...]  # key flags of the findings that made it run (all, if none did)
    best: Throughput | None
    date: str | None  # newest date
    findings: tuple[FindingRef, ...]  # newest first

    @property
    def status_text(self) -> str:
        """``works-with-flags``, or ``conflicting: broken (2026-05, id) / works (2026-02, id)``."""
        if not self.conflict:
            return self.status
        parts = [
            f"{e.status} ({e.date}, {e.finding})" if e.date else f"{e.status} ({e.finding})"
            for e in self.history
            if e.status != UNTESTED
        ]
        return "conflicting: " + " / ".join(parts)


@dataclass(frozen=True)
class Row:
    family: str
    architecture: str | None
    model: str  # "(any)" when the findings name no model
    gpu_sm: str  # "sm120", or "(unspecified)"
    gpu_names: tuple[str, ...]
    gpu_counts: tuple[int, ...]
    quantization: str | None
    framework: str | None
    framework_versions: tuple[str, ...]  # newest first
    cell: Cell

    @property
    def gpu_text(self) -> str:
        """``8× NVIDIA RTX PRO 6000 Blackwell``: the names, with the GPU count when one is known."""
        names = " / ".join(self.gpu_names)
        if len(self.gpu_counts) == 1:
            return f"{self.gpu_counts[0]}× {names or 'GPU'}"
        return names

    @property
    def framework_text(self) -> str:
        name = self.framework or ""
        versions = "; ".join(self.framework_versions)
        return f"{name} {versions}".strip()

    @property
    def quant_kind(self) -> str:
        return quant_kind(self.quantization)


@dataclass(frozen=True)
class MatrixCell:
    family: str
    sm: str
    status: str  # summary label of its rows, "conflicting" when they disagree, "untested" if none
    counts: tuple[tuple[str, int], ...] = ()  # (label, rows), in STATUS_ORDER
    findings: tuple[str, ...] = ()  # ids of the findings behind the cell, row by row


@dataclass(frozen=True)
class Matrix:
    """Model family × GPU SM: every combination of families and SMs present in the table."""

    families: tuple[str, ...]
    sms: tuple[str, ...]
    cells: tuple[MatrixCell, ...]

    def cell(self, family: str, sm: str) -> MatrixCell:
        for c in self.cells:
            if c.family == family and c.sm == sm:
                return c
        raise KeyError((family, sm))


@dataclass(frozen=True)
class CompatTable:
    rows: tuple[Row, ...]
    matrix: Matrix
    finding_count: int
    generated: str | None = None  # ISO date, shown in the renderings
    filters: tuple[tuple[str, str], ...] = ()  # ("model", "GLM"), shown in the renderings

    def status_counts(self) -> dict[str, int]:
        counts = {label: 0 for label in STATUS_ORDER}
        for row in self.rows:
            counts[row.cell.status] += 1
        return counts

    @property
    def conflict_count(self) -> int:
        return sum(1 for row in self.rows if row.cell.conflict)


@dataclass(frozen=True)
class FindingLinks:
    """Where the link to a finding's file points.

    ``folders`` maps a findings folder to the address its files are published under
    (``--link-base FOLDER=URL``): a finding under that folder links to the address plus its path
    inside the folder. A finding in none of them links to its own file by absolute ``file://``
    URI, so the page works wherever it is opened on this machine, and team findings point into
    their own folder. A finding whose file is not known (built in code) links to ``fallback``
    plus its file name.
    """

    folders: tuple[tuple[str, str], ...] = ()  # (absolute folder, address ending in "/")
    fallback: str = "findings/"

    def __call__(self, ref: FindingRef) -> str:
        if not ref.path:
            return self.fallback + ref.file
        path = Path(os.path.abspath(ref.path))
        for folder, base in sorted(self.folders, key=lambda fb: -len(fb[0])):
            try:
                inside = path.relative_to(folder)
            except ValueError:
                continue
            return base + urllib.parse.quote(inside.as_posix())
        return path.as_uri()


def finding_linker(links: FindingLinks | str | None) -> Callable[[FindingRef], str]:
    """A plain string is a prefix for every finding's file name; ``None`` is ``FindingLinks()``."""
    if links is None:
        return FindingLinks()
    if isinstance(links, str):
        return lambda ref: links + ref.file
    return links


def folder_links(
    bases: Sequence[str], default_folder: Path | str, cwd: Path | None = None
) -> FindingLinks:
    """``--link-base`` values: ``FOLDER=URL`` for the findings under FOLDER, a plain ``URL`` for
    the shipped findings (``default_folder``). A ``FOLDER`` that is not a folder is an error."""
    folders: dict[str, str] = {}
    for value in bases:
        folder, sep, url = value.partition("=")
        if not sep or "://" in folder or not folder.strip():
            folder, url = str(default_folder), value
        else:
            where = Path(folder).expanduser()
            if cwd is not None and not where.is_absolute():
                where = cwd / where
            if not where.is_dir():
                raise ExportError(
                    f"--link-base {value!r}: {folder!r} is not a folder; "
                    "write FOLDER=URL or a plain URL for the shipped findings"
                )
            folder = str(where)
        if not url.strip():
            raise ExportError(f"--link-base {value!r}: no address after the folder")
        url = url.strip()
        parts = urllib.parse.urlsplit(url)
        if parts.scheme.lower() not in ("http", "https", "file") or (
            parts.scheme.lower() != "file" and not parts.netloc
        ):
            raise ExportError(
                f"--link-base {value!r}: {url!r} is not an http://, https:// or file:// address; "
                "a link may point only to a web page or a file"
            )
        url = url if url.endswith("/") else url + "/"
        key = str(Path(os.path.abspath(Path(folder).expanduser())).resolve())
        if folders.get(key, url) != url:
            raise ExportError(
                f"--link-base {value!r}: {key} already links to {folders[key]!r}; "
                "give one address per folder"
            )
        folders[key] = url
    return FindingLinks(tuple(folders.items()))


# --- pure helpers ---


def status_label(status: str | None) -> str:
    """Table label of a finding status: absent is "untested", never "works"."""
    if status is None or not status.strip():
        return UNTESTED
    key = status.strip().lower().replace("_", "-").replace(" ", "-")
    if key == UNTESTED:
        return UNTESTED
    if key not in STATUS_LABELS:
        raise ExportError(
            f"status {status!r} is unknown: use works, works-with-flags, partial or broken"
        )
    return STATUS_LABELS[key]


def model_family(model: str | None, architecture: str | None = None) -> str:
    """``nvidia/Qwen3.5-397B-A17B-NVFP4`` -> ``Qwen3.5``; falls back to the architecture."""
    for text in (model, architecture):
        if not text:
            continue
        name = text.rsplit("/", 1)[-1]
        for pattern, family in _FAMILY_RULES:
            m = re.search(pattern, name, re.IGNORECASE)
            if m:
                return m.expand(family).replace("_", ".")
    if model:
        # An unknown name: its leading versioned word ("Falcon3-7B" -> "Falcon3"), if it has one.
        m = re.match(r"([A-Za-z]+\d[\w.]*?)(?:[-_\s]|$)", model.rsplit("/", 1)[-1])
        return m.group(1) if m else OTHER_FAMILY
    return OTHER_FAMILY if architecture else ANY_MODEL


def quant_kind(quantization: str | None) -> str:
    """The scheme of a free-text quantization: ``nvfp4 (modelopt_fp4)`` -> ``nvfp4``,
    ``fp8, kv cache fp8`` -> ``fp8``; a KV-cache-only one (``kv cache fp8``) or ``none (bf16)`` ->
    ``none``; the first word when no scheme is named; ``unspecified`` when not given."""
    if not quantization or not quantization.strip():
        return UNSPECIFIED
    text = quantization.lower()
    weights = ",".join(p for p in text.split(",") if not re.match(r"\s*kv[\s_-]*cache", p))
    if not weights.strip() or re.match(r"\s*none\b", weights):
        return "none"
    for schemes in _QUANT_SCHEMES:
        found = [
            (m.start(), scheme)
            for scheme in schemes
            for m in [re.search(rf"(?<![a-z0-9]){scheme}(?![a-z0-9])", weights)]
            if m
        ]
        if found:
            return min(found)[1]
    return re.split(r"[\s,(/]+", weights.strip())[0] or UNSPECIFIED


def finding_flags(finding: Finding) -> tuple[FlagItem, ...]:
    fix = finding.fix
    return (
        tuple(FlagItem("add", t) for t in fix.add)
        + tuple(FlagItem("change", t) for t in fix.change)
        + tuple(FlagItem("remove", t) for t in fix.remove)
        + tuple(FlagItem("env", t) for t in fix.env)
        + tuple(FlagItem("pin", t) for t in fix.pins)
    )


def _sm_number(sm: str) -> int:
    m = re.search(r"\d+", sm)
    return int(m.group()) if m else -1


def _norm(text: str | None) -> str:
    return " ".join((text or "").split()).lower()


def _newest_first(findings: Iterable[Finding]) -> list[Finding]:
    # Undated findings count as oldest; ties break on id so the order is stable.
    ordered = sorted(findings, key=lambda f: f.id)
    return sorted(ordered, key=lambda f: f.date or "", reverse=True)


def _sources(sources: Iterable[str]) -> tuple[SourceLink, ...]:
    """One link per address: a URL also written as ``owner/repo#N`` keeps the shorter text."""
    by_key: dict[str, SourceLink] = {}
    for text in sources:
        link = SourceLink(text, source_url(text))
        key = link.url or link.text
        if key not in by_key or len(text) < len(by_key[key].text):
            by_key[key] = link
    return tuple(by_key.values())


def _ref(finding: Finding, label: str) -> FindingRef:
    file = f"{finding.id}.md"
    if finding.path and Path(finding.path).name != file:
        file = Path(finding.path).name
    return FindingRef(
        id=finding.id,
        title=finding.title,
        status=label,
        date=finding.date,
        file=file,
        sources=_sources(finding.sources),
        flags=finding_flags(finding),
        framework_version=finding.framework.version,
        path=str(finding.path) if finding.path else None,
    )


def _unique(items: Iterable) -> tuple:
    seen: dict = {}
    for item in items:
        seen.setdefault(item, None)
    return tuple(seen)


def _cell(group: list[Finding], labels: dict[str, str]) -> Cell:
    newest = _newest_first(group)
    history = tuple(StatusEvent(labels[f.id], f.date, f.id) for f in newest)
    tested = [e.status for e in history if e.status != UNTESTED]
    status = tested[0] if tested else UNTESTED
    conflict = len({_OUTCOME[s] for s in tested}) > 1
    running = [f for f in newest if labels[f.id] in ("works", "works-with-flags", "partial")]
    flags = _unique(item for f in (running or newest) for item in finding_flags(f))
    best = None
    for f in newest:
        tp = f.performance.throughput_tok_s
        if tp is not None and labels[f.id] != "broken" and (best is None or tp > best.tok_s):
            best = Throughput(float(tp), f.performance.concurrency, f.id)
    return Cell(
        status=status,
        conflict=conflict,
        history=history,
        flags=flags,
        best=best,
        date=next((f.date for f in newest if f.date), None),
        findings=tuple(_ref(f, labels[f.id]) for f in newest),
    )


def _row_key(f: Finding) -> tuple:
    """Findings share a row when model, GPU, quantization and framework agree. A finding that names
    no model or no GPU says nothing about anyone else's deployment: it gets a row of its own."""
    hw = f.hardware
    sm = _norm(hw.sm).replace(" ", "")
    gpu = (sm, "") if sm else ("", _norm(hw.gpu))
    alone = f.id if not f.model or gpu == ("", "") else ""
    return (_norm(f.model), *gpu, _norm(f.quantization), _norm(f.framework.name), alone)


def _first(findings: Iterable[Finding], attr: Callable[[Finding], str | None]) -> str | None:
    """The newest non-empty value of ``attr``."""
    return next((v for v in map(attr, findings) if v), None)


def build_table(
    findings: Sequence[Finding],
    *,
    generated: str | None = None,
    filters: Sequence[tuple[str, str]] = (),
) -> CompatTable:
    """Group findings into rows (model × GPU SM × quantization × framework), one cell per row.

    Framework versions are listed in the cell rather than splitting rows, so that a later version
    that breaks shows up as a conflict on the row it regresses.
    """
    labels: dict[str, str] = {}
    for f in findings:
        try:
            labels[f.id] = status_label(f.status)
        except ExportError as exc:
            where = f"{f.path}:{f.line}" if f.path and f.line else (f.path or f.id)
            raise ExportError(f"{where}: {exc}") from None

    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault(_row_key(f), []).append(f)

    rows = []
    for group in groups.values():
        newest = _newest_first(group)
        model = _first(newest, lambda f: f.model)
        architecture = _first(newest, lambda f: f.architecture)
        sm = _first(newest, lambda f: _norm(f.hardware.sm).replace(" ", ""))
        rows.append(
            Row(
                family=model_family(model, architecture),
                architecture=architecture,
                model=model or ANY_MODEL,
                gpu_sm=sm or UNSPECIFIED_GPU,
                gpu_names=_unique(f.hardware.gpu for f in newest if f.hardware.gpu),
                gpu_counts=_unique(f.hardware.count for f in newest if f.hardware.count),
                quantization=_first(newest, lambda f: f.quantization),
                framework=_first(newest, lambda f: f.framework.name),
                framework_versions=_unique(
                    f.framework.version for f in newest if f.framework.version
                ),
                cell=_cell(group, labels),
            )
        )
    rows.sort(key=_row_order)
    return CompatTable(
        rows=tuple(rows),
        matrix=build_matrix(rows),
        finding_count=len(findings),
        generated=generated,
        filters=tuple(filters),
    )


def _row_order(row: Row) -> tuple:
    placeholder = row.family in (ANY_MODEL, OTHER_FAMILY)
    return (
        placeholder,
        row.family.lower(),
        row.architecture is None,
        (row.architecture or "").lower(),
        row.model == ANY_MODEL,
        row.model.lower(),
        -_sm_number(row.gpu_sm),
        " ".join(row.gpu_names).lower(),
        (row.quantization or "").lower(),
        (row.framework or "").lower(),
    )


def build_matrix(rows: Sequence[Row]) -> Matrix:
    """Every model family × every GPU SM seen in the rows; combinations without a row are untested.

    Rows without a known family or without an SM say nothing about a combination and are left out.
    A combination whose rows all run but not all alike ("works", "works-with-flags") takes the
    weaker label; findings that disagree (one runs, another is broken or partial, within a row or
    across rows) make it "conflicting".
    """
    placeholders = (ANY_MODEL, OTHER_FAMILY)
    known = [r for r in rows if r.family not in placeholders and r.gpu_sm != UNSPECIFIED_GPU]
    families = tuple(sorted({r.family for r in known}, key=str.lower))
    sms = tuple(sorted({r.gpu_sm for r in known}, key=lambda s: (-_sm_number(s), s)))
    cells = []
    for family in families:
        for sm in sms:
            here = [r for r in known if r.family == family and r.gpu_sm == sm]
            cells.append(
                MatrixCell(
                    family,
                    sm,
                    summary_status(r.cell for r in here),
                    tuple(
                        (s, n)
                        for s in STATUS_ORDER
                        if (n := sum(1 for r in here if r.cell.status == s))
                    ),
                    tuple(ref.id for r in here for ref in r.cell.findings),
                )
            )
    return Matrix(families, sms, tuple(cells))


def summary_status(cells: Iterable[Cell]) -> str:
    """One word for a group of cells: ``untested`` when none has a status, ``conflicting`` when
    their findings disagree, else the weakest label (``works-with-flags`` beside ``works``)."""
    cells = list(cells)
    tested = [c for c in cells if c.status != UNTESTED]
    if not tested:
        return UNTESTED
    if any(c.conflict for c in tested) or len({_OUTCOME[c.status] for c in tested}) > 1:
        return CONFLICTING
    return max((c.status for c in tested), key=STATUS_ORDER.index)


def filter_description(filters: Sequence[tuple[str, str]]) -> str:
    """``--model 'GLM' --gpu 'sm120'``: the filters as the user typed them."""
    return " ".join(f"--{name} {value!r}" for name, value in filters)


# --- renderers ---


def _md_escape(text: str) -> str:
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|")


def _md_code(text: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    if "`" not in text:
        return f"`{text}`"
    return f"`` {text} ``"


_MD_MARK = {
    "works": "✅",
    "works-with-flags": "✅",
    "partial": "⚠️",
    "broken": "❌",
    UNTESTED: "❔",
    CONFLICTING: "🔀",
}


def _md_link(text: str, url: str) -> str:
    label = _md_escape(text).replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({url.replace(' ', '%20').replace(')', '%29').replace('|', '%7C')})"


def _md_evidence(cell: Cell, link: Callable[[FindingRef], str]) -> str:
    parts = []
    for ref in cell.findings:
        links = [_md_link(ref.id, link(ref))]
        links += [_md_link(s.text, s.url) for s in ref.sources if s.url]
        parts.append(" ".join(links))
    return "; ".join(parts)


def _md_table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines


def github_anchor(heading: str, taken: set[str] | None = None) -> str:
    """The id GitHub gives a Markdown heading: lower case, punctuation dropped (``-`` and ``_``
    kept), each space a ``-``; a repeated id gets ``-1``, ``-2``... (``taken`` records them)."""
    slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
    if taken is None:
        return slug
    anchor, n = slug, 0
    while anchor in taken:
        n += 1
        anchor = f"{slug}-{n}"
    taken.add(anchor)
    return anchor


MD_COLUMNS = (
    "Model",
    "Architecture",
    "GPU",
    "Quantization",
    "Framework",
    "Status",
    "Key flags",
    "Best throughput",
    "Date",
    "Findings",
)

_MD_GRID_TITLE = "Compatibility grid: model family × GPU"
_MD_ROWS_TITLE = "Deployments by model family"


def _md_family_title(family: str) -> str:
    return {ANY_MODEL: "Any model", OTHER_FAMILY: "Other models"}.get(family, family)


def families_in_order(rows: Sequence[Row]) -> list[str]:
    """Families in the order of the rows (which are sorted by family)."""
    return list(dict.fromkeys(r.family for r in rows))


def to_markdown(table: CompatTable, link_base: FindingLinks | str | None = None) -> str:
    """A GitHub-flavoured Markdown page: summary line, the family × GPU grid (each cell a status
    and the number of findings behind it, linked to the family's rows), then one table per
    family, then the legend."""
    link = finding_linker(link_base)
    taken = {github_anchor("Compatibility"), github_anchor(_MD_GRID_TITLE)}
    taken.add(github_anchor(_MD_ROWS_TITLE))
    families = families_in_order(table.rows)
    anchors = {family: github_anchor(_md_family_title(family), taken) for family in families}
    lines = ["## Compatibility", "", _summary(table), ""]
    if table.matrix.cells:
        lines += [f"### {_MD_GRID_TITLE}", ""]
        grid_body = []
        for family in table.matrix.families:
            cells = [f"[{_md_escape(family)}](#{anchors[family]})"]
            for sm in table.matrix.sms:
                c = table.matrix.cell(family, sm)
                if c.status == UNTESTED:  # the mark alone: the legend names it
                    cells.append(_MD_MARK[UNTESTED])
                    continue
                cells.append(
                    f"{_MD_MARK[c.status]} {c.status} · [{len(c.findings)}](#{anchors[family]})"
                )
            grid_body.append(cells)
        lines += _md_table(["Family", *table.matrix.sms], grid_body)
        lines += [
            "",
            "Each cell: the status of the deployments of that family on that GPU generation and "
            "the number of findings behind it (linked to the family's rows below); "
            f"{_MD_MARK[UNTESTED]}: {UNTESTED}.",
            "",
        ]
    lines += [f"### {_MD_ROWS_TITLE}", ""]
    if not table.rows:
        lines += _md_table(MD_COLUMNS, [])
        lines += ["", "_No findings match these filters._"]
    for family in families:
        rows = [r for r in table.rows if r.family == family]
        count = sum(len(r.cell.findings) for r in rows)
        lines += [
            f"#### {_md_escape(_md_family_title(family))}",
            "",
            f"{len(rows)} {'row' if len(rows) == 1 else 'rows'}, "
            f"{count} {'finding' if count == 1 else 'findings'}.",
            "",
        ]
        lines += _md_table(MD_COLUMNS, [_md_row(row, link) for row in rows])
        lines.append("")
    if lines[-1] == "":
        lines.pop()
    words = [f"{_MD_MARK[s]} {s}" for s in (*STATUS_ORDER, CONFLICTING)]
    lines += ["", "Status: " + ", ".join(words) + " (findings disagree)."]
    return "\n".join(lines) + "\n"


def _md_row(row: Row, link: Callable[[FindingRef], str]) -> list[str]:
    cell = row.cell
    status = f"{_MD_MARK[cell.status]} {cell.status}"
    if cell.conflict:
        status = f"{_MD_MARK[CONFLICTING]} {cell.status_text}"
    return [
        _md_escape(row.model),
        _md_code(row.architecture) if row.architecture else "",
        _md_escape(f"{row.gpu_sm} · {row.gpu_text}" if row.gpu_text else row.gpu_sm),
        _md_escape(row.quantization or ""),
        _md_escape(row.framework_text),
        _md_escape(status),
        " ".join(_md_code(f.display) for f in cell.flags),
        _md_escape(cell.best.text) if cell.best else "",
        _md_escape(cell.date or ""),
        _md_evidence(cell, link),
    ]


def _summary(table: CompatTable) -> str:
    counts = table.status_counts()
    parts = [f"{len(table.rows)} rows from {table.finding_count} findings"]
    parts += [f"{n} {label}" for label, n in counts.items() if n]
    if table.conflict_count:
        parts.append(f"{table.conflict_count} conflicting")
    text = ", ".join(parts)
    if table.generated:
        text = f"Generated {table.generated} by deploykb: {text}"
    if table.filters:
        text += f" (filtered: {filter_description(table.filters)})"
    return _md_escape(text) + "."


CSV_COLUMNS = (
    "family",
    "architecture",
    "model",
    "gpu_sm",
    "gpu",
    "gpu_count",
    "quantization",
    "framework",
    "framework_version",
    "status",
    "conflict",
    "flags",
    "throughput_tok_s",
    "concurrency",
    "date",
    "findings",
    "sources",
)

_LIST_SEP = "; "


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or a tab or carriage
    return) would be run as a formula (``=HYPERLINK(...)``), so it gets a leading ``'``."""
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def to_csv(table: CompatTable) -> str:
    """One line per row, columns ``CSV_COLUMNS`` (docs/export.md); lists joined with "; "; no
    cell starts with a formula character (``csv_cell``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in table.rows:
        cell = row.cell
        sources = _unique(s.url or s.text for ref in cell.findings for s in ref.sources)
        values = [
            row.family,
            row.architecture or "",
            row.model,
            row.gpu_sm,
            _LIST_SEP.join(row.gpu_names),
            _LIST_SEP.join(str(c) for c in row.gpu_counts),
            row.quantization or "",
            row.framework or "",
            _LIST_SEP.join(row.framework_versions),
            cell.status,
            cell.status_text if cell.conflict else "",
            _LIST_SEP.join(f.display for f in cell.flags),
            f"{cell.best.tok_s:g}" if cell.best else "",
            cell.best.concurrency if cell.best and cell.best.concurrency is not None else "",
            cell.date or "",
            _LIST_SEP.join(ref.id for ref in cell.findings),
            _LIST_SEP.join(sources),
        ]
        writer.writerow([csv_cell(v) for v in values])
    return out.getvalue()


def _flags_json(flags: Sequence[FlagItem]) -> dict:
    return {
        "add": [f.text for f in flags if f.kind == "add"],
        "change": [f.text for f in flags if f.kind == "change"],
        "remove": [f.text for f in flags if f.kind == "remove"],
        "env": [f.text for f in flags if f.kind == "env"],
        "pins": [f.text for f in flags if f.kind == "pin"],
    }


def table_to_dict(table: CompatTable, link_base: FindingLinks | str | None = None) -> dict:
    """The JSON document as Python data (schema in docs/export.md)."""
    link = finding_linker(link_base)
    rows = []
    for row in table.rows:
        cell = row.cell
        rows.append(
            {
                "family": row.family,
                "architecture": row.architecture,
                "model": row.model,
                "gpu": {
                    "sm": row.gpu_sm,
                    "names": list(row.gpu_names),
                    "counts": list(row.gpu_counts),
                },
                "quantization": row.quantization,
                "framework": {"name": row.framework, "versions": list(row.framework_versions)},
                "status": cell.status,
                "conflict": cell.conflict,
                "status_text": cell.status_text,
                "status_history": [
                    {"status": e.status, "date": e.date, "finding": e.finding} for e in cell.history
                ],
                "flags": [f.display for f in cell.flags],
                "fix": _flags_json(cell.flags),
                "best_throughput": None
                if cell.best is None
                else {
                    "tok_s": cell.best.tok_s,
                    "concurrency": cell.best.concurrency,
                    "finding": cell.best.finding,
                },
                "date": cell.date,
                "findings": [
                    {
                        "id": ref.id,
                        "title": ref.title,
                        "status": ref.status,
                        "date": ref.date,
                        "framework_version": ref.framework_version,
                        "link": link(ref),
                        "flags": [f.display for f in ref.flags],
                        "sources": [{"text": s.text, "url": s.url} for s in ref.sources],
                    }
                    for ref in cell.findings
                ],
            }
        )
    return {
        "schema_version": EXPORT_SCHEMA_VERSION,
        "generated": table.generated,
        "filters": dict(table.filters),
        "statuses": list(STATUS_ORDER),
        "counts": {
            "rows": len(table.rows),
            "findings": table.finding_count,
            "conflicting": table.conflict_count,
            "by_status": table.status_counts(),
        },
        "rows": rows,
        "matrix": {
            "families": list(table.matrix.families),
            "sms": list(table.matrix.sms),
            "cells": [
                {
                    "family": c.family,
                    "sm": c.sm,
                    "status": c.status,
                    "counts": dict(c.counts),
                    "findings": list(c.findings),
                }
                for c in table.matrix.cells
            ],
        },
    }


def to_json(table: CompatTable, link_base: FindingLinks | str | None = None) -> str:
    return json.dumps(table_to_dict(table, link_base), indent=2, ensure_ascii=False) + "\n"


def render(table: CompatTable, fmt: str, link_base: FindingLinks | str | None = None) -> str:
    """Dispatch on ``fmt`` (one of ``FORMATS``)."""
    if fmt == "md":
        return to_markdown(table, link_base)
    if fmt == "csv":
        return to_csv(table)
    if fmt == "json":
        return to_json(table, link_base)
    if fmt == "html":
        from kb.export_html import to_html

        return to_html(table, link_base)
    raise ExportError(f"--format {fmt!r}: choose md, csv, json or html")


# --- the edge ---


def write_export(path: Path | str, text: str) -> None:
    """Write atomically (a temporary file beside ``path``, then ``os.replace``): nothing partial
    is ever left at ``path``, and an error leaves no temporary file behind."""
    from kb.atomic import atomic_write

    target = Path(path)
    try:
        atomic_write(target, text.encode("utf-8"))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        if isinstance(exc, FileNotFoundError) and not target.parent.is_dir():
            reason = f"folder {str(target.parent)!r} does not exist"
        raise ExportError(f"{target}: cannot write the export: {reason}") from exc
