"""Finding files in, ``Finding`` records out.

Two shapes are read. A finding file (``---`` YAML front matter, then Markdown) gives one finding;
its front matter is validated by ``kb.serialize.finding_from_dict`` and every error points at the
real line of the file. A free-form notes file (no front matter, e.g. a team's ``FINDINGS.md``)
gives one finding per ``##`` section, recognised from the text as far as it goes, with a warning
naming what could not be found.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kb.classify import classify_symptom
from kb.errors import FindingError
from kb.frameworks import normalise_framework
from kb.records import Finding, Fix, Framework, Hardware, ParseResult, ParseWarning, Symptom
from kb.serialize import clean_block, finding_from_dict, heading_text, markdown_parser
from kb.versions import PARSER_VERSION  # noqa: F401  (re-exported)

MAX_BYTES = 1_000_000


# --- entry points --------------------------------------------------------------------------------


def parse_file(path: Path) -> ParseResult:
    """Parse one file. The size is checked before anything is read."""
    p = Path(path)
    name = str(path)
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise FindingError(name, None, f"cannot read file: {exc.strerror or exc}") from exc
    if p.is_dir():
        raise FindingError(name, None, "is a directory, not a finding file")
    _check_size(name, size)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise FindingError(name, None, f"cannot read file: {exc.strerror or exc}") from exc
    return parse_bytes(data, name)


def parse_bytes(data: bytes, path: str) -> ParseResult:
    """Parse raw file content: size, binary and encoding checks, then ``parse_text``."""
    _check_size(path, len(data))
    if b"\x00" in data:
        raise FindingError(path, None, "binary file, not Markdown")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FindingError(
            path,
            line,
            f"not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})",
        ) from None
    return parse_text(text, path)


def parse_text(text: str, path: str) -> ParseResult:
    """Parse a finding file (front matter) or a free-form notes file (``##`` sections)."""
    path = str(path)
    if len(text) > MAX_BYTES // 4:  # cheap bound first: a char is at most 4 bytes
        _check_size(path, len(text.encode("utf-8", "surrogatepass")))
    if "\x00" in text:
        raise FindingError(path, None, "binary file, not Markdown")
    text = _normalised(text)
    if not text.strip():
        raise FindingError(path, None, "empty file")
    lines = text.split("\n")
    if lines[0].rstrip() == "---":
        return finding_from_front_matter(_front_matter(lines, path), path)
    return parse_free_form(text, path)


def _normalised(text: str) -> str:
    """Without a byte-order mark, every line ending a ``\\n``."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def _check_size(path: str, size: int) -> None:
    if size > MAX_BYTES:
        raise FindingError(
            path,
            None,
            f"file is {size / 1e6:.1f} MB; a finding must be under {MAX_BYTES / 1e6:g} MB",
        )


# --- front matter --------------------------------------------------------------------------------


MAX_FRONT_MATTER_BYTES = 100_000  # front matter is a few dozen short fields
MAX_YAML_DEPTH = 20  # a finding nests three levels (fix -> add -> item); 20 is generous
MAX_YAML_NODES = 20_000


class _Loader(yaml.SafeLoader):
    """Safe YAML with bounds: no aliases (``*name``: a 500-byte alias bomb expands to gigabytes),
    at most ``MAX_YAML_DEPTH`` levels of nesting and ``MAX_YAML_NODES`` values. Dates stay strings:
    ``finding_from_dict`` checks them with a line."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                f"alias '*{event.anchor}' is not allowed; write the value out",
                event.start_mark,
            )
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            raise yaml.composer.ComposerError(
                None, None, f"more than {MAX_YAML_NODES} values", event.start_mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_constructor(
    "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
)
MAX_INT_DIGITS = 100  # a count or a date is a few digits; Python refuses 4,300 with its own text


def _bounded_int(loader: Any, node: Any) -> Any:
    if len(node.value) > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"a number of {len(node.value):,} digits; the limit is "
            f"{MAX_INT_DIGITS} (put it in quotes if it is text)", node.start_mark,
        )  # fmt: skip
    return loader.construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


@dataclass(frozen=True)
class FrontMatter:
    """A finding file's front matter: the YAML as data, the file line of every key and list item
    (``"status"``, ``"fix.add.0"``, ``"symptoms.1.class"``), the Markdown body after it, and the
    warnings reading it gave."""

    data: Any
    lines: dict[str, int]
    body: str
    warnings: tuple[ParseWarning, ...] = ()


def read_front_matter(text: str, path: str) -> FrontMatter | None:
    """The front matter of a finding file, None when the text has none (a free-form notes file).
    The one reader of it (``lint`` checks its fields with these lines); every problem is a
    ``FindingError`` naming the file line."""
    if "\x00" in text:
        raise FindingError(str(path), None, "binary file, not Markdown")
    lines = _normalised(text).split("\n")
    if lines[0].rstrip() != "---":
        return None
    return _front_matter(lines, str(path))


def _front_matter(lines: list[str], path: str) -> FrontMatter:
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if close is None:
        raise FindingError(path, 1, "front matter is not closed: add a '---' line after the fields")
    offset = 2  # the YAML's first line is line 2 of the file
    data, node = load_yaml("\n".join(lines[1:close]), path, offset)
    if data is None:
        raise FindingError(path, 1, "front matter is empty; it needs at least id, title and status")
    keys = _key_lines(node, lines[1:close], offset, path)
    body = clean_block("\n".join(lines[close + 1 :]))
    return FrontMatter(data, keys.lines, body, tuple(keys.warnings))


def finding_from_front_matter(front: FrontMatter, path: str) -> ParseResult:
    """The finding of a front-matter file, with the warnings of its front matter and one when
    its id is not the file's name (code ``id-mismatch``)."""
    finding = finding_from_dict(
        front.data, path=path, body=front.body, line_of=front.lines.get, line=1
    )
    warnings = list(front.warnings)
    name = Path(path).name
    if name.endswith(".md") and name[: -len(".md")] != finding.id:
        warnings.append(
            ParseWarning(
                path,
                front.lines.get("id"),
                f"id '{finding.id}' does not match the file name; rename it to {finding.id}.md",
                "id-mismatch",
            )
        )
    return ParseResult((finding,), tuple(warnings))


_CLoader: Any = None
if getattr(yaml, "CSafeLoader", None) is not None:  # libyaml: the same YAML, ten times faster

    class _CLoader(yaml.CSafeLoader):  # type: ignore[no-redef]
        """libyaml's safe loader with dates kept as strings; bounds are checked on its events
        first (``_check_events``), as its composer cannot be hooked."""

    _CLoader.add_constructor(
        "tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node)
    )
    _CLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)


def _check_events(text: str) -> None:
    """The bounds of ``_Loader``, checked on libyaml's event stream before anything is built."""
    checker = _CLoader(text)
    depth = nodes = 0
    try:
        while True:
            event = checker.get_event()
            if event is None or isinstance(event, yaml.StreamEndEvent):
                return
            if isinstance(event, yaml.AliasEvent):
                raise yaml.composer.ComposerError(
                    None, None, f"alias '*{event.anchor}' is not allowed; write the value out",
                    event.start_mark,
                )  # fmt: skip
            if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
                nodes += 1
                if nodes > MAX_YAML_NODES:
                    raise yaml.composer.ComposerError(
                        None, None, f"more than {MAX_YAML_NODES} values", event.start_mark
                    )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(
                        None, None, f"nested deeper than {MAX_YAML_DEPTH} levels", event.start_mark
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        checker.dispose()


def _compose(text: str) -> tuple[Any, Any]:
    if _CLoader is not None:
        _check_events(text)
        loader = _CLoader(text)
    else:
        loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def load_yaml(text: str, path: str, offset: int = 2) -> tuple[Any, Any]:
    """Front-matter YAML (``text`` starts on line ``offset`` of ``path``) as ``(data, node)``.

    The one YAML reader for findings (``lint`` uses it too): safe, bounded (no aliases, at most
    ``MAX_YAML_DEPTH`` levels and ``MAX_YAML_NODES`` values, ``MAX_FRONT_MATTER_BYTES``), and every
    problem is a ``FindingError`` naming the file line.
    """
    if len(text) > MAX_FRONT_MATTER_BYTES:
        raise FindingError(
            path,
            1,
            f"front matter is {len(text):,} characters; the limit is {MAX_FRONT_MATTER_BYTES:,} "
            "(long logs belong in the body)",
        )
    try:
        node, data = _compose(text)
    except yaml.reader.ReaderError as exc:  # a control character
        line = text.count("\n", 0, max(exc.position, 0)) + offset
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        raise FindingError(
            path,
            line,
            f"invalid YAML in front matter: control character U+{ord(char):04X} is not allowed; "
            "remove it",
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + offset if mark else offset - 1
        problem = exc.problem or exc.context or "not valid YAML"
        if exc.problem and exc.context and exc.context_mark:
            where = exc.context_mark.line + offset
            if where != line:
                problem += f" ({exc.context} on line {where})"
        raise FindingError(path, line, f"invalid YAML in front matter: {problem}") from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise FindingError(path, offset - 1, f"invalid YAML in front matter: {exc}") from None
    return data, node


def _key_lines(node: Any, yaml_lines: list[str], offset: int, path: str) -> _KeyMap:
    """Where each key is (``{"status": 4, "hardware.count": 9, "symptoms.0.class": 13}``).

    Rejects duplicate keys (YAML would silently keep the last) and warns when a ``#`` after a
    plain value turned the end of that value into a comment (``version: main, PR #14311``).
    """
    out = _KeyMap()

    def walk(n: Any, key_path: str) -> None:
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in n.value:
                key = str(key_node.value)
                line = key_node.start_mark.line + offset
                if key in seen:
                    raise FindingError(
                        path,
                        line,
                        f"duplicate key '{key_path}{key}' (first on line {seen[key]})",
                    )
                seen[key] = line
                out.lines[key_path + key] = line
                walk(value_node, f"{key_path}{key}.")
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                out.lines[f"{key_path}{i}"] = item.start_mark.line + offset
                walk(item, f"{key_path}{i}.")
        elif isinstance(n, yaml.ScalarNode) and not n.style and n.value:
            end = n.end_mark
            rest = yaml_lines[end.line][end.column :] if end.line < len(yaml_lines) else ""
            if re.match(r"\s+#", rest):
                out.warnings.append(
                    ParseWarning(
                        path,
                        end.line + offset,
                        f"'{rest.strip()}' is a YAML comment, so it is not part of "
                        f"'{key_path.rstrip('.')}'; put the whole value in quotes",
                        "yaml-comment",
                    )
                )

    walk(node, "")
    return out


@dataclass
class _KeyMap:
    lines: dict[str, int] = field(default_factory=dict)
    warnings: list[ParseWarning] = field(default_factory=list)


# --- free-form notes -----------------------------------------------------------------------------

_LAUNCH_RE = re.compile(
    r"sglang\.launch_server|\bsglang\s+serve\b|\bvllm\s+serve\b|vllm\.entrypoints"
    r"|\btrtllm-serve\b|\bdocker\s+run\b"
)
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
_PROMPT_RE = re.compile(r"^(?:\$|#|>>>)\s+")
_ERROR_RE = re.compile(
    r"error|exception|assert|traceback|failed|fatal|\bnan\b|illegal|out of memory|\boom\b"
    r"|timed? ?out|\bhang|\bhung\b|killed|segmentation fault|core dumped|warning|!!!!",
    re.IGNORECASE,
)
_MAX_SYMPTOMS = 8

_HF_ID_RE = re.compile(r"(?<![\w./-])([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*[A-Za-z0-9])(?![\w/-])")
_HF_URL_RE = re.compile(r"huggingface\.co/([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*[A-Za-z0-9])")
_NOT_MODEL_REPOS = re.compile(
    r"^(sgl-project|vllm-project|NVIDIA/TensorRT-LLM|flashinfer-ai|deepseek-ai/DeepGEMM|pytorch"
    r"|triton-lang|lmsysorg|vllm|nvcr\.io)(/|$)",
    re.I,
)
_FAMILY_RE = re.compile(
    r"\b(?:GLM|Kimi|Qwen|QwQ|DeepSeek|Llama|Mistral|Mixtral|Ministral|gpt-oss|Gemma|Phi"
    r"|MiniMax|Nemotron|Granite|Hunyuan|ERNIE)(?![a-z])[\w.-]*"
    r"(?:[ ](?:[KkVvRr]?\d[\w.-]*))?",
)
_GPU_RE = re.compile(
    r"\b(RTX\s+PRO\s+6000(?:\s+Blackwell)?|RTX\s+\d{4}(?:\s+Ti)?|DGX\s+Spark|GB\d{2,3}"
    r"|B\d{3}|H\d{2,3}|[AV]\d{2,3}|L40S?|MI\d{3}X?)\b"
)
_COUNT_RE = re.compile(r"(\d+)\s*[x×]\s*$")
_SM_TOKEN_RE = re.compile(r"\bsm_?(\d{2,3}[a-z]?)\b", re.I)
_FRAMEWORK_RE = re.compile(r"\b(sglang|vllm|tensorrt[-_ ]llm|trt-?llm)\b", re.I)
_VERSION_RE = re.compile(r"\s+(v?\d+\.\d+(?:\.\d+)?(?:[\w.+-]*[\w+])?|main|nightly)\b")
_QUANT_RE = re.compile(
    r"(?<![A-Za-z])(NVFP4|MXFP4|FP8|FP4|INT4|INT8|AWQ|GPTQ|W4A16|W8A8)(?![A-Za-z])", re.I
)
_DATE_RE = re.compile(r"\b(20\d{2}-\d{2}-\d{2})\b")
_STATUS_LABEL_RE = re.compile(
    r"^\W*status\W*:\s*\W*(works with flags|works-with-flags|works|broken|partial)\b", re.I | re.M
)
# A cue's last occurrence in the prose decides the status: stories tell failure, then the fix.
_STATUS_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "broken",
        re.compile(
            r"\b(?:does(?:n't| not) work|not working|doesn't start|did(?:n't| not) (?:fix|help)"
            r"|(?:not|never) (?:fixed|resolved)|unresolved|still (?:fails|crashes|broken|hangs)"
            r"|broken|fails|failed|crash(?:es|ed)?)\b",
            re.I,
        ),
    ),
    (
        "partial",
        re.compile(
            r"\b(?:partial(?:ly)?|intermittent(?:ly)?|sometimes)(?: works?| working)?\b", re.I
        ),
    ),
    ("works", re.compile(r"\b(?:works|working|worked|fixed|resolved|solved)\b", re.I)),
)
_NO_EFFECT_RE = re.compile(
    r"no (?:effect|difference|change)|did(?:n't| not) (?:help|change|matter)|without effect"
    r"|same (?:crash|error|failure|result)|useless",
    re.I,
)
_FIX_CUE_RE = re.compile(
    r"\b(?:fix(?:ed|es)?|resolv\w*|solv\w*|add(?:ing|ed)?|switch(?:ing|ed)?|forc(?:e|ing|ed)"
    r"|set(?:ting)?|works? (?:only )?with|export(?:ing)?)\b",
    re.I,
)
_ROOT_CAUSE_RE = re.compile(r"^\W*(?:root cause|cause)\W*:\s*(.+)", re.I | re.S)


@dataclass
class _Section:
    title: str
    line: int  # 1-based line of the heading
    body: str
    prose: list[str] = field(default_factory=list)  # paragraphs and list items, markdown inline
    code_spans: list[tuple[int, str]] = field(default_factory=list)  # (prose index, code)
    fences: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)
    sub_root_cause: str | None = None


def parse_free_form(text: str, path: str) -> ParseResult:
    """One finding per ``##`` section of a notes file without front matter."""
    sections = _free_sections(text)
    if not sections:
        raise FindingError(
            path,
            1,
            "no front matter and no '## ' sections, so nothing to read; "
            "see findings/README.md for the format",
        )
    stem = Path(path).stem
    findings: list[Finding] = []
    warnings: list[ParseWarning] = []
    used: set[str] = set()
    for sec in sections:
        finding, missing = _section_finding(sec, path, _unique_slug(f"{stem} {sec.title}", used))
        findings.append(finding)
        if missing:
            msg = f"free-form section '{sec.title}': could not find {', '.join(missing)}"
            if "status" in missing:
                msg += f" (assumed {finding.status})"
            warnings.append(ParseWarning(path, sec.line, msg, "free-form-missing"))
    return ParseResult(tuple(findings), tuple(warnings))


def _free_sections(text: str) -> list[_Section]:
    tokens = markdown_parser().parse(text)
    lines = text.split("\n")
    heads = [i for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag in ("h1", "h2")]
    out = []
    for n, i in enumerate(heads):
        tok = tokens[i]
        if tok.tag != "h2" or tok.map is None:
            continue
        stop = heads[n + 1] if n + 1 < len(heads) else len(tokens)
        end_line = tokens[stop].map[0] if stop < len(tokens) and tokens[stop].map else len(lines)
        sec = _Section(
            title=heading_text(tokens[i + 1]) or f"section on line {tok.map[0] + 1}",
            line=tok.map[0] + 1,
            body=clean_block("\n".join(lines[tok.map[1] : end_line])),
        )
        _collect(tokens[i + 3 : stop], sec)  # skip heading_open, inline, heading_close
        out.append(sec)
    return out


def _collect(tokens: list[Any], sec: _Section) -> None:
    quote_depth = 0
    in_heading = False
    sub_heading: str | None = None  # the ### heading the tokens are under, lower-case
    for tok in tokens:
        kind = tok.type
        if kind == "blockquote_open":
            quote_depth += 1
        elif kind == "blockquote_close":
            quote_depth -= 1
        elif kind == "heading_open":
            in_heading = True
        elif kind == "heading_close":
            in_heading = False
        elif kind in ("fence", "code_block"):
            (sec.quotes if quote_depth else sec.fences).append(tok.content)
        elif kind == "inline":
            if in_heading:
                sub_heading = heading_text(tok).rstrip(":").strip().lower()
            elif quote_depth:
                sec.quotes.append(tok.content)
            else:
                if sub_heading in ("root cause", "cause", "why") and sec.sub_root_cause is None:
                    sec.sub_root_cause = tok.content.strip()
                index = len(sec.prose)
                sec.prose.append(tok.content)
                for child in tok.children or []:
                    if child.type == "code_inline":
                        sec.code_spans.append((index, child.content.strip()))


@dataclass
class _Command:
    text: str  # verbatim, continuation lines included
    env: dict[str, str]
    # (normalised name, as written: "--tp 8" / "--x=y" / "--switch", value or None)
    flags: list[tuple[str, str, str | None]]
    model: str | None
    framework: str | None


def _section_finding(sec: _Section, path: str, fid: str) -> tuple[Finding, list[str]]:
    prose = "\n".join(sec.prose)
    plain = _strip_code_spans(prose)
    commands: list[_Command] = []
    log_lines: list[str] = []
    for fence in sec.fences:
        cmds, rest = _split_launch_block(fence)
        commands.extend(cmds)
        log_lines.extend(rest)
    for quote in sec.quotes:
        log_lines.extend(quote.split("\n"))

    # Fix: the difference between the first and last launch command, else what the prose says.
    fix = Fix()
    failing = working = None
    if len(commands) >= 2:
        failing, working = commands[0], commands[-1]
        fix = _diff(failing, working)
    tried: list[str] = []
    prose_add: list[str] = []
    prose_env: list[str] = []
    for index, code in sec.code_spans:
        sentence = _sentence_with(sec.prose[index], code)
        if _NO_EFFECT_RE.search(sentence):
            if code.startswith("-") or _ENV_RE.match(code):
                tried.append(code)
        elif _FIX_CUE_RE.search(sentence):
            if code.startswith("--"):
                prose_add.append(code)
            elif _ENV_RE.match(code):
                prose_env.append(code)
    if fix.is_empty() and (prose_add or prose_env):
        fix = Fix(add=tuple(_dedupe(prose_add)), env=tuple(_dedupe(prose_env)))

    status, status_found = _status(plain, flags_found=not fix.is_empty() or bool(commands))
    if len(commands) == 1:
        if status == "broken":
            failing = commands[0]
        else:
            working = commands[0]
            if fix.is_empty() and commands[0].env:
                fix = Fix(env=tuple(f"{k}={v}" for k, v in commands[0].env.items()))

    model = _model(sec.title, plain, commands)
    gpu, count = _gpu(sec.title + "\n" + plain)
    sm_match = _SM_TOKEN_RE.search(sec.title + "\n" + plain)
    framework = _framework(plain, commands, sec.title)
    quant = _quantization(commands, model)
    date_match = _DATE_RE.search(sec.title + "\n" + plain)
    date = date_match.group(1) if date_match and _valid_date(date_match.group(1)) else None
    symptoms = _symptoms(log_lines)
    root_cause = sec.sub_root_cause
    if root_cause is None:
        for para in sec.prose:
            m = _ROOT_CAUSE_RE.match(para)
            if m:
                root_cause = " ".join(m.group(1).split())
                break

    finding = Finding(
        id=fid,
        title=sec.title,
        status=status,
        date=date,
        model=model,
        quantization=quant,
        hardware=Hardware(
            gpu=gpu, count=count, sm=f"sm{sm_match.group(1).lower()}" if sm_match else None
        ),
        framework=framework,
        symptoms=symptoms,
        root_cause=root_cause,
        fix=fix,
        failing_command=failing.text if failing else None,
        working_command=working.text if working else None,
        tried_without_effect=tuple(_dedupe(tried)),
        body=sec.body,
        path=path,
        line=sec.line,
    )
    missing = []
    if not model:
        missing.append("model")
    if not gpu and not sm_match:
        missing.append("gpu")
    if not framework.name:
        missing.append("framework")
    if not status_found:
        missing.append("status")
    if not symptoms and status != "works":
        missing.append("symptoms")
    return finding, missing


def _split_launch_block(content: str) -> tuple[list[_Command], list[str]]:
    """Launch commands of a fenced block, and its other (log) lines."""
    logical: list[str] = []
    current: list[str] = []
    for raw in content.split("\n"):
        current.append(raw)
        if raw.rstrip().endswith("\\"):
            continue
        logical.append("\n".join(current))
        current = []
    if current:
        logical.append("\n".join(current))

    commands: list[_Command] = []
    others: list[str] = []
    pending_env: dict[str, str] = {}
    building: list[str] | None = None

    def finish() -> None:
        nonlocal building, pending_env
        if building is not None:
            commands.append(_command("\n".join(building), pending_env))
            building, pending_env = None, {}

    for chunk in logical:
        stripped = _PROMPT_RE.sub("", chunk.strip())
        if _LAUNCH_RE.search(stripped):
            finish()
            building = [stripped]
        elif building is not None and stripped.startswith("--"):
            building.append(chunk.rstrip())
        else:
            finish()
            env = _env_line(stripped)
            if env:
                pending_env.update(env)
            elif stripped:
                others.extend(x.strip() for x in chunk.split("\n") if x.strip())
    finish()
    return commands, others


def _env_line(line: str) -> dict[str, str] | None:
    """``export A=1 B=2`` or ``A=1``: the assignments, else None."""
    words = line.split()
    if words and words[0] == "export":
        words = words[1:]
    if words and all(_ENV_RE.match(w) for w in words):
        return dict(w.split("=", 1) for w in words)
    return None


def _command(text: str, env: dict[str, str]) -> _Command:
    flat = re.sub(r"\\\n", " ", text)
    try:
        words = shlex.split(flat)
    except ValueError:
        words = flat.split()
    env = dict(env)
    while words and _ENV_RE.match(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    flags: list[tuple[str, str, str | None]] = []
    model = None
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word.partition("=")
            key = name.lower().replace("_", "-")
            if eq:
                val: str | None = value
                flags.append((key, word, val))
            elif i + 1 < len(words) and (
                not words[i + 1].startswith("-") or re.match(r"-\d", words[i + 1])
            ):
                val = words[i + 1]
                flags.append((key, f"{word} {val}", val))
                i += 1
            else:
                val = None
                flags.append((key, word, None))
            if key in ("--model-path", "--model") and val:
                model = val
        elif word in ("serve", "trtllm-serve") and model is None and i + 1 < len(words):
            nxt = words[i + 1]
            if not nxt.startswith("-"):
                model = nxt
        i += 1
    match = _FRAMEWORK_RE.search(flat)
    framework = normalise_framework(match.group(1)) if match else None
    return _Command(text=text.strip(), env=env, flags=flags, model=model, framework=framework)


def _diff(failing: _Command, working: _Command) -> Fix:
    before = {key: written for key, written, _ in failing.flags}
    after = {key for key, _, _ in working.flags}
    add = [written for key, written, _ in working.flags if before.get(key) != written]
    remove = [
        re.split(r"[ =]", written, maxsplit=1)[0]
        for key, written, _ in failing.flags
        if key not in after
    ]
    env = [f"{k}={v}" for k, v in working.env.items() if failing.env.get(k) != v]
    return Fix(add=tuple(_dedupe(add)), remove=tuple(_dedupe(remove)), env=tuple(env))


def _status(plain: str, *, flags_found: bool) -> tuple[str, bool]:
    label = _STATUS_LABEL_RE.search(plain)
    if label:
        word = label.group(1).lower().replace(" ", "-")
        return word, True
    best: tuple[int, str] | None = None
    masked = plain
    for status, pattern in _STATUS_CUES:  # earlier patterns claim their text first
        for m in pattern.finditer(masked):
            if best is None or m.start() > best[0]:
                best = (m.start(), status)
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    if best is None:
        return "partial", False
    status = best[1]
    if status == "works" and flags_found:
        status = "works-with-flags"
    return status, True


def _model(title: str, plain: str, commands: list[_Command]) -> str | None:
    for cmd in reversed(commands):
        if cmd.model:
            return cmd.model
    for text in (title, plain):
        for m in list(_HF_URL_RE.finditer(text)) + list(_HF_ID_RE.finditer(text)):
            candidate = m.group(1).rstrip(".")
            name = candidate.split("/", 1)[1]
            if _NOT_MODEL_REPOS.match(candidate) or "-" not in name:
                continue
            if not re.search(r"\d|[A-Z]", name):
                continue
            return candidate
    for text in (title, plain):
        m = _FAMILY_RE.search(text)
        if m:
            return m.group(0).rstrip(".,:;)")
    return None


def _gpu(text: str) -> tuple[str | None, int | None]:
    m = _GPU_RE.search(text)
    if not m:
        return None, None
    count = _COUNT_RE.search(text[: m.start()][-8:])
    return " ".join(m.group(1).split()), int(count.group(1)) if count else None


def _framework(plain: str, commands: list[_Command], title: str) -> Framework:
    name = next((c.framework for c in reversed(commands) if c.framework), None)
    version = None
    for text in (title, plain):
        for m in _FRAMEWORK_RE.finditer(text):
            found = normalise_framework(m.group(1))
            if name is None:
                name = found
            if found == name and version is None:
                v = _VERSION_RE.match(text, m.end())
                if v:
                    version = v.group(1)
    return Framework(name=name, version=version)


def _quantization(commands: list[_Command], model: str | None) -> str | None:
    for cmd in reversed(commands):
        for key, _, value in cmd.flags:
            if key == "--quantization" and value:
                return value
    if model:
        m = _QUANT_RE.search(model)
        if m:
            return m.group(1).lower()
    return None


def _symptoms(lines: list[str]) -> tuple[Symptom, ...]:
    out: list[Symptom] = []
    seen: set[str] = set()
    for raw in lines:
        text = raw.strip()
        if not text or text in seen or not _ERROR_RE.search(text):
            continue
        seen.add(text)
        cls = classify_symptom(text) or "crash"
        out.append(Symptom(cls=cls, text=text))
        if len(out) == _MAX_SYMPTOMS:
            break
    return tuple(out)


def _strip_code_spans(text: str) -> str:
    return re.sub(r"`[^`\n]*`", " ", text)


def _sentence_with(paragraph: str, code: str) -> str:
    """The sentence of ``paragraph`` that holds the code span ``code``."""
    pos = paragraph.find(code)
    if pos < 0:
        return paragraph
    starts = [0] + [m.end() for m in re.finditer(r"[.!?](?=\s+[A-Z(])", paragraph[:pos])]
    end = re.search(r"[.!?](?=\s+[A-Z(]|\s*$)", paragraph[pos + len(code) :])
    stop = pos + len(code) + end.end() if end else len(paragraph)
    return paragraph[starts[-1] : stop]


def _valid_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def slugify(text: str, max_len: int = 80) -> str:
    """``"FINDINGS Kimi K2 on B200"`` -> ``"findings-kimi-k2-on-b200"``."""
    slug = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    if len(slug) > max_len:
        slug = slug[:max_len].rsplit("-", 1)[0].strip("-.")
    return slug or "finding"


def _unique_slug(text: str, used: set[str]) -> str:
    base = slugify(text)
    slug, n = base, 2
    while slug in used:
        slug, n = f"{base}-{n}", n + 1
    used.add(slug)
    return slug
