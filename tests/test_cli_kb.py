"""``deploykb ingest``, ``list`` and ``show`` end to end through typer's CliRunner."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.cli.app import app
from agent.cli.index import split_dirs
from kb.parse import parse_file
from kb.resources import shipped_findings_dir
from kb.serialize import finding_from_dict, finding_to_dict
from kb.store import INDEX_SCHEMA_VERSION

QWEN = "qwen-moe-nvfp4-sm120-garbage"
DSV3 = "dsv3-fp8-b200-illegal-memory-access"


@pytest.fixture
def run(tmp_path, monkeypatch):
    """Invoke the CLI against an index under ``tmp_path`` with the hash embedder."""
    db = tmp_path / "state" / "kb.db"
    monkeypatch.setenv("DEPLOYKB_DB", str(db))
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    runner = CliRunner()

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    invoke.db = db  # type: ignore[attr-defined]
    return invoke


@pytest.fixture
def indexed(run, findings_dir):
    result = run("ingest", findings_dir)
    assert result.exit_code == 0, result.stderr
    return run


# --- ingest ----------------------------------------------------------------------------------


def test_ingest_prints_a_summary(run, findings_dir):
    result = run("ingest", findings_dir)
    assert result.exit_code == 0
    assert result.stderr == ""
    line = result.stdout.strip()
    assert line.startswith(
        "4 findings: 4 added, 0 updated, 0 unchanged, 0 removed; embedded 8 texts with hash-64 in "
    )
    assert line.endswith(" s")


def test_second_ingest_loads_no_model_and_says_so(indexed, findings_dir, monkeypatch):
    import kb.embed

    def no_model(kind="auto"):  # type: ignore[no-untyped-def]
        raise AssertionError("the embedder was loaded although nothing changed")

    monkeypatch.setattr(kb.embed, "load_embedder", no_model)
    result = indexed("ingest", findings_dir)
    assert result.exit_code == 0
    assert result.stdout == "4 findings unchanged; nothing to embed\n"


def test_ingest_reports_a_removed_file(indexed, findings_dir):
    (findings_dir / f"{QWEN}.md").unlink()
    result = indexed("ingest", findings_dir)
    assert result.stdout == (
        "3 findings: 0 added, 0 updated, 3 unchanged, 1 removed; nothing to embed\n"
    )


def test_ingest_json(run, findings_dir):
    result = run("ingest", findings_dir, "--json")
    report = json.loads(result.stdout)
    assert {k: report[k] for k in ("findings", "added", "embedded", "model", "errors")} == {
        "findings": 4,
        "added": 4,
        "embedded": 8,
        "model": "hash-64",
        "errors": [],
    }


def test_bad_file_among_good_ones(run, findings_dir):
    bad = findings_dir / "zz-bad.md"
    bad.write_text("---\nid: zz-bad\ntitle: Bad\nstatus: works\nhardware:\n  count: eight\n---\n")
    result = run("ingest", findings_dir)
    assert result.exit_code == 1
    assert result.stderr == f"{bad}:6: 'hardware.count' must be an integer (got 'eight')\n"
    assert result.stdout.startswith("4 findings: 4 added,")
    listed = run("list", "--json")
    assert len(json.loads(listed.stdout)) == 4


def test_duplicate_id_is_one_error_line(run, findings_dir):
    copy = findings_dir / "zz-copy.md"
    shutil.copy(findings_dir / f"{QWEN}.md", copy)
    result = run("ingest", findings_dir)
    assert result.exit_code == 1
    original = findings_dir / f"{QWEN}.md"
    errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
    assert errors == [f"{copy}:2: duplicate id '{QWEN}' (already in {original})"]


def test_ingest_of_a_missing_folder(run, tmp_path):
    result = run("ingest", tmp_path / "nope")
    assert result.exit_code == 2  # bad input: a folder named on the command line
    assert result.stderr == f"Error: {tmp_path / 'nope'}: no such findings folder\n"


def test_ingest_refuses_a_file_that_is_not_an_index(run, findings_dir, tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"\x00garbage" * 200)
    result = run("ingest", findings_dir, "--db", junk)
    assert result.exit_code == 3
    assert result.stderr == (
        f"Error: {junk}: not a deploykb index (file is not a database); delete it or pass --db\n"
    )


def test_default_folders_are_shipped_plus_findings_env(run, tmp_path, monkeypatch, findings_dir):
    import kb.paths

    shipped = tmp_path / "shipped"
    shipped.mkdir()
    team_a, team_b = tmp_path / "team-a", tmp_path / "team-b"
    team_a.mkdir()
    team_b.mkdir()
    shutil.move(findings_dir / f"{QWEN}.md", shipped / f"{QWEN}.md")
    shutil.move(findings_dir / f"{DSV3}.md", team_a / f"{DSV3}.md")
    shutil.copy(findings_dir / "mistral-awq-l40s-works.md", team_b / "m.md")
    monkeypatch.setattr(kb.paths, "shipped_findings_dir", lambda: shipped)
    monkeypatch.setenv("DEPLOYKB_FINDINGS", os.pathsep.join([str(team_a), str(team_b)]))
    result = run("ingest")
    assert result.exit_code == 0, result.stderr
    listed = json.loads(run("list", "--json").stdout)
    assert sorted(d["id"] for d in listed) == [DSV3, "mistral-awq-l40s-works", QWEN]


def test_a_folder_no_longer_read_is_named_and_pruned_on_request(run, findings_dir, tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    shutil.move(findings_dir / f"{DSV3}.md", team / f"{DSV3}.md")
    assert run("ingest", findings_dir, team).exit_code == 0
    kept = run("ingest", findings_dir)
    assert kept.exit_code == 0
    assert f"{team.resolve()} (1)" in kept.stderr and "deploykb ingest --prune" in kept.stderr
    assert kept.stdout.startswith("3 findings unchanged")
    pruned = run("ingest", "--prune", findings_dir)
    assert pruned.exit_code == 0, pruned.stderr
    assert "1 removed" in pruned.stdout and pruned.stderr == ""
    assert DSV3 not in run("list", "--json").stdout


def test_every_ask_names_a_folder_no_longer_configured_until_it_is_pruned(
    run, findings_dir, tmp_path
):
    team = tmp_path / "team"
    team.mkdir()
    shutil.move(findings_dir / f"{DSV3}.md", team / f"{DSV3}.md")
    both = run("ask", "illegal memory access", "--findings", findings_dir, "--findings", team)
    assert both.exit_code == 0, both.stderr
    note = (
        f"note: the index also holds findings from folders not read now: {team.resolve()} (1); "
        "`deploykb ingest --prune` removes them"
    )
    question = ("ask", "illegal memory access on B200", "--findings", findings_dir, "--json")
    for _ in range(3):  # the first ask refreshes the index; the later ones find it current
        asked = run(*question)
        assert asked.exit_code == 0, asked.stderr
        assert note in asked.stderr.splitlines()
        assert DSV3 in {m["id"] for m in json.loads(asked.stdout)["matches"]}  # still served
    assert run("ingest", "--prune", findings_dir).exit_code == 0
    after = run(*question)
    assert after.exit_code == 0 and "note: the index also holds" not in after.stderr
    assert DSV3 not in {m["id"] for m in json.loads(after.stdout)["matches"]}


def test_a_second_checkout_sharing_the_index_takes_it_over(run, findings_dir, tmp_path):
    assert run("ingest", findings_dir).exit_code == 0
    clone = tmp_path / "clone" / "findings"
    shutil.copytree(findings_dir, clone)
    result = run("ingest", clone)
    assert result.exit_code == 0, result.stderr
    assert f"4 finding(s) indexed from {findings_dir.resolve()}" in result.stderr
    assert "duplicate id" not in result.stderr
    listed = json.loads(run("list", "--json").stdout)
    assert {Path(f["path"]).parent for f in listed} == {clone.resolve()}


def test_split_dirs_splits_on_the_path_separator():
    assert split_dirs([Path(f"a{os.pathsep}b"), Path("c")]) == [Path("a"), Path("b"), Path("c")]
    assert split_dirs(None) == []


# --- list ------------------------------------------------------------------------------------


def test_list_table(indexed):
    result = indexed("list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["id", "status", "model", "gpu/sm", "framework", "sources"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert sorted(rows) == sorted(
        [DSV3, QWEN, "llama-fp8-h100-startup-oom", "mistral-awq-l40s-works"]
    )
    assert "4x RTX PRO 6000 Blackwell (sm120)" in rows[QWEN]
    assert rows[DSV3].split()[-1] == "2"  # two sources


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--gpu", "sm120"], [QWEN]),
        (["--gpu", "RTX PRO 6000"], [QWEN]),
        (["--model", "deepseek"], [DSV3]),
        (["--status", "partial"], [DSV3]),
        (["--framework", "sglang"], [DSV3, QWEN]),
        (["--framework", "vllm", "--status", "works"], ["mistral-awq-l40s-works"]),
        (["--gpu", "mi300"], []),
    ],
)
def test_list_filters(indexed, args, expected):
    result = indexed("list", *args, "--json")
    assert result.exit_code == 0
    assert [d["id"] for d in json.loads(result.stdout)] == expected


def test_list_with_no_match_says_so(indexed):
    result = indexed("list", "--gpu", "mi300")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == "no findings match these filters\n"


@pytest.mark.parametrize(
    ("gpu", "warning"),
    [
        ("sm999", "no GPU deploykb knows has compute capability sm999"),
        ("Voodoo5", "unknown GPU"),
    ],
)
def test_list_warns_about_a_gpu_it_does_not_know_as_ask_does(indexed, gpu, warning):
    result = indexed("list", "--gpu", gpu)
    assert result.exit_code == 0
    assert result.stderr == (
        f"warning: --gpu '{gpu}': {warning}; use a name like 'B200' or a compute capability "
        f"like 'sm120'; listing the findings whose GPU or SM contains '{gpu}'\n"
        "no findings match these filters\n"
    )
    assert indexed("list", "--gpu", "sm120").stderr == ""  # a known one is only a filter


def test_list_with_an_unknown_status(indexed):
    result = indexed("list", "--status", "fine")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: --status 'fine': choose one of works, works-with-flags, broken, partial\n"
    )


def test_list_without_an_index(run):
    result = run("list")
    assert result.exit_code == 3
    assert result.stderr == f"Error: no index at {run.db}; run `deploykb ingest`\n"
    assert not run.db.exists()


# --- show ------------------------------------------------------------------------------------


def test_show_json_round_trips(indexed, findings_dir):
    path = findings_dir / f"{DSV3}.md"
    (parsed,) = parse_file(path).findings
    result = indexed("show", DSV3, "--json")
    assert result.exit_code == 0
    d = json.loads(result.stdout)
    body, where = d.pop("body"), d.pop("path")
    assert where == str(path.resolve())
    rebuilt = finding_from_dict(d, path=where, body=body)
    assert finding_to_dict(rebuilt) == finding_to_dict(parsed)
    assert rebuilt.body == parsed.body
    assert rebuilt.root_cause == parsed.root_cause


def test_show_human_view(indexed):
    result = indexed("show", DSV3)
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("DeepSeek-V3 FP8 on 8x B200: illegal memory access")
    assert "hardware: 8x NVIDIA B200 (sm100)" in out
    # square brackets in verbatim error lines survive (no rich markup interpretation)
    assert "[crash] [TP3] Scheduler hit an exception: Traceback (most recent call last):" in out
    assert "  --disable-cuda-graph" in out
    assert "Alternative fix: keep graphs but shrink the captured batch sizes" in out
    assert (
        "example-org/deploy-notes#12 -> https://github.com/example-org/deploy-notes/issues/12"
        in out
    )
    assert "## What happened" in out
    # the root cause is shown once, as its own field, not again inside the story
    assert out.count("A kernel captured into the CUDA graph read past its buffer") == 1


def test_show_unknown_id(indexed):
    result = indexed("show", "no-such-case")
    assert result.exit_code == 2  # bad input: an id the index does not hold
    assert result.stderr == "Error: no finding 'no-such-case'; run `deploykb list` to see ids\n"


def test_show_on_a_stale_index(indexed):
    from kb.store import open_db, set_meta

    db = open_db(indexed.db)
    with db.atomic():
        set_meta(db, parser_version="0-old")
    db.close()
    result = indexed("show", DSV3)
    assert result.exit_code == 3
    assert result.stderr == (
        f"Error: index at {indexed.db} was built by schema {INDEX_SCHEMA_VERSION}, parser 0-old, "
        "model hash-64; run `deploykb ingest`\n"
    )


@pytest.mark.parametrize("command", ["ingest", "list", "show"])
def test_help_has_an_example(run, command):
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Example: deploykb " + command in result.stdout


# --- the shipped knowledge base --------------------------------------------------------------


def test_shipped_findings_ingest_clean_and_each_has_sources(run):
    result = run("ingest", shipped_findings_dir())
    assert result.exit_code == 0, result.stderr
    listed = json.loads(run("list", "--json").stdout)
    assert len(listed) >= 41
    assert [d["id"] for d in listed if not d.get("sources")] == []


def test_list_families_shows_coverage_and_gaps(indexed):
    result = indexed("list", "--families", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {
        "total",
        "working_deployments",
        "families",
        "gpu_generations",
        "frameworks",
        "gaps",
    }
    assert data["total"] == sum(data["frameworks"].values())
    assert set(data["gaps"]) == {f for f, n in data["families"].items() if n < 5}
    human = indexed("list", "--families")
    assert human.exit_code == 0
    assert human.stdout.splitlines()[0].split() == ["family", "findings", "what"]
    assert (
        f"{data['total']} findings, {data['working_deployments']} working deployments"
        in human.stdout
    )


# --- control characters a committed finding may hold ---------------------------------------------


def test_terminal_escapes_in_a_committed_finding_are_shown_not_run(run, tmp_path):
    """A title with YAML escapes (set the window title, clear the screen, colour) and raw ESC/BEL
    bytes in the body: every command prints them written out, and lint says which line."""
    import re

    team = tmp_path / "team"
    team.mkdir()
    good = (shipped_findings_dir() / "glm5-nvfp4-sm120-deepgemm-ue8m0-nan.md").read_text()
    text = good.replace("id: glm5-nvfp4-sm120-deepgemm-ue8m0-nan", "id: esc", 1)
    text = re.sub(r"^title: .*$", r'title: "GLM \\e]0;pwned\\a\\e[2J\\e[31m red \\x9b"', text,
                  count=1, flags=re.M)  # fmt: skip
    text += "\nRaw \x1b]0;pwned\x07 and \x1b[2J in the body.\n"
    (team / "esc.md").write_text(text)
    control = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    outputs = [
        run("ask", "NaN probability tensor", "--findings", team, "--gpu", "sm120"),
        run("ask", "NaN probability tensor", "--findings", team, "--json"),
        run("list", "--findings", team),
        run("list", "--json"),
        run("show", "esc"),
        run("show", "esc", "--json"),
    ]
    for result in outputs:
        assert result.exit_code == 0, result.stderr
        assert not control.search(result.stdout + result.stderr)
    assert "GLM \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m red \\x9b" in outputs[4].stdout
    assert "Raw \\x1b]0;pwned\\x07 and \\x1b[2J in the body." in outputs[4].stdout
    lint = run("lint", team)
    assert lint.exit_code == 1
    assert lint.stdout.splitlines() == [
        f"{team}/esc.md:3: error: 'title': control characters U+001B, U+0007, U+009B (written as "
        "a YAML escape) are not allowed (a terminal acts on them); remove them",
        f"{team}/esc.md:{text.count(chr(10))}: error: control characters U+001B, U+0007 are not "
        "allowed (a terminal acts on them); remove them",
    ]
