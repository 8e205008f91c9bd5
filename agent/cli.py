"""Entry point of the ``deploykb`` console command.

Each command module registers itself on ``agent.app.app``; errors are rendered by ``agent.app._Group``.
"""

from __future__ import annotations

from agent.app import app
from agent.commands import kbcmds  # noqa: F401  (registers ingest, list, show)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
