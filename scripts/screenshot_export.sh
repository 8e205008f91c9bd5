#!/usr/bin/env bash
# Export the compatibility table as one HTML page and take a PNG screenshot of it in headless Chromium.
#
#   scripts/screenshot_export.sh [OUT_DIR]          # default OUT_DIR: build/export
#   scripts/screenshot_export.sh --html FILE [OUT_DIR]   # screenshot an existing page instead
#
# Writes OUT_DIR/compat.html and OUT_DIR/compat.png. The table comes from the index named by
# DEPLOYKB_DB when that file exists; otherwise a throwaway index is built from the shipped findings
# (hash embedder: the export reads no vectors). Extra arguments for `deploykb export` (filters) go
# in EXPORT_ARGS, e.g. EXPORT_ARGS="--gpu sm120". Window size: WIDTH (1440) x HEIGHT (2400).
# Chromium: $CHROMIUM, else chromium / chromium-browser / google-chrome on PATH.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${PYTHON:-$repo/.venv/bin/python}"
[ -x "$py" ] || py="$(command -v python3)"

html=""
if [ "${1:-}" = "--html" ]; then
    html="$(realpath "${2:?--html needs a file}")"
    shift 2
fi
out="$(mkdir -p "${1:-$repo/build/export}" && cd "${1:-$repo/build/export}" && pwd)"

browser="${CHROMIUM:-}"
for candidate in chromium chromium-browser google-chrome; do
    [ -n "$browser" ] && break
    browser="$(command -v "$candidate" || true)"
done
if [ -z "$browser" ]; then
    echo "screenshot_export.sh: no Chromium found; install it (apt-get install chromium) or set CHROMIUM" >&2
    exit 2
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ -z "$html" ]; then
    # The two commands this needs (ingest, export), without loading the rest of the CLI.
    deploykb() {
        (cd "$repo" && "$py" -c 'import agent.cli.commands.listing, agent.cli.commands.table
from agent.cli.app import app
app(prog_name="deploykb")' "$@")
    }
    db="${DEPLOYKB_DB:-}"
    if [ -z "$db" ] || [ ! -f "$db" ]; then
        db="$work/kb.db"
        deploykb ingest --db "$db" --embedder hash >/dev/null
    fi
    # shellcheck disable=SC2086  # EXPORT_ARGS is a list of words on purpose
    deploykb export --db "$db" --format html -o "$out/compat.html" ${EXPORT_ARGS:-}
    html="$out/compat.html"
elif [ "$html" != "$out/compat.html" ]; then
    cp "$html" "$out/compat.html"
fi

"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --hide-scrollbars --force-device-scale-factor=1 \
    --window-size="${WIDTH:-1440},${HEIGHT:-2400}" --screenshot="$out/compat.png" \
    "file://$html" 2>"$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}
[ -s "$out/compat.png" ] || { cat "$work/chromium.log" >&2; exit 1; }
echo "$out/compat.html"
echo "$out/compat.png"
