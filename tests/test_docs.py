"""Docs that cannot drift: the CLI reference is the commands' own help."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _gen():
    spec = importlib.util.spec_from_file_location(
        "gen_cli_docs", ROOT / "scripts" / "gen_cli_docs.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_current():
    assert (ROOT / "docs" / "cli.md").read_text() == _gen().render(), (
        "docs/cli.md is out of date: run .venv/bin/python scripts/gen_cli_docs.py"
    )


def _examples(text: str) -> list[str]:
    """The ``deploykb ...`` example lines of a help text, ``\\`` continuations joined."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i].strip()
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1].rstrip() + " " + lines[i].strip()
        line = re.sub(r"^(Examples?:\s*)", "", line)
        line = re.sub(r"^\$ ", "", line)
        if line.startswith("deploykb "):
            out.append(line)
        i += 1
    return out


def test_every_command_help_has_examples_that_parse():
    """Each command's help shows at least one example of itself, and every example is accepted
    by that command's own option parser (a renamed or removed option fails here)."""
    import typer

    import agent.cli  # noqa: F401  (registers the commands)
    from agent.cli.app import app

    group = typer.main.get_command(app)
    assert set(group.commands) >= set(_gen().COMMANDS)
    for name, command in group.commands.items():
        examples = _examples(command.help or "")
        assert examples, f"deploykb {name} --help has no example"
        for example in examples:
            words = shlex.split(example)
            assert words[1] == name, f"deploykb {name}: example of another command: {example}"
            command.make_context(name, words[2:])  # raises on an unknown option or bad value


# --- the README's example session ---------------------------------------------------------------

_SCORE = re.compile(r"\b\d\.\d\d\b")  # a score's digits: "score 0.73", "  0.04  id", "0.70"


def _session() -> tuple[list[str], list[str]]:
    """The README's example session: the command's words (as bash reads them) and the lines
    shown after it."""
    import subprocess

    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- example-session:start -->\n```console\n", 1)[1]
    lines = block.split("```\n<!-- example-session:end -->", 1)[0].splitlines()
    command = [lines[0].removeprefix("$ ")]
    while command[-1].endswith("\\"):
        command.append(lines[len(command)])
    done = subprocess.run(
        ["bash", "-c", "printf '%s\\0' " + "\n".join(command)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split("\0")[:-1], lines[len(command) :]


def _elided(line: str) -> bool:
    return line.strip(" │") == "..."


def _same(shown: str, printed: str) -> bool:
    return _SCORE.sub("0.##", shown.rstrip()) == _SCORE.sub("0.##", printed.rstrip())


def _first_mismatch(shown: list[str], printed: list[str]) -> str | None:
    """None when ``printed`` is ``shown`` line for line, each ``...`` standing for one or more
    printed lines; otherwise the README line the run departs from."""
    import functools
    import sys

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * (len(shown) + len(printed))))
    furthest = [0]

    @functools.lru_cache(maxsize=None)
    def fits(i: int, j: int) -> bool:
        furthest[0] = max(furthest[0], i)
        if i == len(shown):
            return j == len(printed)
        if _elided(shown[i]):
            return any(fits(i + 1, k) for k in range(j + 1, len(printed) + 1))
        return j < len(printed) and _same(shown[i], printed[j]) and fits(i + 1, j + 1)

    if fits(0, 0):
        return None
    at = min(furthest[0], len(shown) - 1)
    return f"README line {at + 1} of the session: {shown[at]!r}"


def test_the_matcher_takes_elisions_and_scores_and_nothing_else():
    printed = ["a", "│ score 0.74 │", "b", "c", "d"]
    assert _first_mismatch(["a", "│ score 0.73 │", "│ ... │", "d"], printed) is None
    assert _first_mismatch(["a", "│ score 0.73 │", "b", "d"], printed) is not None  # c is missing
    assert _first_mismatch(["a", "│ score 1.73 │", "...", "d"], printed) is None
    assert _first_mismatch(["a", "│ scores 0.73 │", "...", "d"], printed) is not None
    assert _first_mismatch(["...", "e"], printed) is not None


@pytest.mark.model
def test_the_readme_example_session_is_what_the_command_prints(
    shipped_index_path, tmp_path, monkeypatch
):
    import shutil

    from typer.testing import CliRunner

    import agent.cli  # noqa: F401  (registers the commands)
    from agent.cli.app import app

    db = tmp_path / "kb.db"
    shutil.copy(shipped_index_path, db)
    monkeypatch.chdir(ROOT)  # the command names examples/ as the README's reader runs it
    monkeypatch.setenv("DEPLOYKB_DB", str(db))
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name in ("DEPLOYKB_FINDINGS", "DEPLOYKB_EMBEDDER", "HF_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("agent.context.detect_gpu", lambda *a, **k: None)
    words, shown = _session()
    assert words[0] == "deploykb" and "--cmd" in words
    result = CliRunner().invoke(app, words[1:], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    problem = _first_mismatch(shown, result.stdout.splitlines())
    assert problem is None, (
        f"the README's example session is not what the command prints ({problem}); this run "
        f"printed, to paste there (trim with ...):\n{result.stdout}"
    )
