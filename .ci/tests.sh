#!/usr/bin/env bash
# The tests, as the README's test command and CI run them: the whole suite at today's versions,
# then the floors (.ci/lowest.sh). The floors' environment (a fresh venv with the lowest versions
# pyproject.toml allows: ~1 min of downloads and unpacking, little CPU) is made in the background
# while the main run's tests use the cores, then its tests run.
#   bash .ci/tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
prepare=""
cleanup() {
    if [[ -n "$prepare" ]]; then kill "$prepare" 2>/dev/null || true; wait "$prepare" 2>/dev/null || true; fi
    rm -rf "$scratch"
}
trap cleanup EXIT
export LOWEST_VENV="$scratch/venv"
bash .ci/lowest.sh --prepare > "$scratch/prepare.log" 2>&1 &
prepare=$!
python -m pytest -q -ra --durations=25
if ! wait "$prepare"; then
    prepare=""
    echo "making the lowest versions' environment failed:" >&2
    cat "$scratch/prepare.log" >&2
    exit 1
fi
prepare=""
cat "$scratch/prepare.log"  # its warnings, if any
bash .ci/lowest.sh --run
