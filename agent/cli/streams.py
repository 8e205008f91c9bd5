"""What the commands say on stderr around their data: stdout carries only the answer."""

from __future__ import annotations

import io
import sys
from typing import IO, Any

STDIN_PROMPT = (
    "deploykb: reading the log from the terminal: paste it, then press Ctrl-D on a new line "
    "to finish (Ctrl-C cancels)"
)


def stdin_for(text: str | None, stdin: IO[Any] | None = None) -> IO[Any] | Pasted:
    """The stream ``-`` reads. Piped: ``stdin`` itself, streamed. On a terminal (nothing piped
    in): say on stderr that it waits and how to finish, then read up to the first Ctrl-D (a
    terminal signals end of input once; a reader that asks again would wait for a second one)."""
    stdin = sys.stdin if stdin is None else stdin
    if text != "-":
        return stdin
    try:
        interactive = stdin.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: nothing to wait for
        return stdin
    if not interactive:
        return stdin
    print(STDIN_PROMPT, file=sys.stderr, flush=True)
    buffer = getattr(stdin, "buffer", None)
    data = buffer.read() if buffer is not None else stdin.read().encode("utf-8", "replace")
    return Pasted(data)


class Pasted:
    """What was pasted on the terminal, read the way piped stdin is: bytes under ``buffer``.

    Not a ``TextIOWrapper`` over the bytes: a wrapper nobody keeps (``read_input(text, log,
    stdin_for(text))``) is collected at once and closes the buffer that the log stream reads
    later ("I/O operation on closed file")."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)

    def isatty(self) -> bool:
        return False
