"""One reader for the JSON files the code reads, with one translation of what can go wrong.

The shipped data files (``data/*.json``: :func:`load_json_data`) and the JSON a user hands over (a
model's ``config.json``, a saved ``ask --json`` answer) are read by :func:`read_json`: a missing,
unreadable or broken file is one line naming the file (and the line of a JSON syntax error) in the
error class the caller chooses, never a traceback.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from kb.errors import DeployKBError
from kb.resources import data_file


def read_json(
    path: Path,
    *,
    error: type[DeployKBError] = DeployKBError,
    origin: str | None = None,
    not_json: str | None = None,
) -> Any:
    """Parse one JSON file. Failures raise ``error`` as ``ORIGIN[:LINE]: what went wrong``
    (``origin`` defaults to the path); ``not_json`` replaces the decoder's own words for a file
    that is not JSON (``"not JSON; save it with ..."``: what to do instead)."""
    where = origin or str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{where}: no such file") from None
    except OSError as exc:
        raise error(f"{where}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise error(f"{where}: {not_json or 'not UTF-8 text'}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{where}:{exc.lineno}: {not_json or f'invalid JSON: {exc.msg}'}") from None


@lru_cache(maxsize=None)
def load_json_data(name: str) -> Any:
    """A shipped data file by name (``"components.json"``), read once per process."""
    return read_json(data_file(name))
