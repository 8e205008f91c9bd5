"""Docs that cannot drift: the CLI reference is the commands' own help."""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path

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
