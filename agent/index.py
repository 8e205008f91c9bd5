"""The index as the commands need it: open it, build it, keep it in step with the findings.

Library code for the CLI layer: every command that reads or writes the index goes through here,
so there is one way to name the embedder, split ``--findings``, show progress and ingest.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.errors import KBIndexError
from kb.paths import findings_dirs, resolve_db_path

if TYPE_CHECKING:  # pragma: no cover
    import sqlite_utils

    from kb.ingest import IngestReport


def split_dirs(values: list[Path] | None) -> list[Path]:
    """``--findings`` values; each may hold several folders joined by ``os.pathsep`` (from the
    environment variable)."""
    out: list[Path] = []
    for value in values or []:
        out += [Path(part) for part in str(value).split(os.pathsep) if part]
    return out


def expected_embedder_name(kind: str) -> str | None:
    """The name the embedder of ``kind`` will report, known without loading the model."""
    from kb.embed import DEFAULT_MODEL_NAME, HashEmbedder

    kind = (kind or "auto").lower()
    if kind == "hash":
        return HashEmbedder().name
    override = os.environ.get("DEPLOYKB_EMBED_MODEL")
    if override:
        return Path(override).expanduser().name
    return DEFAULT_MODEL_NAME


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


def build_index(
    database, dirs: list[Path], embedder: str = "auto", *, prune: bool = False
) -> IngestReport:
    """Incremental ingest of ``dirs`` with a progress bar; the model loads only if needed.
    ``prune`` drops findings indexed from folders other than ``dirs``."""
    from agent.search import precompute
    from kb.embed import load_embedder
    from kb.ingest import ingest

    bar = ProgressBar()
    try:
        report = ingest(
            database,
            dirs,
            lambda: load_embedder(embedder, threads=os.cpu_count() or 1),
            progress=bar.update,
            embedder_name=expected_embedder_name(embedder),
            on_wait=_say_waiting,
            prune=prune,
        )
    finally:
        bar.stop()
    precompute(database)  # the match keys of new or changed symptom lines
    return report


def ingest_file(
    path: Path, dirs: list[Path], embedder: str = "auto", *, prune: bool = False
) -> IngestReport:
    """``build_index`` of the index file at ``path``. Nothing to do (every file as indexed, the
    keys current) is found read-only over a plain connection, without opening the file for
    writing or importing sqlite-utils: an unchanged re-ingest costs the walk and the hashes."""
    from agent.search import precomputed
    from kb.ingest import unchanged
    from kb.store import open_db, read_plain

    with read_plain(path) as reader:
        if reader is not None:
            report = unchanged(reader, dirs, expected_embedder_name(embedder), prune=prune)
            try:
                if report is not None and precomputed(reader):
                    return report
            except sqlite3.Error:
                pass  # the way below says what is wrong
    return build_index(open_db(path), dirs, embedder, prune=prune)


def _say_waiting(message: str) -> None:
    print(f"deploykb: {message}...", file=sys.stderr, flush=True)


def open_index(db: Path | None) -> sqlite_utils.Database:
    """The existing, current index for readers; a missing one is an error, not created."""
    from kb.store import check_index, open_db

    path = resolve_db_path(db)
    if not path.is_file():
        raise KBIndexError(f"no index at {path}; run `deploykb ingest`")
    database = open_db(path)
    try:
        check_index(database)
    except sqlite3.DatabaseError as exc:
        raise KBIndexError(
            f"{path}: the index file is damaged ({exc}); delete it and run `deploykb ingest`"
        ) from exc
    return database


def ready_index(db: Path | None, findings: list[Path] | None, embedder: str = "auto"):
    """The index ``ask`` answers from, in step with the shipped and ``--findings`` folders.

    Missing, empty or stale (other parser, schema or model): built on the spot. Otherwise a cheap
    fingerprint of the finding files (paths, mtimes, sizes) tells whether any was added, edited
    or deleted since the last ``ask``; only then does an incremental ingest run.
    """
    from agent.search import line_keys_version
    from kb.ingest import files_fingerprint
    from kb.store import (
        ReadOnlyIndexError,
        check_index,
        get_meta,
        open_db,
        set_meta,
        write_transaction,
    )

    path = resolve_db_path(db)
    database = open_db(path)
    dirs = findings_dirs(split_dirs(findings))
    name = expected_embedder_name(embedder)
    reason = None
    try:
        check_index(database, name)
        stored = get_meta(database, "findings_fingerprint")
    except KBIndexError as exc:
        reason, stored = exc.reason, None
    except sqlite3.DatabaseError as exc:
        raise KBIndexError(
            f"{path}: the index file is damaged ({exc}); delete it and run `deploykb ingest`"
        ) from exc
    fingerprint = files_fingerprint(dirs)
    if (
        reason is None
        and stored == fingerprint
        and get_meta(database, "line_keys") == line_keys_version()
    ):
        return database  # nothing changed: read only, write nothing
    if reason is not None:
        print(
            f"deploykb: {reason}; building it from {len(dirs)} findings folder(s)...",
            file=sys.stderr,
        )
    try:
        report = build_index(database, dirs, embedder)
    except ReadOnlyIndexError as exc:
        if reason is not None:
            raise KBIndexError(
                f"{reason}, and it is read-only; run `deploykb ingest --db {path}` as a user who "
                "can write it, or pass --db with a writable file"
            ) from exc
        print(
            f"warning: findings changed since the index at {path} was built, but it is "
            f"read-only: answering from it as it is. To refresh: `deploykb ingest --db {path}` "
            "as a user who can write it",
            file=sys.stderr,
        )
        return database
    for error in report.errors:
        print(f"warning: {error}", file=sys.stderr)
    for notice in report.notices():
        print(f"note: {notice}", file=sys.stderr)
    if reason is None and report.changed:
        print(
            f"deploykb: re-indexed changed findings ({report.added} added, {report.updated} "
            f"updated, {report.removed} removed)",
            file=sys.stderr,
        )
    check_index(database, name)
    with write_transaction(database, on_wait=_say_waiting):
        set_meta(database, findings_fingerprint=fingerprint)
    return database
