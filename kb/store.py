"""The SQLite index: schema, row writers for the ingest transaction, and the readers.

Every function takes the ``sqlite_utils.Database`` it works on. Writers (``write_finding``,
``write_vectors``, ``delete_findings``, ``set_meta``) issue plain SQL and never commit: the caller
wraps them in one ``with db.atomic():`` block. (sqlite-utils 4 commits each ``db.execute`` write
made outside a transaction, so ``with db.conn:`` alone would not make them atomic.)
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from kb.document import source_url
from kb.errors import DeployKBError, InputError, KBIndexError
from kb.records import STATUSES, Finding

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

SCHEMA_VERSION = "2"

_TABLES = ("findings", "symptoms", "fixes", "sources", "embeddings", "meta")

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
    finding_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    class TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS fixes (
    finding_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    kind TEXT NOT NULL,
    action TEXT NOT NULL,
    text TEXT NOT NULL,
    alternative INTEGER,
    PRIMARY KEY (finding_id, idx)
);
CREATE TABLE IF NOT EXISTS sources (
    finding_id TEXT NOT NULL,
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
"""

# --- opening and schema ------------------------------------------------------------------------


def open_db(path: Path) -> sqlite_utils.Database:
    """Open (or create) the index file; anything that is not a deploykb index is refused."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KBIndexError(f"{path}: cannot create the index folder ({exc}); pass --db") from exc
    try:
        db = sqlite_utils.Database(path)
        tables = set(db.table_names())
    except sqlite3.Error as exc:
        raise KBIndexError(f"{path}: not a deploykb index ({exc}); delete it or pass --db") from exc
    if tables and "meta" not in tables:
        raise KBIndexError(
            f"{path}: not a deploykb index (it holds other tables: "
            f"{', '.join(sorted(tables)[:5])}); delete it or pass --db"
        )
    return db


def db_label(db: sqlite_utils.Database) -> str:
    """The file behind a database, for messages (``:memory:`` for an in-memory one)."""
    for _seq, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main":
            return file or ":memory:"
    return ":memory:"


def ensure_schema(db: sqlite_utils.Database) -> None:
    """Create the tables and the FTS5 index; an index of another schema version is rebuilt."""
    tables = set(db.table_names())
    if "meta" in tables:
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row and row[0] != SCHEMA_VERSION:
            _drop_all(db)
    db.executescript(_SCHEMA)
    if not db["findings"].detect_fts():
        db["findings"].enable_fts(
            ["title", "document"], fts_version="FTS5", create_triggers=True, tokenize="porter"
        )
    with db.atomic():
        db.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
            [SCHEMA_VERSION],
        )


def _drop_all(db: sqlite_utils.Database) -> None:
    if db["findings"].exists() and db["findings"].detect_fts():
        db["findings"].disable_fts()
    for name in _TABLES:
        db.execute(f"DROP TABLE IF EXISTS [{name}]")
    db.conn.commit()


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
    from kb.serialize import finding_to_dict

    d = finding_to_dict(f)
    # the root cause is stored resolved (null when there is none), so loading a finding never
    # has to parse its Markdown body again
    d["root_cause"] = f.root_cause
    return json.dumps(d, ensure_ascii=False, sort_keys=True)


def write_finding(
    db: sqlite_utils.Database,
    f: Finding,
    *,
    path: str,
    content_hash: str,
    document: str,
    indexed_at: str,
) -> None:
    """Insert a finding and its symptom/fix/source rows, replacing any row with the same id.

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
            fw.version, f.root_cause, f.failing_command, f.working_command, finding_record(f),
            f.body, document, indexed_at,
        ],
    )  # fmt: skip
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
    tables = ["findings", "symptoms", "fixes", "sources"]
    if not keep_vectors:
        tables.append("embeddings")
    for finding_id in ids:
        db.execute("DELETE FROM findings WHERE id = ?", [finding_id])
        for table in tables[1:]:
            db.execute(f"DELETE FROM {table} WHERE finding_id = ?", [finding_id])


# --- readers -----------------------------------------------------------------------------------


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
    for fid, part, model in db.execute("SELECT finding_id, part, model FROM embeddings").fetchall():
        if fid in rows:
            rows[fid]["vector_parts"][part] = model
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
        raise DeployKBError(f"no finding {finding_id!r}; run `deploykb list` to see ids")
    return _row_to_finding(*row)


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


def fts_vocabulary(db: sqlite_utils.Database) -> Vocabulary:
    """How many findings hold each word of their title or document, split the way ``fts_query``
    splits a query (FTS5's own vocabulary holds Porter stems, which a query word cannot be
    looked up in). Under a second for 10,000 findings; a long-lived process computes it once."""
    from collections import Counter

    (documents,) = db.execute("SELECT count(*) FROM findings").fetchone()
    doc_freq: Counter[str] = Counter()
    if Vocabulary({}, documents).large:  # a small index needs no counts: nothing is dropped
        for title, document in db.execute("SELECT title, document FROM findings"):
            doc_freq.update(set(_WORD.findall(f"{title}\n{document}".lower())))
    return Vocabulary(dict(doc_freq), documents)


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
    rows = db.execute(
        """SELECT findings.id, bm25(findings_fts, 2.0, 1.0) AS rank
        FROM findings_fts JOIN findings ON findings.rowid = findings_fts.rowid
        WHERE findings_fts MATCH ? ORDER BY rank LIMIT ?""",
        [query, limit],
    ).fetchall()
    return [(fid, -float(rank)) for fid, rank in rows]


def load_vectors(
    db: sqlite_utils.Database, part_prefix: str = "doc"
) -> tuple[list[str], np.ndarray]:
    """Finding ids and their vectors (float32 rows) for parts starting with ``part_prefix``:
    ``"doc"`` gives one row per finding, ``"symptom"`` one row per symptom (ids repeat)."""
    import numpy as np

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
    matrix = np.vstack([np.frombuffer(blob, dtype=np.float32) for _, _, blob in rows])
    return [fid for fid, _, _ in rows], matrix


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
    stale = status["schema_version"] != SCHEMA_VERSION or status["parser_version"] != PARSER_VERSION
    if embedder_name is not None and status["model"] != embedder_name:
        stale = True
    if stale:
        reason = (
            f"index at {label} was built by schema {status['schema_version']}, parser "
            f"{status['parser_version']}, model {status['model']}"
        )
        raise KBIndexError(f"{reason}; run `deploykb ingest`", reason)
