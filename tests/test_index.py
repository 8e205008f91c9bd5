"""`ask` keeps its index in step with the findings folders, without a manual ingest."""

from __future__ import annotations

import json

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
