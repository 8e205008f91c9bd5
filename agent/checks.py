"""``lint``: check finding files before they are shared, each problem as ``path:line: message``.

Errors (the file is wrong or unsafe to publish): a missing required field, an unknown status or
symptom class, an id that is not the file name, the same id in two files, a secret or private
address left in the text, and anything the parser rejects. Warnings (worth a look): flags the
registry does not know for the finding's framework, sources that are not links, and the parser's
own warnings.

``lint_text`` is pure (text in, problems out); ``lint_paths`` reads the files and adds the
checks across files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import CommandParseError, FindingError, InputError, located
from kb.records import STATUSES, SYMPTOM_CLASSES

if TYPE_CHECKING:  # pragma: no cover
    from agent.registry import Registry
    from kb.parse import FrontMatter

ERROR = "error"
WARNING = "warning"
NOTE = "note"  # information only (e.g. flags not checked against a release); never fails
REQUIRED = ("id", "title", "status")

_URL = re.compile(r"^https?://[^\s/]+\.[^\s]+$")
_GITHUB_REF = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")
# a path to a file: no spaces, last part has an extension (shared/seeds/003_x.txt, FINDINGS.md)
_FILE_PATH = re.compile(
    r"^(?:~|\.{1,2})?/?(?:[\w.@+-]+/)*[\w@+-][\w.@+-]*\.[A-Za-z0-9]{1,8}(?::\d+)?$"
)
# a report that is not online, cited by what it is: "report: internal deployment report, 2026-02, ..."
_REPORT = re.compile(r"^report:\s*\S")
_FLAG_NAME = re.compile(r"^(-{1,2}[\w.-]+)")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str
    severity: str = ERROR  # "error" | "warning"

    def __str__(self) -> str:
        return located(self.path, self.line, self.message)


@dataclass(frozen=True)
class FileLint:
    """The problems of one file and the ids it defines (with the line of each ``id:``)."""

    problems: tuple[Problem, ...]
    ids: tuple[tuple[str, int | None], ...] = ()


@dataclass(frozen=True)
class LintReport:
    errors: tuple[Problem, ...]
    warnings: tuple[Problem, ...]
    files: int
    notes: tuple[Problem, ...] = ()

    def failed(self, strict: bool = False) -> bool:
        return bool(self.errors or (strict and self.warnings))


# --- one file ----------------------------------------------------------------------------------


def lint_text(text: str, path: str, registry: Registry | None = None) -> FileLint:
    """Every problem in one finding file (front matter or free-form notes)."""
    from kb.parse import MAX_BYTES, finding_from_front_matter, parse_text, read_front_matter
    from kb.redact import find_secrets

    path = str(path)
    out = _Collector(path)
    if len(text) > MAX_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        try:  # the size check comes before any scan: a 50 MB file is refused, not read through
            parse_text(text, path)
        except FindingError as exc:
            out.error(exc.line, exc.message)
        return FileLint(out.sorted())
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    for line, chars in _controls(text):
        out.error(line, _not_allowed(chars))
    for r in find_secrets(text):
        out.error(
            r.line,
            f"unredacted {r.kind} '{r.preview()}': replace it with {r.placeholder} "
            "(`deploykb add` redacts automatically)",
        )

    try:
        front = read_front_matter(text, path)
    except FindingError as exc:
        return FileLint(_with_parse_error(out, exc))
    ids: list[tuple[str, int | None]] = []
    if front is not None and isinstance(front.data, Mapping):
        _check_escaped_controls(front, out)
        _check_fields(front.data, front.lines, out, registry)
        ids += _front_id(front)
    try:
        result = finding_from_front_matter(front, path) if front else parse_text(text, path)
    except FindingError as exc:
        return FileLint(_with_parse_error(out, exc), tuple(ids))
    if front is None:
        ids += [(f.id, f.line) for f in result.findings]
    for w in result.warnings:
        if w.code != "id-mismatch":  # an error here, reported by _check_fields
            out.warning(w.line, w.message)
    return FileLint(out.sorted(), tuple(ids))


def _with_parse_error(out: _Collector, exc: FindingError) -> tuple[Problem, ...]:
    """The problems with what the parser rejects, unless a check said it at that line already."""
    if not out.has_error_at(exc.line or 1):
        out.error(exc.line, exc.message)
    return out.sorted()


def _front_id(front: FrontMatter) -> list[tuple[str, int | None]]:
    fid = front.data.get("id")
    return [(fid.strip(), front.lines.get("id"))] if isinstance(fid, str) and fid.strip() else []


class _Collector:
    def __init__(self, path: str) -> None:
        self.path = path
        self.items: list[Problem] = []

    def error(self, line: int | None, message: str) -> None:
        self.items.append(Problem(self.path, line, message, ERROR))

    def warning(self, line: int | None, message: str) -> None:
        self.items.append(Problem(self.path, line, message, WARNING))

    def note(self, line: int | None, message: str) -> None:
        self.items.append(Problem(self.path, line, message, NOTE))

    def has_error_at(self, line: int) -> bool:
        return any(p.severity == ERROR and (p.line or 1) == line for p in self.items)

    def sorted(self) -> tuple[Problem, ...]:
        return tuple(sorted(self.items, key=lambda p: (p.line or 0, p.severity)))


def _check_fields(
    d: Mapping[str, Any], keys: dict[str, int], out: _Collector, registry: Registry | None
) -> None:
    for key in REQUIRED:
        value = d.get(key)
        if key not in d:
            out.error(1, f"missing required field '{key}'")
        elif value is None or (isinstance(value, str) and not value.strip()):
            out.error(keys.get(key), f"required field '{key}' is empty")

    status = d.get("status")
    if isinstance(status, str) and status.strip() and status.strip() not in STATUSES:
        out.error(
            keys.get("status"),
            f"status '{status.strip()}' is not one of: {', '.join(STATUSES)}",
        )

    fid = d.get("id")
    stem = Path(out.path).name.removesuffix(".md")
    from kb.serialize import ID_RE

    # an id that is no slug is the parser's error ("is not a slug"), not a file to rename
    if isinstance(fid, str) and ID_RE.match(fid.strip()) and fid.strip() != stem:
        out.error(
            keys.get("id"),
            f"id '{fid.strip()}' does not match the file name; rename the file to "
            f"{fid.strip()}.md or change the id",
        )

    symptoms = d.get("symptoms")
    if isinstance(symptoms, list):
        for i, s in enumerate(symptoms):
            cls = s.get("class") if isinstance(s, Mapping) else None
            if isinstance(cls, str) and cls not in SYMPTOM_CLASSES:
                out.error(
                    keys.get(f"symptoms.{i}.class", keys.get(f"symptoms.{i}")),
                    f"symptom class '{cls}' is not one of: {', '.join(SYMPTOM_CLASSES)}",
                )

    _check_model_and_sources(d, keys, out)
    _check_components(d, keys, out)
    _check_placeholders(d, keys, out, registry)
    _check_flags(d, keys, out, registry)


def _check_model_and_sources(d: Mapping[str, Any], keys: dict[str, int], out: _Collector) -> None:
    """A model or a source that is a path on one machine; a source that is no link."""
    model = d.get("model")
    if isinstance(model, str) and is_local_path(model):
        out.warning(
            keys.get("model"),
            f"model '{_short(model.strip())}' is a path on one machine: write the model's "
            "Hugging Face id (org/name)",
        )
    sources = d.get("sources")
    if isinstance(sources, list):
        for i, src in enumerate(sources):
            line = keys.get(f"sources.{i}", keys.get("sources"))
            if isinstance(src, str) and is_local_path(src):
                out.warning(
                    line,
                    f"source '{_short(src.strip())}' is a path on one machine: cite what a reader "
                    "can open (a URL, owner/repo#N, a file in the repository, 'report: ...')",
                )
            elif isinstance(src, str) and src.strip() and not is_link(src):
                out.warning(
                    line,
                    f"source '{_short(src.strip())}' is not a link: use a URL, owner/repo#N "
                    "or a path to a file",
                )


def _check_components(d: Mapping[str, Any], keys: dict[str, int], out: _Collector) -> None:
    """Every ``components`` id is in the vocabulary of data/components.json."""
    comps = d.get("components")
    if not isinstance(comps, list):
        return
    from agent.components import vocabulary

    known = vocabulary().ids
    for i, cid in enumerate(comps):
        if isinstance(cid, str) and cid.strip() not in known:
            out.error(
                keys.get(f"components.{i}", keys.get("components")),
                f"component '{cid.strip()}' is not in data/components.json; "
                f"use one of: {', '.join(sorted(known))}",
            )


def is_link(source: str) -> bool:
    """A URL, a GitHub ``owner/repo#N`` reference, a path ending in a file name, or a citation of
    a report that is not online (``report: <what it is>``)."""
    s = source.strip()
    return bool(_URL.match(s) or _GITHUB_REF.match(s) or _FILE_PATH.match(s) or _REPORT.match(s))


_LOCAL_PATH = re.compile(r"^(?:/|~|[A-Za-z]:[\\/]|\\\\)")


def is_local_path(text: str) -> bool:
    """An absolute or home-relative path (``/data/models/x``, ``~/logs/a.log``, ``C:\\models``):
    a place on one machine, not something a reader of a shared finding can open."""
    return bool(_LOCAL_PATH.match(text.strip()))


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# --- redaction placeholders where a value must stand ------------------------------------------

# A placeholder is expected in the value of a setting that holds what it replaced: an address in
# --host, --dist-init-addr, MASTER_ADDR; a secret in --api-key, HF_TOKEN; a user's home in a path.
_ADDRESS_SETTING = re.compile(
    r"host|addr|endpoint|url|uri|master|server|(?:^|[-_])ip(?:$|[-_])|node|peer|proxy|registry"
    r"|ifname|interface",
    re.I,
)
_SECRET_SETTING = re.compile(r"key|token|secret|passw|auth|credential|cookie|login", re.I)
_ADDRESSES = frozenset({"<ip>", "<ipv6>", "<host>", "<user>", "<email>"})
_HOME = re.compile(r"(?:/home/|/Users/|C:\\Users\\|~)<user>")


def _check_placeholders(
    d: Mapping[str, Any], keys: dict[str, int], out: _Collector, registry: Registry | None
) -> None:
    """A placeholder ``kb.redact`` writes (``<ip>``, ``<redacted>``...) where a value must stand:
    in ``model``, ``framework.version``, a flag, variable or pin of the fix, its alternatives,
    what was tried and the two commands. Redaction took a real value there (a version read as
    an address), and the finding can neither be matched nor applied."""
    fw_block = d.get("framework")
    fw_name = fw_block.get("name") if isinstance(fw_block, Mapping) else None
    check = _PlaceholderCheck(out, keys, registry, fw_name if isinstance(fw_name, str) else None)
    check.value("model", d.get("model"), "the model's Hugging Face id")
    version = fw_block.get("version") if isinstance(fw_block, Mapping) else None
    check.value("framework.version", version, "the version as the source gives it")
    fixes: list[tuple[str, Any]] = [("fix", d.get("fix"))]
    alts = d.get("alternatives")
    if isinstance(alts, list):
        fixes += [(f"alternatives.{i}", a) for i, a in enumerate(alts)]
    for prefix, fix in fixes:
        for field in ("add", "change", "remove", "env", "pins"):
            items = fix.get(field) if isinstance(fix, Mapping) else None
            for i, item in enumerate(items if isinstance(items, list) else []):
                check.item(item, f"{prefix}.{field}", f"{prefix}.{field}.{i}")
    tried = d.get("tried_without_effect")
    for i, item in enumerate(tried if isinstance(tried, list) else []):
        check.item(item, "tried_without_effect", f"tried_without_effect.{i}", free_text=True)
    for key in ("failing_command", "working_command"):
        check.command(d.get(key), key)


class _PlaceholderCheck:
    def __init__(
        self, out: _Collector, keys: dict[str, int], registry: Registry | None, fw: str | None
    ) -> None:
        self.out, self.keys, self.registry, self.fw = out, keys, registry, fw

    def error(self, key: str, field: str, text: str, found: tuple[str, ...], what: str) -> None:
        noun = "placeholder" if len(found) == 1 else "placeholders"
        self.out.error(
            self.keys.get(key, self.keys.get(key.rsplit(".", 1)[0])),
            f"{field}: '{_short(text)}' holds the redaction {noun} {' and '.join(found)} where a "
            f"value must stand: write {what}",
        )

    def value(self, key: str, text: Any, what: str) -> None:
        from kb.redact import placeholders_in

        if isinstance(text, str) and (found := placeholders_in(text)):
            self.error(key, key, text.strip(), found, what)

    def item(self, item: Any, field: str, key: str, free_text: bool = False) -> None:
        """One fix entry (or tried entry): its settings by name and value."""
        from agent.flags import parse_fix_item
        from kb.records import change_sides
        from kb.redact import placeholders_in

        if not isinstance(item, str) or not placeholders_in(item):
            return
        text = item.strip()
        try:
            if field.endswith(".change"):  # both sides: the old value and the new one
                changes = tuple(
                    c for side in change_sides(text) for c in parse_fix_item(side, self.fw)
                )
            else:
                changes = parse_fix_item(text, self.fw)
        except (CommandParseError, ValueError):
            if not free_text:  # an entry the parser cannot read: every placeholder counts
                self.error(key, field, text, placeholders_in(text), "the value the source gives")
            return
        settings = [(c.name, c.value or "", c.kind) for c in changes]
        self._settings(settings, text, field, key)

    def command(self, cmd: Any, key: str) -> None:
        """The flags, variables and image of a launch command (its program and model path may
        hold a redacted home directory)."""
        from agent.flags import parse_command
        from kb.redact import placeholders_in

        if not isinstance(cmd, str) or not placeholders_in(cmd):
            return
        try:
            cfg = parse_command(cmd, self.fw, source=key, registry=self.registry)
        except CommandParseError:
            return  # said by the flag checks
        settings = [(f.name, f.value or "", "flag", f.written) for f in cfg.flags]
        settings += [(name, value, "env", f"{name}={value}") for name, value in cfg.env]
        settings += [("image", cfg.image, "pin", cfg.image)] if cfg.image else []
        for name, value, kind, written in settings:
            self._settings([(name, value, kind)], written.strip(), key, key)

    def _settings(self, settings: list[tuple[str, str, str]], text: str, field: str, key: str):
        from kb.redact import placeholders_in

        misplaced: list[str] = []
        for name, value, kind in settings:
            for found in placeholders_in(name):
                misplaced.append(found)
            for found in placeholders_in(value):
                if not _expected(found, name, value, kind):
                    misplaced.append(found)
        if misplaced:
            what = "the value the source gives (a version, a number, a flag)"
            self.error(key, field, text, tuple(dict.fromkeys(misplaced)), what)


def _expected(found: str, name: str, value: str, kind: str) -> bool:
    """Whether a placeholder in a setting's value replaced what the setting holds: an address in
    an address setting (``--host <ip>``), a secret in a secret one (``HF_TOKEN=<redacted>``), a
    user's home in a path (``--download-dir /home/<user>/hf``), a private registry's host in an
    image (``<host>:5000/team/sglang:v0.5``)."""
    if found == "<user>" and _HOME.search(value):
        return True
    if kind == "pin":
        registry = value.split("/", 1)[0] if "/" in value else ""
        return found in ("<host>", "<ip>") and found in registry
    if found in _ADDRESSES:
        return bool(_ADDRESS_SETTING.search(name))
    return bool(_SECRET_SETTING.search(name))


# --- flags -------------------------------------------------------------------------------------


def _check_flags(
    d: Mapping[str, Any], keys: dict[str, int], out: _Collector, registry: Registry | None
) -> None:
    """The flags of the fix, its alternatives, what was tried and the two commands: known to
    the registry for the finding's framework, and accepted by its ``framework.version``."""
    from agent.registry import load_registry
    from kb.frameworks import normalise_framework

    fw_block = d.get("framework")
    name = fw_block.get("name") if isinstance(fw_block, Mapping) else None
    fw = normalise_framework(name) if isinstance(name, str) else None
    if fw is None:
        return
    version = fw_block.get("version") if isinstance(fw_block, Mapping) else None
    check = _FlagCheck(out, keys, registry or load_registry(), fw, version)
    fixes: list[tuple[str, Any]] = [("fix", d.get("fix"))]
    alts = d.get("alternatives")
    if isinstance(alts, list):
        fixes += [(f"alternatives.{i}", a) for i, a in enumerate(alts)]
    for prefix, fix in fixes:
        for field in ("add", "change", "remove"):
            items = fix.get(field) if isinstance(fix, Mapping) else None
            for i, item in enumerate(items if isinstance(items, list) else []):
                check.item(
                    _setting_of(item) if field == "change" else item, f"{prefix}.{field}.{i}"
                )
    tried = d.get("tried_without_effect")
    for i, item in enumerate(tried if isinstance(tried, list) else []):
        check.item(item, f"tried_without_effect.{i}", flags_only=True)
    for key in ("failing_command", "working_command"):
        check.command(d.get(key), key)
    check.note_skipped()


def _setting_of(change: Any) -> Any:
    """A ``fix.change`` entry's new setting (``--flag NEW``), checked as an ``add`` item is; an
    entry of another shape is the parser's error."""
    from kb.records import change_sides

    try:
        return change_sides(change)[1] if isinstance(change, str) else None
    except ValueError:
        return None


class _FlagCheck:
    """The checks of one finding's flags against the registry and the finding's release."""

    def __init__(
        self, out: _Collector, keys: dict[str, int], reg: Registry, fw: str, version: Any
    ) -> None:
        self.out, self.keys, self.reg, self.fw, self.version = out, keys, reg, fw, version
        # no framework.version: nothing to check against, silently; one that names no release:
        # a note
        self.release = reg.release(fw, str(version)) if version not in (None, "") else None
        self.checked = self.release.version if self.release is not None else None
        self.skipped: list[str] = []

    def unknown(self, flag: str, line: int | None) -> None:
        self.out.warning(
            line, f"flag '{flag}' is not a known {self.fw} flag (not in the flag registry)"
        )

    def in_release(self, written: str, value: str | None, line: int | None) -> None:
        """The finding's own framework version must accept the flag and its value."""
        if self.release is None:
            return
        if self.checked is None:
            self.skipped.append(written)
            return
        for issue in self.reg.version_issues(written, value, self.fw, self.checked):
            self.out.warning(
                line,
                f"flag '{written}': {issue.message} "
                f"(framework.version: {str(self.version).strip()})",
            )

    def item(self, item: Any, key: str, flags_only: bool = False) -> None:
        """One fix item (or, ``flags_only``, a tried entry that is a flag)."""
        from agent.flags import parse_fix_item

        if not isinstance(item, str) or not item.strip():
            return
        if flags_only and not item.strip().startswith("-"):
            return  # free text ("disabling CUDA graphs") is fine in tried_without_effect
        try:
            changes = parse_fix_item(item, self.fw, registry=self.reg)
        except CommandParseError:
            return  # a fix item the parser does not read is reported by ask, not here
        for c in changes:
            if c.kind != "flag" or (c.note == "config" and self.fw != "tensorrt-llm"):
                continue
            m = _FLAG_NAME.match(c.text.strip())
            written = m.group(1) if m else c.name
            if not self.reg.is_known(c.name, self.fw):
                self.unknown(written, self.keys.get(key))
            elif not flags_only:
                named = written if written.startswith("-") else c.name
                self.in_release(named, c.value, self.keys.get(key))

    def command(self, cmd: Any, key: str) -> None:
        """The flags of ``failing_command`` or ``working_command``."""
        from agent.flags import parse_command

        if not isinstance(cmd, str) or not cmd.strip():
            return
        try:
            cfg = parse_command(cmd, self.fw, source=key, registry=self.reg)
        except CommandParseError as exc:
            self.out.warning(self.keys.get(key), str(exc))
            return
        fw = cfg.framework or self.fw
        for flag in cfg.flags:
            m = _FLAG_NAME.match(flag.written.strip())
            written = m.group(1) if m else flag.name
            if not self.reg.is_known(flag.name, fw):
                self.unknown(written, self.keys.get(key))
            elif fw == self.fw:
                self.in_release(written, flag.value, self.keys.get(key))

    def note_skipped(self) -> None:
        if self.skipped and self.release is not None:
            self.out.note(
                self.keys.get("framework.version") or self.keys.get("framework"),
                f"{len(self.skipped)} flag(s) not checked against a release: {self.release.note}",
            )


# --- many files --------------------------------------------------------------------------------


def finding_paths(paths: Sequence[Path]) -> list[Path]:
    """The ``*.md`` files under ``paths`` (folders walked, README.md and hidden folders skipped)."""
    from kb.ingest import finding_files

    return [p for p in finding_files(list(paths)) if p.name != "README.md"]


def lint_paths(paths: Sequence[Path], registry: Registry | None = None) -> LintReport:
    """Lint every finding file under ``paths``, then look for ids defined twice."""
    from kb.parse import MAX_BYTES

    files = finding_paths(paths)
    problems: list[Problem] = []
    owner: dict[str, str] = {}
    # the folders checked (a file's own folder when a file is named): no link out of them is read
    roots = [Path(p).resolve() if Path(p).is_dir() else Path(p).parent.resolve() for p in paths]
    for p in files:
        name = str(p)
        target = p.resolve()
        if not any(r == target or r in target.parents for r in roots):
            why = f"symbolic link to {target}, outside the folders checked: not followed"
            problems.append(Problem(name, None, why + " (commit the file, not a link)"))
            continue
        try:
            size = p.stat().st_size
            if size > MAX_BYTES:
                problems.append(
                    Problem(
                        name,
                        None,
                        f"file is {size / 1e6:.1f} MB; a finding must be under "
                        f"{MAX_BYTES / 1e6:g} MB",
                    )
                )
                continue
            data = p.read_bytes()
        except OSError as exc:
            problems.append(Problem(name, None, f"cannot read ({exc.strerror})"))
            continue
        if b"\x00" in data:
            problems.append(Problem(name, None, "binary file, not Markdown"))
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            problems.append(Problem(name, line, "not UTF-8 text"))
            continue
        result = lint_text(text, name, registry)
        problems += result.problems
        for fid, line in result.ids:
            loc = owner.get(fid)
            if loc is None:
                owner[fid] = f"{name}:{line}" if line else name
            else:
                problems.append(Problem(name, line, f"duplicate id '{fid}' (also in {loc})"))
    return _report(problems, len(files))


def _report(problems: Iterable[Problem], files: int) -> LintReport:
    items = list(problems)
    return LintReport(
        errors=tuple(p for p in items if p.severity == ERROR),
        warnings=tuple(p for p in items if p.severity == WARNING),
        files=files,
        notes=tuple(p for p in items if p.severity == NOTE),
    )


def default_paths() -> list[Path]:
    """``findings/`` of the current directory."""
    local = Path("findings")
    if not local.is_dir():
        raise InputError("no findings/ folder here; pass the folders or files to lint")
    return [local]


# --- control characters (a terminal acts on them) ------------------------------------------------


def _controls(text: str) -> list[tuple[int, list[str]]]:
    """Each line holding control characters (but tab), and which: ``(3, ["U+001B"])``."""
    from kb.redact import control_characters

    by_line: dict[int, list[str]] = {}
    for line, char in control_characters(text):
        by_line.setdefault(line, []).append(f"U+{ord(char):04X}")
    return list(by_line.items())


def _not_allowed(codes: list[str], how: str = "") -> str:
    codes = list(dict.fromkeys(codes))
    if len(codes) == 1:
        return (
            f"control character {codes[0]}{how} is not allowed (a terminal acts on it); remove it"
        )
    return (
        f"control characters {', '.join(codes)}{how} are not allowed (a terminal acts on them); "
        "remove them"
    )


def _check_escaped_controls(front, out) -> None:
    """Control characters written as YAML escapes in the front matter, an error on their key's line."""
    for key, chars in _escaped_controls(front.data):
        line = front.lines.get(key) or 1
        if not out.has_error_at(line):
            how = " (written as a YAML escape)"
            out.error(front.lines.get(key), f"'{key}': {_not_allowed(chars, how)}")


def _escaped_controls(data: Any, key: str = "") -> list[tuple[str, list[str]]]:
    """``(key, ["U+001B"])`` for each front-matter string holding a control character."""
    from kb.redact import control_characters

    if isinstance(data, str):
        codes = [f"U+{ord(c):04X}" for _, c in control_characters(data)]
        return [(key, codes)] if codes else []
    items: Any = data.items() if isinstance(data, Mapping) else ()
    items = enumerate(data) if isinstance(data, list) else items
    return [hit for k, v in items for hit in _escaped_controls(v, f"{key}.{k}" if key else str(k))]
