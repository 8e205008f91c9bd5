"""Shell words: a launch command's text as tokens with their positions, quotes resolved.

The scanners (:mod:`agent.flags.scan`) read tokens, not text, and keep each token's span so that
:mod:`agent.flags.apply` can edit the user's own text in place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.errors import CommandParseError

ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
REDIRECT = re.compile(r"^(\d*|&)(>>?|<)(&\d*)?$|^\d*>>?\S+$|^\d*>&\d+$")
_SPACE = " \t\r\f\v"


@dataclass
class Token:
    text: str  # shell-unquoted
    start: int
    end: int
    sep: str | None = None  # "\n", "&&", "||", ";", "|", "&" for separators


def snippet(text: str, limit: int = 40) -> str:
    """``text`` on one line, cut to ``limit`` characters, for error messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def flag_like(text: str) -> bool:
    return text.startswith("-") and text != "-" and not NUMBER.match(text)


def tokenize(text: str, source: str) -> list[Token]:
    """Words and separators; ``\\`` continuations and comments dropped, quotes resolved."""
    toks: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _SPACE:
            i += 1
        elif c == "\\" and (i + 1 >= n or text[i + 1] == "\n"):
            i += 2
        elif c == "\\" and text.startswith("\r\n", i + 1):
            i += 3
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c == "\n":
            toks.append(Token("\n", i, i + 1, sep="\n"))
            i += 1
        elif text.startswith("&&", i) or text.startswith("||", i):
            toks.append(Token(text[i : i + 2], i, i + 2, sep=text[i : i + 2]))
            i += 2
        elif c in ";|" or (c == "&" and not text.startswith("&>", i)):
            toks.append(Token(c, i, i + 1, sep=c))
            i += 1
        else:
            word, i = _word(text, i, source)
            toks.append(word)
    return toks


def _word(text: str, start: int, source: str) -> tuple[Token, int]:
    """The word that starts at ``start`` (quotes and escapes resolved) and the index after it."""
    n, i, buf = len(text), start, []
    while i < n:
        c = text[i]
        if c in " \t\r\n\f\v" or c in ";|":
            break
        if c == "&":
            if not ((buf and buf[-1] in "<>") or text.startswith("&>", i)):
                break
            buf.append(c)
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                buf.append(text[i + 1])
            i += 2 if i + 1 < n else 1
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise _unbalanced(text, start, source)
            buf.append(text[i + 1 : j])
            i = j + 1
        elif c == '"':
            i = _double_quoted(text, i, start, source, buf)
        else:
            buf.append(c)
            i += 1
    return Token("".join(buf), start, i), i


def _double_quoted(text: str, i: int, start: int, source: str, buf: list[str]) -> int:
    """Append the inside of the ``"..."`` opening at ``i`` to ``buf``; the index after it."""
    n, j = len(text), i + 1
    while j < n and text[j] != '"':
        if text[j] == "\\" and j + 1 < n:
            nxt = text[j + 1]
            if nxt == "\n":
                j += 2
                continue
            if nxt in '"\\$`':
                buf.append(nxt)
                j += 2
                continue
        buf.append(text[j])
        j += 1
    if j >= n:
        raise _unbalanced(text, start, source)
    return j + 1


def _unbalanced(text: str, start: int, source: str) -> CommandParseError:
    return CommandParseError(f'{source}: unbalanced quote in "{snippet(text[start:])}"')


def statements(toks: list[Token]) -> list[tuple[list[Token], str | None]]:
    """Split on separators: [(words, separator that ended them)]."""
    out: list[tuple[list[Token], str | None]] = []
    cur: list[Token] = []
    for t in toks:
        if t.sep is not None:
            if cur:
                out.append((cur, t.sep))
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append((cur, None))
    return out


def line_indent(text: str, pos: int) -> str:
    """The spaces and tabs that open the line holding ``pos``."""
    line_start = text.rfind("\n", 0, pos) + 1
    m = re.match(r"[ \t]*", text[line_start:])
    return m.group(0) if m else ""
