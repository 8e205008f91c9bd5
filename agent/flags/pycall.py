"""Engines started from Python: ``sgl.Engine(...)``, ``LLM(...)``, ``EngineArgs(...)``.

Each keyword argument is read as the flag of the same name (``tensor_parallel_size=2`` is
``--tensor-parallel-size 2``), canonical through the registry like a command line's flags.
"""

from __future__ import annotations

import ast
import re

from agent.flags.layout import EnvSpan, FlagSpan, Layout, launch_config
from agent.flags.scan import is_model_flag
from agent.flags.tokens import line_indent, snippet
from agent.registry import Registry
from kb.errors import CommandParseError
from kb.frameworks import normalise_framework
from kb.records import Flag, LaunchConfig

PY_CALL = re.compile(
    r"(?<![\w.])((?:[A-Za-z_]\w*\.)*(?:Engine|LLM|EngineArgs|AsyncEngineArgs|ServerArgs))\s*\("
)
_ENVIRON = re.compile(
    r"os\.environ(?:\[\s*['\"](\w+)['\"]\s*\]\s*=|\.setdefault\(\s*['\"](\w+)['\"]\s*,)\s*"
    r"['\"]([^'\"]*)['\"]\)?"
)

# (name, value source, value, start, end, value start) of one keyword argument
_Keyword = tuple[str, str, "str | None", int, int, int]


def scan_python(
    text: str, m: re.Match[str], framework: str | None, reg: Registry, source: str
) -> LaunchConfig:
    """The engine call ``m`` found in ``text``, as a launch command."""
    func = m.group(1)
    short = func.rsplit(".", 1)[-1]
    if short in ("LLM", "EngineArgs", "AsyncEngineArgs"):
        fw: str | None = "vllm"
    elif short == "ServerArgs" or "sgl" in func.lower() or "sglang" in text:
        fw = "sglang"
    else:
        fw = normalise_framework(framework) or "sglang"
    open_idx = m.end() - 1
    close_idx = _match_paren(text, open_idx)
    if close_idx is None:
        raise CommandParseError(
            f'{source}: unbalanced parenthesis in "{snippet(text[m.start() :])}"'
        )
    base = open_idx + 1
    args_text = text[base:close_idx]
    kwargs = _py_keywords(args_text, base)
    quotes = [src[0] for _, src, _, _, _, _ in kwargs if src[:1] in ("'", '"')]
    items: list[FlagSpan] = []
    model = None
    for name, _source, value, start, end, vstart in kwargs:
        canon = reg.canonical("--" + name, fw)
        is_model = name in ("model_path", "model") or is_model_flag(canon, fw)
        items.append(
            FlagSpan(
                flag=Flag(name=canon, value=value, written=text[start:end]),
                start=start,
                end=end,
                name_written=name,
                prev_end=items[-1].end if items else start,
                value_start=vstart,
                value_end=end,
                style="kwarg",
                is_model=is_model,
            )
        )
        if is_model:
            model = value
    layout = Layout(
        style="python",
        items=tuple(items),
        envs=tuple(_py_env(text)),
        py_quote=quotes[0] if quotes else '"',
        **_insertion(text, items, base, close_idx),
    )
    return launch_config(text, fw, func, model, layout, reg)


def _insertion(text: str, items: list[FlagSpan], base: int, close_idx: int) -> dict:
    """Where a new keyword argument goes and what surrounds it, in the call's own layout."""
    if not items:
        return {"insert_at": base, "flag_sep": ""}
    last = items[-1]
    if "\n" not in text[base:close_idx]:
        return {"insert_at": last.end, "flag_sep": ", "}
    indent = line_indent(text, last.start)
    eol = text.find("\n", last.end)
    eol = close_idx if eol < 0 or eol > close_idx else eol
    if text[last.end : eol].lstrip().startswith(","):  # a trailing comma after each argument
        return {"insert_at": eol, "flag_sep": "\n" + indent, "flag_suffix": ","}
    return {"insert_at": last.end, "flag_sep": ",\n" + indent}


def _match_paren(text: str, open_idx: int) -> int | None:
    depth, i, quote = 0, open_idx, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#":
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _py_env(text: str) -> list[EnvSpan]:
    return [
        EnvSpan(
            m.group(1) or m.group(2), m.group(3), m.start(), m.end(), "python", m.start(), m.end()
        )
        for m in _ENVIRON.finditer(text)
    ]


def _py_keywords(args_text: str, base: int) -> list[_Keyword]:
    """The call's keyword arguments, read by ``ast``; by a pattern when it does not parse."""
    try:
        return _ast_keywords(args_text, base)
    except (SyntaxError, AssertionError, ValueError):
        pass
    out = []
    for km in re.finditer(
        r"(?<![\w.])([A-Za-z_]\w*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,\n)#]+)", args_text
    ):
        source = km.group(2).strip()
        try:
            value = py_value(ast.parse(source, mode="eval").body, source)
        except SyntaxError:
            value = source
        start, end = base + km.start(), base + km.start(2) + len(source)
        out.append((km.group(1), source, value, start, end, base + km.start(2)))
    return out


def _ast_keywords(args_text: str, base: int) -> list[_Keyword]:
    call = ast.parse("f(\n" + args_text + "\n)", mode="eval").body
    assert isinstance(call, ast.Call)
    lines = ("f(\n" + args_text + "\n)").splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def pos(lineno: int, col: int) -> int:
        line = lines[lineno - 1]
        chars = len(line.encode("utf-8")[:col].decode("utf-8", "ignore"))
        return base + offsets[lineno - 1] + chars - 3  # drop the synthetic "f(\n"

    out = []
    for kw in call.keywords:
        if kw.arg is None or kw.end_lineno is None or kw.value.end_lineno is None:
            continue
        start = pos(kw.lineno, kw.col_offset)
        end = pos(kw.end_lineno, kw.end_col_offset or 0)
        vstart = pos(kw.value.lineno, kw.value.col_offset)
        source = args_text[vstart - base : end - base]
        out.append((kw.arg, source, py_value(kw.value, source), start, end, vstart))
    return out


def py_value(node: ast.expr, source: str) -> str | None:
    """A keyword argument's value as a flag value: ``True`` a switch on (None), ``False``
    ``"false"``, a constant its text, anything else its source."""
    if isinstance(node, ast.Constant):
        if node.value is True:
            return None
        if node.value is False:
            return "false"
        return str(node.value)
    return source
