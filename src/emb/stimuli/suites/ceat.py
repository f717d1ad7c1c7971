"""The ``ceat`` suite: natural corpus contexts of the CEAT stimuli (torch-free).

Guo & Caliskan (2021), Detecting Emergent Intersectional Biases: Contextualized Word Embeddings
Contain a Distribution of Human-like Biases. The 14 tests (C1–C10: the WEAT tests as the authors'
code spells them; I1–I4: intersectional) are package data (``emb/data/ceat_tests.json``); a user's
own tests in the same layout are read with ``--test FILE``.

Every stimulus of the chosen tests gets up to ``--contexts`` contexts from the corpus, sampled in one
streaming pass (:func:`emb.corpus.contexts.sample_contexts`). A stimulus shared by several tests
(the pleasant words, *Brad*) is sampled once and its items carry every test it belongs to.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from emb import data
from emb.corpus.contexts import ContextSample, sample_contexts
from emb.corpus.matching import UNITS
from emb.errors import CorpusError, SuiteError
from emb.options import SEED, Option
from emb.stimuli.suites._common import listing, read_json, sha256
from emb.stimuli.suites.core import Item, Suite
from emb.stimuli.suites.generator import SuiteGenerator

__all__ = ["CEAT_TESTS", "CeatGenerator", "CeatTest", "parse_ceat_tests"]

ROLES = ("X", "Y", "A", "B")
#: The authors' code embedded at most 1,000 contexts per word (``reference`` unit).
REFERENCE_CAP = 1000


class CeatTest:
    """One CEAT test: four named word sets and the test's human-readable ``title`` (the file's
    ``name``, e.g. "Flowers vs insects × pleasant/unpleasant"; "" when the file gives none)."""

    def __init__(self, id: str, names: Mapping[str, str], words: Mapping[str, tuple[str, ...]],
                 title: str = ""):
        self.id = id
        self.names = dict(names)
        self.words = {r: tuple(words[r]) for r in ROLES}
        self.title = title

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.title} if self.title else {}
        out.update({f"{r}_name": self.names[r] for r in ROLES})
        out.update({r: list(self.words[r]) for r in ROLES})
        return out


def parse_ceat_tests(doc: Any, where: str) -> dict[str, CeatTest]:
    """Tests in the ``ceat_weat_groups.json`` layout: ``{"tests": {id: {X_name, X, …}}}``, each
    with an optional ``name`` (its readable name in tables and figures).

    Raises
    ------
    SuiteError
        A missing or malformed test or word list.
    """
    tests = doc.get("tests") if isinstance(doc, dict) else None
    if not isinstance(tests, dict) or not tests:
        raise SuiteError(
            f"CEAT test file {where}: $.tests must be an object of tests {{id: {{X_name, X, Y_name, "
            "Y, A_name, A, B_name, B}}}} (the layout of ceat_weat_groups.json)"
        )
    out = {}
    for test_id, test in tests.items():
        path = f"{where}: $.tests.{test_id}"
        if not isinstance(test, dict):
            raise SuiteError(f"{path} must be an object")
        words, names = {}, {}
        for role in ROLES:
            value = test.get(role)
            if not isinstance(value, list) or not value or not all(
                isinstance(w, str) and w.strip() for w in value
            ):
                raise SuiteError(f"{path}.{role} must be a non-empty list of words")
            words[role] = tuple(dict.fromkeys(w.strip() for w in value))
            names[role] = str(test.get(f"{role}_name") or role)
        title = test.get("name")
        if title is not None and not (isinstance(title, str) and title.strip()):
            raise SuiteError(f"{path}.name must be a non-empty string (the test's readable name)")
        out[str(test_id)] = CeatTest(str(test_id), names, words, (title or "").strip())
    return out


#: The 14 tests of Guo & Caliskan (2021), as their code spells the words.
CEAT_TESTS: dict[str, CeatTest] = parse_ceat_tests(
    data.read_json("ceat_tests.json"), "emb/data/ceat_tests.json"
)


def _select(tests: dict[str, CeatTest], spec: str | None, where: str) -> dict[str, CeatTest]:
    if spec is None or spec.strip().lower() in ("", "all"):
        return tests
    wanted = [t.strip() for t in spec.split(",") if t.strip()]
    unknown = [t for t in wanted if t not in tests]
    if unknown:
        raise SuiteError(f"no CEAT test(s) {unknown} in {where}; the tests are {list(tests)}")
    return {t: tests[t] for t in wanted}


class CeatGenerator(SuiteGenerator):
    """CEAT stimuli in natural contexts sampled from a corpus.

    Items: one per kept context, ``word`` = the stimulus, ``setting`` = the context unit, and the
    labels ``stimulus``, ``tests`` ("C1|C2|C3"), ``roles`` (the stimulus' role in each of those
    tests, "A|A|A"), ``groups`` (its word-set names), ``source`` (corpus file name), ``line``,
    ``offset`` (byte offset of the record in the decompressed file, or Parquet row), ``ordinal``
    (which of the record's units holding the stimulus) and ``record_id``. ``stimulus_set`` is the
    groups joined by ``|``.

    Parameters (provenance): the tests (as used, missing stimuli removed), per stimulus the
    matches seen, contexts kept and whether fewer than asked, the missing stimuli per test, the
    corpus files (names, sizes, sha256 or size+mtime) and every option.

    References
    ----------
    Guo, W. & Caliskan, A. (2021). Detecting Emergent Intersectional Biases: Contextualized Word
    Embeddings Contain a Distribution of Human-like Biases. AIES '21, 122–133.
    """

    name = "ceat"
    description = (
        "CEAT (Guo & Caliskan 2021): the C1-C10/I1-I4 stimuli in up to N natural contexts each, "
        "sampled from a corpus in one seeded pass"
    )
    options = (
        Option(name="corpus", type=Path, multiple=True, required=True,
                    help="corpus file or glob (text, JSONL/NDJSON, Parquet; .gz/.zst/.xz/.bz2); "
                         "repeat for several"),
        Option(name="contexts", type=int, default=10_000,
                    help="contexts sampled per stimulus (the paper: 10,000)"),
        Option(name="tests", type=str, flag="--test", deprecated=("--tests",),
                    help="test ids 'C1,I3' or a JSON file in the ceat_weat_groups.json "
                         "layout (default: C1-C10 and I1-I4)"),
        SEED.but(default=0, help="seed of the context sample"),
        Option(name="unit", type=str, default="sentence", choices=UNITS,
                    help="context unit: sentence (sentencex), document (the whole record), or "
                         "reference (the authors' 8/9-word window, case-sensitive, <= 1,000)"),
        Option(name="case_sensitive", type=bool, default=False,
                    help="match the stimulus' case exactly (default: ignore case)"),
        Option(name="text_field", type=str, default="text",
                    help="JSON key / Parquet column of the text (Reddit dumps: body)"),
        Option(name="id_field", type=str, default="id",
                    help="JSON key / Parquet column of a record id, recorded when present"),
        Option(name="corpus_format", type=str, default="auto",
                    choices=("auto", "text", "jsonl", "parquet"),
                    help="corpus format (default: from magic bytes and suffix)"),
        Option(name="allow_missing", type=bool, default=False,
                    help="drop stimuli that occur nowhere from their tests instead of failing"),
        Option(name="workers", type=int,
                    help="local processes scanning the corpus (default: cores, <= files)"),
        Option(name="scheduler", type=str,
                    help="Dask distributed scheduler address: scan the files on its workers"),
    )

    def build(self, **options: Any) -> Suite:
        """Sample the contexts and build the suite; see the class docstring."""
        progress = options.pop("progress", None)
        opts = self.parse_options(options)
        path = opts["tests"]
        if path is not None and (path.lower().endswith(".json") or Path(path).is_file()):
            file = Path(path)
            tests = parse_ceat_tests(read_json(file, "CEAT test file"), str(file))
            source: dict[str, Any] = {"source": str(file), "sha256": sha256(file)}
        else:
            tests = _select(CEAT_TESTS, path, "the built-in tests")
            source = {"source": "builtin", "reference": "weiguowilliam/CEAT code/ceat.py weat_groups"}
        n = int(opts["contexts"])
        if n < 1:
            raise SuiteError(f"--contexts must be at least 1; got {n}")
        if opts["unit"] == "reference" and n > REFERENCE_CAP:
            n = REFERENCE_CAP
        stimuli = list(dict.fromkeys(w for t in tests.values() for r in ROLES for w in t.words[r]))
        sample = sample_contexts(
            [str(c) for c in opts["corpus"]], stimuli, n=n, seed=opts["seed"], unit=opts["unit"],
            case_sensitive=bool(opts["case_sensitive"]), text_field=opts["text_field"],
            id_field=opts["id_field"] or None, format=opts["corpus_format"], workers=opts["workers"],
            scheduler=opts["scheduler"],
            progress=sys.stderr.isatty() if progress is None else bool(progress),
        )
        return _suite(self, tests, sample, source, opts, n)

    def warnings(self, suite: Suite) -> tuple[str, ...]:
        """The missing stimuli per test, stimuli with fewer contexts than asked, the pass' rate."""
        p = suite.parameters
        lines = []
        for test, words in (p.get("missing_by_test") or {}).items():
            if words:
                lines.append(f"{test}: dropped {len(words)} stimuli with no context: {listing(words)}")
        for test in p.get("dropped_tests") or ():
            lines.append(f"{test}: dropped (a word set lost all its stimuli)")
        short = [s for s, c in (p.get("stimuli") or {}).items() if c["short"] and c["kept"]]
        if short:
            lines.append(
                f"{len(short)} stimuli have fewer than {p['n_contexts']} contexts "
                f"(flagged in parameters['stimuli']): {listing(short)}"
            )
        corpus = p.get("corpus") or {}
        if corpus.get("records_too_long"):
            lines.append(
                f"skipped {corpus['records_too_long']:,} corpus record(s) longer than "
                f"{corpus['max_record_bytes'] / 2**20:,.0f} MiB (recorded as records_too_long)"
            )
        if corpus.get("records_invalid_unicode"):
            lines.append(
                f"skipped {corpus['records_invalid_unicode']:,} corpus record(s) whose text or id "
                "holds an unpaired surrogate escape such as \\ud800, which is no Unicode text "
                "(recorded as records_invalid_unicode)"
            )
        if corpus.get("seconds"):
            rate = corpus["bytes_text"] / 2**20 / corpus["seconds"]
            lines.append(
                f"read {corpus['bytes_read'] / 2**20:,.1f} MiB ({corpus['bytes_text'] / 2**20:,.1f} "
                f"MiB of text scanned) in {corpus['seconds']:.1f} s with {corpus['workers'] or 'dask'} "
                f"worker(s), {rate:,.1f} MiB/s"
            )
        return tuple(lines)


def _suite(
    gen: CeatGenerator, tests: dict[str, CeatTest], sample: ContextSample, source: dict[str, Any],
    opts: dict[str, Any], n: int,
) -> Suite:
    missing = set(sample.missing())
    corpus_names = ", ".join(f.path for f in sample.files)
    if missing and not opts["allow_missing"]:
        ordered = [s for s in sample.contexts if s in missing]
        raise CorpusError(
            f"{len(ordered)} CEAT stimuli occur in no context of the corpus ({corpus_names}): "
            f"{ordered}; use a larger corpus, or pass --allow-missing to drop them from their "
            "tests (recorded in the suite)"
        )
    used, missing_by_test, dropped = _kept_tests(tests, missing, corpus_names)
    membership = _membership(used)
    items = _items(membership, sample)
    stimuli = {
        s: {"seen": sample.seen[s], "kept": sample.kept(s), "short": sample.kept(s) < n,
            "tests": [e[0] for e in membership.get(s, [])]}
        for s in sample.contexts
    }
    parameters = {
        "tests": {t: test.to_dict() for t, test in used.items()},
        "tests_source": source,
        "test_ids": list(used),
        "n_contexts": n,
        "n_contexts_asked": int(opts["contexts"]),
        "seed": sample.seed,
        "unit": sample.unit,
        "case_sensitive": sample.case_sensitive,
        "allow_missing": bool(opts["allow_missing"]),
        "stimuli": stimuli,
        "missing": sorted(missing),
        "missing_by_test": missing_by_test,
        "dropped_tests": dropped,
        "corpus": sample.provenance(),
        "counts": {"items": len(items), "stimuli": len(membership)},
    }
    return Suite(name=gen.name, items=tuple(items), generator=gen.name, parameters=parameters,
                 description=gen.description)


def _kept_tests(
    tests: dict[str, CeatTest], missing: set[str], corpus_names: str,
) -> tuple[dict[str, CeatTest], dict[str, list[str]], list[str]]:
    """The tests without their missing stimuli, those left with an empty word set dropped; per
    test, the stimuli it lost; the tests dropped (refused when none is kept)."""
    used: dict[str, CeatTest] = {}
    missing_by_test: dict[str, list[str]] = {}
    dropped: list[str] = []
    for test_id, test in tests.items():
        gone = [w for r in ROLES for w in test.words[r] if w in missing]
        missing_by_test[test_id] = gone
        words = {r: tuple(w for w in test.words[r] if w not in missing) for r in ROLES}
        if any(not words[r] for r in ROLES):
            dropped.append(test_id)
            continue
        used[test_id] = CeatTest(test_id, test.names, words, test.title)
    if not used:
        raise CorpusError(
            f"no CEAT test keeps a stimulus in every word set after dropping the missing ones "
            f"(corpus: {corpus_names}); use a larger corpus"
        )
    return used, missing_by_test, dropped


def _membership(used: dict[str, CeatTest]) -> dict[str, list[tuple[str, str, str]]]:
    """Stimulus → its (test, role, group name) in every test that uses it."""
    membership: dict[str, list[tuple[str, str, str]]] = {}
    for test_id, test in used.items():
        for role in ROLES:
            for word in test.words[role]:
                membership.setdefault(word, []).append((test_id, role, test.names[role]))
    return membership


def _items(membership: dict[str, list[tuple[str, str, str]]], sample: ContextSample) -> list[Item]:
    """One item per sampled context of each stimulus, labelled with the tests, roles and groups
    it belongs to and where its context came from."""
    items = []
    for word, entries in membership.items():
        labels_common = {
            "stimulus": word,
            "tests": "|".join(e[0] for e in entries),
            "roles": "|".join(e[1] for e in entries),
            "groups": "|".join(e[2] for e in entries),
        }
        stimulus_set = "|".join(dict.fromkeys(e[2] for e in entries))
        for c in sample.contexts[word]:
            items.append(Item(
                context=c.text, word=word, char_start=c.char_start, char_end=c.char_end,
                setting=sample.unit, stimulus_set=stimulus_set,
                labels={**labels_common, "source": c.file, "line": float(c.line),
                        "offset": float(c.offset), "ordinal": float(c.ordinal),
                        "record_id": c.record_id},
            ))
    return items
