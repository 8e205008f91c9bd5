"""Incremental ingest: what is added, updated, kept, removed and embedded, and atomicity."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kb import store
from kb.embed import HashEmbedder
from kb.errors import DeployKBError, EmbeddingError
from kb.ingest import content_hash, finding_files, ingest
from kb.parse import PARSER_VERSION

QWEN = "qwen-moe-nvfp4-sm120-garbage"
LLAMA = "llama-fp8-h100-startup-oom"
DSV3 = "dsv3-fp8-b200-illegal-memory-access"
MISTRAL = "mistral-awq-l40s-works"


class FailingEmbedder(HashEmbedder):
    """Raises on its ``fail_on``-th call to ``embed`` (1-based)."""

    def __init__(self, fail_on: int) -> None:
        super().__init__(dim=64)
        self.fail_on = fail_on

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.calls + 1 == self.fail_on:
            self.calls += 1
            raise RuntimeError("simulated model failure")
        return super().embed(texts)


def snapshot(db) -> dict:
    """Everything the index holds, for before/after comparisons."""
    return {
        table: sorted(db.execute(f"SELECT * FROM {table}").fetchall())
        for table in ("findings", "symptoms", "fixes", "sources", "embeddings")
    } | {"meta": sorted(db.execute("SELECT * FROM meta WHERE key != 'last_ingest'").fetchall())}


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def rglob_files(dirs):
    """What ``finding_files`` gives, spelled with ``Path.rglob`` and ``resolve()`` per file."""
    out, seen = [], set()
    for root in dirs:
        if root.is_file():
            candidates = [root]
        else:
            candidates = sorted(
                p for p in root.rglob("*.md")
                if p.name != "README.md" and p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(root).parts)
            )  # fmt: skip
        for p in candidates:
            if p.resolve() not in seen:
                seen.add(p.resolve())
                out.append((p, str(p.resolve())))
    return out


def test_finding_keys_are_rglob_and_resolve_without_the_cost(tmp_path):
    from kb.ingest import finding_keys

    team = tmp_path / "team"
    elsewhere = tmp_path / "elsewhere"
    for rel in ("a.md", "a-b/c.md", "a/b.md", "a/z/deep.md", "README.md", "a/README.md",
                ".hidden/x.md", "a/.git/y.md", "notes.txt", ".dot.md", "B.md"):  # fmt: skip
        (team / rel).parent.mkdir(parents=True, exist_ok=True)
        (team / rel).write_text("x")
    (elsewhere / "sub").mkdir(parents=True)
    (elsewhere / "linked.md").write_text("x")
    (elsewhere / "sub" / "inner.md").write_text("x")
    (team / "link.md").symlink_to(elsewhere / "linked.md")  # a symlinked file: taken
    (team / "dirlink").symlink_to(elsewhere / "sub")  # a symlinked folder: not entered
    (team / "broken.md").symlink_to(tmp_path / "gone.md")
    (team / "same.md").symlink_to(team / "a.md")  # the same file twice: once
    (tmp_path / "via").symlink_to(team)  # the folder itself through a symlink
    for dirs in ([team], [tmp_path / "via"], [team, elsewhere], [team / "a.md", team],
                 [Path(team.name)]):  # fmt: skip
        cwd = Path.cwd()
        try:
            import os

            os.chdir(tmp_path)
            assert finding_keys(dirs) == rglob_files(dirs)
        finally:
            os.chdir(cwd)
    names = [p.relative_to(team).as_posix() for p, _ in finding_keys([team])]
    assert names == ["B.md", "a/b.md", "a/z/deep.md", "a-b/c.md", "a.md", "link.md"]


def test_finding_files_skips_readme_and_hidden_folders(findings_dir):
    (findings_dir / ".drafts").mkdir()
    (findings_dir / ".drafts" / "wip.md").write_text("---\nid: wip\n---\n")
    (findings_dir / "team").mkdir()
    shutil.copy(findings_dir / f"{QWEN}.md", findings_dir / "team" / "copy.md")
    names = [p.relative_to(findings_dir).as_posix() for p in finding_files([findings_dir])]
    assert names == [f"{DSV3}.md", f"{LLAMA}.md", f"{MISTRAL}.md", f"{QWEN}.md", "team/copy.md"]


def test_missing_folder_is_an_error_naming_it(tmp_db, embedder_factory, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(DeployKBError) as exc:
        ingest(tmp_db, [missing], embedder_factory)
    assert str(exc.value) == f"{missing}: no such findings folder"
    assert embedder_factory.calls == 0


def test_a_link_out_of_the_folder_is_not_read_and_is_named(
    tmp_db, findings_dir, embedder_factory, tmp_path
):
    # a shared folder holding a link to a file elsewhere on the reader's machine: the file is
    # neither read nor indexed, the link is named in one error, the other findings are indexed
    private = tmp_path / "private"
    private.mkdir()
    shutil.copy(findings_dir / f"{QWEN}.md", private / "mine.md")
    replace_in(private / "mine.md", f"id: {QWEN}", "id: private-notes")
    (findings_dir / "notes.md").symlink_to(private / "mine.md")
    (findings_dir / "again.md").symlink_to(findings_dir / f"{LLAMA}.md")  # inside: fine, once
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert report.added == 4
    assert [str(e) for e in report.errors] == [
        f"{findings_dir / 'notes.md'}: symbolic link to {(private / 'mine.md').resolve()}, "
        "outside the findings folders: not read (commit the file, not a link)"
    ]
    ids = {row[0] for row in tmp_db.execute("SELECT id FROM findings")}
    assert "private-notes" not in ids and QWEN in ids
    # naming the private folder as well makes the same file a finding of its own folder
    report = ingest(tmp_db, [findings_dir, private], embedder_factory)
    assert report.errors == () and report.added == 1


def test_first_ingest_adds_and_embeds_everything(tmp_db, findings_dir, embedder_factory):
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert (report.added, report.updated, report.unchanged, report.removed) == (4, 0, 0, 0)
    # one doc vector per finding + one per symptom (2 + 1 + 1 + 0)
    assert report.embedded == 8
    assert report.model == "hash-64"
    assert report.errors == () and report.warnings == ()
    assert embedder_factory.calls == 1
    assert store.index_status(tmp_db)["count"] == 4


def test_second_ingest_does_no_embedding_work(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    before = snapshot(tmp_db)
    embedder_factory.calls = 0
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert embedder_factory.calls == 0
    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 4, 0)
    assert report.embedded == 0 and not report.changed
    assert snapshot(tmp_db) == before


def test_content_hash_covers_bytes_embedder_and_parser():
    base = content_hash(b"x", "m", "1")
    assert base != content_hash(b"y", "m", "1")
    assert base != content_hash(b"x", "m2", "1")
    assert base != content_hash(b"x", "m", "2")


def test_stored_hash_is_of_bytes_model_and_parser_version(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    path = findings_dir / f"{QWEN}.md"
    expected = content_hash(path.read_bytes(), "hash-64", PARSER_VERSION)
    assert tmp_db["findings"].get(QWEN)["content_hash"] == expected


def test_edited_file_is_updated_and_only_its_texts_embedded(tmp_db, findings_dir, fake_embedder):
    calls = []
    ingest(tmp_db, [findings_dir], lambda: fake_embedder)
    replace_in(
        findings_dir / f"{LLAMA}.md",
        "Another process\nheld a few gigabytes on GPU 0.",
        "A monitoring agent\nheld a few gigabytes on GPU 0.",
    )
    report = ingest(tmp_db, [findings_dir], lambda: calls.append(1) or fake_embedder)
    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 1, 3, 0)
    assert report.embedded == 2  # its doc and its one symptom
    assert calls == [1]
    assert "monitoring agent" in store.get_finding(tmp_db, LLAMA).body
    assert [fid for fid, _ in store.fts_search(tmp_db, "monitoring agent")] == [LLAMA]


def test_edit_outside_the_embedded_text_needs_no_model(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    replace_in(findings_dir / f"{LLAMA}.md", "date: 2025-11-03", "date: 2025-11-04")
    embedder_factory.calls = 0
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert (report.updated, report.unchanged, report.embedded) == (1, 3, 0)
    assert embedder_factory.calls == 0
    assert store.get_finding(tmp_db, LLAMA).date == "2025-11-04"
    # the vectors are still there, and the next ingest sees the file as unchanged
    assert store.load_vectors(tmp_db)[0].count(LLAMA) == 1
    again = ingest(tmp_db, [findings_dir], embedder_factory)
    assert (again.updated, again.unchanged) == (0, 4)


def test_deleted_file_is_removed_with_all_its_rows(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    (findings_dir / f"{DSV3}.md").unlink()
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 3, 1)
    for table in ("findings", "symptoms", "fixes", "sources", "embeddings"):
        column = "id" if table == "findings" else "finding_id"
        count = tmp_db.execute(f"SELECT count(*) FROM {table} WHERE {column} = ?", [DSV3])
        assert count.fetchone()[0] == 0, table
    assert DSV3 not in [fid for fid, _ in store.fts_search(tmp_db, "illegal memory access")]


def test_findings_from_other_folders_are_left_alone(tmp_db, findings_dir, tmp_path, fake_embedder):
    team = tmp_path / "team"
    team.mkdir()
    shutil.move(findings_dir / f"{MISTRAL}.md", team / f"{MISTRAL}.md")
    ingest(tmp_db, [findings_dir], lambda: fake_embedder)
    ingest(tmp_db, [team], lambda: fake_embedder)
    report = ingest(tmp_db, [findings_dir], lambda: fake_embedder)
    assert report.removed == 0
    assert MISTRAL in [f.id for f in store.load_findings(tmp_db)]


def test_findings_from_other_folders_are_named_and_pruned_on_request(
    tmp_db, findings_dir, tmp_path, fake_embedder
):
    team = tmp_path / "team"
    team.mkdir()
    shutil.move(findings_dir / f"{MISTRAL}.md", team / f"{MISTRAL}.md")
    ingest(tmp_db, [findings_dir, team], lambda: fake_embedder)
    kept = ingest(tmp_db, [findings_dir], lambda: fake_embedder)
    assert kept.outside == ((str(team.resolve()), 1),)
    assert any("--prune" in n and str(team.resolve()) in n for n in kept.notices())
    pruned = ingest(tmp_db, [findings_dir], lambda: fake_embedder, prune=True)
    assert (pruned.removed, pruned.outside) == (1, ())
    assert MISTRAL not in [f.id for f in store.load_findings(tmp_db)]
    assert pruned.notices() == []


def test_a_moved_checkout_replaces_its_old_rows_without_an_error(
    tmp_db, findings_dir, tmp_path, embedder_factory
):
    # the same knowledge base at a new place (a second clone sharing the per-user index): the
    # folder read now wins, nothing is re-embedded, and the old folder is named once
    ingest(tmp_db, [findings_dir], embedder_factory)
    clone = tmp_path / "clone" / "findings"
    shutil.copytree(findings_dir, clone)
    embedder_factory.calls = 0
    report = ingest(tmp_db, [clone], embedder_factory)
    assert report.errors == ()
    assert (report.embedded, embedder_factory.calls) == (0, 0)
    assert report.replaced == ((str(findings_dir.resolve()), str(clone.resolve()), 4),)
    assert report.outside == ()
    paths = {f.path for f in store.load_findings(tmp_db)}
    assert paths == {str(p.resolve()) for p in finding_files([clone])}
    # within the folders read now, one id twice is still an error
    shutil.copy(clone / f"{QWEN}.md", clone / "again.md")
    again = ingest(tmp_db, [clone], embedder_factory)
    assert [e.line for e in again.errors] == [2]


def test_single_file_path_can_be_ingested(tmp_db, findings_dir, embedder_factory):
    report = ingest(tmp_db, [findings_dir / f"{QWEN}.md"], embedder_factory)
    assert report.added == 1
    assert [f.id for f in store.load_findings(tmp_db)] == [QWEN]


def test_duplicate_id_in_a_second_file(tmp_db, tmp_path, findings_dir, embedder_factory):
    d = tmp_path / "dups"
    d.mkdir()
    shutil.copy(findings_dir / f"{QWEN}.md", d / "a.md")
    shutil.copy(findings_dir / f"{QWEN}.md", d / "b.md")
    report = ingest(tmp_db, [d], embedder_factory)
    assert [str(e) for e in report.errors] == [
        f"{d / 'b.md'}:2: duplicate id '{QWEN}' (already in {d / 'a.md'})"
    ]
    assert report.added == 1
    assert store.get_finding(tmp_db, QWEN).path == str((d / "a.md").resolve())
    # the error is reported again on the next run (not hidden by the unchanged-file shortcut),
    # and nothing is embedded again
    embedder_factory.calls = 0
    again = ingest(tmp_db, [d], embedder_factory)
    assert [e.line for e in again.errors] == [2]
    assert (again.unchanged, again.embedded, embedder_factory.calls) == (1, 0, 0)


def test_duplicate_of_an_already_indexed_finding_blames_the_new_file(
    tmp_db, tmp_path, findings_dir, embedder_factory
):
    d = tmp_path / "dups"
    d.mkdir()
    shutil.copy(findings_dir / f"{QWEN}.md", d / "z.md")
    ingest(tmp_db, [d], embedder_factory)
    shutil.copy(findings_dir / f"{QWEN}.md", d / "a.md")  # sorts first, but arrived second
    report = ingest(tmp_db, [d], embedder_factory)
    assert [str(e) for e in report.errors] == [
        f"{d / 'a.md'}:2: duplicate id '{QWEN}' (already in {d / 'z.md'})"
    ]
    assert store.get_finding(tmp_db, QWEN).path == str((d / "z.md").resolve())


BROKEN = """\
---
id: broken-case
title: "A case with a typo"
status: fixed-ish
---

## What happened

Something.
"""


def test_bad_file_among_good_ones(tmp_db, findings_dir, embedder_factory):
    (findings_dir / "broken-case.md").write_text(BROKEN)
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert report.added == 4
    assert [str(e) for e in report.errors] == [
        f"{findings_dir / 'broken-case.md'}:4: status 'fixed-ish' is not one of: "
        "works, works-with-flags, broken, partial"
    ]
    assert len(store.load_findings(tmp_db)) == 4


def test_broken_edit_keeps_the_indexed_version(tmp_db, findings_dir, embedder_factory):
    ingest(tmp_db, [findings_dir], embedder_factory)
    before = snapshot(tmp_db)
    path = findings_dir / f"{QWEN}.md"
    replace_in(path, "status: works-with-flags", "status: works-with-flag")
    report = ingest(tmp_db, [findings_dir], embedder_factory)
    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 4, 0)
    (error,) = report.errors
    assert str(error) == (
        f"{path}:5: status 'works-with-flag' is not one of: works, works-with-flags, broken, "
        f"partial (the indexed version of '{QWEN}' is kept until this is fixed)"
    )
    assert snapshot(tmp_db) == before
    # fixing the typo brings the file back in line; nothing needs a new vector
    replace_in(path, "status: works-with-flag\n", "status: works-with-flags\n")
    fixed = ingest(tmp_db, [findings_dir], embedder_factory)
    assert fixed.errors == () and fixed.unchanged == 4


def test_embedder_failure_mid_way_leaves_the_previous_index(tmp_db, findings_dir):
    ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=64))
    before = snapshot(tmp_db)
    replace_in(findings_dir / f"{LLAMA}.md", "Lower the memory", "Reduce the memory")
    replace_in(findings_dir / f"{QWEN}.md", "Pin the MoE", "Force the MoE")
    (findings_dir / f"{DSV3}.md").unlink()
    failing = FailingEmbedder(fail_on=2)
    with pytest.raises(EmbeddingError) as exc:
        ingest(tmp_db, [findings_dir], lambda: failing, batch_size=1)
    assert failing.calls == 2  # the first batch was embedded and written before the failure
    assert str(exc.value) == (
        "embedding with hash-64 failed (RuntimeError: simulated model failure); "
        "the index was left as it was"
    )
    assert snapshot(tmp_db) == before


def test_first_ingest_failure_leaves_an_empty_index(tmp_db, findings_dir):
    with pytest.raises(EmbeddingError):
        ingest(tmp_db, [findings_dir], lambda: FailingEmbedder(fail_on=3), batch_size=1)
    assert store.index_status(tmp_db)["count"] == 0
    assert store.load_vectors(tmp_db)[0] == []


def test_embedder_returning_the_wrong_shape_is_refused(tmp_db, findings_dir):
    class Short(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            return super().embed(texts)[:-1]

    with pytest.raises(EmbeddingError, match=r"returned shape \(\d+, 64\) for \d+ texts"):
        ingest(tmp_db, [findings_dir], lambda: Short(dim=64))
    assert store.index_status(tmp_db)["count"] == 0


def test_switching_the_embedder_re_embeds_everything(tmp_db, findings_dir, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    shutil.move(findings_dir / f"{MISTRAL}.md", team / f"{MISTRAL}.md")
    ingest(tmp_db, [findings_dir, team], lambda: HashEmbedder(dim=64))
    report = ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=32), embedder_name="hash-32")
    # the three in the folder and the one from the other folder all get 32-d vectors
    assert report.embedded == 8
    assert report.model == "hash-32"
    status = store.index_status(tmp_db)
    assert (status["model"], status["dim"], status["count"]) == ("hash-32", 32, 4)
    models = {m for (m,) in tmp_db.execute("SELECT DISTINCT model FROM embeddings")}
    assert models == {"hash-32"}
    assert store.load_vectors(tmp_db)[1].shape == (4, 32)


def test_a_different_model_found_on_load_re_embeds(tmp_db, findings_dir):
    """Without ``embedder_name`` the stored model is assumed until the embedder is loaded."""
    ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=64))
    replace_in(findings_dir / f"{QWEN}.md", "Pin the MoE", "Force the MoE")
    report = ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=16))
    assert report.embedded == 8
    assert store.load_vectors(tmp_db)[1].shape == (4, 16)


def test_progress_reports_embedded_texts(tmp_db, findings_dir, embedder_factory):
    seen: list[tuple[int, int, str]] = []
    report = ingest(
        tmp_db,
        [findings_dir],
        embedder_factory,
        progress=lambda done, total, label: seen.append((done, total, label)),
        batch_size=1,
    )
    # one batch per finding (batch_size=1): dsv3 has 3 texts, llama 2, mistral 1, qwen 2
    assert seen == [(0, 8, DSV3), (3, 8, DSV3), (5, 8, LLAMA), (6, 8, MISTRAL), (8, 8, QWEN)]
    assert report.embedded == 8
    seen.clear()
    ingest(tmp_db, [findings_dir], embedder_factory, progress=lambda *a: seen.append(a))
    assert seen == []


def test_free_form_notes_file_is_ingested(tmp_db, tmp_path, fake_embedder):
    d = tmp_path / "notes"
    d.mkdir()
    (d / "FINDINGS.md").write_text(
        "# Our findings\n\n## Kimi on 8x H100 with sglang works\n\n"
        "```\npython -m sglang.launch_server --model-path moonshotai/Kimi-K2 --tp 8\n```\n"
    )
    report = ingest(tmp_db, [d], lambda: fake_embedder)
    assert report.added >= 1
    assert store.load_findings(tmp_db)[0].path == str((d / "FINDINGS.md").resolve())


def test_a_locked_index_is_waited_for_visibly_then_one_actionable_error(
    tmp_db, findings_dir, embedder_factory, monkeypatch
):
    import sqlite3

    from kb.errors import KBIndexError

    ingest(tmp_db, [findings_dir], embedder_factory)
    (findings_dir / f"{QWEN}.md").unlink()
    monkeypatch.setattr(store, "WRITE_WAIT_SECONDS", 0.3)
    other = sqlite3.connect(store.db_label(tmp_db), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    waits: list[str] = []
    try:
        with pytest.raises(KBIndexError) as exc:
            ingest(tmp_db, [findings_dir], embedder_factory, on_wait=waits.append)
    finally:
        other.execute("ROLLBACK")
        other.close()
    label = store.db_label(tmp_db)
    assert waits == [f"waiting for another deploykb process to finish writing {label}"]
    assert str(exc.value) == (
        f"{label}: another deploykb process held the index for 0.3 s (database is locked); "
        "try again when it is done"
    )
    assert store.index_status(tmp_db)["count"] == 4


def test_switching_the_embedder_re_embeds_a_kept_finding(tmp_db, findings_dir):
    ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=64))
    replace_in(findings_dir / f"{QWEN}.md", "status: works-with-flags", "status: nope")
    report = ingest(tmp_db, [findings_dir], lambda: HashEmbedder(dim=32), embedder_name="hash-32")
    assert len(report.errors) == 1
    assert report.embedded == 8
    assert store.load_vectors(tmp_db)[1].shape == (4, 32)
