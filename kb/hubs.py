"""How generic each finding is: the mean similarity of its vectors to its nearest other findings.

A finding written in general words (a long "OOM at start-up" case, a broad working deployment) is
close to many others, and so to many queries: its cosine to a report says less than the same cosine
of a finding that resembles nothing else (the "hub" effect of nearest-neighbour search). Each
finding's *hub* value is the mean, over the ``K`` most similar other findings of a reference set,
of the best cosine between any of its vectors (document, symptoms) and any of theirs; the ranking
reads it, standardised over the index and clipped to [``LOW``, ``HIGH``], as one feature
(``agent.rank.FEATURES`` ``hub``). The clip keeps a finding unlike any other from being lifted for
that alone: on the 150 training positives of 2026-12-02 (nested out-of-fold recall@1, mean of three
fold assignments, with the whole-report BM25 rank beside it) the standardised value clipped to
[-3, 3] gave 0.771, to [0, 3] 0.769, to [-1, 3] 0.775, and no hub feature 0.740.

The reference set is the shipped knowledge base when the index holds it (so a team's own findings
do not change each other's values, and adding one costs one row), else every finding of an index of
at most ``MAX_REFERENCE`` findings, else none (every value is then unknown and the feature is 0).
Values are computed at ingest, for the findings that lack one, in the ingest's transaction; a change
of the reference set (another release of the shipped findings, another embedding model) recomputes
all of them.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover  (the unchanged re-ingest reads without sqlite-utils)
    import sqlite_utils

K = 10  # neighbours averaged (5, 10 and 20 were compared: data/ranking.json _provenance.feature_set)
MAX_REFERENCE = 2000  # an index without the shipped findings is its own reference up to this size
CHUNK = 256  # findings whose values are computed in one matrix product
LOW, HIGH = -1.0, 3.0  # the standardised value's clip (see above)

_SCHEMA = """CREATE TABLE IF NOT EXISTS finding_hubs (
    finding_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    hub REAL
)"""


def ensure_table(db: sqlite_utils.Database) -> None:
    db.execute(_SCHEMA)


def reference_ids(db: sqlite_utils.Database, shipped: Path | None) -> list[str]:
    """The findings every value is measured against (see the module's doc)."""
    from kb.paths import under

    rows = db.execute("SELECT id, path FROM findings ORDER BY id").fetchall()
    if shipped is not None:
        scope = [shipped.resolve()]
        ref = [fid for fid, path in rows if under(path or "", scope)]
        if ref:
            return ref
    return [fid for fid, _ in rows] if len(rows) <= MAX_REFERENCE else []


def _fingerprint(db: sqlite_utils.Database, ref: Sequence[str]) -> str:
    from kb.store import get_meta

    h = hashlib.sha256(f"{K}\n{get_meta(db, 'model')}\n".encode())
    hashes = dict(db.execute("SELECT id, content_hash FROM findings").fetchall())
    for fid in ref:
        h.update(f"{fid} {hashes.get(fid)}\n".encode())
    return h.hexdigest()


def _rows_of(db: sqlite_utils.Database, sql: str, ids: Sequence[str]):
    """The rows of ``sql`` (with ``{marks}`` where the ``IN`` list goes) for ``ids``, 500 at a
    time (SQLite's limit on bound parameters)."""
    ids = list(ids)
    for begin in range(0, len(ids), 500):
        chunk = ids[begin : begin + 500]
        yield from db.execute(sql.format(marks=", ".join("?" * len(chunk))), chunk)


def _grouped(ids: list[str], matrix) -> dict[str, Any]:
    """``finding id -> its rows`` of a matrix whose rows are ordered by finding id."""
    out: dict[str, Any] = {}
    start = 0
    for i in range(1, len(ids) + 1):
        if i == len(ids) or ids[i] != ids[start]:
            out[ids[start]] = matrix[start:i]
            start = i
    return out


def _vectors(db: sqlite_utils.Database, ids: set[str] | None = None) -> dict[str, Any]:
    """Every finding's vectors (document and symptoms) as one float32 matrix each; with ``ids``,
    only those findings' (read row by row: an ingest that adds a few findings to a large index
    does not load all of its vectors)."""
    import numpy as np

    from kb.store import _INTACT, load_vectors

    if ids is not None:
        out: dict[str, list] = {}
        sql = (
            "SELECT finding_id, vector FROM embeddings WHERE finding_id IN ({marks})"
            f" AND (part = 'doc' OR substr(part, 1, 7) = 'symptom') AND {_INTACT}"
            " ORDER BY finding_id, part"
        )
        for fid, blob in _rows_of(db, sql, sorted(ids)):
            out.setdefault(fid, []).append(np.frombuffer(blob, dtype=np.float32))
        return {fid: np.vstack(rows) for fid, rows in out.items()}
    merged: dict[str, Any] = {}
    for part in ("doc", "symptom"):
        part_ids, matrix = load_vectors(db, part)
        if not part_ids:
            continue
        for fid, rows in _grouped(part_ids, matrix).items():
            merged[fid] = rows if fid not in merged else np.vstack([merged[fid], rows])
    return merged


def hub_values(
    vectors: dict[str, Any], targets: Sequence[str], ref: Sequence[str]
) -> dict[str, float]:
    """Each target's hub value against the reference findings (itself left out)."""
    import numpy as np

    ref = [fid for fid in ref if fid in vectors]
    if not ref:
        return {}
    ref_rows = np.vstack([vectors[fid] for fid in ref])
    # column j of the per-finding maximum is reference finding j: reduceat over its rows
    starts = np.cumsum([0] + [len(vectors[fid]) for fid in ref[:-1]])
    position = {fid: j for j, fid in enumerate(ref)}
    out: dict[str, float] = {}
    targets = [fid for fid in targets if fid in vectors]
    for begin in range(0, len(targets), CHUNK):
        chunk = targets[begin : begin + CHUNK]
        rows = np.vstack([vectors[fid] for fid in chunk])
        sims = np.maximum.reduceat(rows @ ref_rows.T, starts, axis=1)  # (target rows, ref)
        row_starts = np.cumsum([0] + [len(vectors[fid]) for fid in chunk[:-1]])
        best = np.maximum.reduceat(sims, row_starts, axis=0)  # (targets, ref)
        for i, fid in enumerate(chunk):
            row = best[i].astype(np.float64)
            if fid in position:
                row = np.delete(row, position[fid])
            if not len(row):
                continue
            k = min(K, len(row))
            top = np.partition(row, len(row) - k)[len(row) - k :]
            out[fid] = float(top.mean())
    return out


def build(db: sqlite_utils.Database, shipped: Path | None) -> int:
    """Fill ``finding_hubs`` for the findings lacking a current value, in the caller's transaction
    (no commit here); record the reference and the mean and spread of the values in ``meta``.
    Returns how many values were computed."""
    from kb.store import get_meta, set_meta

    ensure_table(db)
    ref = reference_ids(db, shipped)
    fingerprint = _fingerprint(db, ref)
    if get_meta(db, "hub_reference") != fingerprint:
        db.execute("DELETE FROM finding_hubs")
    db.execute(
        """DELETE FROM finding_hubs WHERE NOT EXISTS (SELECT 1 FROM findings f
        WHERE f.id = finding_hubs.finding_id AND f.content_hash = finding_hubs.content_hash)"""
    )
    missing = db.execute(
        """SELECT f.id, f.content_hash FROM findings f LEFT JOIN finding_hubs h
        ON h.finding_id = f.id WHERE h.finding_id IS NULL ORDER BY f.id"""
    ).fetchall()
    if missing:
        targets = [fid for fid, _ in missing]
        needed = set(targets) | set(ref)
        (count,) = db.execute("SELECT count(*) FROM findings").fetchone()
        # a few findings added to a large index: read only theirs and the reference's vectors
        vectors = _vectors(db, needed if len(needed) < count // 2 else None) if ref else {}
        values = hub_values(vectors, targets, ref) if ref else {}
        db.conn.executemany(
            "INSERT INTO finding_hubs (finding_id, content_hash, hub) VALUES (?, ?, ?)",
            [(fid, chash, values.get(fid)) for fid, chash in missing],
        )
    n, mean, square = db.execute(
        "SELECT count(hub), avg(hub), avg(hub * hub) FROM finding_hubs WHERE hub IS NOT NULL"
    ).fetchone()
    spread = math.sqrt(max(0.0, square - mean * mean)) if n else 0.0
    set_meta(
        db,
        hub_reference=fingerprint,
        hub_mean="" if not n else repr(mean),
        hub_sd="" if not n else repr(spread),
    )
    return len(missing)


def ready(db: sqlite_utils.Database) -> bool:
    """The values were built by this version (an index written before them lacks the table)."""
    from kb.store import get_meta

    return "finding_hubs" in db.table_names() and get_meta(db, "hub_reference") is not None


def standardised(db: sqlite_utils.Database, ids: Sequence[str]) -> dict[str, float]:
    """``id -> (hub - mean) / spread``, clipped to [LOW, HIGH], for the ids that have a value; empty
    when the index has none (an index written before them, or one with no reference set)."""
    from kb.store import get_meta

    if not ids or "finding_hubs" not in db.table_names():
        return {}
    try:
        mean, spread = float(get_meta(db, "hub_mean") or ""), float(get_meta(db, "hub_sd") or "")
    except ValueError:
        return {}
    if spread <= 0:
        return {}
    sql = (
        "SELECT finding_id, hub FROM finding_hubs WHERE finding_id IN ({marks}) AND hub IS NOT NULL"
    )
    return {fid: max(LOW, min(HIGH, (hub - mean) / spread)) for fid, hub in _rows_of(db, sql, ids)}
