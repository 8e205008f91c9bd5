"""Docs that cannot drift: the CLI reference is the commands' own help."""

from __future__ import annotations

import importlib.util
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


def test_every_command_help_has_an_example():
    text = (ROOT / "docs" / "cli.md").read_text()
    for section in text.split("\n## ")[1:]:
        assert "deploykb" in section.split("```text", 1)[1], section[:60]
        assert "xample" in section, f"no example in: {section.splitlines()[0]}"
