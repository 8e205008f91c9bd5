"""The index as ``ask`` needs it: present and current, built on the spot when it is not."""

from __future__ import annotations

import sys
from pathlib import Path

from kb.errors import KBIndexError
from kb.paths import findings_dirs, resolve_db_path


def ready_index(db: Path | None, findings: list[Path] | None, embedder: str = "auto"):
    """Open the index; when it is missing, empty or stale, (re)build it from the findings folders.

    A fresh install answers from the shipped findings with no set-up: the first ``ask`` builds the
    index (a few seconds with the NumPy runtime) and says so on stderr.
    """
    from agent.commands.kbcmds import expected_embedder_name, split_dirs
    from kb.store import check_index, open_db

    path = resolve_db_path(db)
    database = open_db(path)
    name = expected_embedder_name(embedder)
    try:
        check_index(database, name)
        return database
    except KBIndexError as exc:
        reason = str(exc).split("; run")[0]
    from kb.embed import load_embedder
    from kb.ingest import ingest

    dirs = findings_dirs(split_dirs(findings))
    print(
        f"deploykb: {reason}; building it from {len(dirs)} findings folder(s)...", file=sys.stderr
    )
    from agent.commands.kbcmds import ProgressBar

    bar = ProgressBar()
    try:
        report = ingest(
            database, dirs, lambda: load_embedder(embedder), progress=bar.update, embedder_name=name
        )
    finally:
        bar.stop()
    for error in report.errors:
        print(f"warning: {error}", file=sys.stderr)
    check_index(database, name)
    return database
