"""Incremental ingest: findings folders -> the SQLite index, embedding only what changed.

A file whose hash (bytes + embedder name + parser version) matches the index is not even parsed.
A changed file is parsed, and each of its findings is compared with its indexed row: vectors are
recomputed only for findings whose texts changed (or were embedded by another model). When nothing
needs a vector the embedder factory is never called, so an up-to-date index costs no model load.

All writes happen in one transaction: an error half-way (a failing embedder, Ctrl-C) leaves the
previous index as it was.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb import hubs, store
from kb.document import document_text, symptom_texts
from kb.errors import DeployKBError, EmbeddingError, FindingError, InputError
from kb.paths import under as _under
from kb.records import Finding, ParseWarning
from kb.resources import shipped_findings_dir
from kb.versions import PARSER_VERSION

if TYPE_CHECKING:  # pragma: no cover
    import sqlite_utils

    from kb.embed import Embedder

Progress = Callable[[int, int, str], None]
# texts per embedder call: the embedder sorts them by length into batches (so a symptom line is
# not padded to a document's length), and memory stays bounded however many findings changed
EMBED_WINDOW = 512


@dataclass(frozen=True)
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    embedded: int = 0  # texts embedded in this run
    model: str | None = None  # the embedder used, when one was loaded
    errors: tuple[FindingError, ...] = ()
    warnings: tuple[ParseWarning, ...] = ()
    # folder -> findings indexed from it although it is not among the folders read now
    outside: tuple[tuple[str, int], ...] = ()
    # (old folder, new folder, count): indexed findings whose ids a folder read now redefines
    replaced: tuple[tuple[str, str, int], ...] = ()

    def notices(self) -> list[str]:
        """What a user should know about folders the index holds besides the ones read now."""
        out = [
            f"{n} finding(s) indexed from {old}, which is not among the folders read now, "
            f"replaced by the same ids in {new}"
            for old, new, n in self.replaced
        ]
        if self.outside:
            where = ", ".join(f"{folder} ({n})" for folder, n in self.outside)
            out.append(
                f"the index also holds findings from folders not read now: {where}; "
                "`deploykb ingest --prune` removes them"
            )
        return out

    @property
    def total(self) -> int:
        """Findings indexed from the ingested folders after this run."""
        return self.added + self.updated + self.unchanged

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.embedded)


@dataclass
class _File:
    path: Path  # as walked (for messages)
    key: str  # resolved path (stored in findings.path)
    data: bytes


def files_fingerprint(dirs: list[Path]) -> str:
    """A cheap digest of which finding files exist under ``dirs`` and when they last changed
    (path, mtime, size): equal fingerprints mean an ingest would find nothing to do.

    The same files as ``finding_files``, walked with ``os.scandir`` (one ``stat`` a file, no path
    resolution): a few milliseconds a thousand files."""
    h = hashlib.sha256()

    def walk(folder: str) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir():
                    walk(entry.path)
                elif entry.name.endswith(".md") and entry.name != "README.md" and entry.is_file():
                    st = entry.stat()
                    h.update(f"{entry.path}\t{st.st_mtime_ns}\t{st.st_size}\n".encode())
            except OSError:
                continue

    for root in dirs:
        root = Path(root)
        if root.is_file():
            st = root.stat()
            h.update(f"{root}\t{st.st_mtime_ns}\t{st.st_size}\n".encode())
        elif root.is_dir():
            h.update(f"{root.resolve()}\n".encode())
            walk(str(root.resolve()))
        else:
            raise InputError(f"{root}: no such findings folder")
    return h.hexdigest()


def up_to_date(db: sqlite_utils.Database, dirs: list[Path], embedder_name: str | None) -> bool:
    """An ingest of ``dirs`` would change nothing (read only: hashes, paths, vectors' model)."""
    scopes = [Path(d).resolve() for d in dirs]
    try:
        return _nothing_to_do(db, dirs, scopes, embedder_name) is not None
    except sqlite3.Error:
        return False


def gone_findings(db: sqlite_utils.Database, dirs: Sequence[Path] | None = None) -> dict[str, str]:
    """``id -> path`` of the indexed findings whose file no longer exists (a deleted or moved
    folder). With ``dirs``, only rows from other folders are looked at: ``files_fingerprint``
    already sees a file gone from ``dirs``."""
    where: list[str] = []
    params: list[Any] = []
    for scope in (str(Path(d).resolve()) for d in dirs or ()):
        where.append("path != ? AND substr(path, 1, ?) != ?")
        params += [scope, len(scope) + 1, scope + os.sep]
    sql = "SELECT id, path FROM findings" + (f" WHERE {' AND '.join(where)}" if where else "")
    by_path: dict[str, list[str]] = {}
    for fid, path in db.execute(sql, params).fetchall():
        by_path.setdefault(path, []).append(fid)
    return {fid: path for path, ids in by_path.items() if not os.path.lexists(path) for fid in ids}


def outside_folders(db: sqlite_utils.Database, dirs: Sequence[Path]) -> tuple[tuple[str, int], ...]:
    """``(folder, findings)`` for each folder the index holds findings from that is not among
    ``dirs`` (read only: the paths of the rows), as ``IngestReport.outside`` counts them."""
    scopes = [Path(d).resolve() for d in dirs]
    counts: dict[str, int] = {}
    for (path,) in db.execute("SELECT path FROM findings"):
        if not _under(path, scopes):
            folder = str(Path(path).parent)
            counts[folder] = counts.get(folder, 0) + 1
    return tuple(sorted(counts.items()))


def finding_files(dirs: Sequence[Path]) -> list[Path]:
    """Every ``*.md`` under each dir (or the file itself), README.md and hidden folders excepted.

    Sorted within each dir, dirs in the order given, no file twice.
    """
    return [path for path, _ in finding_keys(dirs)]


def finding_keys(dirs: Sequence[Path]) -> list[tuple[Path, str]]:
    """``finding_files`` with each file's key: its resolved path, as ``findings.path`` stores it.

    One walk with ``os.scandir`` from each resolved folder, like ``Path.rglob`` (symlinked folders
    are not entered; symlinked files are taken): a file reached through no symlink is its folder's
    resolved path plus its name, so only a symlinked file costs a ``resolve()``."""
    out: list[tuple[Path, str]] = []
    seen: set[str] = set()

    def walk(shown: Path, real: str, parts: tuple[str, ...], found: list) -> None:
        try:
            entries = list(os.scandir(real))
        except OSError:
            return
        for entry in entries:
            try:
                if entry.is_dir():
                    if not entry.is_symlink() and not entry.name.startswith("."):
                        walk(shown / entry.name, entry.path, (*parts, entry.name), found)
                elif (
                    entry.name.endswith(".md")
                    and entry.name != "README.md"
                    and not entry.name.startswith(".")
                    and entry.is_file()
                ):
                    key = str(Path(entry.path).resolve()) if entry.is_symlink() else entry.path
                    found.append(((*parts, entry.name), shown / entry.name, key))
            except OSError:
                continue

    for root in dirs:
        root = Path(root)
        if root.is_file():
            candidates = [(root, str(root.resolve()))]
        elif root.is_dir():
            found: list[tuple[tuple[str, ...], Path, str]] = []
            walk(root, str(root.resolve()), (), found)
            found.sort(key=lambda t: t[0])  # the order of sorted(Path, ...): by parts
            candidates = [(path, key) for _, path, key in found]
        else:
            raise InputError(f"{root}: no such findings folder")
        for path, key in candidates:
            if key not in seen:
                seen.add(key)
                out.append((path, key))
    return out


def content_hash(data: bytes, embedder_name: str, parser_version: str) -> str:
    h = hashlib.sha256(data)
    h.update(b"\0" + embedder_name.encode() + b"\0" + parser_version.encode())
    return h.hexdigest()


def id_line(text: str, finding: Finding) -> int | None:
    """The line of ``id: <id>`` in a front-matter file, else where the finding starts."""
    m = re.search(
        rf"^id:[ \t]*(['\"]?){re.escape(finding.id)}\1[ \t]*(#.*)?$", text, flags=re.MULTILINE
    )
    if m:
        return text.count("\n", 0, m.start()) + 1
    return finding.line


def _parts(f: Finding) -> tuple[list[str], list[str]]:
    texts = [document_text(f), *symptom_texts(f)]
    parts = ["doc", *(f"symptom:{i}" for i in range(len(f.symptoms)))]
    return parts, texts


@dataclass
class _Plan:
    accepted: list[tuple[_File, Finding]] = field(default_factory=list)
    need: list[str] = field(default_factory=list)  # ids whose vectors must be (re)computed
    kept: set[str] = field(default_factory=set)  # ids kept as indexed because their file is broken
    errors: list[FindingError] = field(default_factory=list)
    rejected_files: set[str] = field(default_factory=set)  # keys of files with a duplicate id
    # ids indexed from a folder not read now that a file read now redefines: the file wins
    replaced: dict[str, str] = field(default_factory=dict)  # id -> the old row's path


def _plan(
    files: list[_File],
    rows: dict[str, dict[str, Any]],
    by_path: dict[str, list[str]],
    parsed: dict[str, Any],
    unchanged: set[str],
    unreadable: set[str],
    scopes: Sequence[Path],
    name: str | None,
) -> _Plan:
    """Decide what to write: which findings are accepted, which need vectors, which are kept.
    ``by_path`` maps each indexed file to the ids it holds (built once from ``rows``)."""
    plan = _Plan()
    display = {f.key: str(f.path) for f in files}

    # ids that already belong to someone: rows in unchanged files and in files that cannot be
    # read or parsed (their indexed version is kept). Rows from folders not read now are only
    # ``outside``: a file read now that holds the same id replaces them (the folder the user
    # points at now wins over a copy indexed from elsewhere, e.g. a moved checkout)
    owners: dict[str, str] = {}
    outside: dict[str, str] = {}
    for fid, row in rows.items():
        key = row["path"]
        if not _under(key, scopes):
            outside[fid] = key
        elif key in unchanged or key in unreadable:
            owners[fid] = display.get(key, key)
            if key in unreadable:
                plan.kept.add(fid)
    for f in files:
        result = parsed.get(f.key)
        if not isinstance(result, FindingError):
            continue
        old = sorted(by_path.get(f.key, []))
        if old:
            ids = ", ".join(repr(i) for i in old)
            result = FindingError(
                result.path,
                result.line,
                f"{result.message} (the indexed version of {ids} is kept until this is fixed)",
            )
            plan.kept.update(old)
            owners.update((fid, str(f.path)) for fid in old)
        plan.errors.append(result)

    for f in files:
        result = parsed.get(f.key)
        if f.key in unchanged or result is None or isinstance(result, FindingError):
            continue
        for finding in result.findings:
            if finding.id in owners:
                text = f.data.decode("utf-8", errors="replace")
                plan.errors.append(
                    FindingError(
                        str(f.path),
                        id_line(text, finding),
                        f"duplicate id {finding.id!r} (already in {owners[finding.id]})",
                    )
                )
                plan.rejected_files.add(f.key)
                continue
            owners[finding.id] = str(f.path)
            if finding.id in outside:
                plan.replaced[finding.id] = outside[finding.id]
            plan.accepted.append((f, finding))

    for _f, finding in plan.accepted:
        row = rows.get(finding.id)
        parts, texts = _parts(finding)
        if (
            name is None
            or row is None
            or row["document"] != texts[0]
            or row["symptoms"] != texts[1:]
            or row["vector_parts"] != dict.fromkeys(parts, name)
        ):
            plan.need.append(finding.id)
    if name is not None:
        # rows not re-read from a file (other folders, kept ones) embedded by another model get
        # new vectors from their stored texts, so the index never mixes two models
        accepted_ids = {finding.id for _, finding in plan.accepted}
        for fid, row in sorted(rows.items()):
            if fid in accepted_ids or (_under(row["path"], scopes) and fid not in plan.kept):
                continue
            if any(model != name for model in row["vector_parts"].values()):
                plan.need.append(fid)
    return plan


def ingest(
    db: sqlite_utils.Database,
    dirs: list[Path],
    embedder_factory: Callable[[], Embedder],
    *,
    progress: Progress | None = None,
    embedder_name: str | None = None,
    batch_size: int = EMBED_WINDOW,
    on_wait: Callable[[str], None] | None = None,
    prune: bool = False,
) -> IngestReport:
    """Bring the index in line with the findings under ``dirs`` (folders, or single files).

    ``embedder_name`` is the name the factory's embedder will report, when it is known without
    loading it; otherwise the model recorded in the index is assumed (and checked once loaded).
    Findings indexed from other folders are left alone; a finding whose file is now broken keeps
    its indexed version, and the error says so. ``progress(done, total, label)`` is called once
    with ``done=0`` and after each batch of embedded texts, only when there is embedding work.
    Rows of files that no longer exist (a moved or deleted folder) are removed, whatever folder
    they came from. ``on_wait(message)`` is called once if another process holds the write lock.
    A finding read now whose id is indexed from a folder not read now replaces that row (the
    report's ``replaced`` says so); ``prune`` removes every row from folders not read now.
    """
    scopes = [Path(d).resolve() for d in dirs]
    # nothing to do is found without the write lock and without parsing anything; any doubt
    # (a damaged or busy file included) goes the locked way, which reports it
    try:
        unchanged_report = _nothing_to_do(db, dirs, scopes, embedder_name, prune)
    except sqlite3.Error:
        unchanged_report = None
    if unchanged_report is not None:
        return unchanged_report
    # One write transaction from the listing of the folders to the last vector: a migration, a
    # concurrent ingest or a kill at any moment leaves the old index or the new one, never a mix,
    # and no ingest acts on a listing older than the last one committed (it would drop rows of
    # files added meanwhile).
    with _writing(db), store.write_transaction(db, on_wait=on_wait):
        walked = finding_keys(dirs)
        files: list[_File] = []
        unreadable: set[str] = set()
        read_errors: list[FindingError] = []
        for path, key in walked:
            if not _under(key, scopes):
                # a symbolic link out of the folders read: a shared folder must not make anyone's
                # ingest read (and index, and show) a file elsewhere on their machine
                read_errors.append(
                    FindingError(
                        str(path),
                        None,
                        f"symbolic link to {key}, outside the findings folders: not read "
                        "(commit the file, not a link)",
                    )
                )
                continue
            try:
                files.append(_File(path=path, key=key, data=path.read_bytes()))
            except FileNotFoundError:
                continue  # deleted since the folder was listed: it is gone, not broken
            except OSError as exc:
                read_errors.append(FindingError(str(path), None, f"cannot read ({exc.strerror})"))
                unreadable.add(key)
        store.ensure_schema(db)
        report, parsed = _ingest_locked(
            db,
            files,
            unreadable,
            scopes,
            embedder_factory,
            embedder_name,
            progress,
            batch_size,
            prune,
        )
    return replace(
        report,
        errors=tuple(read_errors) + report.errors,
        warnings=tuple(
            w
            for result in parsed.values()
            if not isinstance(result, FindingError)
            for w in result.warnings
        ),
    )


def _ingest_locked(
    db: sqlite_utils.Database,
    files: list[_File],
    unreadable: set[str],
    scopes: list[Path],
    embedder_factory: Callable[[], Embedder],
    embedder_name: str | None,
    progress: Progress | None,
    batch_size: int,
    prune: bool = False,
) -> tuple[IngestReport, dict[str, Any]]:
    """The body of ``ingest``, run while it holds the write lock."""
    rows = store.indexed_rows(db)
    # rows of files that are gone (a moved or deleted team folder): dropped, whatever the scope;
    # with ``prune``, every row from a folder not read now
    gone = [
        fid
        for fid, row in rows.items()
        if not _under(row["path"], scopes) and (prune or not os.path.lexists(row["path"]))
    ]
    for fid in gone:
        del rows[fid]

    by_path: dict[str, list[str]] = {}
    for fid, row in rows.items():
        by_path.setdefault(row["path"], []).append(fid)

    def unchanged_files(name: str | None) -> set[str]:
        if name is None:
            return set()
        out: set[str] = set()
        for f in files:
            ids = by_path.get(f.key, [])
            digest = content_hash(f.data, name, PARSER_VERSION)
            if ids and all(
                rows[fid]["content_hash"] == digest
                and None not in rows[fid]["vector_parts"].values()
                for fid in ids
            ):
                out.add(f.key)
        return out

    parsed: dict[str, Any] = {}  # key -> ParseResult | FindingError

    def parse_changed(unchanged: set[str]) -> None:
        for f in files:
            if f.key not in unchanged and f.key not in parsed:
                parsed[f.key] = _parse_one(f)

    name = embedder_name or store.get_meta(db, "model")
    unchanged = unchanged_files(name)
    parse_changed(unchanged)
    plan = _plan(files, rows, by_path, parsed, unchanged, unreadable, scopes, name)
    embedder: Embedder | None = None
    if plan.need:
        embedder = embedder_factory()
        if embedder.name != name:
            name = embedder.name
            unchanged = unchanged_files(name)
            parse_changed(unchanged)
            plan = _plan(files, rows, by_path, parsed, unchanged, unreadable, scopes, name)

    accepted_ids = {finding.id for _, finding in plan.accepted}
    removed = [
        fid
        for fid, row in rows.items()
        if _under(row["path"], scopes)
        and row["path"] not in unchanged
        and fid not in accepted_ids
        and fid not in plan.kept
    ]
    added = sum(1 for fid in accepted_ids if fid not in rows)
    # findings of unchanged files, and those kept as indexed because their file is now broken
    unchanged_count = sum(1 for row in rows.values() if row["path"] in unchanged) + len(plan.kept)
    updated = 0
    embedded = 0
    indexed_at = store.now_iso()
    need = set(plan.need)

    nothing_changed = not (removed or gone or plan.accepted or plan.need)
    store.delete_findings(db, removed + gone)
    for f, finding in plan.accepted:
        row = rows.get(finding.id)
        # a file holding a rejected duplicate gets no hash: its error shows on every ingest
        digest = (
            "" if f.key in plan.rejected_files else content_hash(f.data, name or "", PARSER_VERSION)
        )
        record = store.finding_record(finding)
        if (
            row is not None
            and finding.id not in need
            and row["record"] == record
            and row["body"] == finding.body
            and row["path"] == f.key
            and row["line"] == finding.line
        ):
            unchanged_count += 1
            db.execute("UPDATE findings SET content_hash = ? WHERE id = ?", [digest, finding.id])
            continue
        if row is not None:
            updated += 1
        store.put_finding(
            db,
            finding,
            path=f.key,
            content_hash=digest,
            document=document_text(finding),
            indexed_at=indexed_at,
            record=record,
        )
    if embedder is not None:
        embedded = _embed(db, embedder, plan.need, plan.accepted, rows, progress, batch_size)
    store.build_vector_matrix(db)  # when a vector was written (or it is missing)
    if not nothing_changed:
        meta: dict[str, str | None] = {
            "parser_version": PARSER_VERSION,
            "last_ingest": indexed_at,
        }
        if embedder is not None:
            meta.update(model=embedder.name, dim=str(embedder.dim))
        store.set_meta(db, **meta)
    hubs.build(db, shipped_findings_dir())  # the values of findings added or changed
    return (
        IngestReport(
            added=added,
            updated=updated,
            unchanged=unchanged_count,
            removed=len(removed) + len(gone),
            embedded=embedded,
            model=embedder.name if embedder is not None else None,
            errors=tuple(plan.errors),
            outside=_outside(rows, scopes, set(plan.replaced)),
            replaced=_replaced(plan.replaced, {fd.id: f.key for f, fd in plan.accepted}),
        ),
        parsed,
    )


def _outside(
    rows: dict[str, dict[str, Any]], scopes: Sequence[Path], skip: set[str]
) -> tuple[tuple[str, int], ...]:
    """Folders (of the files) the index holds findings from, though they are not read now."""
    counts: dict[str, int] = {}
    for fid, row in rows.items():
        if fid not in skip and not _under(row["path"], scopes):
            folder = str(Path(row["path"]).parent)
            counts[folder] = counts.get(folder, 0) + 1
    return tuple(sorted(counts.items()))


def _replaced(old: dict[str, str], new: dict[str, str]) -> tuple[tuple[str, str, int], ...]:
    counts: dict[tuple[str, str], int] = {}
    for fid, path in old.items():
        pair = (str(Path(path).parent), str(Path(new[fid]).parent))
        counts[pair] = counts.get(pair, 0) + 1
    return tuple((a, b, n) for (a, b), n in sorted(counts.items()))


def _parse_one(f: _File) -> Any:
    """A file's ``ParseResult``, or the ``FindingError`` that says why it cannot be read. Any other
    exception from the parser is a parser bug: it is reported against this file, as one line, and
    the other findings are still indexed (one bad file must not stop everyone)."""
    from kb.parse import parse_bytes

    try:
        return parse_bytes(f.data, str(f.path))
    except FindingError as exc:
        return exc
    except (RecursionError, MemoryError, ValueError, TypeError, AttributeError, KeyError) as exc:
        return FindingError(
            str(f.path),
            None,
            f"the parser failed on this file ({type(exc).__name__}: {exc}); "
            "please report it with the file",
        )


def unchanged(
    db: sqlite_utils.Database | store.PlainReader,
    dirs: list[Path],
    embedder_name: str | None,
    *,
    prune: bool = False,
) -> IngestReport | None:
    """``ingest``'s report when the index is in step with ``dirs`` and there is nothing to do,
    found without a lock and without writing (``db`` may be a read-only ``store.PlainReader``);
    None when something may have changed, or the index cannot tell: ``ingest`` then does the work."""
    try:
        return _nothing_to_do(db, dirs, [Path(d).resolve() for d in dirs], embedder_name, prune)
    except sqlite3.Error:
        return None


def _nothing_to_do(
    db: sqlite_utils.Database,
    dirs: Sequence[Path],
    scopes: Sequence[Path],
    embedder_name: str | None,
    prune: bool = False,
) -> IngestReport | None:
    """The report of an ingest with nothing to do, found from ids, paths and hashes alone (no
    finding is loaded or parsed); ``None`` when something may have changed. Nothing to do: every
    file hashes as indexed, no indexed file under ``dirs`` is gone, and every vector is ``name``'s."""
    tables = set(db.table_names())
    if not {"findings", "embeddings", "meta"} <= tables:
        return None
    if store.get_meta(db, "schema_version") != store.INDEX_SCHEMA_VERSION:
        return None  # a migration is due: the locked path does it
    name = embedder_name or store.get_meta(db, "model")
    if name is None or store.get_meta(db, "model") != name:
        return None
    if store.get_meta(db, "parser_version") != PARSER_VERSION:
        return None
    if not hubs.ready(db):
        return None  # an index written before the hub values: the locked path adds them
    walked = finding_keys(dirs)
    by_path: dict[str, list[str]] = {}
    hashes: dict[str, str] = {}
    for fid, path, chash in db.execute("SELECT id, path, content_hash FROM findings"):
        by_path.setdefault(path, []).append(fid)
        hashes[fid] = chash
    keys: set[str] = set()
    for path, key in walked:
        keys.add(key)
        ids = by_path.get(key)
        try:
            digest = content_hash(path.read_bytes(), name, PARSER_VERSION)
        except OSError:
            return None
        if not ids or any(hashes[fid] != digest for fid in ids):
            return None
    if any(path not in keys and _under(path, scopes) for path in by_path):
        return None  # a file was removed
    outside = [path for path in by_path if not _under(path, scopes)]
    if prune and outside:
        return None  # rows to prune: the locked path removes them
    if any(not os.path.lexists(path) for path in outside):
        return None  # a folder not read now was moved or deleted: the locked path drops its rows
    if db.execute(
        "SELECT 1 FROM embeddings WHERE model != ? OR length(vector) != 4 * dim LIMIT 1", [name]
    ).fetchone():
        return None  # another model's vectors, or damaged ones: the locked path re-embeds them
    if not store.vector_matrix_ready(db):
        return None  # the vectors' matrix is missing: the locked path builds it
    unchanged = sum(len(by_path[k]) for k in keys)
    counts: dict[str, int] = {}
    for path in outside:
        folder = str(Path(path).parent)
        counts[folder] = counts.get(folder, 0) + len(by_path[path])
    return IngestReport(unchanged=unchanged, outside=tuple(sorted(counts.items())))


@contextmanager
def _writing(db: sqlite_utils.Database) -> Iterator[None]:
    """Turn SQLite write failures (a locked or read-only file) into one actionable line."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        raise store.write_error(store.db_label(db), exc) from exc


def _embed(
    db: sqlite_utils.Database,
    embedder: Embedder,
    need: list[str],
    accepted: list[tuple[_File, Finding]],
    rows: dict[str, dict[str, Any]],
    progress: Progress | None,
    batch_size: int,
) -> int:
    """Embed the texts of the ``need`` findings, about ``batch_size`` texts per embedder call
    (whole findings; a text that occurs twice in a call is embedded once)."""
    by_id = {finding.id: finding for _, finding in accepted}
    jobs: list[tuple[str, list[str], list[str]]] = []
    for fid in need:
        if fid in by_id:
            parts, texts = _parts(by_id[fid])
        else:  # a finding from another folder, re-embedded from its stored texts
            row = rows[fid]
            texts = [row["document"], *row["symptoms"]]
            parts = ["doc", *(f"symptom:{i}" for i in range(len(row["symptoms"])))]
        jobs.append((fid, parts, texts))
    total = sum(len(texts) for _, _, texts in jobs)
    done = 0
    if progress is not None and jobs:
        progress(0, total, jobs[0][0])
    window = max(1, batch_size)
    batch: list[tuple[str, list[str], list[str]]] = []

    def flush() -> None:
        nonlocal done
        flat = [t for _, _, texts in batch for t in texts]
        unique = list(dict.fromkeys(flat))
        try:
            vectors = embedder.embed(unique)
        except DeployKBError:
            raise
        except Exception as exc:  # noqa: BLE001 - a model failure becomes one actionable line
            raise EmbeddingError(
                f"embedding with {embedder.name} failed ({type(exc).__name__}: {exc}); "
                "the index was left as it was"
            ) from exc
        shape = getattr(vectors, "shape", None)
        if shape is None or tuple(shape) != (len(unique), embedder.dim):
            raise EmbeddingError(
                f"embedder {embedder.name} returned shape {shape} for {len(unique)} texts "
                f"(expected ({len(unique)}, {embedder.dim})); the index was left as it was"
            )
        where = {text: i for i, text in enumerate(unique)}
        for fid, parts, texts in batch:
            store.write_vectors(db, fid, parts, vectors[[where[t] for t in texts]], embedder.name)
        done += len(flat)
        if progress is not None:
            progress(done, total, batch[-1][0])
        batch.clear()

    size = 0
    for job in jobs:
        batch.append(job)
        size += len(job[2])
        if size >= window:
            flush()
            size = 0
    if batch:
        flush()
    return total
