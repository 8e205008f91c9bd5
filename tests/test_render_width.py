"""What a person sees in an 80- or 120-column terminal: nothing cut, wrapped lines keep their
indent, commands wrap so they still paste into a shell, help examples fit.

The CLI runs through typer's CliRunner with ``COLUMNS`` set, which is the width rich lays out for;
the index is the shipped findings with the hash embedder (no model load).
"""

from __future__ import annotations

import gc
import io
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from rich.cells import cell_len
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.cli.app import app

GLM5 = "glm5-nvfp4-sm120-deepgemm-ue8m0-nan"
ASSERT = "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
CMD = (
    "python -m sglang.launch_server --model-path nvidia/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --kv-cache-dtype fp8_e4m3 --attention-backend triton "
    "--served-model-name 'glm 5'"
)
WIDTHS = (80, 120)


@pytest.fixture(scope="module")
def shipped_hash_index(tmp_path_factory) -> Path:
    """The shipped findings indexed once with the hash embedder, as ``ask`` builds it."""
    path = tmp_path_factory.mktemp("hash-index") / "kb.db"
    result = CliRunner().invoke(
        app, ["ingest", "--db", str(path), "--embedder", "hash"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.stderr
    gc.collect()  # the command's connection, so that the checkpoint below takes every page
    with sqlite3.connect(path) as con:  # all of the index in the one file the tests copy
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture
def cli(shipped_hash_index, tmp_path, monkeypatch):
    db = tmp_path / "kb.db"
    shutil.copy(shipped_hash_index, db)
    wal = Path(f"{shipped_hash_index}-wal")
    if wal.exists():  # pages the checkpoint could not move yet
        shutil.copy(wal, f"{db}-wal")
    monkeypatch.setenv("DEPLOYKB_DB", str(db))
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)

    def run(*args: str, width: int):  # type: ignore[no-untyped-def]
        monkeypatch.setenv("COLUMNS", str(width))
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        return result

    return run


def shell_argv(text: str) -> list[str]:
    """The words bash reads from ``text`` (``\\`` + newline continues the line, as in a paste)."""
    done = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + text], capture_output=True, text=True, check=True
    )
    return done.stdout.split("\0")[:-1]


def too_wide(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if cell_len(line) > width]


def panel_lines(text: str) -> list[str]:
    """The inside of the answer's boxes, without the borders."""
    return [line[2:-2].rstrip() for line in text.splitlines() if line.startswith("│ ")]


# --- ask ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_ask_answer_fits_and_wrapped_lines_keep_their_indent(cli, width):
    out = cli("ask", ASSERT, "--gpu", "sm120", "--arch", "glm_moe_dsa", "--cmd", CMD,
              width=width).stdout  # fmt: skip
    assert too_wide(out, width) == []
    inside = panel_lines(out)
    bullets = [i for i, line in enumerate(inside) if line.startswith("  • ")]
    assert bullets, out
    wrapped = 0
    for i in bullets:
        for line in inside[i + 1 :]:
            if not line or line.startswith("  • ") or not line.startswith(" "):
                break
            # a bullet's continuation starts under its first word, not at the left edge
            assert line.startswith("    ") and not line.startswith("     "), line
            wrapped += 1
    # the plan's "why:" and "expect:" texts continue under their first word too
    for label in ("why: ", "expect: "):
        starts = [i for i, line in enumerate(inside) if line.startswith(f"     {label}")]
        for i in starts:
            nxt = inside[i + 1] if i + 1 < len(inside) else ""
            if nxt.startswith(" ") and not re.match(r"\s+(\d+\.|why:|expect:|note:)", nxt):
                assert nxt.startswith(" " * (5 + len(label))), nxt
                wrapped += 1
    if width == 80:
        assert wrapped > 0, "nothing wrapped at 80 columns: the test checks nothing"


@pytest.mark.parametrize("width", WIDTHS)
def test_corrected_command_wraps_between_words_and_pastes_as_one_command(cli, width):
    doc = json.loads(
        cli(
            "ask",
            ASSERT,
            "--gpu",
            "sm120",
            "--arch",
            "glm_moe_dsa",
            "--cmd",
            CMD,
            "--json",
            width=width,
        ).stdout  # fmt: skip
    )
    command = doc["matches"][0]["command"]
    assert command
    inside = panel_lines(
        cli(
            "ask", ASSERT, "--gpu", "sm120", "--arch", "glm_moe_dsa", "--cmd", CMD, width=width
        ).stdout  # fmt: skip
    )
    start = inside.index("Corrected command") + 1
    block = []
    for line in inside[start:]:
        block.append(line)
        if not line.endswith(" \\"):
            break
    if width == 80:
        assert len(block) > 1, block  # it did have to wrap
    # what the terminal shows is what a shell reads as the one command
    assert shell_argv("\n".join(block)) == shlex.split(command)


def test_shell_lines_never_break_inside_quotes():
    from agent.cli.terminal import shell_lines

    cmd = "vllm serve m --chat-template '{% for m in messages %}{{ m.content }}{% endfor %}' --tp 8"
    lines = shell_lines(cmd, 30)
    assert all(line.endswith(" \\") for line in lines[:-1])
    assert shell_argv("\n".join(lines)) == shlex.split(cmd)
    assert "'{% for m in messages %}{{ m.content }}{% endfor %}'" in "\n".join(lines)


def test_a_rich_console_of_fixed_width_lays_out_the_answer(shipped_hash_index, monkeypatch):
    """The renderer itself, on captured consoles 80 and 120 wide (no CLI, no COLUMNS)."""
    from rich.console import Console

    from agent.answer import answer, build_context
    from agent.cli.render import render_answer
    from agent.search import Searcher
    from kb.embed import HashEmbedder
    from kb.store import open_db

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)
    ctx = build_context(model=None, arch="glm_moe_dsa", quant=None, gpu="sm120", framework=None,
                        cmd=CMD, server=None, tried=(), warnings=[])  # fmt: skip
    searcher = Searcher(open_db(shipped_hash_index), lambda: HashEmbedder(dim=64))
    result = answer([ASSERT], ctx, searcher, top=3)
    for width in WIDTHS:
        buffer = io.StringIO()
        render_answer(result, Console(file=buffer, width=width, color_system=None))
        text = buffer.getvalue()
        assert too_wide(text, width) == []
        assert "Salient lines from your input" in text
        assert all(not line.endswith(" ") for line in text.splitlines() if "│" not in line)


# --- list -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_list_keeps_every_id_and_status_whole(cli, width):
    listed = json.loads(cli("list", "--json", width=200).stdout)
    out = cli("list", width=width).stdout
    assert too_wide(out, width) == []
    assert "…" not in out
    words = set(re.split(r"[\s·]+", out))
    for f in listed:
        assert f["id"] in words, f["id"]  # on one line, not cut or folded
    for status in {f["status"] for f in listed}:
        assert status in words
    # model and GPU are still there, next to their finding
    glm = out.split(GLM5, 1)[1].split("\n\n", 1)[0]
    assert "nvidia/GLM-5-NVFP4" in " ".join(glm.split())
    assert "RTX PRO 6000" in " ".join(glm.split())


LONG_ID = "sglang-99999-v0512-deepgemm-b300-glm5-fp8-cuda-graph-capture-illegal-address-after-warmup-tp8x2"


@pytest.fixture
def long_id(tmp_path) -> Path:
    """A team folder with one finding whose id (95 characters) is wider than the terminal."""
    team = tmp_path / "team"
    team.mkdir()
    related = "glm5-nvfp4-sm120-deepgemm-ue8m0-nan"
    (team / f"{LONG_ID}.md").write_text(
        f'---\nid: {LONG_ID}\ntitle: "GLM-5-FP8 on B300: illegal address at CUDA-graph capture"\n'
        "status: broken\nmodel: example/GLM-5-FP8-long-id\nhardware:\n  gpu: NVIDIA B300\n  sm: sm103\n"
        f"framework:\n  name: sglang\nrelated:\n  - {related}\n  - {LONG_ID}\n---\n"
    )
    return team


@pytest.mark.parametrize("width", WIDTHS)
def test_an_id_wider_than_the_terminal_is_never_folded(cli, long_id, width):
    assert len(LONG_ID) == 95
    listed = cli("list", "--model", "long-id", "--findings", long_id, width=width).stdout
    assert LONG_ID in listed.splitlines()  # on a line of its own, whole
    shown = cli("show", LONG_ID, width=width).stdout.splitlines()
    if width == 80:  # too wide for "id: ...": the id on its own line
        assert shown[shown.index("id:") + 1] == f"  {LONG_ID}"
    else:
        assert f"id: {LONG_ID}" in shown
    related = shown[shown.index("related:") + 1 :][:2]
    assert related == ["  glm5-nvfp4-sm120-deepgemm-ue8m0-nan", f"  {LONG_ID}"]
    # everything but the id lines still fits
    assert too_wide("\n".join(shown), width) == [f"  {LONG_ID}"] * (2 if width == 80 else 0)


def test_list_is_a_table_where_it_fits(cli):
    out = cli("list", "--status", "broken", width=220).stdout
    assert out.splitlines()[0].split() == [
        "id",
        "status",
        "model",
        "gpu/sm",
        "framework",
        "sources",
    ]
    row = next(line for line in out.splitlines() if line.startswith(GLM5))
    assert row.split()[1] == "broken"


# --- show -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_show_wraps_on_words(cli, width):
    from kb.store import get_finding, open_db

    f = get_finding(open_db(os.environ["DEPLOYKB_DB"]), GLM5)
    out = cli("show", GLM5, width=width).stdout
    head = out.split("\n## ", 1)[0]  # the fields, symptoms, root cause, fix, commands, sources
    assert too_wide(head, width) == []
    words = set(head.split())
    expected = f.title.split() + f.root_cause.split()
    expected += [w for s in f.symptoms for w in s.text.split()]
    assert [w for w in expected if w not in words] == []  # no word split across lines
    # the root cause is one paragraph, wrapped with its indent, not the Markdown's hard wraps
    cause = head.split("Root cause\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(cause) > 1 and all(line.startswith("  ") for line in cause)
    # the failing command pastes as one command
    block = head.split("Failing command\n", 1)[1].split("\n\n", 1)[0]
    assert shell_argv(block) == shlex.split(f.failing_command)


# --- --help ---------------------------------------------------------------------------------------

COMMANDS = [None, "ask", "triage", "ingest", "list", "show", "lint", "export", "add"]


def _examples(help_text: str) -> list[list[str]]:
    """The example command lines of a help text, grouped per example (blank-line separated)."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Example" in line)
    out: list[list[str]] = []
    block: list[str] = []
    for line in lines[start:]:
        if line.rstrip().endswith(":") and not line.startswith(" "):  # Arguments:, Options:
            break
        if not line.strip():
            if block:
                out.append(block)
            block = []
            continue
        block.append(line.removeprefix("  Example: ").removeprefix("  Examples:"))
    if block:
        out.append(block)
    return [b for b in out if any("deploykb" in line for line in b)]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_examples_fit_80_columns_or_continue_with_a_backslash(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    args = ([command] if command else []) + ["--help"]
    result = CliRunner().invoke(app, args, prog_name="deploykb")
    assert result.exit_code == 0
    assert too_wide(result.stdout, 80) == []
    examples = _examples(result.stdout)
    assert examples, result.stdout
    for block in examples:
        # every line but the last of an example continues with " \": nothing was re-wrapped
        assert all(line.endswith(" \\") for line in block[:-1]), block
        # and bash reads it as one command (the pipe in an example stays inside bash -n)
        subprocess.run(["bash", "-n", "-c", "\n".join(block)], check=True)


# --- triage ---------------------------------------------------------------------------------------


def test_triage_wraps_under_its_indent_on_a_terminal_and_keeps_lines_whole_in_a_pipe():
    from rich.console import Console

    from agent.cli.commands.triage import render_triage
    from agent.logs import triage

    log = Path(__file__).parent / "fixtures" / "logs" / "glm5_nvfp4_sglang_tp8.log"
    result = triage(log.read_text().splitlines())
    long_line = next(ln.text for ln in result.lines if len(ln.text) > 100)
    for width in WIDTHS:
        screen = io.StringIO()
        render_triage(result, Console(file=screen, width=width, force_terminal=True,
                                      color_system=None))  # fmt: skip
        shown = screen.getvalue()
        assert too_wide(shown, width) == []
        block = shown.split(long_line.split()[0], 1)[1].split("signature:", 1)[0]
        assert all(line.startswith("    ") for line in block.splitlines()[1:] if line)
        assert " ".join(block.split()) in " ".join(long_line.split())
    piped = io.StringIO()
    render_triage(result, Console(file=piped, width=80, force_terminal=False))
    assert f"    {long_line}" in piped.getvalue().splitlines()
