"""The SQLite index: schema, row writers for the ingest transaction, and the readers.

Every function takes the ``sqlite_utils.Database`` it works on. Writers (``put_finding``,
``write_vectors``, ``delete_findings``, ``set_meta``) issue plain SQL and never commit: the caller
wraps them in one ``with write_transaction(db):`` block (``BEGIN IMMEDIATE``: one writer at a
time, and no "database is locked" half-way through). The file is in WAL mode: readers see the last
committed index while a writer works.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kb.document import source_url
from kb.errors import DeployKBError, InputError, KBIndexError
from kb.records import STATUSES, Finding

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import sqlite_utils

# 3: symptoms, fixes and sources reference their finding (FOREIGN KEY ... REFERENCES findings), so
# sqlite-utils and Datasette link them (the constraint is declared, not enforced: foreign_keys is off)
# 4: the vectors of each part also as one float32 matrix (``vector_matrix``), so that a query reads
# a few blobs instead of one row per vector
INDEX_SCHEMA_VERSION = "4"
# versions that ``ensure_schema`` brings up to date in place, keeping their rows: 3 lacks only the
# matrix, which is built from its vectors (nothing is embedded again)
_UPGRADABLE = ("3",)

_TABLES = (
    "findings", "symptoms", "fixes", "sources", "embeddings", "meta",
    "term_counts", "line_keys", "line_postings", "finding_components", "vector_matrix",
)  # fmt: skip

_SCHEMA = """
CREATE TABLE IF NOT EXISTS findings (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    line INTEGER,
    content_hash TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL,
    date TEXT,
    model TEXT,
    architecture TEXT,
    quantization TEXT,
    gpu TEXT,
    gpu_count INTEGER,
    sm TEXT,
    interconnect TEXT,
    framework TEXT,
    framework_version TEXT,
    root_cause TEXT,
    failing_command TEXT,
    working_command TEXT,
    record TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    document TEXT NOT NULL,
    indexed_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS findings_path ON findings (path);
CREATE TABLE IF NOT EXISTS symptoms (
    finding_id TEXT NOT NULL REFERENCES findings (id),
    idx INTEGER NOT NULL,
    class TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS fixes (
    finding_id TEXT NOT NULL REFERENCES findings (id),
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    action TEXT NOT NULL,
    text TEXT NOT NULL,
    alternative INTEGER,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS sources (
    finding_id TEXT NOT NULL REFERENCES findings (id),
    idx INTEGER NOT NULL,
    source TEXT NOT NULL,
    url TEXT,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS embeddings (
    finding_id TEXT NOT NULL,
    part TEXT NOT NULL,
    model TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (finding_id, part)
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT
);
-- precomputed for queries (kept in step by the writers and by ingest, read in one query each):
-- how many findings hold each word of their title or document (see fts_vocabulary) ...
CREATE TABLE IF NOT EXISTS term_counts (
    term TEXT PRIMARY KEY,
    df INTEGER NOT NULL
) WITHOUT ROWID;
-- ... the match keys of every symptom line (written by the query layer, which owns the keys:
-- agent.search.precompute) and their postings
CREATE TABLE IF NOT EXISTS line_keys (
    finding_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    keys TEXT NOT NULL,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS line_postings (
    key TEXT NOT NULL,
    finding_id TEXT NOT NULL,
    PRIMARY KEY (key, finding_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS line_postings_finding ON line_postings (finding_id);
-- ... and each finding's failure components ('' marks a finding that has been looked at)
CREATE TABLE IF NOT EXISTS finding_components (
    finding_id TEXT NOT NULL,
    component TEXT NOT NULL,
    PRIMARY KEY (finding_id, component)
) WITHOUT ROWID;
-- every vector of a part ('doc', 'symptom') as float32 matrices of at most MATRIX_BLOCK_BYTES,
-- rows in (finding_id, part) order: a copy of embeddings that a query reads as a few blobs. Built
-- at the end of each ingest (build_vector_matrix). Any write to embeddings drops it (the triggers
-- below), and a reader that finds it missing reads embeddings row by row. No semicolons here:
-- the schema is split on them
CREATE TABLE IF NOT EXISTS vector_matrix (
    part TEXT NOT NULL,
    block INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    ids TEXT NOT NULL,
    matrix BLOB NOT NULL,
    PRIMARY KEY (part, block)
);
"""
_MATRIX_TRIGGERS = tuple(
    f"CREATE TRIGGER IF NOT EXISTS [embeddings_{name}] AFTER {event} ON [embeddings] "
    "BEGIN DELETE FROM vector_matrix; END"
    for name, event in (("mi", "INSERT"), ("mu", "UPDATE"), ("md", "DELETE"))
)
# a block's size: one block a part up to 174,762 384-d vectors (100k findings), a quarter of
# SQLite's default limit on a blob (1e9 bytes)
MATRIX_BLOCK_BYTES = 256 * 2**20

# --- opening, transactions and schema ----------------------------------------------------------

BUSY_TIMEOUT_MS = 5_000  # a reader or a short write waits this long for a lock, silently
WRITE_WAIT_SECONDS = 600.0  # a writer queued behind another one waits this long, visibly
_SQLITE_HEADER = b"SQLite format 3\x00"

_FTS_SQL = (
    "CREATE VIRTUAL TABLE [findings_fts] USING FTS5 ([title], [document], tokenize='porter', "
    "content=[findings])",
    """CREATE TRIGGER [findings_ai] AFTER INSERT ON [findings] BEGIN
  INSERT INTO [findings_fts] (rowid, [title], [document]) VALUES (new.rowid, new.[title], new.[document]);
END""",
    """CREATE TRIGGER [findings_ad] AFTER DELETE ON [findings] BEGIN
  INSERT INTO [findings_fts] ([findings_fts], rowid, [title], [document]) VALUES('delete', old.rowid, old.[title], old.[document]);
END""",
    """CREATE TRIGGER [findings_au] AFTER UPDATE ON [findings] BEGIN
  INSERT INTO [findings_fts] ([findings_fts], rowid, [title], [document]) VALUES('delete', old.rowid, old.[title], old.[document]);
  INSERT INTO [findings_fts] (rowid, [title], [document]) VALUES (new.rowid, new.[title], new.[document]);
END""",
)


class ReadOnlyIndexError(KBIndexError):
    """The index file (or its folder) cannot be written: readers may still use it as it is."""


def open_db(path: Path) -> sqlite_utils.Database:
    """Open (or create) the index file; anything that is not a deploykb index is refused.

    The file is put in WAL mode, so readers never wait for a writer and a writer never waits for
    readers. An index that cannot be written (the file, or its folder, where SQLite keeps the
    ``-wal`` and ``-shm`` files) is opened for reading only: ``mode=ro``, or ``immutable=1`` when
    not even the ``-shm`` file can be made and no ``-wal`` exists (nobody can be writing it).
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KBIndexError(f"{path}: cannot create the index folder ({exc}); pass --db") from exc
    _check_header(path)
    if not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        raise KBIndexError(
            f"no index at {path}, and its folder cannot be written; run `deploykb ingest --db "
            f"{path}` as a user who can write it, or pass --db with a writable file"
        )
    read_only = path.exists() and not (
        os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK)
    )
    import sqlite_utils  # here, not at import: an ingest with nothing to do never needs it

    try:
        if read_only:  # said up front, so SQLite never tries to write (WAL set-up included)
            conn = _connect_read_only(path)
        else:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db = sqlite_utils.Database(conn)
        tables = set(db.table_names())
    except sqlite3.Error as exc:
        raise KBIndexError(
            f"{path}: not a deploykb index or a damaged one ({exc}); delete it and run "
            "`deploykb ingest`, or pass --db"
        ) from exc
    if tables and "meta" not in tables:
        raise KBIndexError(
            f"{path}: not a deploykb index (it holds other tables: "
            f"{', '.join(sorted(tables)[:5])}); delete it or pass --db"
        )
    db.read_only = read_only  # type: ignore[attr-defined]  # checked by write_transaction
    try:
        if not read_only and conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
    except sqlite3.OperationalError:
        pass  # a read-only file or folder: it is read as it is (``ReadOnlyIndexError`` on write)
    except sqlite3.DatabaseError as exc:
        raise KBIndexError(
            f"{path}: the index file is damaged ({exc}); delete it and run `deploykb ingest`"
        ) from exc
    return db


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """The index for reading only. A WAL index needs its ``-shm`` file even to be read; in a
    folder nobody can write, with no ``-wal`` beside it (no writer), it is read as immutable."""
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}"
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        wal = Path(f"{path}-wal")
        if "unable to open" not in str(exc) or wal.exists() or os.access(path.parent, os.W_OK):
            raise
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)


def memory_copy(db: sqlite_utils.Database) -> sqlite_utils.Database:
    """A private, writable copy of ``db`` in memory (a read-only index answered from with rows
    left out); writes to it go nowhere."""
    import sqlite_utils

    conn = sqlite3.connect(":memory:")
    db.conn.backup(conn)
    copy = sqlite_utils.Database(conn)
    copy.read_only = False  # type: ignore[attr-defined]
    return copy


class PlainReader:
    """What the readers here call on a ``sqlite_utils.Database`` (``execute``, ``table_names``),
    on a plain read-only ``sqlite3`` connection: enough for the checks that find nothing to do,
    without importing sqlite-utils (a fifth of an unchanged re-ingest's time)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters)

    def table_names(self) -> list[str]:
        return [
            n for (n,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]


@contextmanager
def read_plain(path: Path) -> Iterator[PlainReader | None]:
    """The index file at ``path`` opened read-only as a ``PlainReader``; None when there is no
    such file or SQLite cannot open it (the caller then takes the ``open_db`` way, which says why)."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_SQLITE_HEADER)) != _SQLITE_HEADER:
                yield None
                return
        conn = sqlite3.connect(
            f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro",
            uri=True,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
    except (OSError, sqlite3.Error):
        yield None
        return
    try:
        yield PlainReader(conn)
    finally:
        conn.close()


def _check_header(path: Path) -> None:
    """A file that is not SQLite at all (a log saved over the index) is named before SQLite
    tries to read it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise KBIndexError(f"{path}: cannot read the index ({exc.strerror}); pass --db") from exc
    if head and head != _SQLITE_HEADER:
        raise KBIndexError(
            f"{path}: not a deploykb index (file is not a database); delete it or pass --db"
        )


def _is_busy(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_read_only(exc: sqlite3.Error) -> bool:
    text = str(exc).lower()
    return any(w in text for w in ("readonly", "read-only", "not writable", "unable to open"))


@contextmanager
def write_transaction(
    db: sqlite_utils.Database,
    *,
    on_wait: Callable[[str], None] | None = None,
    wait_seconds: float | None = None,
) -> Iterator[None]:
    """One write transaction, begun ``IMMEDIATE``: the write lock is taken first, so no read made
    inside the transaction (FTS5 reads its config before its first write) can turn into a
    "database is locked" at the first write. One writer at a time: when another holds the lock,
    ``on_wait`` is told once and the wait goes on up to ``wait_seconds``. Commits on success,
    rolls back on any error (Ctrl-C too). Nested use joins the outer transaction."""
    conn = db.conn
    if conn.in_transaction:
        yield
        return
    label = db_label(db)
    if getattr(db, "read_only", False):
        raise write_error(label, sqlite3.OperationalError("the file is not writable"))
    if wait_seconds is None:
        wait_seconds = WRITE_WAIT_SECONDS
    try:
        _begin_immediate(conn, 0.2)
    except sqlite3.OperationalError as exc:
        if not _is_busy(exc):
            raise write_error(label, exc) from exc
        if on_wait is not None:
            on_wait(f"waiting for another deploykb process to finish writing {label}")
        try:
            _begin_immediate(conn, wait_seconds)
        except sqlite3.OperationalError as exc2:
            raise write_error(label, exc2, waited=wait_seconds) from exc2
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise write_error(label, exc) from exc


def _begin_immediate(conn: sqlite3.Connection, seconds: float) -> None:
    conn.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
    try:
        conn.execute("BEGIN IMMEDIATE")
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def write_error(label: str, exc: sqlite3.Error, waited: float | None = None) -> KBIndexError:
    if _is_read_only(exc):
        return ReadOnlyIndexError(
            f"{label}: the index is read-only ({exc}); make it writable, or pass --db with a "
            "writable file"
        )
    if _is_busy(exc):
        return KBIndexError(
            f"{label}: another deploykb process held the index for {waited or 0:g} s ({exc}); "
            "try again when it is done"
        )
    return KBIndexError(
        f"{label}: cannot write the index ({exc}); check the file and its folder are writable, "
        "or pass --db"
    )


def db_label(db: sqlite_utils.Database) -> str:
    """The file behind a database, for messages (``:memory:`` for an in-memory one)."""
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return file or ":memory:"
    return ":memory:"


def schema_ready(db: sqlite_utils.Database) -> bool:
    """The tables of this schema version exist (``ensure_schema`` would write nothing)."""
    tables = set(db.table_names())
    if not {*_TABLES, "findings_fts"} <= tables:
        return False
    return get_meta(db, "schema_version") == INDEX_SCHEMA_VERSION


def ensure_schema(db: sqlite_utils.Database) -> None:
    """Create the tables and the FTS5 index; an index of another schema version is rebuilt.

    Runs inside the caller's write transaction (``ingest`` holds one around the whole rebuild), so
    a migration is atomic with the re-ingest that refills the tables: a kill at any moment leaves
    the old index, complete, or the new one. Outside a transaction it opens its own.
    """
    if schema_ready(db):
        return
    with write_transaction(db):
        tables = set(db.table_names())
        if "meta" in tables:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row and row[0] != INDEX_SCHEMA_VERSION and row[0] not in _UPGRADABLE:
                _drop_all(db)
                tables = set()
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
        for statement in _MATRIX_TRIGGERS:
            db.execute(statement)
        if "findings_fts" not in tables:
            for statement in _FTS_SQL:
                db.execute(statement)
            db.execute(
                "INSERT INTO findings_fts (rowid, title, document) "
                "SELECT rowid, title, document FROM findings"
            )
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            [INDEX_SCHEMA_VERSION],
        )
        if get_meta(db, "term_counts") != TERM_COUNTS_VERSION:
            _recount_terms(db)
        build_vector_matrix(db)


def _drop_all(db: sqlite_utils.Database) -> None:
    """Drop every table of the old schema, in the caller's transaction (no commit here)."""
    for trigger in ("findings_ai", "findings_ad", "findings_au"):
        db.execute(f"DROP TRIGGER IF EXISTS [{trigger}]")
    db.execute("DROP TABLE IF EXISTS [findings_fts]")
    db.execute("DROP TABLE IF EXISTS [finding_hubs]")  # kb.hubs
    for name in _TABLES:
        db.execute(f"DROP TABLE IF EXISTS [{name}]")


# --- writers (no commit: the caller owns the transaction) ---------------------------------------


def get_meta(db: sqlite_utils.Database, key: str) -> str | None:
    if "meta" not in db.table_names():
        return None
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_meta(db: sqlite_utils.Database, **values: str | None) -> None:
    for key, value in values.items():
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value])


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def finding_record(f: Finding) -> str:
    """``findings.record``: JSON of ``finding_to_dict`` (body and path have their own columns)."""
    from dataclasses import replace

    from kb.serialize import finding_to_dict

    # without its root cause, finding_to_dict does not read the body's Markdown to compare
    d = finding_to_dict(replace(f, root_cause=None))
    # the root cause is stored resolved (null when there is none), so loading a finding never
    # has to parse its Markdown body again
    d["root_cause"] = f.root_cause
    return json.dumps(d, ensure_ascii=False, sort_keys=True)


def put_finding(
    db: sqlite_utils.Database,
    f: Finding,
    *,
    path: str,
    content_hash: str,
    document: str,
    indexed_at: str,
    record: str | None = None,
) -> None:
    """Insert a finding and its symptom/fix/source rows, replacing any row with the same id.
    ``record`` is ``finding_record(f)`` when the caller has it already.

    Its embeddings are left alone: ``write_vectors`` replaces them when the texts changed.
    """
    delete_findings(db, [f.id], keep_vectors=True)
    hw, fw = f.hardware, f.framework
    db.execute(
        """INSERT INTO findings (id, path, line, content_hash, title, status, date, model,
        architecture, quantization, gpu, gpu_count, sm, interconnect, framework,
        framework_version, root_cause, failing_command, working_command, record, body,
        document, indexed_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [
            f.id, path, f.line, content_hash, f.title, f.status, f.date, f.model,
            f.architecture, f.quantization, hw.gpu, hw.count, hw.sm, hw.interconnect, fw.name,
            fw.version, f.root_cause, f.failing_command, f.working_command, record or finding_record(f),
            f.body, document, indexed_at,
        ],
    )  # fmt: skip
    _count_terms(db, f.title, document, +1)
    db.conn.executemany(
        "INSERT INTO symptoms (finding_id, idx, class, text) VALUES (?, ?, ?, ?)",
        [(f.id, i, s.cls, s.text) for i, s in enumerate(f.symptoms)],
    )
    db.conn.executemany(
        "INSERT INTO fixes (finding_id, idx, kind, action, text, alternative)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(f.id, i, *row) for i, row in enumerate(_fix_rows(f))],
    )
    db.conn.executemany(
        "INSERT INTO sources (finding_id, idx, source, url) VALUES (?, ?, ?, ?)",
        [(f.id, i, s, source_url(s)) for i, s in enumerate(f.sources)],
    )


def _fix_rows(f: Finding) -> list[tuple[str, str, str, int | None]]:
    rows: list[tuple[str, str, str, int | None]] = []
    for alt_index, fix in [(None, f.fix), *enumerate(f.alternatives)]:
        rows += [("flag", "add", t, alt_index) for t in fix.add]
        rows += [("flag", "change", t, alt_index) for t in fix.change]
        rows += [("flag", "remove", t, alt_index) for t in fix.remove]
        rows += [("env", "add", t, alt_index) for t in fix.env]
        rows += [("pin", "add", t, alt_index) for t in fix.pins]
    return rows


def write_vectors(
    db: sqlite_utils.Database, finding_id: str, parts: Sequence[str], vectors: Any, model: str
) -> None:
    """Replace a finding's vectors: ``parts[i]`` ("doc", "symptom:0", ...) is ``vectors[i]``."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    db.execute("DELETE FROM embeddings WHERE finding_id = ?", [finding_id])
    db.conn.executemany(
        "INSERT INTO embeddings (finding_id, part, model, dim, vector) VALUES (?, ?, ?, ?, ?)",
        [
            (finding_id, part, model, int(matrix.shape[1]), matrix[i].tobytes())
            for i, part in enumerate(parts)
        ],
    )


def delete_findings(
    db: sqlite_utils.Database, ids: Iterable[str], *, keep_vectors: bool = False
) -> None:
    tables = ["findings", "symptoms", "fixes", "sources", "line_keys", "line_postings"]
    tables.append("finding_components")
    if not keep_vectors:
        tables.append("embeddings")
    for finding_id in ids:
        row = db.execute(
            "SELECT title, document FROM findings WHERE id = ?", [finding_id]
        ).fetchone()
        if row is not None:
            _count_terms(db, row[0], row[1], -1)
        db.execute("DELETE FROM findings WHERE id = ?", [finding_id])
        for table in tables[1:]:
            db.execute(f"DELETE FROM {table} WHERE finding_id = ?", [finding_id])


TERM_COUNTS_VERSION = "1"  # bump when _WORD or the counted text changes: counts are redone


def _terms(title: str, document: str) -> set[str]:
    return set(_WORD.findall(f"{title}\n{document}".lower()))


def _count_terms(db: sqlite_utils.Database, title: str, document: str, delta: int) -> None:
    terms = _terms(title, document)
    db.conn.executemany(
        "INSERT INTO term_counts (term, df) VALUES (?, ?)"
        " ON CONFLICT (term) DO UPDATE SET df = df + excluded.df",
        [(term, delta) for term in terms],
    )
    if delta < 0:
        db.conn.executemany(
            "DELETE FROM term_counts WHERE term = ? AND df <= 0", [(t,) for t in terms]
        )


def _recount_terms(db: sqlite_utils.Database) -> None:
    """Count every finding's terms again (an index from before ``term_counts``, or a new
    ``TERM_COUNTS_VERSION``). The caller owns the transaction."""
    from collections import Counter

    counts: Counter[str] = Counter()
    for title, document in db.execute("SELECT title, document FROM findings"):
        counts.update(_terms(title, document))
    db.execute("DELETE FROM term_counts")
    db.conn.executemany("INSERT INTO term_counts (term, df) VALUES (?, ?)", counts.items())
    set_meta(db, term_counts=TERM_COUNTS_VERSION)


# --- readers -----------------------------------------------------------------------------------


# a stored vector is whole when its blob holds ``dim`` float32 values and ``dim`` is the index's
_INTACT = (
    "(length(vector) = 4 * dim AND dim > 0 AND dim = coalesce("
    "(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'dim'), dim))"
)


def damaged_vectors(db: sqlite_utils.Database) -> int:
    """How many stored vectors are cut short, too long, or of another size than the index's.
    None when the matrix is there: it is built from whole vectors only, and dropped by any write
    to them since (the scan of every vector is left out of a cold ``ask``)."""
    tables = db.table_names()
    if "embeddings" not in tables:
        return 0
    if "vector_matrix" in tables:
        dims = _matrix_dims(db)
        if dims is not None and dims <= {_meta_dim(db)}:
            return 0
    return db.execute(f"SELECT count(*) FROM embeddings WHERE NOT {_INTACT}").fetchone()[0]


_MATRIX_PARTS = ("doc", "symptom")


def _meta_dim(db: sqlite_utils.Database) -> int | None:
    value = get_meta(db, "dim")
    return int(value) if value else None


def _matrix_dims(db: sqlite_utils.Database) -> set[int] | None:
    """The vector sizes in ``vector_matrix`` (empty: no vectors); None when it is missing."""
    rows = db.execute(
        "SELECT part, dim FROM vector_matrix WHERE block = 0 AND part IN ('doc', 'symptom')"
    ).fetchall()
    if len(rows) != len(_MATRIX_PARTS):
        return None
    return {dim for _, dim in rows if dim}


def vector_matrix_ready(db: sqlite_utils.Database) -> bool:
    """``vector_matrix`` is there, complete (what readers read instead of every row)."""
    return "vector_matrix" in db.table_names() and _matrix_dims(db) is not None


def build_vector_matrix(db: sqlite_utils.Database) -> bool:
    """Write ``vector_matrix`` from ``embeddings`` when it is missing, in the caller's transaction
    (no commit here). Left missing when any vector is damaged, of another size than the index's,
    or a finding id cannot be stored one a line: readers then read the rows, which say what is
    wrong, and the next ingest (which embeds such vectors again) builds it. True when it is there
    afterwards."""
    import numpy as np

    if vector_matrix_ready(db):
        return True
    if db.execute(f"SELECT 1 FROM embeddings WHERE NOT {_INTACT} LIMIT 1").fetchone():
        return False
    dims = {dim for (dim,) in db.execute("SELECT DISTINCT dim FROM embeddings")}
    if len(dims) > 1:
        return False
    dim = dims.pop() if dims else 0
    blocks: list[tuple[str, int, int, str, Any]] = []
    for part in _MATRIX_PARTS:
        (count,) = db.execute(
            "SELECT count(*) FROM embeddings WHERE substr(part, 1, ?) = ?", [len(part), part]
        ).fetchone()
        matrix = np.empty((count, dim), dtype=np.float32)
        ids: list[str] = []
        rows = db.execute(
            """SELECT finding_id, vector FROM embeddings
            WHERE substr(part, 1, ?) = ? ORDER BY finding_id, part""",
            [len(part), part],
        )
        for i, (fid, blob) in enumerate(rows):
            matrix[i] = np.frombuffer(blob, dtype=np.float32)
            ids.append(fid)
        if any("\n" in fid for fid in ids):
            return False
        per_block = max(1, MATRIX_BLOCK_BYTES // (4 * max(dim, 1)))
        for block, start in enumerate(range(0, max(count, 1), per_block)):
            end = start + per_block
            blocks.append((part, block, dim, "\n".join(ids[start:end]), matrix[start:end]))
    db.execute("DELETE FROM vector_matrix")
    db.conn.executemany(
        "INSERT INTO vector_matrix (part, block, dim, ids, matrix) VALUES (?, ?, ?, ?, ?)",
        [(part, block, dim, ids, m.tobytes()) for part, block, dim, ids, m in blocks],
    )
    return True


def indexed_rows(db: sqlite_utils.Database) -> dict[str, dict[str, Any]]:
    """``id -> {path, content_hash, document, record, body, line, symptoms, vector_model}``."""
    rows: dict[str, dict[str, Any]] = {}
    for fid, path, line, chash, record, body, document in db.execute(
        "SELECT id, path, line, content_hash, record, body, document FROM findings"
    ).fetchall():
        rows[fid] = {
            "path": path,
            "line": line,
            "content_hash": chash,
            "record": record,
            "body": body,
            "document": document,
            "symptoms": [],
            "vector_parts": {},
        }
    for fid, text in db.execute(
        "SELECT finding_id, text FROM symptoms ORDER BY finding_id, idx"
    ).fetchall():
        if fid in rows:
            rows[fid]["symptoms"].append(text)
    for fid, part, model, intact in db.execute(
        f"SELECT finding_id, part, model, {_INTACT} FROM embeddings"
    ).fetchall():
        if fid in rows:
            # a damaged vector counts as missing, so the next ingest computes it again
            rows[fid]["vector_parts"][part] = model if intact else None
    return rows


def _row_to_finding(record: str, body: str, path: str, line: int | None) -> Finding:
    from kb.serialize import finding_from_dict

    try:
        return finding_from_dict(json.loads(record), path=path, body=body or "", line=line)
    except (ValueError, DeployKBError) as exc:
        raise KBIndexError(
            f"index holds an unreadable record from {path} ({exc}); run `deploykb ingest`"
        ) from exc


def _contains(column: str) -> str:
    return f"instr(lower(coalesce({column}, '')), lower(?)) > 0"


def load_findings(
    db: sqlite_utils.Database,
    *,
    model: str | None = None,
    gpu: str | None = None,
    status: str | None = None,
    framework: str | None = None,
) -> list[Finding]:
    """All findings, ordered by id. ``model``/``gpu``/``framework`` are case-insensitive substring
    filters (``gpu`` matches the GPU name or the SM: "RTX PRO 6000", "sm120"); ``status`` is one of
    ``STATUSES``, matched exactly, so ``works`` does not also list ``works-with-flags``."""
    where: list[str] = []
    params: list[str] = []
    if model:
        where.append(_contains("model"))
        params.append(model)
    if gpu:
        where.append(f"({_contains('gpu')} OR {_contains('sm')})")
        params += [gpu, re.sub(r"[\s_]", "", gpu)]
    if status:
        wanted = re.sub(r"[\s_]+", "-", status.strip().lower())  # "works with flags" too
        if wanted not in STATUSES:
            raise InputError(f"--status {status!r}: choose one of {', '.join(STATUSES)}")
        where.append("lower(status) = ?")
        params.append(wanted)
    if framework:
        where.append(_contains("framework"))
        params.append(framework)
    sql = "SELECT record, body, path, line FROM findings"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id"
    return [_row_to_finding(*row) for row in db.execute(sql, params).fetchall()]


def get_finding(db: sqlite_utils.Database, finding_id: str) -> Finding:
    row = db.execute(
        "SELECT record, body, path, line FROM findings WHERE id = ?", [finding_id]
    ).fetchone()
    if row is None:
        raise InputError(f"no finding {finding_id!r}; run `deploykb list` to see ids")
    return _row_to_finding(*row)


def get_findings(db: sqlite_utils.Database, ids: Iterable[str]) -> dict[str, Finding]:
    """The findings with these ids (absent ones are left out), read in one query."""
    wanted = list(dict.fromkeys(ids))
    out: dict[str, Finding] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        for fid, record, body, path, line in db.execute(
            f"SELECT id, record, body, path, line FROM findings WHERE id IN ({marks})", chunk
        ).fetchall():
            out[fid] = _row_to_finding(record, body, path, line)
    return out


def source_rows(db: sqlite_utils.Database, finding_id: str) -> list[tuple[str, str | None]]:
    """``(source, url)`` pairs of a finding, in file order."""
    return [
        (source, url)
        for source, url in db.execute(
            "SELECT source, url FROM sources WHERE finding_id = ? ORDER BY idx", [finding_id]
        ).fetchall()
    ]


_WORD = re.compile(r"\w+")
MAX_QUERY_TERMS = 512
MAX_RARE_TERMS = 32
COMMON_TERM_SHARE = 0.2  # of the findings: a term in more is dropped from a query ...
COMMON_TERM_MIN_DOCS = 50  # ... once that is more than this many findings (a large index)


def fts_query(text: str, vocabulary: Vocabulary | None = None) -> str | None:
    """An FTS5 MATCH expression for arbitrary text (a pasted log): each word quoted, ORed.

    Pure digit runs (timestamps, ranks, sizes) and one-letter words are dropped: they match
    nothing useful. In a large index (``vocabulary.large``), words held by more than a fifth of
    the findings are dropped too (BM25 work on every document for almost no rank) and the
    ``MAX_RARE_TERMS`` rarest are kept.
    ``None`` when nothing searchable is left.
    """
    large = vocabulary is not None and vocabulary.large
    seen: dict[str, int] = {}
    for word in _WORD.findall(text.lower()):
        if len(word) < 2 or word.isdigit() or word in seen:
            continue
        # a word no finding holds as such may still match through its Porter stem: kept, as rare
        df = vocabulary.doc_freq.get(word, 0) if large else 0
        if large and df > COMMON_TERM_SHARE * vocabulary.documents:
            continue
        seen[word] = df
        if not large and len(seen) >= MAX_QUERY_TERMS:
            break
    if not seen:
        return None
    terms = sorted(seen, key=seen.get)[:MAX_RARE_TERMS] if large else list(seen)
    return " OR ".join(f'"{w}"' for w in terms)


@dataclass(frozen=True)
class Vocabulary:
    doc_freq: dict[str, int]
    documents: int

    @property
    def large(self) -> bool:
        """Large enough that common terms cost real time (a few dozen findings never do)."""
        return self.documents * COMMON_TERM_SHARE > COMMON_TERM_MIN_DOCS


def fts_vocabulary(db: sqlite_utils.Database, words: Iterable[str] | None = None) -> Vocabulary:
    """How many findings hold each word of their title or document, split the way ``fts_query``
    splits a query (FTS5's own vocabulary holds Porter stems, which a query word cannot be
    looked up in). Read from ``term_counts``, kept in step at ingest; ``words`` limits the read to
    the words of a query (what a one-query process needs)."""
    (documents,) = db.execute("SELECT count(*) FROM findings").fetchone()
    if not Vocabulary({}, documents).large:  # a small index needs no counts: nothing is dropped
        return Vocabulary({}, documents)
    if words is None:
        rows = db.execute("SELECT term, df FROM term_counts").fetchall()
    else:
        wanted = list(dict.fromkeys(words))
        rows = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            rows += db.execute(
                f"SELECT term, df FROM term_counts WHERE term IN ({marks})", chunk
            ).fetchall()
    return Vocabulary(dict(rows), documents)


def query_words(text: str) -> list[str]:
    """The words ``fts_query`` may keep from ``text``."""
    return list(
        dict.fromkeys(w for w in _WORD.findall(text.lower()) if len(w) >= 2 and not w.isdigit())
    )


def fts_search(
    db: sqlite_utils.Database,
    text: str,
    limit: int = 50,
    vocabulary: Vocabulary | None = None,
) -> list[tuple[str, float]]:
    """``(id, score)`` by BM25 over title (weight 2) and document; higher is better."""
    query = fts_query(text, vocabulary)
    if query is None:
        return []
    return fts_match(db, query, limit)


def fts_match(db: sqlite_utils.Database, query: str, limit: int = 50) -> list[tuple[str, float]]:
    """``fts_search`` of an ``fts_query`` expression. The best ``limit`` rows are found in the
    full-text index alone, and only their ids are looked up (a join would look up every row that
    matches: most of a large index, for a pasted log)."""
    ranked = db.execute(
        """SELECT rowid, bm25(findings_fts, 2.0, 1.0) AS rank
        FROM findings_fts WHERE findings_fts MATCH ? ORDER BY rank LIMIT ?""",
        [query, limit],
    ).fetchall()
    if not ranked:
        return []
    marks = ", ".join("?" * len(ranked))
    ids = dict(
        db.execute(
            f"SELECT rowid, id FROM findings WHERE rowid IN ({marks})", [r for r, _ in ranked]
        ).fetchall()
    )
    return [(ids[rowid], -float(rank)) for rowid, rank in ranked if rowid in ids]


def load_vectors(
    db: sqlite_utils.Database, part_prefix: str = "doc"
) -> tuple[list[str], np.ndarray]:
    """Finding ids and their vectors (float32 rows) for parts starting with ``part_prefix``:
    ``"doc"`` gives one row per finding, ``"symptom"`` one row per symptom (ids repeat). Read from
    ``vector_matrix`` when it is there (a few blobs), else row by row from ``embeddings``."""
    import numpy as np

    if part_prefix in _MATRIX_PARTS and "vector_matrix" in db.table_names():
        found = _read_matrix(db, part_prefix)
        if found is not None:
            return found
    rows = db.execute(
        """SELECT finding_id, dim, vector FROM embeddings
        WHERE substr(part, 1, ?) = ? ORDER BY finding_id, part""",
        [len(part_prefix), part_prefix],
    ).fetchall()
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    dims = {dim for _, dim, _ in rows}
    if len(dims) != 1:
        raise KBIndexError(
            f"index at {db_label(db)} mixes vector sizes {sorted(dims)}; run `deploykb ingest`"
        )
    (dim,) = dims
    for fid, _, blob in rows:
        if len(blob) != 4 * dim:
            raise KBIndexError(
                f"index at {db_label(db)} holds a damaged vector for {fid!r} ({len(blob)} bytes, "
                f"expected {4 * dim}); run `deploykb ingest`"
            )
    matrix = np.frombuffer(b"".join(blob for _, _, blob in rows), dtype=np.float32)
    return [fid for fid, _, _ in rows], matrix.reshape(len(rows), dim)


def _read_matrix(db: sqlite_utils.Database, part: str) -> tuple[list[str], np.ndarray] | None:
    """``load_vectors`` from ``vector_matrix``; None when it is missing or does not add up."""
    import numpy as np

    if _matrix_dims(db) is None:
        return None
    ids: list[str] = []
    blocks = []
    dims = set()
    for dim, text, blob in db.execute(
        "SELECT dim, ids, matrix FROM vector_matrix WHERE part = ? ORDER BY block", [part]
    ):
        rows = text.split("\n") if text else []
        if len(blob) != 4 * dim * len(rows):
            return None
        ids += rows
        dims.add(dim)
        blocks.append(np.frombuffer(blob, dtype=np.float32).reshape(len(rows), dim))
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    if len(dims) != 1:
        return None
    return ids, blocks[0] if len(blocks) == 1 else np.concatenate(blocks)


def index_status(db: sqlite_utils.Database) -> dict[str, Any]:
    """What the index holds and how it was built (for ``deploykb status`` and stale checks)."""
    tables = set(db.table_names())
    count = db.execute("SELECT count(*) FROM findings").fetchone()[0] if "findings" in tables else 0
    vectors = (
        db.execute("SELECT count(*) FROM embeddings").fetchone()[0] if "embeddings" in tables else 0
    )
    dim = get_meta(db, "dim")
    return {
        "path": db_label(db),
        "count": count,
        "vectors": vectors,
        "model": get_meta(db, "model"),
        "dim": int(dim) if dim else None,
        "parser_version": get_meta(db, "parser_version"),
        "schema_version": get_meta(db, "schema_version"),
        "last_ingest": get_meta(db, "last_ingest"),
    }


def check_index(db: sqlite_utils.Database, embedder_name: str | None = None) -> None:
    """Refuse an empty index, or one built by another parser/schema (or model, when given)."""
    from kb.versions import PARSER_VERSION

    status = index_status(db)
    label = status["path"]
    if not status["count"]:
        raise KBIndexError(f"no index at {label}; run `deploykb ingest`", f"no index at {label}")
    stale = (
        status["schema_version"] != INDEX_SCHEMA_VERSION
        or status["parser_version"] != PARSER_VERSION
    )
    if embedder_name is not None and status["model"] != embedder_name:
        stale = True
    if stale:
        reason = (
            f"index at {label} was built by schema {status['schema_version']}, parser "
            f"{status['parser_version']}, model {status['model']}"
        )
        raise KBIndexError(f"{reason}; run `deploykb ingest`", reason)
    damaged = damaged_vectors(db)
    if damaged:
        reason = f"index at {label} holds {damaged} damaged vector(s)"
        raise KBIndexError(f"{reason}; run `deploykb ingest`", reason)
