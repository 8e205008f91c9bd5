"""``python -m agent.cli``: the ``deploykb`` command."""

from agent.cli import main

main()
