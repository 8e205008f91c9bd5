"""One reader for the small JSON data files the code reads (``data/*.json``), with one error policy.

A missing or broken shipped data file is a bug in the installation, reported in one line naming the
file (and the line of a JSON syntax error), never a traceback.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from kb.errors import DeployKBError
from kb.resources import data_file


def read_json(path: Path) -> Any:
    """Parse one JSON file; errors name the file and line."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DeployKBError(f"{path}: data file not found") from None
    except OSError as exc:
        raise DeployKBError(f"{path}: cannot read data file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise DeployKBError(f"{path}: data file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise DeployKBError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


@lru_cache(maxsize=None)
def load_json_data(name: str) -> Any:
    """A shipped data file by name (``"components.json"``), read once per process."""
    return read_json(data_file(name))
