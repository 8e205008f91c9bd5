"""`ask` keeps its index in step with the findings folders, without a manual ingest."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers every command)
from agent.app import app

TEAM_FINDING = """\
---
id: {id}
title: "{title}"
status: works-with-flags
framework:
  name: sglang
symptoms:
  - class: crash
    text: "{error}"
fix:
  add:
    - --disable-cuda-graph
sources:
  - https://example.com/runbook/{id}
---

## Root cause

Recorded by the team.
"""


def ask(*args: str):
    return CliRunner().invoke(app, ["ask", *args, "--embedder", "hash", "--json"])


def write(folder, fid: str, error: str) -> None:
    text = TEAM_FINDING.format(id=fid, title=f"{fid}: {error}", error=error)
    (folder / f"{fid}.md").write_text(text)


def test_team_findings_added_later_are_answered_without_a_manual_ingest(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    db = str(tmp_path / "kb.db")
    write(team, "team-frobnicator", "ZZQUNIQUE kernel explosion in frobnicator module")

    first = ask("ZZQUNIQUE kernel explosion in frobnicator module", "--findings", str(team), "--db", db)
    assert first.exit_code == 0, first.stderr
    assert "no index at" in first.stderr
    assert json.loads(first.stdout)["matches"][0]["id"] == "team-frobnicator"

    write(team, "team-wobbulator", "QQXRARE wobbulator overflow on rank zero")
    second = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert second.exit_code == 0, second.stderr
    assert second.stderr == "deploykb: re-indexed changed findings (1 added, 0 updated, 0 removed)\n"
    assert json.loads(second.stdout)["matches"][0]["id"] == "team-wobbulator"

    third = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert third.stderr == ""  # nothing changed: no ingest at all

    (team / "team-wobbulator.md").unlink()
    fourth = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert "1 removed" in fourth.stderr
    assert "team-wobbulator" not in [m["id"] for m in json.loads(fourth.stdout)["matches"]]


def test_an_unchanged_reingest_reads_the_index_without_sqlite_utils(tmp_path):
    """Nothing to do is found over a plain read-only connection; anything to do (here, the
    match keys of an index built by ``kb.ingest`` alone) takes the way that writes."""
    import subprocess
    import sys

    from agent.index import ingest_file
    from kb.embed import HashEmbedder
    from kb.ingest import ingest
    from kb.store import get_meta, open_db

    team = tmp_path / "team"
    team.mkdir()
    write(team, "team-frobnicator", "ZZQUNIQUE kernel explosion in frobnicator module")
    db_path = tmp_path / "kb.db"
    db = open_db(db_path)
    ingest(db, [team], HashEmbedder, embedder_name=HashEmbedder().name)  # no keys yet
    assert get_meta(db, "line_keys") is None
    db.close()
    report = ingest_file(db_path, [team], "hash")
    assert report.unchanged == 1 and not report.changed
    db = open_db(db_path)
    assert get_meta(db, "line_keys") is not None  # keyed by the writing way
    db.close()

    code = (
        "import sys; from pathlib import Path; from agent.index import ingest_file; "
        f"r = ingest_file(Path({str(db_path)!r}), [Path({str(team)!r})], 'hash'); "
        "print(r.unchanged, r.changed, 'sqlite_utils' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["1", "False", "False"]


def test_ingest_of_a_file_that_is_not_an_index_says_so(tmp_path):
    (tmp_path / "kb.db").write_text("notes\n")
    team = tmp_path / "team"
    team.mkdir()
    result = CliRunner().invoke(
        app, ["ingest", "--db", str(tmp_path / "kb.db"), "--findings", str(team)]
    )
    assert result.exit_code == 3
    assert "not a deploykb index (file is not a database)" in result.stderr
