"""The SQLite index: schema, readers, full-text search, vectors and stale-index checks."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from kb import store
from kb.document import document_text, source_url, symptom_texts
from kb.errors import DeployKBError, InputError, KBIndexError
from kb.ingest import ingest
from kb.parse import PARSER_VERSION, parse_file


@pytest.fixture
def indexed(tmp_db, findings_dir, embedder_factory):
    """``tmp_db`` holding the four test findings."""
    ingest(tmp_db, [findings_dir], embedder_factory)
    return tmp_db


def ids(findings):
    return [f.id for f in findings]


# --- schema and opening ----------------------------------------------------------------------


def test_schema_has_the_documented_tables_and_columns(tmp_db):
    tables = set(tmp_db.table_names())
    assert {"findings", "symptoms", "fixes", "sources", "embeddings", "meta", "findings_fts"} <= (
        tables
    )
    columns = set(tmp_db["findings"].columns_dict)
    assert {
        "id", "path", "content_hash", "title", "status", "date", "model", "architecture",
        "quantization", "gpu", "gpu_count", "sm", "interconnect", "framework",
        "framework_version", "root_cause", "failing_command", "working_command", "record",
        "document", "indexed_at",
    } <= columns  # fmt: skip
    assert set(tmp_db["fixes"].columns_dict) == {
        "finding_id", "idx", "kind", "action", "text", "alternative"
    }  # fmt: skip
    assert set(tmp_db["embeddings"].columns_dict) == {
        "finding_id",
        "part",
        "model",
        "dim",
        "vector",
    }
    assert tmp_db["findings"].detect_fts() == "findings_fts"
    assert store.get_meta(tmp_db, "schema_version") == store.INDEX_SCHEMA_VERSION


def test_ensure_schema_twice_keeps_the_data(indexed):
    store.ensure_schema(indexed)
    assert len(store.load_findings(indexed)) == 4
    assert store.fts_search(indexed, "exclamation")[0][0] == "qwen-moe-nvfp4-sm120-garbage"


def test_an_index_of_another_schema_version_is_rebuilt_empty(indexed):
    with indexed.atomic():
        store.set_meta(indexed, schema_version="0")
    store.ensure_schema(indexed)
    assert store.load_findings(indexed) == []
    assert store.get_meta(indexed, "schema_version") == store.INDEX_SCHEMA_VERSION


def test_open_db_creates_the_parent_folder(tmp_path):
    path = tmp_path / "a" / "b" / "kb.db"
    db = store.open_db(path)
    store.ensure_schema(db)
    assert path.is_file()


def test_open_db_refuses_a_file_that_is_not_sqlite(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(KBIndexError) as exc:
        store.open_db(path)
    assert str(exc.value) == (
        f"{path}: not a deploykb index (file is not a database); delete it or pass --db"
    )


def test_open_db_refuses_another_programs_sqlite_file(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE photos (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(
        KBIndexError, match=r"not a deploykb index \(it holds other tables: photos\)"
    ):
        store.open_db(path)


# --- rows written by ingest ------------------------------------------------------------------


def test_findings_row_columns_come_from_the_finding(indexed):
    row = indexed["findings"].get("qwen-moe-nvfp4-sm120-garbage")
    assert row["status"] == "works-with-flags"
    assert row["gpu"] == "NVIDIA RTX PRO 6000 Blackwell"
    assert row["gpu_count"] == 4
    assert row["sm"] == "sm120"
    assert row["interconnect"] == "PCIe"
    assert row["framework"] == "sglang"
    assert row["framework_version"] == "main"
    assert row["root_cause"].startswith("The automatically chosen MoE kernel")
    assert row["path"].endswith("qwen-moe-nvfp4-sm120-garbage.md")


def test_sources_are_expanded_to_links(indexed):
    rows = store.source_rows(indexed, "dsv3-fp8-b200-illegal-memory-access")
    assert rows == [
        ("https://example.org/notes/dsv3-b200", "https://example.org/notes/dsv3-b200"),
        ("example-org/deploy-notes#12", "https://github.com/example-org/deploy-notes/issues/12"),
    ]


def test_source_url_leaves_file_paths_without_a_link():
    assert source_url("shared/seeds/003_861d3f58ddb8af43.txt") is None
    assert source_url("sgl-project/sglang#14311") == (
        "https://github.com/sgl-project/sglang/issues/14311"
    )


def test_fix_rows_record_kind_action_and_alternative(indexed):
    rows = indexed.execute(
        "SELECT kind, action, text, alternative FROM fixes WHERE finding_id = ? ORDER BY idx",
        ["dsv3-fp8-b200-illegal-memory-access"],
    ).fetchall()
    assert rows == [
        ("flag", "add", "--disable-cuda-graph", None),
        ("flag", "add", "--cuda-graph-max-bs 16", 0),
    ]
    env = indexed.execute(
        "SELECT kind, text FROM fixes WHERE finding_id = 'qwen-moe-nvfp4-sm120-garbage'"
        " AND kind != 'flag'"
    ).fetchall()
    assert env == [("env", "SGLANG_EXAMPLE_SWITCH=1")]


def test_symptom_rows_keep_class_and_verbatim_text(indexed):
    rows = indexed.execute(
        "SELECT idx, class, text FROM symptoms WHERE finding_id = ? ORDER BY idx",
        ["dsv3-fp8-b200-illegal-memory-access"],
    ).fetchall()
    assert rows == [
        (0, "illegal-memory-access",
         "RuntimeError: CUDA error: an illegal memory access was encountered"),
        (1, "crash", "[TP3] Scheduler hit an exception: Traceback (most recent call last):"),
    ]  # fmt: skip


# --- readers ---------------------------------------------------------------------------------


def test_load_findings_round_trips_the_parsed_finding(indexed, findings_dir):
    from kb.serialize import finding_to_dict

    path = findings_dir / "dsv3-fp8-b200-illegal-memory-access.md"
    (parsed,) = parse_file(path).findings
    loaded = store.get_finding(indexed, parsed.id)
    assert finding_to_dict(loaded) == finding_to_dict(parsed)
    assert loaded.body == parsed.body
    assert loaded.root_cause == parsed.root_cause
    assert loaded.path == str(path.resolve())
    assert loaded.line == 1


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["dsv3-fp8-b200-illegal-memory-access", "llama-fp8-h100-startup-oom",
              "mistral-awq-l40s-works", "qwen-moe-nvfp4-sm120-garbage"]),
        ({"model": "deepseek"}, ["dsv3-fp8-b200-illegal-memory-access"]),
        ({"gpu": "sm120"}, ["qwen-moe-nvfp4-sm120-garbage"]),
        ({"gpu": "SM_120"}, ["qwen-moe-nvfp4-sm120-garbage"]),
        ({"gpu": "rtx pro 6000"}, ["qwen-moe-nvfp4-sm120-garbage"]),
        ({"gpu": "H100"}, ["llama-fp8-h100-startup-oom"]),
        ({"status": "works"}, ["mistral-awq-l40s-works"]),
        ({"status": "Works-With-Flags"}, ["llama-fp8-h100-startup-oom",
                                          "qwen-moe-nvfp4-sm120-garbage"]),
        ({"status": "works with flags"}, ["llama-fp8-h100-startup-oom",
                                          "qwen-moe-nvfp4-sm120-garbage"]),
        ({"status": "works_with_flags"}, ["llama-fp8-h100-startup-oom",
                                          "qwen-moe-nvfp4-sm120-garbage"]),
        ({"framework": "VLLM"}, ["llama-fp8-h100-startup-oom", "mistral-awq-l40s-works"]),
        ({"framework": "sglang", "gpu": "sm100"}, ["dsv3-fp8-b200-illegal-memory-access"]),
        ({"model": "fp8_"}, []),  # an underscore is a character, not a LIKE wildcard
    ],
)  # fmt: skip
def test_load_findings_filters(indexed, filters, expected):
    assert ids(store.load_findings(indexed, **filters)) == expected


def test_load_findings_rejects_an_unknown_status(indexed):
    with pytest.raises(InputError) as exc:
        store.load_findings(indexed, status="fixed")
    assert str(exc.value) == (
        "--status 'fixed': choose one of works, works-with-flags, broken, partial"
    )


def test_get_finding_unknown_id(indexed):
    with pytest.raises(DeployKBError) as exc:
        store.get_finding(indexed, "no-such-case")
    assert str(exc.value) == "no finding 'no-such-case'; run `deploykb list` to see ids"


# --- full-text search ------------------------------------------------------------------------


RAW_LOG = """\
[2025-12-02 10:14:07 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2544, in run
    self.event_loop_overlap()
RuntimeError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call; NEAR AND OR NOT *
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions. "quoted" 'single' {x} -y ^z
"""


def test_fts_search_takes_a_raw_log_with_fts_syntax_characters(indexed):
    hits = store.fts_search(indexed, RAW_LOG)
    assert hits[0][0] == "dsv3-fp8-b200-illegal-memory-access"
    scores = [score for _, score in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(score > 0 for score in scores)


def test_fts_search_matches_a_stemmed_word(indexed):
    hits = store.fts_search(indexed, "profiling crashed: memory utilisation")
    assert hits[0][0] == "llama-fp8-h100-startup-oom"


@pytest.mark.parametrize("text", ["", "   ", '"(:)*"', "12:34:56 0x 7"])
def test_fts_search_with_nothing_searchable_is_empty(indexed, text):
    assert store.fts_search(indexed, text) == []


def test_fts_query_quotes_each_word_and_drops_digits_and_repeats():
    assert store.fts_query('Error: "NaN" (nan) at 12:30 -- x AND y_z') == (
        '"error" OR "nan" OR "at" OR "and" OR "y_z"'
    )


def test_fts_search_limit(indexed):
    assert len(store.fts_search(indexed, "fp8 nvfp4 awq", limit=2)) == 2


def test_fts_search_ranks_as_the_join_of_every_match(tmp_db):
    """The best rows come from the full-text index alone, in the order of a join that looks
    up every matching row (what it was before)."""
    import json
    from pathlib import Path

    from kb.embed import HashEmbedder
    from kb.resources import shipped_findings_dir

    ingest(tmp_db, [shipped_findings_dir()], HashEmbedder, embedder_name=HashEmbedder().name)
    queries = Path(__file__).parent.parent / "eval" / "queries.jsonl"
    texts = [json.loads(line).get("text") or "" for line in queries.read_text().splitlines()]
    for text in [t for t in texts if t][:40] + ["probability tensor contains inf, nan"]:
        joined = tmp_db.execute(
            """SELECT findings.id, bm25(findings_fts, 2.0, 1.0) AS rank
            FROM findings_fts JOIN findings ON findings.rowid = findings_fts.rowid
            WHERE findings_fts MATCH ? ORDER BY rank LIMIT 20""",
            [store.fts_query(text)],
        ).fetchall()
        assert store.fts_search(tmp_db, text, limit=20) == [(f, -r) for f, r in joined]


def test_the_stored_record_is_the_finding_as_a_dict_with_its_root_cause():
    import json

    from kb.ingest import finding_files
    from kb.resources import shipped_findings_dir
    from kb.serialize import finding_to_dict

    for path in finding_files([shipped_findings_dir()]):
        for f in parse_file(path).findings:
            expected = {**finding_to_dict(f), "root_cause": f.root_cause}
            assert json.loads(store.finding_record(f)) == expected


# --- vectors ---------------------------------------------------------------------------------


def test_load_vectors_doc_gives_one_normalised_row_per_finding(indexed, fake_embedder):
    found, matrix = store.load_vectors(indexed)
    assert found == ids(store.load_findings(indexed))
    assert matrix.dtype == np.float32
    assert matrix.shape == (4, fake_embedder.dim)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)
    qwen = store.get_finding(indexed, "qwen-moe-nvfp4-sm120-garbage")
    expected = fake_embedder.embed([document_text(qwen)])[0]
    assert np.array_equal(matrix[found.index(qwen.id)], expected)


def test_load_vectors_symptom_gives_one_row_per_symptom(indexed, fake_embedder):
    found, matrix = store.load_vectors(indexed, "symptom")
    assert found == [
        "dsv3-fp8-b200-illegal-memory-access",
        "dsv3-fp8-b200-illegal-memory-access",
        "llama-fp8-h100-startup-oom",
        "qwen-moe-nvfp4-sm120-garbage",
    ]
    dsv3 = store.get_finding(indexed, found[0])
    assert np.array_equal(matrix[:2], fake_embedder.embed(symptom_texts(dsv3)))


def test_load_vectors_of_an_empty_index(tmp_db):
    found, matrix = store.load_vectors(tmp_db)
    assert found == [] and matrix.shape[0] == 0


def rows_only(db, part):
    """``load_vectors`` as it reads without the matrix: row by row."""
    with store.write_transaction(db):
        db.execute("DELETE FROM vector_matrix")
    assert not store.vector_matrix_ready(db)
    return store.load_vectors(db, part)


@pytest.mark.parametrize("part", ["doc", "symptom"])
def test_the_vector_matrix_holds_the_rows_in_their_order(indexed, part):
    assert store.vector_matrix_ready(indexed)
    found, matrix = store.load_vectors(indexed, part)
    expected_ids, expected = rows_only(indexed, part)
    assert found == expected_ids
    assert np.array_equal(matrix, expected)


def test_the_vector_matrix_in_blocks_reads_as_one(indexed, monkeypatch):
    expected = store.load_vectors(indexed, "symptom")
    monkeypatch.setattr(store, "MATRIX_BLOCK_BYTES", 3 * 4 * 64)  # 3 rows of 64-d
    with store.write_transaction(indexed):
        indexed.execute("DELETE FROM vector_matrix")
        assert store.build_vector_matrix(indexed)
    blocks = indexed.execute("SELECT count(*) FROM vector_matrix WHERE part = 'symptom'")
    assert blocks.fetchone()[0] == 2  # 4 rows
    found, matrix = store.load_vectors(indexed, "symptom")
    assert found == expected[0] and np.array_equal(matrix, expected[1])


def test_any_write_to_a_vector_drops_the_matrix_and_ingest_builds_it(
    indexed, findings_dir, embedder_factory
):
    fid = "llama-fp8-h100-startup-oom"
    with store.write_transaction(indexed):
        indexed.execute(
            "UPDATE embeddings SET vector = ? WHERE finding_id = ? AND part = 'doc'",
            [np.ones(64, dtype=np.float32).tobytes(), fid],
        )
    assert not store.vector_matrix_ready(indexed)
    found, matrix = store.load_vectors(indexed)  # read row by row: the new vector
    assert matrix[found.index(fid)].tolist() == [1.0] * 64
    ingest(indexed, [findings_dir], embedder_factory)  # nothing changed in the files
    assert store.vector_matrix_ready(indexed)
    again, rebuilt = store.load_vectors(indexed)
    assert again == found and np.array_equal(rebuilt, matrix)


def test_a_damaged_vector_leaves_the_matrix_unbuilt(indexed):
    with store.write_transaction(indexed):
        indexed.execute("UPDATE embeddings SET vector = x'0000' WHERE rowid = 1")
        assert not store.build_vector_matrix(indexed)
    assert store.damaged_vectors(indexed) == 1
    with pytest.raises(KBIndexError, match="holds a damaged vector"):
        store.load_vectors(indexed)


def test_an_index_of_schema_3_gains_the_matrix_in_place(indexed, findings_dir):
    before = store.load_vectors(indexed, "symptom")
    with store.write_transaction(indexed):  # what deploykb wrote before the matrix
        indexed.execute("DROP TABLE vector_matrix")
        for name in ("mi", "mu", "md"):
            indexed.execute(f"DROP TRIGGER embeddings_{name}")
        store.set_meta(indexed, schema_version="3")

    def no_model():
        raise AssertionError("nothing needs embedding again")

    report = ingest(indexed, [findings_dir], no_model)
    assert report.unchanged == 4 and not report.changed
    assert store.get_meta(indexed, "schema_version") == store.INDEX_SCHEMA_VERSION
    assert store.vector_matrix_ready(indexed)
    found, matrix = store.load_vectors(indexed, "symptom")
    assert found == before[0] and np.array_equal(matrix, before[1])
    with store.write_transaction(indexed):  # the triggers are back
        indexed.execute("DELETE FROM embeddings WHERE rowid = 1")
    assert not store.vector_matrix_ready(indexed)


# --- status and stale checks -----------------------------------------------------------------


def test_index_status(indexed, fake_embedder):
    status = store.index_status(indexed)
    assert status["count"] == 4
    assert status["vectors"] == 8
    assert status["model"] == fake_embedder.name
    assert status["dim"] == fake_embedder.dim
    assert status["parser_version"] == PARSER_VERSION
    assert status["last_ingest"][:2] == "20"
    assert status["path"].endswith("deploykb.db")


def test_check_index_accepts_a_current_index(indexed, fake_embedder):
    store.check_index(indexed)
    store.check_index(indexed, fake_embedder.name)


def test_check_index_on_an_empty_index(tmp_db):
    with pytest.raises(KBIndexError) as exc:
        store.check_index(tmp_db)
    assert str(exc.value) == f"no index at {store.db_label(tmp_db)}; run `deploykb ingest`"


def test_check_index_on_a_database_without_tables(tmp_path):
    db = store.open_db(tmp_path / "blank.db")
    with pytest.raises(KBIndexError, match="^no index at .*blank.db; run `deploykb ingest`$"):
        store.check_index(db)


def test_check_index_built_with_another_model(indexed):
    with pytest.raises(KBIndexError) as exc:
        store.check_index(indexed, "sentence-transformers/all-MiniLM-L6-v2")
    assert str(exc.value) == (
        f"index at {store.db_label(indexed)} was built by schema {store.INDEX_SCHEMA_VERSION}, parser "
        f"{PARSER_VERSION}, model hash-64; run `deploykb ingest`"
    )


def test_check_index_built_by_another_parser(indexed):
    with indexed.atomic():
        store.set_meta(indexed, parser_version="0-old")
    with pytest.raises(KBIndexError) as exc:
        store.check_index(indexed)
    assert str(exc.value) == (
        f"index at {store.db_label(indexed)} was built by schema {store.INDEX_SCHEMA_VERSION}, parser "
        "0-old, model hash-64; run `deploykb ingest`"
    )
