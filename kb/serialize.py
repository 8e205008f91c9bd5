"""The one dict form of a Finding: the front-matter shape, also what the store saves as JSON.

``finding_to_dict`` and ``finding_from_dict`` are inverses:
``finding_from_dict(finding_to_dict(f), path=f.path, body=f.body, line=f.line) == f``
for every finding ``finding_from_dict`` can produce. Validation lives in ``finding_from_dict`` so
that a front matter, a JSON row and a hand-built dict are checked the same way.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from kb.errors import FindingError
from kb.records import (
    COMMAND_PROVENANCES,
    STATUSES,
    SYMPTOM_CLASSES,
    Check,
    Finding,
    Fix,
    Framework,
    Hardware,
    Performance,
    Symptom,
    change_sides,
)

# Top-level keys in the order of the table in findings/README.md (root_cause sits beside the
# symptoms it explains; it is normally written in the body's "## Root cause" section instead).
KEYS = (
    "id",
    "title",
    "status",
    "date",
    "model",
    "architecture",
    "quantization",
    "hardware",
    "framework",
    "symptoms",
    "root_cause",
    "fix",
    "alternatives",
    "tried_without_effect",
    "failing_command",
    "working_command",
    "command_provenance",
    "performance",
    "sources",
    "related",
    "tags",
    "components",
    "checked",
)
REQUIRED = ("id", "title", "status")
HARDWARE_KEYS = ("gpu", "count", "sm", "interconnect")
FRAMEWORK_KEYS = ("name", "version")
SYMPTOM_KEYS = ("class", "text")
FIX_KEYS = ("add", "change", "remove", "env", "pins", "note", "confirmed")
FIX_SETTINGS = FIX_KEYS[:5]  # the lists of settings (the rest describe the fix)
CHECKED_KEYS = ("date", "against", "note")
PERFORMANCE_KEYS = ("throughput_tok_s", "concurrency", "baseline", "notes")

ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_SM_RE = re.compile(r"^sm[_ ]?(\d{2,3})([a-z]?)$", re.IGNORECASE)
_GFX_RE = re.compile(r"^gfx\d{2,3}[a-z0-9]?$", re.IGNORECASE)
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

LineOf = Callable[[str], "int | None"]


# --- dict -> Finding -----------------------------------------------------------------------------


def finding_from_dict(
    d: Mapping[str, Any],
    *,
    path: str,
    body: str = "",
    line_of: LineOf | None = None,
    line: int | None = None,
) -> Finding:
    """Validate a front-matter mapping (or a stored JSON dict) and build the Finding.

    ``line_of`` maps a key to its line in the file: a top-level key (``"status"``) or a dotted
    path (``"hardware.count"``, ``"symptoms.1.class"``, list indices from 0); when it does not
    know a path, the nearest known parent is used. ``line`` is where the finding starts (the
    front matter's first line); it is used for errors about the mapping as a whole and is stored
    in ``Finding.line``. ``root_cause`` comes from the dict when present, else from the body's
    ``## Root cause`` section.
    """
    v = _Checker(str(path), line_of, line)
    if not isinstance(d, Mapping):
        raise v.error((), "front matter must be a mapping of fields (key: value)")
    for key in d:
        if key not in KEYS:
            raise v.error(
                (str(key),),
                f"unknown key '{key}'{_suggest(str(key))}; allowed keys: {', '.join(KEYS)}",
            )
    absent = [k for k in REQUIRED if k not in d]
    if absent:
        noun = "field" if len(absent) == 1 else "fields"
        raise v.error((), f"missing required {noun} {', '.join(repr(k) for k in absent)}")
    for key in REQUIRED:
        if d[key] is None or (isinstance(d[key], str) and not d[key].strip()):
            raise v.error((key,), f"required field '{key}' is empty")

    fid = v.text(d["id"], ("id",))
    if not ID_RE.match(fid):
        raise v.error(
            ("id",),
            f"id '{fid}' is not a slug: use lower-case letters, digits, '-', '_' and '.', "
            "starting with a letter or digit",
        )
    title = v.text(d["title"], ("title",))
    if "\n" in title:
        raise v.error(("title",), "'title' must be one line")
    status = v.text(d["status"], ("status",))
    if status not in STATUSES:
        raise v.error(("status",), f"status '{status}' is not one of: {', '.join(STATUSES)}")

    root_cause = v.opt_text(d.get("root_cause"), ("root_cause",))
    if root_cause is None and "root_cause" not in d:  # an explicit null: the body was already read
        root_cause = root_cause_of(body)

    return Finding(
        id=fid,
        title=title,
        status=status,
        date=v.date(d.get("date"), ("date",)),
        model=v.opt_text(d.get("model"), ("model",)),
        architecture=v.opt_text(d.get("architecture"), ("architecture",)),
        quantization=v.opt_text(d.get("quantization"), ("quantization",)),
        hardware=v.hardware(d.get("hardware")),
        framework=v.framework(d.get("framework")),
        symptoms=v.symptoms(d.get("symptoms")),
        root_cause=root_cause,
        fix=v.fix(d.get("fix"), ("fix",)),
        alternatives=v.alternatives(d.get("alternatives")),
        tried_without_effect=v.strings(d.get("tried_without_effect"), ("tried_without_effect",)),
        failing_command=v.command(d.get("failing_command"), ("failing_command",)),
        working_command=v.command(d.get("working_command"), ("working_command",)),
        performance=v.performance(d.get("performance")),
        sources=v.strings(d.get("sources"), ("sources",)),
        related=v.strings(d.get("related"), ("related",)),
        tags=v.strings(d.get("tags"), ("tags",)),
        components=v.strings(d.get("components"), ("components",)),
        command_provenance=v.provenance(d.get("command_provenance")),
        checked=v.checked(d.get("checked")),
        body=body,
        path=str(path),
        line=line,
    )


_NESTED = {
    "hardware": HARDWARE_KEYS,
    "framework": FRAMEWORK_KEYS,
    "fix": FIX_SETTINGS,
    "performance": PERFORMANCE_KEYS,
}


def _suggest(key: str) -> str:
    """`` (did you mean 'hardware.gpu'?)`` for a nested field written at the top, or a typo."""
    for parent, children in _NESTED.items():
        if key in children:
            return f" (did you mean '{parent}.{key}'?)"
    close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.8)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _Checker:
    """Type checks that raise ``FindingError`` at the line of the offending key."""

    def __init__(self, path: str, line_of: LineOf | None, line: int | None) -> None:
        self.path = path
        self.line_of = line_of
        self.line = line

    def error(self, parts: tuple[str, ...], message: str) -> FindingError:
        line = None
        if self.line_of is not None:
            for k in range(len(parts), 0, -1):
                line = self.line_of(".".join(parts[:k]))
                if line:
                    break
        return FindingError(self.path, line or self.line, message)

    @staticmethod
    def _name(parts: tuple[str, ...]) -> str:
        return ".".join(parts)

    def text(self, value: Any, parts: tuple[str, ...]) -> str:
        if isinstance(value, bool) or not isinstance(value, str):
            hint = ""
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                hint = f" (got {value!r}; put it in quotes)"
            elif isinstance(value, (dt.date, dt.datetime)):
                hint = f" (got a date; put it in quotes: '{value.isoformat()}')"
            raise self.error(parts, f"'{self._name(parts)}' must be a string{hint}")
        return value.strip()

    def opt_text(self, value: Any, parts: tuple[str, ...]) -> str | None:
        if value is None:
            return None
        return self.text(value, parts) or None

    def command(self, value: Any, parts: tuple[str, ...]) -> str | None:
        """A launch command, verbatim except for the trailing newline a ``|`` block adds."""
        if value is None:
            return None
        text = self.text(value, parts)
        return text or None

    def integer(self, value: Any, parts: tuple[str, ...]) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(parts, f"'{self._name(parts)}' must be an integer (got {value!r})")
        return value

    def number(self, value: Any, parts: tuple[str, ...]) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(parts, f"'{self._name(parts)}' must be a number (got {value!r})")
        return float(value)

    def strings(self, value: Any, parts: tuple[str, ...]) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(x, str) and not isinstance(x, bool) for x in value
        ):
            raise self.error(parts, f"'{self._name(parts)}' must be a list of strings")
        return tuple(x.strip() for x in value if x.strip())

    def mapping(
        self, value: Any, parts: tuple[str, ...], allowed: tuple[str, ...]
    ) -> Mapping[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.error(parts, f"'{self._name(parts)}' must be a mapping")
        for key in value:
            if key not in allowed:
                name = self._name((*parts, str(key)))
                raise self.error(
                    (*parts, str(key)), f"unknown key '{name}'; allowed: {', '.join(allowed)}"
                )
        return value

    def date(self, value: Any, parts: tuple[str, ...]) -> str | None:
        if value is None:
            return None
        if isinstance(value, dt.datetime):
            raise self.error(parts, "'date' must be a day or a month, without a time of day")
        if isinstance(value, dt.date):
            return value.isoformat()
        text = value.strip() if isinstance(value, str) else None
        if text and _DATE_RE.match(text):
            try:
                dt.date.fromisoformat(text if len(text) == 10 else text + "-01")
            except ValueError:
                raise self.error(parts, f"'date' {text} is not a real date") from None
            return text
        raise self.error(parts, f"'date' must be YYYY-MM-DD or YYYY-MM (got {value!r})")

    def hardware(self, value: Any) -> Hardware:
        parts = ("hardware",)
        m = self.mapping(value, parts, HARDWARE_KEYS)
        sm = m.get("sm")
        if sm is not None:
            sm = self.sm(sm, (*parts, "sm"))
        count = self.integer(m.get("count"), (*parts, "count"))
        if count is not None and count < 1:
            raise self.error(
                (*parts, "count"), f"'hardware.count' must be at least 1 (got {count})"
            )
        return Hardware(
            gpu=self.opt_text(m.get("gpu"), (*parts, "gpu")),
            count=count,
            sm=sm,
            interconnect=self.opt_text(m.get("interconnect"), (*parts, "interconnect")),
        )

    def sm(self, value: Any, parts: tuple[str, ...]) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            value = f"sm{value}"
        if isinstance(value, str) and _GFX_RE.match(value.strip()):
            return value.strip().lower()  # an AMD target, as data/gpus.json names them
        match = _SM_RE.match(value.strip()) if isinstance(value, str) else None
        if not match:
            raise self.error(
                parts,
                "'hardware.sm' must look like sm90, sm100 or sm120 (NVIDIA) or gfx942 (AMD) "
                f"(got {value!r})",
            )
        return f"sm{match.group(1)}{match.group(2).lower()}"

    def framework(self, value: Any) -> Framework:
        parts = ("framework",)
        m = self.mapping(value, parts, FRAMEWORK_KEYS)
        return Framework(
            name=self.opt_text(m.get("name"), (*parts, "name")),
            version=self.opt_text(m.get("version"), (*parts, "version")),
        )

    def symptoms(self, value: Any) -> tuple[Symptom, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.error(
                ("symptoms",), "'symptoms' must be a list of mappings with 'class' and 'text'"
            )
        out = []
        for i, item in enumerate(value):
            parts = ("symptoms", str(i))
            if not isinstance(item, Mapping):
                raise self.error(
                    parts, "'symptoms' must be a list of mappings with 'class' and 'text'"
                )
            for key in item:
                if key not in SYMPTOM_KEYS:
                    raise self.error(
                        (*parts, str(key)),
                        f"unknown key '{key}' in a symptom; allowed: {', '.join(SYMPTOM_KEYS)}",
                    )
            for key in SYMPTOM_KEYS:
                if item.get(key) is None:
                    raise self.error(parts, f"symptom {i + 1} has no '{key}'")
            cls = self.text(item["class"], (*parts, "class"))
            if cls not in SYMPTOM_CLASSES:
                raise self.error(
                    (*parts, "class"),
                    f"symptom class '{cls}' is not one of: {', '.join(SYMPTOM_CLASSES)}",
                )
            text = self.text(item["text"], (*parts, "text"))
            if not text:
                raise self.error((*parts, "text"), f"symptom {i + 1} has an empty 'text'")
            out.append(Symptom(cls=cls, text=text))
        return tuple(out)

    def fix(self, value: Any, parts: tuple[str, ...]) -> Fix:
        m = self.mapping(value, parts, FIX_KEYS)
        env = self.strings(m.get("env"), (*parts, "env"))
        for i, item in enumerate(env):
            if not _ENV_RE.match(item):
                raise self.error(
                    (*parts, "env", str(i)),
                    f"'{self._name((*parts, 'env'))}' entries must look like NAME=value "
                    f"(got '{item}')",
                )
        change = self.strings(m.get("change"), (*parts, "change"))
        for i, item in enumerate(change):
            try:
                change_sides(item)
            except ValueError:
                raise self.error(
                    (*parts, "change", str(i)),
                    f"'{self._name((*parts, 'change'))}' entries must look like "
                    f"'--flag OLD -> NEW' or 'NAME=OLD -> NEW' (got '{item}')",
                ) from None
        return Fix(
            add=self.strings(m.get("add"), (*parts, "add")),
            change=change,
            remove=self.strings(m.get("remove"), (*parts, "remove")),
            env=env,
            pins=self.strings(m.get("pins"), (*parts, "pins")),
            note=self.opt_text(m.get("note"), (*parts, "note")),
            confirmed=self.boolean(m.get("confirmed"), (*parts, "confirmed")),
        )

    def boolean(self, value: Any, parts: tuple[str, ...]) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.error(parts, f"'{self._name(parts)}' must be true or false (got {value!r})")
        return value

    def provenance(self, value: Any) -> str | None:
        parts = ("command_provenance",)
        text = self.opt_text(value, parts)
        if text is not None and text not in COMMAND_PROVENANCES:
            raise self.error(
                parts,
                f"'command_provenance' must be one of: {', '.join(COMMAND_PROVENANCES)} "
                f"(got {text!r})",
            )
        return text

    def checked(self, value: Any) -> Check | None:
        parts = ("checked",)
        if value is None:
            return None
        m = self.mapping(value, parts, CHECKED_KEYS)
        date = self.date(m.get("date"), (*parts, "date"))
        if date is None or len(date) != 10:
            raise self.error(
                (*parts, "date"), "'checked.date' must be the day of the check, YYYY-MM-DD"
            )
        return Check(
            date=date,
            against=self.strings(m.get("against"), (*parts, "against")),
            note=self.opt_text(m.get("note"), (*parts, "note")),
        )

    def alternatives(self, value: Any) -> tuple[Fix, ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.error(
                ("alternatives",), "'alternatives' must be a list of fix mappings with a 'note'"
            )
        return tuple(self.fix(item, ("alternatives", str(i))) for i, item in enumerate(value))

    def performance(self, value: Any) -> Performance:
        parts = ("performance",)
        m = self.mapping(value, parts, PERFORMANCE_KEYS)
        return Performance(
            throughput_tok_s=self.number(m.get("throughput_tok_s"), (*parts, "throughput_tok_s")),
            concurrency=self.integer(m.get("concurrency"), (*parts, "concurrency")),
            baseline=self.opt_text(m.get("baseline"), (*parts, "baseline")),
            notes=self.opt_text(m.get("notes"), (*parts, "notes")),
        )


# --- Finding -> dict -----------------------------------------------------------------------------


def finding_to_dict(f: Finding) -> dict[str, Any]:
    """The front-matter mapping of ``f``: empty fields left out, keys in the README's order.

    ``root_cause`` is left out when the body's ``## Root cause`` section already says exactly
    that (the usual case for files), and kept otherwise (generated or stored findings).
    """
    d: dict[str, Any] = {"id": f.id, "title": f.title, "status": f.status}
    _put(d, "date", f.date)
    _put(d, "model", f.model)
    _put(d, "architecture", f.architecture)
    _put(d, "quantization", f.quantization)
    _put(
        d,
        "hardware",
        _compact(
            {
                "gpu": f.hardware.gpu,
                "count": f.hardware.count,
                "sm": f.hardware.sm,
                "interconnect": f.hardware.interconnect,
            }
        ),
    )
    _put(d, "framework", _compact({"name": f.framework.name, "version": f.framework.version}))
    _put(d, "symptoms", [{"class": s.cls, "text": s.text} for s in f.symptoms])
    if f.root_cause and root_cause_of(f.body) != f.root_cause:
        d["root_cause"] = f.root_cause
    _put(d, "fix", fix_to_dict(f.fix))
    _put(d, "alternatives", [fix_to_dict(a) for a in f.alternatives])
    _put(d, "tried_without_effect", list(f.tried_without_effect))
    _put(d, "failing_command", f.failing_command)
    _put(d, "working_command", f.working_command)
    _put(d, "command_provenance", f.command_provenance)
    p = f.performance
    _put(
        d,
        "performance",
        _compact(
            {
                "throughput_tok_s": p.throughput_tok_s,
                "concurrency": p.concurrency,
                "baseline": p.baseline,
                "notes": p.notes,
            }
        ),
    )
    _put(d, "sources", list(f.sources))
    _put(d, "related", list(f.related))
    _put(d, "tags", list(f.tags))
    _put(d, "components", list(f.components))
    if f.checked is not None:
        d["checked"] = _compact(
            {"date": f.checked.date, "against": list(f.checked.against), "note": f.checked.note}
        )
    return d


def fix_to_dict(fix: Fix) -> dict[str, Any]:
    """``{add, change, remove, env, pins, note, confirmed}`` without the empty ones."""
    return _compact(
        {
            "add": list(fix.add),
            "change": list(fix.change),
            "remove": list(fix.remove),
            "env": list(fix.env),
            "pins": list(fix.pins),
            "note": fix.note,
            "confirmed": fix.confirmed,
        }
    )


def _compact(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v not in (None, "", [], {})}


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value not in (None, "", [], {}):
        d[key] = value


# --- Markdown body sections ----------------------------------------------------------------------


@lru_cache(maxsize=1)
def markdown_parser():  # type: ignore[no-untyped-def]
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


def clean_block(text: str) -> str:
    """Drop leading blank lines and trailing whitespace (how bodies and sections are kept)."""
    lines = text.split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines).rstrip()


def heading_text(inline: Any) -> str:
    """Plain text of a heading's inline token (emphasis and code marks removed)."""
    children = inline.children or []
    text = "".join(c.content for c in children if c.type in ("text", "code_inline"))
    return " ".join((text or inline.content).split())


def sections(body: str) -> list[tuple[str, int, str]]:
    """The ``##`` sections of a Markdown body: ``(heading, line index of the heading, text)``.

    A section runs to the next ``#`` or ``##`` heading; ``##`` inside fenced code is not a
    heading. Line indices are 0-based within ``body``.
    """
    tokens = markdown_parser().parse(body)
    lines = body.split("\n")
    heads = [
        (i, t) for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag in ("h1", "h2")
    ]
    out = []
    for n, (i, tok) in enumerate(heads):
        if tok.tag != "h2" or tok.map is None:
            continue
        end = heads[n + 1][1].map[0] if n + 1 < len(heads) and heads[n + 1][1].map else len(lines)
        out.append(
            (
                heading_text(tokens[i + 1]),
                tok.map[0],
                clean_block("\n".join(lines[tok.map[1] : end])),
            )
        )
    return out


@lru_cache(maxsize=4096)
def root_cause_of(body: str) -> str | None:
    """The text of the body's first ``## Root cause`` section, or None. Remembered by body: a
    finding is read, hashed and stored in one ingest, and each asks for it."""
    if not body or "root cause" not in body.lower():
        return None
    for heading, _, text in sections(body):
        if heading.strip().rstrip(":").lower() == "root cause":
            return text or None
    return None
