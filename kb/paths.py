"""Where the index lives and which folders are indexed. Precedence: flag > environment > default."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kb.resources import shipped_findings_dir


def default_db_path() -> Path:
    """Per-user default: ``$XDG_DATA_HOME/deploykb/deploykb.db`` (``~/.local/share/...``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "deploykb" / "deploykb.db"


def resolve_db_path(db: Path | str | None) -> Path:
    """``--db`` (typer already folds in ``DEPLOYKB_DB``), else the per-user default."""
    return Path(db).expanduser() if db else default_db_path()


def findings_dirs(extra: list[Path] | None = None, include_shipped: bool = True) -> list[Path]:
    """The shipped knowledge base plus the team folders named by ``--findings``/``DEPLOYKB_FINDINGS``."""
    dirs: list[Path] = [shipped_findings_dir()] if include_shipped else []
    for d in extra or []:
        p = Path(d).expanduser()
        if p.resolve() not in {x.resolve() for x in dirs}:
            dirs.append(p)
    return dirs


def under(key: str, scopes: Sequence[Path]) -> bool:
    """``key`` (a resolved path) is one of the resolved ``scopes`` or inside one: what
    ``Path.parents`` says, by string prefix (building the parents costs more than the walk)."""
    for scope in scopes:
        root = str(scope)
        if key == root or key.startswith(root if root.endswith(os.sep) else root + os.sep):
            return True
    return False
