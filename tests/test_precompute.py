"""What ingest precomputes for queries (issue 14, part 2): symptom line keys and their postings,
term counts, the files' fingerprint; and a query that reads only what it scores."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.cli.index import build_index
from agent.logs import triage
from agent.search import Searcher, precompute
from kb import store
from kb.ingest import files_fingerprint
from kb.records import QueryContext

QUERIES = [
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    "[2026-02-19 00:13:33 TP3] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity",
    "every completion is a run of '!!!!!!!!' characters",
    "what works for Mistral AWQ on L40S?",
]


def _search(searcher: Searcher, text: str):
    """(id, score, reasons) of the matches and the evidence, floats to 9 places (two orders of
    summing the same weights differ in the last bit)."""
    from dataclasses import asdict

    matches, evidence = searcher.search(text, triage(text.splitlines()), QueryContext(), top=3)
    rounded = {k: round(v, 9) if isinstance(v, float) else v for k, v in asdict(evidence).items()}
    return [(m.finding.id, round(m.score, 9), m.reasons) for m in matches], rounded


@pytest.fixture
def built(tmp_db, findings_dir):
    build_index(tmp_db, [findings_dir], "hash")
    return tmp_db


def test_a_query_reads_only_the_findings_it_scores(built, monkeypatch):
    def no_full_load(*args, **kwargs):
        raise AssertionError("a query loaded every finding")

    monkeypatch.setattr(store, "load_findings", no_full_load)
    searcher = Searcher(built, lambda: __import__("kb.embed").embed.HashEmbedder(dim=64))
    found, _ = _search(searcher, QUERIES[0])
    assert found
    # findings were read for the candidates it scored (4 findings in the index, 1 shares a line)
    assert set(searcher._findings) >= {fid for fid, _, _ in found}
    # line keys were read for the line candidates only, not computed for every finding
    assert set(searcher._sym_lines) == {"dsv3-fp8-b200-illegal-memory-access"}


@pytest.mark.parametrize("query", QUERIES)
def test_precomputed_keys_rank_like_keys_computed_in_memory(built, query):
    def embedder():
        from kb.embed import HashEmbedder

        return HashEmbedder(dim=64)

    keyed = Searcher(built, embedder)
    in_memory = Searcher(built, embedder)
    in_memory._keyed = False
    assert _search(keyed, query) == _search(in_memory, query)


def test_precompute_keys_only_new_or_changed_lines(built, findings_dir):
    assert precompute(built) == 0  # build_index already keyed every line
    path = findings_dir / "llama-fp8-h100-startup-oom.md"
    path.write_text(
        path.read_text().replace("Tried to allocate 1.75 GiB", "Tried to allocate 9 GiB")
    )
    build_index(built, [findings_dir], "hash")  # keys that finding's one line again
    rows = dict(
        built.execute(
            "SELECT finding_id, keys FROM line_keys WHERE finding_id = 'llama-fp8-h100-startup-oom'"
        ).fetchall()
    )
    assert "allocate" in rows["llama-fp8-h100-startup-oom"].split()
    assert precompute(built) == 0
    (findings_dir / "dsv3-fp8-b200-illegal-memory-access.md").unlink()
    build_index(built, [findings_dir], "hash")
    assert not built.execute(
        "SELECT 1 FROM line_postings WHERE finding_id = 'dsv3-fp8-b200-illegal-memory-access'"
    ).fetchall()


def test_keys_of_another_version_are_redone(built, monkeypatch):
    import agent.search

    (n_lines,) = built.execute("SELECT count(*) FROM symptoms").fetchone()
    monkeypatch.setattr(agent.search, "line_keys_version", lambda: "another")
    assert precompute(built) == n_lines


def test_the_keys_version_is_the_same_in_another_process():
    """A fresh ``ask`` process must recognise the keys ingest stored (a version that varied per
    process would re-key every finding on every query)."""
    import subprocess
    import sys

    from agent.search import line_keys_version

    code = "from agent.search import line_keys_version; print(line_keys_version())"
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert runs == {line_keys_version()}


def test_term_counts_stay_equal_to_a_recount(built, findings_dir):
    def counts():
        return dict(built.execute("SELECT term, df FROM term_counts").fetchall())

    path = findings_dir / "mistral-awq-l40s-works.md"
    path.write_text(path.read_text().replace("L40S", "L40S zanzibarword"))
    (findings_dir / "qwen-moe-nvfp4-sm120-garbage.md").unlink()
    build_index(built, [findings_dir], "hash")
    incremental = counts()
    assert incremental["zanzibarword"] == 1
    with built.atomic():
        store._recount_terms(built)
    assert counts() == incremental


def test_fingerprint_follows_finding_files_only(findings_dir):
    before = files_fingerprint([findings_dir])
    assert files_fingerprint([findings_dir]) == before
    (findings_dir / "notes.txt").write_text("not a finding")
    (findings_dir / ".hidden").mkdir()
    (findings_dir / ".hidden" / "x.md").write_text("hidden")
    (findings_dir / "README.md").write_text("# readme changed")
    assert files_fingerprint([findings_dir]) == before
    path = findings_dir / "mistral-awq-l40s-works.md"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    touched = files_fingerprint([findings_dir])
    assert touched != before
    (findings_dir / "sub").mkdir()
    (findings_dir / "sub" / "new.md").write_text("x")
    assert files_fingerprint([findings_dir]) != touched


def test_fingerprint_of_a_missing_folder_is_one_clear_error(tmp_path: Path):
    from kb.errors import DeployKBError

    with pytest.raises(DeployKBError, match="no such findings folder"):
        files_fingerprint([tmp_path / "nowhere"])
