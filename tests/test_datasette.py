"""The index opened as a user would open it: sqlite-utils sees the foreign keys, and Datasette, with
the shipped ``data/metadata.json``, shows findings that link to their symptoms, fixes and sources,
searchable and faceted.

Datasette is a test extra (``pip install -e '.[test]'``); its own Python API is used, in process,
no server started.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
import sqlite_utils
from datasette.app import Datasette

from kb.embed import HashEmbedder
from kb.ingest import ingest
from kb.store import open_db

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "kb" / "findings"
METADATA = REPO / "data" / "metadata.json"
LLAMA = "llama-fp8-h100-startup-oom"
LLAMA_TITLE = (
    "Llama FP8 on 2x H100: out of memory while profiling at start-up, fixed by lowering memory "
    "utilisation"
)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """The test findings indexed into ``deploykb.db`` (the name ``metadata.json`` is keyed by)."""
    folder = tmp_path_factory.mktemp("datasette")
    shutil.copytree(FIXTURES, folder / "findings")
    path = folder / "deploykb.db"
    db = open_db(path)
    report = ingest(db, [folder / "findings"], HashEmbedder, embedder_name=HashEmbedder().name)
    assert not report.errors
    db.close()
    return path


def test_symptom_fix_and_source_rows_reference_their_finding(index):
    db = sqlite_utils.Database(index)
    for table in ("symptoms", "fixes", "sources"):
        fks = [(fk.column, fk.other_table, fk.other_column) for fk in db[table].foreign_keys]
        assert fks == [("finding_id", "findings", "id")], table
    assert db["findings"].detect_fts() == "findings_fts"
    assert [r["id"] for r in db["findings"].search("profiling", columns=["id"])] == [LLAMA]
    # every child row points at a finding that exists
    for table in ("symptoms", "fixes", "sources"):
        orphans = db.execute(
            f"SELECT count(*) FROM {table} WHERE finding_id NOT IN (SELECT id FROM findings)"
        ).fetchone()[0]
        assert orphans == 0
        assert db[table].count > 0


def test_an_index_of_the_previous_schema_is_rebuilt_with_the_keys(tmp_path):
    """An index written before the keys existed (schema 2) is rebuilt, not read as it is."""
    import sqlite3

    from kb.store import INDEX_SCHEMA_VERSION, ensure_schema

    path = tmp_path / "old.db"
    db = open_db(path)
    report = ingest(db, [FIXTURES], HashEmbedder, embedder_name=HashEmbedder().name)
    assert not report.errors
    db.close()
    con = sqlite3.connect(path)  # make it look like a schema-2 index: no REFERENCES
    con.executescript(
        "ALTER TABLE symptoms RENAME TO s_old; CREATE TABLE symptoms (finding_id TEXT NOT NULL,"
        " idx INTEGER NOT NULL, class TEXT NOT NULL, text TEXT NOT NULL,"
        " PRIMARY KEY (finding_id, idx)); INSERT INTO symptoms SELECT * FROM s_old;"
        " DROP TABLE s_old; UPDATE meta SET value = '2' WHERE key = 'schema_version';"
    )
    con.close()
    db = open_db(path)
    ensure_schema(db)
    assert db["meta"].get("schema_version")["value"] == INDEX_SCHEMA_VERSION == "4"
    assert [fk.other_table for fk in db["symptoms"].foreign_keys] == ["findings"]


def datasette_get(index: Path, *paths: str) -> list:
    """GET each path from Datasette serving ``index`` with the shipped metadata."""

    async def run() -> list:
        ds = Datasette([str(index)], metadata=json.loads(METADATA.read_text()))
        await ds.invoke_startup()
        out = []
        for path in paths:
            response = await ds.client.get(path)
            assert response.status_code == 200, (path, response.status_code)
            out.append(response.json() if ".json" in path else response.text)
        return out

    return asyncio.run(run())


def test_datasette_links_symptoms_to_their_finding(index):
    symptoms, page = datasette_get(
        index,
        f"/deploykb/symptoms.json?_labels=on&_shape=objects&finding_id={LLAMA}",
        f"/deploykb/findings/{LLAMA}",
    )
    (row,) = symptoms["rows"]
    assert row["finding_id"] == {"value": LLAMA, "label": LLAMA_TITLE}
    assert row["class"] == "oom"
    # the finding's page lists the rows that link to it, table by table
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))
    assert "Links from other tables" in text
    assert "1 row from finding_id in symptoms" in text
    assert "2 rows from finding_id in fixes" in text
    assert "1 row from finding_id in sources" in text


def test_datasette_full_text_search_and_facets(index):
    found, none, facets = datasette_get(
        index,
        "/deploykb/findings.json?_search=profiling&_shape=objects",
        "/deploykb/findings.json?_search=zebra&_shape=objects",
        "/deploykb/findings.json?_shape=objects",
    )
    assert [r["id"] for r in found["rows"]] == [LLAMA]
    assert none["rows"] == []
    # the facets come from data/metadata.json
    status = {f["value"]: f["count"] for f in facets["facet_results"]["status"]["results"]}
    assert status == {"works-with-flags": 2, "partial": 1, "works": 1}
    assert {"framework", "sm", "quantization"} <= set(facets["facet_results"])


def test_metadata_hides_the_internal_tables(index):
    (tables,) = datasette_get(index, "/deploykb.json")
    shown = {t["name"] for t in tables["tables"] if not t["hidden"]}
    assert shown == {"findings", "symptoms", "fixes", "sources"}
