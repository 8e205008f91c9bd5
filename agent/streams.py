"""What the commands say on stderr around their data: stdout carries only the answer."""

from __future__ import annotations

import sys
from typing import IO, Any

STDIN_PROMPT = (
    "deploykb: reading the log from the terminal: paste it, then press Ctrl-D on a new line "
    "to finish (Ctrl-C cancels)"
)


def say_if_waiting_for_terminal(text: str | None, stdin: IO[Any] | None = None) -> None:
    """``-`` with stdin on a terminal (nothing piped in) would wait silently: say so on stderr."""
    stdin = sys.stdin if stdin is None else stdin
    if text != "-":
        return
    try:
        interactive = stdin.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: nothing to wait for
        return
    if interactive:
        print(STDIN_PROMPT, file=sys.stderr, flush=True)
