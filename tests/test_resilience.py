"""Crash safety of writes, and the redactor measured on its labelled corpus."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from kb import store
from kb.embed import HashEmbedder
from kb.errors import FindingExistsError
from kb.ingest import ingest

REPO = Path(__file__).resolve().parent.parent
ctx = multiprocessing.get_context("fork")


class _SlowEmbedder(HashEmbedder):
    """Says when it starts embedding, then takes its time: the moment to kill the process."""

    def __init__(self, started) -> None:
        super().__init__()
        self._started = started

    def embed(self, texts):
        self._started.set()
        time.sleep(30)
        return super().embed(texts)


def _migrate(db_path: str, findings: str, started) -> None:
    db = store.open_db(Path(db_path))
    ingest(db, [Path(findings)], lambda: _SlowEmbedder(started), embedder_name="slow")


@pytest.mark.slow
def test_a_kill_during_a_schema_migration_leaves_the_old_index(tmp_path):
    db_path = tmp_path / "kb.db"
    findings = REPO / "findings"
    db = store.open_db(db_path)
    ingest(db, [findings], HashEmbedder, embedder_name=HashEmbedder().name)
    before = store.index_status(db)["count"]
    with store.write_transaction(db):  # an index written by an older deploykb
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.close()

    started = ctx.Event()
    child = ctx.Process(target=_migrate, args=(str(db_path), str(findings), started))
    child.start()
    assert started.wait(60), "the migration never reached the embedding step"
    os.kill(child.pid, signal.SIGKILL)  # old tables dropped, new ones half-filled, not committed
    child.join()

    db = store.open_db(db_path)
    assert store.get_meta(db, "schema_version") == "1"
    assert store.index_status(db)["count"] == before
    assert len(store.load_findings(db)) == before
    assert store.fts_search(db, "probability tensor")  # the full-text index too


def test_a_failed_migration_rolls_back(tmp_path):
    db = store.open_db(tmp_path / "kb.db")
    ingest(db, [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    before = store.index_status(db)["count"]
    with store.write_transaction(db):
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")

    def broken():
        raise RuntimeError("model file truncated")

    with pytest.raises(Exception, match="model file truncated"):
        ingest(db, [REPO / "findings"], broken, embedder_name="other")
    assert store.get_meta(db, "schema_version") == "1"
    assert store.index_status(db)["count"] == before


def test_the_index_is_in_wal_mode(tmp_path):
    db = store.open_db(tmp_path / "kb.db")
    store.ensure_schema(db)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_write_finding_never_replaces_a_file_that_appeared_meanwhile(tmp_path, monkeypatch):
    """The check says the name is free; another add creates the file before this one writes."""
    from kb.parse import parse_file
    from kb.write import write_finding

    finding = parse_file(REPO / "findings" / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md").findings[0]
    target = tmp_path / f"{finding.id}.md"
    real_exists = Path.exists

    def racing_exists(self):
        present = real_exists(self)
        if self == target and not present:
            target.write_text("the other add's finding\n")  # lands between check and write
        return present

    monkeypatch.setattr(Path, "exists", racing_exists)
    with pytest.raises(FindingExistsError):
        write_finding(finding, tmp_path)
    monkeypatch.undo()
    assert target.read_text() == "the other add's finding\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]  # no temporary file left


def test_a_damaged_vector_is_reembedded_by_ingest(tmp_path):
    db = store.open_db(tmp_path / "kb.db")
    ingest(db, [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    fid = store.load_findings(db)[0].id
    with store.write_transaction(db):
        db.execute("UPDATE embeddings SET vector = x'00' WHERE finding_id = ?", [fid])
    assert store.damaged_vectors(db) > 0
    report = ingest(db, [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    assert report.embedded > 0 and store.damaged_vectors(db) == 0
    ids, matrix = store.load_vectors(db)
    assert matrix.shape == (len(ids), HashEmbedder().dim)


def test_a_wrong_length_vector_is_one_line_not_a_traceback(tmp_path):
    from kb.errors import KBIndexError

    db = store.open_db(tmp_path / "kb.db")
    ingest(db, [REPO / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    con = sqlite3.connect(tmp_path / "kb.db")
    con.execute("UPDATE embeddings SET vector = x'0000' WHERE rowid = 1")
    con.commit()
    con.close()
    with pytest.raises(KBIndexError, match=r"holds a damaged vector for '.*' \(2 bytes, expected"):
        store.load_vectors(db)


# --- redaction --------------------------------------------------------------------------------


def _evaluate():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import redaction_eval
    finally:
        sys.path.pop(0)
    return redaction_eval


def test_redaction_corpus_recall_is_total_and_no_clean_line_changes():
    r = _evaluate().evaluate()
    assert r["cases"] >= 60 and r["secrets"] >= 60 and r["clean"] >= 60
    assert r["missed"] == [] and r["recall"] == 1.0
    assert r["changed"] == [] and r["clean_changed"] == 0


def test_redaction_time_is_linear_in_the_input():
    from kb.redact import redact

    def seconds(text: str) -> float:
        best = float("inf")
        for _ in range(2):
            start = time.perf_counter()
            redact(text)
            best = min(best, time.perf_counter() - start)
        return best

    for unit in ("ssh root@10.0.0.1 x\n", "x" * 50 + "."):
        small = seconds(unit * (20_000 // len(unit)))
        large = seconds(unit * (100_000 // len(unit)))
        assert large < 10 * small + 0.05, (unit, small, large)  # 5x the input: not 25x the time
