"""One name per concept across emb's commands (issue 24).

Every visible flag of every command (``emb extract``, each ``emb analyze NAME``, ``emb report``,
``emb info``, ``emb validate``, ``emb suites export``, ``emb zip``) is in :data:`NAMES` with the one
concept it stands for and the Python names (click destinations) that concept may have: a flag
used for a second concept (``--test`` for the t-test of ``stereotype``, ``--format`` for the
vectors file of ``emb extract``) or a concept under a second flag (``--similarity`` beside
``--pairs``) fails here. An earlier flag still works, hidden, with one warning.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from emb.cli._options import every_renamed
from emb.cli.main import main

#: flag → (the concept, the Python names it may carry)
NAMES: dict[str, tuple[str, set[str]]] = {
    "--a": ("attribute words A", {"a", "attribute_a"}),
    "--b": ("attribute words B", {"b", "attribute_b"}),
    "--x": ("target words X", {"x"}),
    "--word-set": ("words compared across settings and stores", {"word_set"}),
    "--standardize": ("standardise each layer before any cosine", {"standardize"}),
    "--alpha": ("significance level of a classification", {"alpha"}),
    "--fraction": ("share of each word set in a random subset", {"fraction"}),
    "--match": ("what a random attribute word is matched on", {"match"}),
    "--n-null": ("random attribute-set pairs of an empirical null", {"n_null"}),
    "--n-splits": ("random halvings of the attribute sets", {"n_splits"}),
    "--y": ("target words Y", {"y"}),
    "--allow-english-templates": ("English templates for another language", {"allow_english_templates"}),
    "--allow-missing": ("leave out (and count) what has no vector/context/word", {"allow_missing"}),
    "--alternative": ("alternative hypothesis", {"alternative"}),
    "--basis": ("stereotype basis", {"basis"}),
    "--batch-size": ("items per forward batch", {"batch_size"}),
    "--bootstrap-samples": ("samples per CEAT bootstrap replicate", {"bootstrap_samples"}),
    "--bos": ("BOS token before every context", {"bos"}),
    "--bos-token": ("the token put first", {"bos_token"}),
    "--C": ("LinearSVC regularisation", {"C"}),
    "--case-sensitive": ("match a CEAT stimulus' case", {"case_sensitive"}),
    "--causal-bos": ("intersectional suite's BOS request", {"causal_bos"}),
    "--confidence": ("coverage of a CI", {"confidence"}),
    "--contexts": ("contexts per stimulus", {"contexts"}),
    "--contrast": ("IBD contrast group", {"contrast"}),
    "--corpus": ("sentence corpus", {"corpus"}),
    "--corpus-format": ("corpus file format", {"corpus_format"}),
    "--correction": ("multiple-comparison correction", {"correction"}),
    "--correction-over": ("the correction's family", {"correction_over"}),
    "--cv-folds": ("cross-validation folds", {"cv_folds"}),
    "--dataset": ("word-similarity benchmarks", {"datasets"}),
    "--ddof": ("delta degrees of freedom", {"ddof"}),
    "--deep": ("validate every byte", {"deep"}),
    "--device": ("compute device", {"device"}),
    "--device-map": ("weights spread over devices", {"device_map"}),
    "--dictionary": ("stereotype dictionary file", {"dictionary"}),
    "--dpi": ("PNG resolution", {"dpi"}),
    "--dry-run": ("estimate, write nothing", {"dry_run"}),
    "--dtype": ("compute dtype", {"dtype"}),
    "--duplicates": ("a word listed twice in a lexicon", {"duplicates"}),
    "--eibd-threshold": ("EIBD threshold", {"eibd_threshold"}),
    "--exact-limit": ("exact permutation enumeration limit", {"exact_limit"}),
    "--examples": ("stereotype sense contexts", {"examples"}),
    "--export-tests": ("IBD words written as CEAT tests", {"export_tests"}),
    "--extended": ("extended stereotype dictionary", {"extended"}),
    "--extreme-share": ("share of extreme phrases", {"extreme_share"}),
    "--figure-format": ("figure file format", {"figure_formats"}),
    "--format": ("format of what is written (tables, report page)", {"table_format", "fmt"}),
    "--group": ("groups of the suite compared", {"groups"}),
    "--groups": ("your own stereotype groups (CSV file) to extract", {"groups"}),
    "--ibd-groups": ("IBD groups and attributes file", {"ibd_groups"}),
    "--id-field": ("record id key of a corpus", {"id_field"}),
    "--include-excluded": ("keep the names Caliskan et al. dropped", {"include_excluded"}),
    "--json": ("print JSON", {"as_json"}),
    "--k-max": ("principal components nullified", {"k_max"}),
    "--language": ("lexicon language", {"language"}),
    "--layers": ("layers to store", {"layers"}),
    "--lexicon": ("lexicon (to include / to analyse)", {"lexicon"}),
    "--list": ("list the analyses", {"list_"}),
    "--lowercase-fallback": ("look a word up lower-cased", {"lowercase_fallback"}),
    "--max-examples": ("examples per sense", {"max_examples"}),
    "--max-memory": ("memory per device", {"max_memory"}),
    "--min-words": ("fewest words per set before small_n", {"min_words"}),
    "--model": ("the model", {"model"}),
    "--n-bootstrap": ("bootstrap replicates", {"n_bootstrap"}),
    "--n-permutations": ("Monte-Carlo permutations", {"n_permutations"}),
    "--n-samples": ("CEAT samples of one context per stimulus", {"n_samples"}),
    "--n-subsets": ("random subsets of the tokenization experiment", {"n_subsets"}),
    "--name": ("the store group a suite is written to", {"group_names"}),
    "--names": ("stereotype first names", {"names"}),
    "--no-plots": ("draw no figures", {"no_plots"}),
    "--nullification": ("the nullification sweep", {"nullification"}),
    "--nullify-layer": ("layers of the nullification sweep", {"nullify_layers"}),
    "--offload-dir": ("disk offload directory", {"offload_dir"}),
    "--out": ("where results are written", {"out_dir", "out"}),
    "--overwrite": ("replace what an earlier run wrote", {"overwrite"}),
    "--pairs": ("word-similarity pairs with human scores", {"pairs"}),
    "--per-word": ("the per-word table", {"per_word"}),
    "--polar": ("polar words file", {"polar"}),
    "--pooling": ("subword pooling", {"poolings"}),
    "--quantize": ("8/4-bit weights", {"quantize"}),
    "--quiet": ("no progress display", {"quiet"}),
    "--ranks": ("rank window of names", {"ranks"}),
    "--rating": ("human rating (valence, arousal, dominance)", {"rating", "ratings"}),
    "--reference": ("the authors' published code", {"reference"}),
    "--relative-depth": ("x = layer / last layer", {"relative_depth"}),
    "--revision": ("hub revision", {"revision"}),
    "--rule": ("EIBD rule", {"rule"}),
    "--scale": ("rating scale", {"scale"}),
    "--scaling": ("feature scaling", {"scaling"}),
    "--scheduler": ("dask.distributed scheduler address", {"scheduler"}),
    "--seed": ("seed of every random choice", {"seed"}),
    "--setting": ("contextual setting", {"setting", "settings"}),
    "--shard": ("shard I of N", {"shard"}),
    "--storage-dtype": ("stored dtype", {"storage_dtype"}),
    "--store": ("the store", {"store", "stores"}),
    "--suite": ("suite (to build; the store group to read)", {"suite", "suite_specs", "group"}),
    "--t-test": ("Student's or Welch's t-test", {"test"}),
    "--templates": ("template sentences file", {"templates"}),
    "--terms": ("gendered terms", {"terms"}),
    "--test": ("tests of the suite: ids, or a file defining them", {"tests"}),
    "--text-field": ("sentence key of a corpus", {"text_field"}),
    "--thresholds": ("IBD candidate thresholds", {"thresholds"}),
    "--title": ("report title", {"title"}),
    "--tokenization": ("the tokenization experiment", {"tokenization"}),
    "--trust-remote-code": ("run a model's own code", {"trust_remote_code"}),
    "--unit": ("CEAT context unit", {"unit"}),
    "--valnorm": ("ValNorm by projection", {"valnorm"}),
    "--vectors-format": ("static vectors file format", {"format"}),
    "--version": ("emb's version", {"version"}),
    "--word": ("target words", {"words"}),
    "--wording": ("band sentence wording", {"wording"}),
    "--workers": ("corpus scanning processes", {"workers"}),
    "--years": ("year window of name counts", {"years"}),
}


def _commands() -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []

    def walk(cmd: click.Command, path: str) -> None:
        out.append((path, cmd))
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), f"{path} {name}")

    walk(main, "emb")
    return out


def _flags() -> list[tuple[str, str, str]]:
    """(command, flag, Python name) of every visible long flag."""
    rows = []
    for path, cmd in _commands():
        for param in cmd.params:
            if isinstance(param, click.Option) and not param.hidden:
                rows += [(path, flag, param.name) for flag in param.opts if flag.startswith("--")]
    return rows


def test_every_flag_has_one_concept_and_every_concept_one_flag() -> None:
    rows = _flags()
    assert len({path for path, _, _ in rows}) >= 15  # extract, info, validate, report, analyze × 10 …
    unknown = sorted({(flag, path) for path, flag, _ in rows if flag not in NAMES})
    assert not unknown, f"flags not in the naming table (add each with its one concept): {unknown}"
    meanings = sorted((path, flag, dest) for path, flag, dest in rows if dest not in NAMES[flag][1])
    assert not meanings, f"a flag used for another concept (give that concept its own name): {meanings}"
    concepts = [concept for concept, _ in NAMES.values()]
    assert len(concepts) == len(set(concepts)), "one concept, two names in the table"
    unused = sorted(set(NAMES) - {flag for _, flag, _ in rows})
    assert not unused, f"table entries no command has: {unused}"


def test_earlier_names_are_no_visible_flag_of_their_command() -> None:
    renamed = every_renamed()
    assert renamed["--similarity"] == "--pairs" and renamed["--samples"] == "--n-samples"
    for new in renamed.values():
        assert new in NAMES
    for path, cmd in _commands():
        for old in getattr(cmd, "deprecated_flags", None) or {}:
            visible = [f for p in cmd.params if isinstance(p, click.Option) and not p.hidden
                       for f in p.opts]
            assert old not in visible, (path, old)


def _invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(map(str, args)))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "expected"), [
    # an earlier flag reaches the option under its one name: its value is checked as such
    (("analyze", "ceat", "--store", "none.zarr", "--samples", "1"),
     "'--n-samples': --n-samples (n_samples= in Python) of analysis 'ceat' must be an integer"),
    (("analyze", "similarity", "--store", "none.zarr", "--similarity", "no/such/dir"),
     "Invalid value for '--pairs'"),
    (("analyze", "stereotype", "--store", "none.zarr", "--test", "bogus"),
     "--t-test (test= in Python) of analysis 'stereotype' must be one of student, welch"),
    (("extract", "-m", "none", "-s", "weat", "--store", "none.zarr", "--datasets", "ws353"),
     "--dataset belongs to suite similarity"),
    (("extract", "-m", "none", "-s", "similarity", "--store", "none.zarr", "--select", "WEAT1"),
     "--test belongs to suite weat, ceat"),
])
def test_an_earlier_flag_still_works_and_warns_once(args: tuple, expected: str) -> None:
    old = next(a for a in args if a in every_renamed())
    code, output = _invoke(*args, *args[-2:])  # given twice: warned once
    assert expected in output, output
    assert output.count(f"warning: {old} is deprecated") == 1
    assert f"use {every_renamed()[old]}" in output
    assert "Traceback" not in output


def test_help_shows_only_the_one_name() -> None:
    for args, gone, shown in ((["analyze", "similarity"], "--similarity", "--pairs"),
                              (["analyze", "weat"], "--tests", "--test"),
                              (["analyze", "ceat"], "--samples", "--n-samples"),
                              (["extract"], "--poolings", "--pooling"),
                              (["extract"], "--datasets", "--dataset"),
                              (["extract"], "--select", "--test"),
                              (["extract"], "--tests", "--test")):
        code, output = _invoke(*args, "--help")
        assert code == 0 and shown in output
        assert gone not in output.replace(shown, ""), (args, gone)
    code, listing = _invoke("suites")
    assert code == 0 and "--test:" in listing and "--select" not in listing


@pytest.mark.parametrize(("args", "suggested", "never"), [
    (("analyze", "weat", "--store", "x.zarr", "--pairs", "p"), None, "--dpi"),
    (("analyze", "similarity", "--store", "x.zarr", "--pair", "p"), "--pairs", "--dpi"),
    (("analyze", "vast", "--store", "x.zarr", "--poolings", "last"), "--pooling", None),
    (("extract", "-m", "x", "-s", "similarity", "--store", "x.zarr", "--similarity", "p"), "--pairs", None),
    (("analyze", "weat", "--store", "x.zarr", "--tset", "WEAT1"), "--test", None),
])
def test_a_mistyped_flag_gets_a_sensible_suggestion(args: tuple, suggested: str | None,
                                                    never: str | None) -> None:
    code, output = _invoke(*args)
    assert code == 2 and "No such option" in output
    if suggested:
        assert "Did you mean" in output or "Possible options" in output
        assert f"{suggested}" in output.split("No such option", 1)[1]
    else:
        assert "Did you mean" not in output and "Possible options" not in output
    if never:
        assert never not in output


def test_python_keywords_are_unchanged(tmp_path: Path) -> None:
    """The renames are of flags only: the Python keywords (pairs=, n_samples=, test=) stay."""
    from emb.analyses import ANALYSES

    names = {o.name: o.cli_flag for o in ANALYSES["similarity"].options}
    assert names["pairs"] == "--pairs"
    assert {o.name: o.cli_flag for o in ANALYSES["ceat"].options}["n_samples"] == "--n-samples"
    assert {o.name: o.cli_flag for o in ANALYSES["stereotype"].options}["test"] == "--t-test"


def test_extract_test_takes_ids_as_analyze_does() -> None:
    """``emb extract -s weat --test WEAT1,WEAT7`` (was --select) picks tests as ``emb analyze
    weat --test`` does; Python's select= still works."""
    from emb.stimuli.suites import build_suite

    by_test = build_suite("weat", tests="WEAT1,WEAT7")
    by_select = build_suite("weat", select=["WEAT1", "WEAT7"])
    assert by_test.parameters["test_ids"] == by_select.parameters["test_ids"] == ["WEAT1", "WEAT7"]
    assert by_test.items == by_select.items
