#!/usr/bin/env bash
# Proves the floors in pyproject.toml: installs the lowest versions of emb's direct dependencies
# that it allows (the base install and the test extra, not the extract extra: no torch) into a
# fresh virtual environment, and runs there the tests that exercise the floors: the imports, the
# store (every read and write path: local, zip, HTTP, S3), the contract of every analysis (its
# kernel, tables, figures and summary on its example), the shared statistics (against scipy and
# statsmodels) and the result files (CSV, Parquet, netCDF, JSON); their fast tier (-m "not slow":
# the crash, race and coverage campaigns exercise no other library call, and the main run has
# them). The main run (the README's test command) runs every test at the highest versions.
#   bash .ci/lowest.sh            # a new venv in a temporary directory, removed afterwards
#   LOWEST_VENV=/tmp/low bash .ci/lowest.sh   # keep (and reuse) the venv there
#   LOWEST_VENV=/tmp/low bash .ci/lowest.sh --prepare   # only make the venv (.ci/tests.sh does
#   LOWEST_VENV=/tmp/low bash .ci/lowest.sh --run       # it while the main run's tests run), then
#                                                       # only run the tests in it
set -euo pipefail
step="${1:-all}"
case "$step" in
    all|--prepare|--run) ;;
    *) echo "usage: bash .ci/lowest.sh [--prepare|--run]; got '$step'" >&2; exit 2 ;;
esac
if [[ "$step" != all && -z "${LOWEST_VENV:-}" ]]; then
    echo "lowest.sh $step needs LOWEST_VENV (the venv's path, the same for both steps)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
if [[ -n "${LOWEST_VENV:-}" ]]; then
    venv="$LOWEST_VENV"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    venv="$scratch/venv"
fi
if [[ "$step" != --run ]]; then
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check uv
    # lowest-direct: every direct dependency at the lowest version pyproject.toml allows, the
    # dependencies of those at the highest that fits them (what a user who pins our floors gets).
    # The dependencies only: emb itself is installed by --run (the build writes its metadata into
    # src/, which the main run may be reading while this runs).
    "$venv/bin/python" -m uv pip compile -q --python "$venv/bin/python" --resolution lowest-direct \
        --extra test pyproject.toml -o "$venv/lowest.txt"
    "$venv/bin/python" -m uv pip install -q --python "$venv/bin/python" -r "$venv/lowest.txt"
fi
[[ "$step" == --prepare ]] && exit 0
"$venv/bin/python" -m uv pip install -q --python "$venv/bin/python" --resolution lowest-direct \
    --no-deps -e ".[test]"
"$venv/bin/python" -m uv pip list --python "$venv/bin/python" 2>/dev/null \
    | grep -E -i '^(numpy|scipy|scikit-learn|xarray|zarr|numcodecs|dask|fsspec|pandas|click|tqdm|matplotlib|jsonschema|pyyaml|h5netcdf|h5py|threadpoolctl|pytest|hypothesis|zstandard|statsmodels|psutil|pytest-xdist) '
"$venv/bin/python" -m pytest -q -ra -p no:cacheprovider --dist worksteal --durations=10 -m "not slow" tests/test_imports.py tests/store tests/analyses/test_contract.py tests/analyses/stats tests/cli/test_outputs.py
