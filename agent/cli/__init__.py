"""The ``deploykb`` command line: the one layer that prints.

``app`` (the typer application, the options every command shares, the one mapping of the
``DeployKBError`` family to a line on stderr and an exit code) and one module per command under
``commands/``: each reads its options, builds the dependencies, calls one library function and
renders the result (``render`` for answers, ``terminal`` for layout that survives 80 columns).
``index`` keeps the index in step with the findings for the commands, ``progress`` and
``streams`` say on stderr what the data on stdout must not carry.

:func:`main` is the entry point of the console command.
"""

from __future__ import annotations

import os

# One BLAS thread: a query's NumPy work (one matrix-vector product) is small, where OpenBLAS's
# thread hand-off costs more than it saves, and on a busy 2-core machine its spinning threads made
# one query take 1.4 s instead of 30 ms. Set before anything imports numpy; an explicit setting
# wins. Ingest still uses every core: it runs onnxruntime batches side by side (kb/embed.py).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from agent.cli.app import app  # noqa: E402
from agent.cli.commands import (  # noqa: E402,F401  (each registers its commands)
    add,
    ask,
    indexing,
    lint,
    listing,
    show,
    table,
    triage,
)


def main() -> None:
    app()
