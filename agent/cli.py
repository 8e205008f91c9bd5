"""Entry point of the ``deploykb`` console command.

Each command module registers itself on ``agent.app.app``; errors are rendered by ``agent.app._Group``.
"""

from __future__ import annotations

import os

# One BLAS thread: a query's NumPy work (one matrix-vector product) is small, where OpenBLAS's
# thread hand-off costs more than it saves, and on a busy 2-core machine its spinning threads made
# one query take 1.4 s instead of 30 ms. Set before anything imports numpy; an explicit setting
# wins. Ingest still uses every core: it runs onnxruntime batches side by side (kb/embed.py).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from agent.app import app  # noqa: E402
from agent.commands import add, ask, export, kbcmds, lint, triage  # noqa: E402,F401  (each registers its commands)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
