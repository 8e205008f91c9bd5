"""One exception family. The CLI catches ``DeployKBError`` once and prints ``str(exc)`` on one line."""

from __future__ import annotations


def located(path: str, line: int | None, message: str) -> str:
    """``path:line: message`` (``path: message`` when the line is unknown): how every problem
    with a file is reported. A control character from the file (a value in the message, the
    file's name) is written out as ``\\xNN``, never sent to the terminal."""
    from kb.redact import neutralise

    return neutralise(f"{path}:{line}: {message}" if line else f"{path}: {message}")


class DeployKBError(Exception):
    """Base class: the message is a complete, one-line, actionable sentence."""

    exit_code = 1


class FindingError(DeployKBError):
    """A finding file is invalid. Renders as ``path:line: message``."""

    exit_code = 2

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(located(self.path, line, message))


class FindingExistsError(DeployKBError):
    """A finding file of that name exists already (``path``): it is never overwritten silently."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class KBIndexError(DeployKBError):
    """The SQLite index is missing, stale or unreadable. ``reason`` is the message without the
    advice (what ``ask`` prints when it rebuilds the index itself)."""

    exit_code = 3

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class EmbeddingError(DeployKBError):
    """The embedding model cannot be loaded or run."""

    exit_code = 3


class ConfigFetchError(DeployKBError):
    """A model's config.json could not be read (local) or fetched (Hub)."""

    exit_code = 4


class HubOfflineError(ConfigFetchError):
    """HF_HUB_OFFLINE is set and the model's config.json is not cached: the user's choice, not a
    failure."""


class ModelNotFoundError(ConfigFetchError):
    """The Hub answered that the model (or its config.json) does not exist: bad input, not a
    network failure."""


class InputError(DeployKBError):
    """User input (a log, a command, an option value) is unusable."""

    exit_code = 2


class CommandParseError(InputError):
    """A launch command could not be parsed."""


class ExportError(DeployKBError):
    """An export could not be produced or written."""

    exit_code = 2
