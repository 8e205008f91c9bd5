#!/usr/bin/env python3
"""Write docs/cli.md from the commands' own --help (tests/test_docs.py checks it is current).

Usage: .venv/bin/python scripts/gen_cli_docs.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COMMANDS = ["ask", "triage", "ingest", "list", "show", "add", "lint", "export"]


def render() -> str:
    from typer.testing import CliRunner

    from agent.cli import app

    runner = CliRunner()
    parts = [
        "# deploykb command reference",
        "",
        "Generated from each command's `--help` by `scripts/gen_cli_docs.py`; "
        "`tests/test_docs.py` fails when it drifts.",
        "",
        "Settings: a command-line flag wins over its environment variable, which wins over the "
        "default (see the README's Settings section).",
        "",
    ]
    for name in [None, *COMMANDS]:
        args = ([name] if name else []) + ["--help"]
        result = runner.invoke(app, args, env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"})
        if result.exit_code != 0:
            raise SystemExit(f"deploykb {' '.join(args)} failed: {result.output}")
        title = f"deploykb {name}" if name else "deploykb"
        parts += [f"## {title}", "", "```text", result.output.rstrip(), "```", ""]
    return "\n".join(parts)


def main() -> None:
    target = ROOT / "docs" / "cli.md"
    text = render()
    if "--check" in sys.argv:
        if not target.exists() or target.read_text() != text:
            raise SystemExit("docs/cli.md is out of date: run scripts/gen_cli_docs.py")
        return
    target.write_text(text)
    print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
