"""The index as the commands need it: open it, build it, keep it in step with the findings.

Library code for the CLI layer: every command that reads or writes the index goes through here,
so there is one way to name the embedder, split ``--findings``, show progress and ingest.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agent.cli.progress import ProgressBar, say_waiting
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


def build_index(
    database,
    dirs: list[Path],
    embedder: str = "auto",
    *,
    prune: bool = False,
    fingerprint: str | None = None,
) -> IngestReport:
    """Incremental ingest of ``dirs`` with a progress bar; the model loads only if needed.
    ``prune`` drops findings indexed from folders other than ``dirs``. Records the fingerprint of
    ``dirs`` that ``ready_index`` checks (taken before anything is read, so a file changed
    meanwhile is seen next time), after the match keys: an index made by ``ingest`` is current
    for ``ask``, read-only ones included."""
    from agent.search import precompute
    from kb.embed import load_embedder
    from kb.ingest import files_fingerprint, ingest
    from kb.store import get_meta, set_meta, write_transaction

    if fingerprint is None:
        fingerprint = files_fingerprint(dirs)
    bar = ProgressBar()
    try:
        report = ingest(
            database,
            dirs,
            lambda: load_embedder(embedder, threads=os.cpu_count() or 1),
            progress=bar.update,
            embedder_name=expected_embedder_name(embedder),
            on_wait=say_waiting,
            prune=prune,
        )
    finally:
        bar.stop()
    if getattr(database, "read_only", False):
        return report  # nothing to do (ingest said so) and nothing can be written
    precompute(database)  # the match keys of new or changed symptom lines
    if get_meta(database, "findings_fingerprint") != fingerprint:
        with write_transaction(database, on_wait=say_waiting):
            set_meta(database, findings_fingerprint=fingerprint)
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
    or deleted since the last ``ingest`` or ``ask``, and a look at the files of the other folders
    it holds whether one of those is gone; only then does an incremental ingest run (rows of
    files that are gone are dropped). An index that cannot be written is only read: see
    ``_read_only``.
    """
    from agent.search import line_keys_version
    from kb.ingest import files_fingerprint, gone_findings
    from kb.store import ReadOnlyIndexError, check_index, get_meta, open_db

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
    current = (
        reason is None
        and stored == fingerprint
        and get_meta(database, "line_keys") == line_keys_version()
    )
    if current and not gone_findings(database, dirs):
        _say_outside(database, dirs)  # every time, until `ingest --prune`: they are served
        return database  # nothing changed: read only, write nothing
    if getattr(database, "read_only", False):
        database = _read_only(database, path, dirs, name, reason)
        _say_outside(database, dirs)
        return database
    if reason is not None:
        print(
            f"deploykb: {reason}; building it from {len(dirs)} findings folder(s)...",
            file=sys.stderr,
        )
    try:
        report = build_index(database, dirs, embedder, fingerprint=fingerprint)
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
    return database


def _say_outside(database, dirs: list[Path]) -> None:
    """The note an ingest gives about findings indexed from folders not read now, said on every
    answer that serves them (not only on the one that refreshed the index)."""
    from kb.ingest import IngestReport, outside_folders

    for notice in IngestReport(outside=outside_folders(database, dirs)).notices():
        print(f"note: {notice}", file=sys.stderr)


def _read_only(database, path: Path, dirs: list[Path], name: str | None, reason: str | None):
    """An index nobody here can write, answered from as it is when the findings did not change
    (its fingerprint may differ by a touched file: the files' contents are compared); otherwise
    a warning says how to refresh it. Findings whose file is gone are never served: the answer
    comes from a copy in memory without them (and with fresh match keys when this deploykb
    derives them differently), with a warning on every ``ask``."""
    from agent.search import line_keys_version, precompute
    from kb.ingest import gone_findings, up_to_date
    from kb.store import (
        build_vector_matrix,
        delete_findings,
        get_meta,
        memory_copy,
        write_transaction,
    )

    refresh = f"`deploykb ingest --db {path}` as a user who can write it"
    if reason is not None:
        raise KBIndexError(
            f"{reason}, and it is read-only; run {refresh}, or pass --db with a writable file"
        )
    gone = gone_findings(database)
    if gone or get_meta(database, "line_keys") != line_keys_version():
        database = memory_copy(database)
        with write_transaction(database):
            delete_findings(database, gone)
            build_vector_matrix(database)  # the deletion dropped the copy's matrix of vectors
        precompute(database)
    if gone:
        folders = ", ".join(sorted({str(Path(p).parent) for p in gone.values()}))
        print(
            f"warning: {len(gone)} finding(s) in the index at {path} come from files that are "
            f"gone ({folders}): not served. To remove them: {refresh}",
            file=sys.stderr,
        )
    if not up_to_date(database, dirs, name):
        print(
            f"warning: findings changed since the index at {path} was built, but it is "
            f"read-only: answering from it as it is. To refresh: {refresh}",
            file=sys.stderr,
        )
    return database


def index_with_shipped(folder: Path, db: Path | None, embedder: str = "auto") -> IngestReport:
    """Ingest ``folder`` plus the shipped findings (so the index stays complete), as ``add``
    does after writing a finding there."""
    from kb.store import open_db

    database = open_db(resolve_db_path(db))
    try:
        return build_index(database, findings_dirs([folder]), embedder)
    finally:
        database.close()
