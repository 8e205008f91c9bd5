"""Layout that survives an 80-column terminal, for every command's human output.

Every indented line is a two-column grid (prefix, body): a body that wraps continues under its
own first word, not at the left edge. Launch commands wrap between shell words and end each
continued line with `` \\``, so what is shown pastes into a shell as one command.
"""

from __future__ import annotations

import os


def paragraphs(text: str) -> list[str]:
    """Markdown paragraphs, each as one line (the renderer wraps them to the terminal)."""
    return [" ".join(p.split()) for p in text.strip().split("\n\n") if p.strip()]


class Hang:
    """``prefix`` then ``body``; wrapped lines of the body keep its indent. A word wider than
    the line is folded, never cut; no trailing spaces."""

    def __init__(self, prefix, body) -> None:  # type: ignore[no-untyped-def]
        from rich.text import Text

        self.prefix = Text.from_markup(prefix) if isinstance(prefix, str) else prefix
        self.body = Text.from_markup(body) if isinstance(body, str) else body

    def __rich_console__(self, console, options):  # type: ignore[no-untyped-def]
        from rich.text import Text

        indent = self.prefix.cell_len
        room = max(options.max_width - indent, 10)
        for i, line in enumerate(self.body.wrap(console, room, overflow="fold")):
            line.rstrip()
            yield (self.prefix.copy() if i == 0 else Text(" " * indent)) + line


def print_whole(console, text) -> None:  # type: ignore[no-untyped-def]
    """``text`` (a ``Text`` or a string) on its own line as it is, never folded or cut, even when
    it is wider than the console: an id the user copies must stay one word (the terminal may
    wrap what it shows; what is copied is whole)."""
    from rich.text import Text

    console.print(text if isinstance(text, Text) else Text(text), soft_wrap=True)


def hang(prefix, body) -> Hang:  # type: ignore[no-untyped-def]
    """``prefix`` then ``body`` (rich markup strings or ``Text``), the body wrapped under itself."""
    return Hang(prefix, body)


def shell_words(command: str) -> list[str]:
    """``command`` split at the spaces outside quotes; each word keeps its quotes as written."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    escaped = False
    for ch in command.strip():
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            current.append(ch)
            escaped = True
        elif quote:
            current.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            current.append(ch)
            quote = ch
        elif ch.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def shell_lines(command: str, width: int, indent: int = 2) -> list[str]:
    """``command`` in lines of at most ``width`` cells: breaks between shell words, each continued
    line ending in `` \\`` and the lines after the first indented by 2 more. A word longer than
    the width stands alone on its line."""
    if "\n" in command.strip():  # written on several lines already: keep the author's layout
        return [ln.rstrip() for ln in command.strip().splitlines()]
    lines: list[str] = []
    line = ""
    for word in shell_words(command):
        lead = "" if not lines else " " * indent
        candidate = f"{line} {word}" if line else f"{lead}{word}"
        room = width - 2  # keep space for " \"
        if line and len(candidate) > room:
            lines.append(line + " \\")
            line = f"{' ' * indent}{word}"
        else:
            line = candidate
    if line or not lines:
        lines.append(line)
    return lines


class ShellCommand:
    """A launch command, indented, wrapped between words with `` \\`` continuations."""

    def __init__(self, command: str, indent: int = 2, style: str = "") -> None:
        self.command = command
        self.indent = indent
        self.style = style

    def __rich_console__(self, console, options):  # type: ignore[no-untyped-def]
        from rich.text import Text

        pad = " " * self.indent
        for line in shell_lines(self.command, max(options.max_width - self.indent, 20)):
            yield Text(pad + line, style=self.style, overflow="fold")

    def __rich_measure__(self, console, options):  # type: ignore[no-untyped-def]
        from rich.measure import Measurement

        longest = max((len(w) for w in shell_words(self.command)), default=0) + self.indent
        return Measurement(min(longest, options.max_width), options.max_width)


def group(items):  # type: ignore[no-untyped-def]
    """Markup strings and renderables, one after the other (for a Panel)."""
    from rich.console import Group
    from rich.text import Text

    return Group(*(Text.from_markup(x) if isinstance(x, str) else x for x in items))


def stdout_console():  # type: ignore[no-untyped-def]
    """stdout console; when piped (not a terminal) lines are not cut at 80 columns."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console
