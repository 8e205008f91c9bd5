#!/usr/bin/env bash
# Create .venv with deploykb installed. Idempotent: a second run only re-checks.
# On a machine without an NVIDIA GPU the CPU build of torch is installed first, so that
# sentence-transformers does not pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
PIP=".venv/bin/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# a second run only re-checks: the install is redone when pyproject.toml changed since it was made
STAMP=.venv/.deploykb-installed
WANT="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ] || ! .venv/bin/deploykb --version >/dev/null 2>&1; then
  if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
      echo "setup: NVIDIA GPU found; torch comes with sentence-transformers" >&2
    else
      echo "setup: no GPU; installing the CPU build of torch first" >&2
      "$PIP" install -q "torch==2.13.0" 2> >(grep -v "is ignored" >&2)
    fi
  fi
  "$PIP" install -q -e ".[test]" 2> >(grep -v "is ignored" >&2)
  echo "$WANT" > "$STAMP"
fi
# the embedding runtime: the bundled weights exported once to ONNX (local, nothing downloaded),
# then the index of the shipped findings, so the first `ask` has nothing to build
HF_HUB_OFFLINE=1 .venv/bin/python -c "from kb.embed import export_onnx; export_onnx()"
HF_HUB_OFFLINE=1 .venv/bin/deploykb ingest >/dev/null
echo "setup: ready ($(.venv/bin/deploykb --version 2>/dev/null || echo deploykb))" >&2
