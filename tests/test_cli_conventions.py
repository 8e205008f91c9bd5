"""What a shell user expects of any command: data on stdout and everything else on stderr, one
spelling of each key and status, ``-h``, tab completion, documented exit codes, ``-`` that says it
is waiting for the terminal.

Commands run through typer's CliRunner (which keeps stdout and stderr apart) against an index
under ``tmp_path`` built with the hash embedder; the terminal and completion tests run the real
command in a subprocess.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import agent.cli  # noqa: F401  (registers the commands)
from agent.cli.app import app

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_FINDINGS = Path(__file__).parent / "fixtures" / "kb" / "findings"
LOG = Path(__file__).parent / "fixtures" / "logs"
QWEN = "qwen-moe-nvfp4-sm120-garbage"
ASSERT = "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed."
BAD = "---\nid: broken-one\ntitle: t\nstatus: fine\n---\n"
STATUSES = {"works", "works-with-flags", "broken", "partial"}


@pytest.fixture
def team(tmp_path) -> Path:
    """A team folder: the four fixture findings and one file with an unknown status."""
    folder = tmp_path / "team"
    shutil.copytree(FIXTURE_FINDINGS, folder)
    (folder / "broken-one.md").write_text(BAD)
    return folder


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEPLOYKB_DB", str(tmp_path / "state" / "kb.db"))
    monkeypatch.setenv("DEPLOYKB_EMBEDDER", "hash")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("DEPLOYKB_FINDINGS", raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)

    def invoke(*args: object, input: str | None = None):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(app, [str(a) for a in args], input=input, prog_name="deploykb")

    return invoke


# --- streams: data on stdout, the rest on stderr ------------------------------------------------

SAID = re.compile(r"^(warning|note|deploykb|Error):", re.M)


def _keys(doc: object) -> set[str]:
    if isinstance(doc, dict):
        return set(doc) | {k for v in doc.values() for k in _keys(v)}
    if isinstance(doc, list):
        return {k for v in doc for k in _keys(v)}
    return set()


def _statuses(doc: object) -> set[str]:
    if isinstance(doc, dict):
        found = {doc["status"]} if isinstance(doc.get("status"), str) else set()
        return found | {s for v in doc.values() for s in _statuses(v)}
    if isinstance(doc, list):
        return {s for v in doc for s in _statuses(v)}
    return set()


# each command in its JSON form, on a fresh index and a team folder with one bad file, so that
# progress, a warning and a notice all have reason to be printed
JSON_RUNS = {
    "ask": ("ask", ASSERT, "--gpu", "Voodoo5", "--findings", "{team}", "--json"),
    "ask-stdin": ("ask", "-", "--findings", "{team}", "--json"),
    "triage": ("triage", "-", "--json"),
    "ingest": ("ingest", "{team}", "--json"),
    "list": ("list", "--findings", "{team}", "--json"),
    "list-families": ("list", "--families", "--findings", "{team}", "--json"),
    "lint": ("lint", "{team}", "--json"),
    "export": ("export", "--format", "json", "--findings", "{team}"),
}


@pytest.mark.parametrize("name", list(JSON_RUNS))
def test_json_on_stdout_is_the_whole_of_stdout(run, team, name):
    args = [str(a).replace("{team}", str(team)) for a in JSON_RUNS[name]]
    stdin = (LOG / "qwen35_nvfp4_nan_response.txt").read_text() if "-" in args else None
    result = run(*args, input=stdin)
    assert result.exit_code in (0, 1), result.output  # lint and ingest fail on the bad file
    doc = json.loads(result.stdout)  # nothing but the document
    assert "cls" not in _keys(doc)
    assert _statuses(doc) <= STATUSES | {"untested", "conflicting"}  # export's two more
    if name in ("ask", "ingest", "list"):
        assert result.stderr.strip(), "the run had nothing to say: the test proves nothing"


def test_ask_warnings_notes_and_progress_go_to_stderr(run, team):
    result = run("ask", ASSERT, "--gpu", "Voodoo5", "--model", "nvidia/GLM-5-NVFP4",
                 "--findings", team)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert SAID.search(result.stdout) is None, result.stdout
    err = result.stderr.splitlines()
    assert any(line.startswith("deploykb: no index at") for line in err)  # progress
    assert any(line.startswith("warning: --gpu 'Voodoo5': unknown GPU") for line in err)
    assert any(line.startswith("warning: ") and "broken-one.md" in line for line in err)
    assert "Nearest" in result.stdout or "Best match" in result.stdout


def test_ingest_and_lint_keep_their_report_on_stdout_and_say_the_rest_on_stderr(run, team):
    ingest = run("ingest", team)
    assert ingest.exit_code == 1
    assert ingest.stdout.startswith("4 findings: 4 added") and len(ingest.stdout.splitlines()) == 1
    assert "broken-one.md" in ingest.stderr
    lint = run("lint", team)
    assert lint.exit_code == 1
    # the problems are lint's data; its summary is a message
    assert all(
        re.match(r"\S+\.md(:\d+)?: (error|warning): ", line) for line in lint.stdout.splitlines()
    )
    assert "files checked" in lint.stderr and "files checked" not in lint.stdout


def test_list_and_show_say_an_empty_result_on_stderr(run, team):
    run("ingest", team)
    empty = run("list", "--gpu", "mi300")
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert empty.stderr == "no findings match these filters\n"


def test_triage_and_ask_json_spell_the_class_key_alike(run, team):
    log = (LOG / "qwen35_nvfp4_nan_response.txt").read_text()
    triage = json.loads(run("triage", "-", "--json", input=log).stdout)
    ask = json.loads(run("ask", "-", "--findings", team, "--json", input=log).stdout)
    assert [ln["class"] for ln in triage["lines"]][:2] == [ln["class"] for ln in ask["triage"]][:2]
    run("ingest", team)
    show = json.loads(run("show", QWEN, "--json").stdout)
    assert show["symptoms"] and all(set(s) == {"class", "text"} for s in show["symptoms"])
    assert show["status"] == "works-with-flags"


def test_status_is_spelled_the_same_in_list_show_and_ask(run, team):
    run("ingest", team)
    listed = run("list", "--status", "works_with_flags")  # accepted, shown with hyphens
    assert QWEN in listed.stdout and "works-with-flags" in listed.stdout
    assert "works_with_flags" not in listed.stdout and "works with flags" not in listed.stdout
    shown = run("show", QWEN)
    assert "status: works-with-flags" in shown.stdout


# --- ask - on a terminal ------------------------------------------------------------------------


def _on_a_terminal(args: list[str], typed: bytes, tmp_path: Path) -> subprocess.CompletedProcess:
    """Run deploykb with stdin on a pseudo-terminal; type ``typed`` once it has said it waits."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DEPLOYKB_DB": str(tmp_path / "kb.db"),
           "DEPLOYKB_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "COLUMNS": "100"}  # fmt: skip
    env.pop("DEPLOYKB_FINDINGS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.cli", *args],
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path,
    )  # fmt: skip
    os.close(slave)
    try:
        first = proc.stderr.readline().decode()  # type: ignore[union-attr]
        os.write(master, typed)
        out, err = proc.communicate(timeout=60)  # one Ctrl-D must be enough
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), first + err.decode())


def test_triage_dash_on_a_terminal_says_it_waits_then_reads_until_ctrl_d(tmp_path):
    from agent.cli.streams import STDIN_PROMPT

    typed = b"RuntimeError: CUDA error: an illegal memory access was encountered\n\x04"
    done = _on_a_terminal(["triage", "-"], typed, tmp_path)
    assert done.stderr.splitlines()[0] == STDIN_PROMPT
    assert "Ctrl-D" in STDIN_PROMPT
    assert done.returncode == 0, done.stderr
    assert "illegal memory access" in done.stdout
    assert "Ctrl-D" not in done.stdout  # the prompt is no part of the data


def test_ask_dash_on_a_terminal_says_it_waits(tmp_path):
    from agent.cli.streams import STDIN_PROMPT

    done = _on_a_terminal(["ask", "-"], b"\x04", tmp_path)  # Ctrl-D at once: nothing pasted
    assert done.stderr.splitlines()[0] == STDIN_PROMPT
    assert done.returncode == 2
    assert (
        done.stderr.splitlines()[-1] == "Error: empty input: paste an error, a log, or a question"
    )


def test_ask_dash_on_a_terminal_reads_the_pasted_log_until_ctrl_d(tmp_path):
    from agent.cli.streams import STDIN_PROMPT

    typed = (
        b"[2026-02-19 00:13:33 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        b"RuntimeError: CUDA error: an illegal memory access was encountered\n"
        b"[2026-02-19 00:13:33] Received sigquit from a child process. It usually means the "
        b"child failed.\n\x04"
    )  # three lines pasted, then Ctrl-D on a new line
    done = _on_a_terminal(["ask", "-", "--gpu", "sm120"], typed, tmp_path)
    assert done.stderr.splitlines()[0] == STDIN_PROMPT
    assert "I/O operation on closed file" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Salient lines from your input\n")
    assert "illegal-memory-access" in done.stdout


def test_dash_with_a_pipe_says_nothing_about_waiting(run):
    from agent.cli.streams import STDIN_PROMPT

    result = run("triage", "-", input="RuntimeError: CUDA error: out of memory\n")
    assert result.exit_code == 0 and STDIN_PROMPT not in result.stderr


# --- -h and completion --------------------------------------------------------------------------

COMMANDS = [[], ["ask"], ["triage"], ["ingest"], ["list"], ["show"], ["add"], ["lint"], ["export"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0] if c else "deploykb")
def test_dash_h_is_help(run, command):
    short, long = run(*command, "-h"), run(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout
    assert "-h, --help" in short.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_script_for_the_shell_named(run, shell):
    result = run("--show-completion", shell)
    assert result.exit_code == 0
    assert "_DEPLOYKB_COMPLETE" in result.stdout
    assert {"bash": "complete -o default -F", "zsh": "#compdef deploykb",
            "fish": "complete --command deploykb"}[shell] in result.stdout  # fmt: skip


def test_show_completion_of_an_unknown_shell_is_bad_input(run):
    result = run("--show-completion", "tcsh")
    assert result.exit_code == 2
    assert "'tcsh': choose bash, zsh, fish" in result.stderr


@pytest.mark.parametrize(
    ("shell", "script", "startup"),
    [
        ("bash", ".bash_completions/deploykb.sh", ".bashrc"),
        ("zsh", ".zfunc/_deploykb", ".zshrc"),
        ("fish", ".config/fish/completions/deploykb.fish", None),
    ],
)
def test_install_completion_writes_where_the_shell_looks(run, tmp_path, monkeypatch, shell,
                                                         script, startup):  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    result = run("--install-completion", shell)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # a message, not data
    assert f"{shell} completion installed in " in result.stderr
    assert "_DEPLOYKB_COMPLETE" in (home / script).read_text()
    if startup == ".bashrc":
        assert "deploykb.sh" in (home / startup).read_text()  # sourced by every new bash
    elif startup:
        assert ".zfunc" in (home / startup).read_text()  # on zsh's fpath


@pytest.fixture
def deploykb_on_path(tmp_path) -> dict[str, str]:
    """A ``deploykb`` on PATH that runs this checkout, as an installed one would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "deploykb"
    run_main = "import sys; sys.argv[0] = 'deploykb'; from agent.cli import main; main()"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "{run_main}" "$@"\n')
    exe.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "PYTHONPATH": str(ROOT)}  # fmt: skip


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completes_commands_and_options_from_the_printed_script(run, deploykb_on_path):
    script = run("--show-completion", "bash").stdout
    probe = (
        script
        # what bash does on TAB: set COMP_WORDS/COMP_CWORD, call the function with the command
        + "\nCOMP_WORDS=(deploykb li); COMP_CWORD=1; _deploykb_completion deploykb"
        + '; echo "${COMPREPLY[*]}"'
        + "\nCOMP_WORDS=(deploykb list --sta); COMP_CWORD=2; _deploykb_completion deploykb"
        + '; echo "${COMPREPLY[*]}"'
    )
    done = subprocess.run(["bash", "-c", probe], env=deploykb_on_path, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    commands, options = done.stdout.splitlines()
    assert set(commands.split()) == {"list", "lint"}
    assert options.split() == ["--status"]


@pytest.mark.parametrize(
    ("shell", "env", "expected"),
    [
        ("zsh", {"_TYPER_COMPLETE_ARGS": "deploykb sh"}, '"show":"Show one finding'),
        ("fish", {"_TYPER_COMPLETE_ARGS": "deploykb tr", "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
         "triage\tPick the error lines"),
    ],
)  # fmt: skip
def test_zsh_and_fish_get_completions_the_way_their_scripts_ask(
    deploykb_on_path, shell, env, expected
):
    done = subprocess.run(
        ["deploykb"],
        env={**deploykb_on_path, **env, "_DEPLOYKB_COMPLETE": f"complete_{shell}"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout


# --- exit codes ---------------------------------------------------------------------------------


def _interrupt(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise KeyboardInterrupt


EXIT_CASES = [
    # (exit code, args, what to prepare: "index" ingests the team folder first)
    (0, ["list", "--gpu", "mi300"], "index"),
    (1, ["lint", "{team}"], None),
    (1, ["ingest", "{team}"], None),
    (2, ["list", "--status", "fine"], "index"),
    (2, ["list", "--no-such-option"], "index"),
    (2, ["show", "no-such-id"], "index"),
    (2, ["ask", "x", "--findings", "{tmp}/nope"], None),
    (2, ["ask", "-"], None),
    (2, ["lint", "{tmp}/nope"], None),
    (3, ["list"], None),
    (3, ["show", QWEN, "--db", "{tmp}/notes.txt"], "notes"),
    (4, ["ask", "x", "--model", "./no-such-model"], None),
    (130, ["list"], "interrupt"),
]


@pytest.mark.parametrize(("code", "args", "prepare"), EXIT_CASES,
                         ids=[f"{c}-{' '.join(a)}" for c, a, _ in EXIT_CASES])  # fmt: skip
def test_exit_code_per_class(run, team, tmp_path, monkeypatch, code, args, prepare):
    if prepare == "index":
        run("ingest", FIXTURE_FINDINGS)
    elif prepare == "notes":
        (tmp_path / "notes.txt").write_text("not an index\n")
    elif prepare == "interrupt":
        run("ingest", FIXTURE_FINDINGS)
        monkeypatch.setattr("kb.store.load_findings", _interrupt)
    args = [a.replace("{team}", str(team)).replace("{tmp}", str(tmp_path)) for a in args]
    result = run(*args, input="" if args[-1] == "-" else None)
    assert result.exit_code == code, result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    if code >= 2:
        assert result.stdout == ""
        assert result.stderr.strip().splitlines()[-1].startswith("Error:")


def test_readme_exit_code_table_lists_exactly_these_codes():
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Output, exit codes and the shell", 1)[1].split("\n## ", 1)[0]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", section, re.M)}
    assert documented == {code for code, _, _ in EXIT_CASES}


# --- list --findings ----------------------------------------------------------------------------


def test_list_findings_shows_the_team_folder_as_ask_would(run, tmp_path, monkeypatch):
    team = tmp_path / "team-only"
    team.mkdir()
    shutil.copy(FIXTURE_FINDINGS / f"{QWEN}.md", team)
    plain = run("list", "--json")
    assert plain.exit_code == 3  # no index yet, and list alone does not build one
    result = run("list", "--findings", team, "--json")
    assert result.exit_code == 0, result.output
    ids = {f["id"] for f in json.loads(result.stdout)}
    assert QWEN in ids
    assert "glm5-nvfp4-sm120-deepgemm-ue8m0-nan" in ids  # beside the shipped findings, as ask
    assert "building it" in result.stderr
    # and the environment variable works like the option, as for ask
    monkeypatch.setenv("DEPLOYKB_FINDINGS", str(team))
    again = run("list", "--model", "Qwen")
    assert again.exit_code == 0 and QWEN in again.stdout
