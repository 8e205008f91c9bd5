"""`ask` keeps its index in step with the findings folders, without a manual ingest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers every command)
from agent.cli.app import app

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

    first = ask(
        "ZZQUNIQUE kernel explosion in frobnicator module", "--findings", str(team), "--db", db
    )
    assert first.exit_code == 0, first.stderr
    assert "no index at" in first.stderr
    assert json.loads(first.stdout)["matches"][0]["id"] == "team-frobnicator"

    write(team, "team-wobbulator", "QQXRARE wobbulator overflow on rank zero")
    second = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert second.exit_code == 0, second.stderr
    assert (
        second.stderr == "deploykb: re-indexed changed findings (1 added, 0 updated, 0 removed)\n"
    )
    assert json.loads(second.stdout)["matches"][0]["id"] == "team-wobbulator"

    third = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert third.stderr == ""  # nothing changed: no ingest at all

    (team / "team-wobbulator.md").unlink()
    fourth = ask("QQXRARE wobbulator overflow on rank zero", "--findings", str(team), "--db", db)
    assert "1 removed" in fourth.stderr
    assert "team-wobbulator" not in [m["id"] for m in json.loads(fourth.stdout)["matches"]]


# --- an index nobody here can write; folders that are gone ---------------------------------------


def _cli(*args: str, read_only: Path | None = None):  # type: ignore[no-untyped-def]
    """The CLI in its own process; with ``read_only``, that folder cannot be written while it
    runs: chmod 0555 for a user, a read-only bind mount in a mount namespace of its own for root
    (whom no mode stops). Skips when neither can be had here."""
    env = {**os.environ, "DEPLOYKB_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1"}
    env.pop("DEPLOYKB_FINDINGS", None)
    cmd = [sys.executable, "-m", "agent.cli", *map(str, args)]
    if read_only is None:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if os.geteuid() != 0:
        read_only.chmod(0o555)
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        finally:
            read_only.chmod(0o755)
    if shutil.which("unshare") is None:
        pytest.skip("root, and no unshare(1) to make a read-only folder")
    script = 'mount --bind -o ro "$0" "$0" || exit 99; exec "$@"'
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, str(read_only), *cmd],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    if result.returncode == 99 or "unshare failed" in result.stderr:
        pytest.skip(f"cannot make a read-only folder here: {result.stderr.strip()}")
    return result


def test_an_index_in_a_read_only_folder_answers_and_says_how_to_refresh(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    write(team, "team-frobnicator", "ZZQUNIQUE kernel explosion in frobnicator module")
    folder = tmp_path / "index"
    db = folder / "kb.db"
    assert _cli("ingest", "--db", db, "--findings", team).returncode == 0
    before = sorted(p.name for p in folder.iterdir())
    query = ("ask", "ZZQUNIQUE kernel explosion", "--db", db, "--findings", team, "--json")

    same = _cli(*query, read_only=folder)  # ingest recorded what ask checks: nothing to say
    assert (same.returncode, same.stderr) == (0, ""), same.stderr
    assert json.loads(same.stdout)["matches"][0]["id"] == "team-frobnicator"
    (team / "team-frobnicator.md").touch()  # a newer time, the same text: still current
    assert _cli(*query, read_only=folder).stderr == ""

    (team / "team-frobnicator.md").write_text((team / "team-frobnicator.md").read_text() + "\nx\n")
    changed = _cli(*query, read_only=folder)
    assert changed.returncode == 0
    assert changed.stderr.splitlines() == [
        f"warning: findings changed since the index at {db} was built, but it is read-only: "
        f"answering from it as it is. To refresh: `deploykb ingest --db {db}` as a user who "
        "can write it"
    ]
    assert sorted(p.name for p in folder.iterdir()) == before  # no -wal, no -shm, nothing

    shutil.rmtree(team)  # its findings are not served, whatever the index holds
    gone = _cli("ask", "ZZQUNIQUE kernel explosion", "--db", db, "--json", read_only=folder)
    assert gone.returncode == 0, gone.stderr
    assert gone.stderr.splitlines() == [
        f"warning: 1 finding(s) in the index at {db} come from files that are gone "
        f"({team.resolve()}): not served. To remove them: `deploykb ingest --db {db}` as a user "
        "who can write it"
    ]
    assert "team-frobnicator" not in gone.stdout


def test_ingest_records_the_fingerprint_ask_checks(tmp_path):
    from kb.ingest import files_fingerprint
    from kb.paths import findings_dirs
    from kb.store import get_meta, open_db

    team = tmp_path / "team"
    team.mkdir()
    write(team, "team-one", "ZZQUNIQUE kernel explosion in frobnicator module")
    db = tmp_path / "kb.db"
    result = CliRunner().invoke(
        app, ["ingest", "--db", str(db), "--findings", str(team), "--embedder", "hash"]
    )
    assert result.exit_code == 0, result.stderr
    stored = get_meta(open_db(db), "findings_fingerprint")
    assert stored == files_fingerprint(findings_dirs([team]))


def test_a_deleted_team_folder_is_no_longer_answered(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    write(team, "team-frobnicator", "ZZQUNIQUE kernel explosion in frobnicator module")
    db = str(tmp_path / "kb.db")
    query = "ZZQUNIQUE kernel explosion in frobnicator module"
    first = ask(query, "--findings", str(team), "--db", db)
    assert json.loads(first.stdout)["matches"][0]["id"] == "team-frobnicator"
    assert ask(query, "--db", db).exit_code == 0  # asked once without the folder: it is kept
    shutil.rmtree(team)
    after = ask(query, "--db", db)
    assert after.exit_code == 0, after.stderr
    assert "team-frobnicator" not in after.stdout
    assert after.stderr.splitlines()[0] == (
        "deploykb: re-indexed changed findings (0 added, 0 updated, 1 removed)"
    )
    again = ask(query, "--db", db)
    assert "team-frobnicator" not in again.stdout and "re-indexed" not in again.stderr


def test_an_unchanged_reingest_reads_the_index_without_sqlite_utils(tmp_path):
    """Nothing to do is found over a plain read-only connection; anything to do (here, the
    match keys of an index built by ``kb.ingest`` alone) takes the way that writes."""
    import subprocess
    import sys

    from agent.cli.index import ingest_file
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
        "import sys; from pathlib import Path; from agent.cli.index import ingest_file; "
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
