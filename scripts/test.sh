#!/usr/bin/env bash
# The test command: set up if needed, lint and format-check the code, lint the shipped findings,
# run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ruff check kb agent tests scripts
.venv/bin/ruff format --check kb agent tests scripts
.venv/bin/deploykb lint --strict findings/
HF_HUB_OFFLINE=1 .venv/bin/python -m pytest -q "$@"
# the benchmark at toy size: every row of docs/benchmarks.md still runs
HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench.py --smoke >/dev/null
