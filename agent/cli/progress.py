"""Long work, said on stderr: the embedding progress bar (on a terminal only) and the wait for an
index another process is writing. stdout stays the data's."""

from __future__ import annotations

import sys
from typing import Any


class ProgressBar:
    """A rich progress bar on stderr, started on the first embedding batch, only on a terminal."""

    def __init__(self) -> None:
        self._progress: Any = None
        self._task: Any = None

    def update(self, done: int, total: int, label: str) -> None:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            console = Console(stderr=True)
            if not console.is_terminal:
                self._progress = False
                return
            self._progress = Progress(
                TextColumn("embedding"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                console=console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(label, total=total)
        if self._progress:
            self._progress.update(self._task, completed=done, description=label)

    def stop(self) -> None:
        if self._progress:
            self._progress.stop()


def say_waiting(message: str) -> None:
    print(f"deploykb: {message}...", file=sys.stderr, flush=True)
