"""Where shipped files live, for a source checkout and for an installed wheel alike.

A wheel carries ``findings/`` and ``data/*.json`` under ``kb/_shipped/`` (see pyproject's
force-include); a source checkout or editable install reads them from the repository root.
"""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent
_SHIPPED = _PKG / "_shipped"
_REPO = _PKG.parent


def shipped_findings_dir() -> Path:
    """The embedded default knowledge base."""
    packaged = _SHIPPED / "findings"
    return packaged if packaged.is_dir() else _REPO / "findings"


def data_file(name: str) -> Path:
    """A small reference file the code reads (flag registry, architecture traits, GPUs, triage)."""
    packaged = _SHIPPED / "data" / name
    return packaged if packaged.is_file() else _REPO / "data" / name
