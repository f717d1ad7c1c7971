"""Picking stimuli out of a store Dataset by word and labels, with errors that say what to do.

A store's suite group is an ``xr.Dataset`` with an ``item`` dimension whose coordinates are the
stimulus' ``word``, ``context``, ``setting``, ``stimulus_set`` and the suite's label columns
(see ``docs/contracts.md``).  The analyses select items here, by name, never by position.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from emb.errors import AnalysisError, MissingStimuliError
from emb.options import WORD_SET
from emb.schemas.datamodel import ITEM
from emb.text import did_you_mean, names, plain, unknown_names

__all__ = [
    "CommonWords",
    "ComparedWords",
    "common_words",
    "compared_words",
    "polar_setting",
    "plain_strings",
    "describe_source",
    "item_text",
    "item_values",
    "label_mask",
    "parse_subset",
    "refuse_repeats",
    "provenance_attrs",
    "select_positions",
    "select_words",
    "settings_present",
    "suite_parameters",
    "truthy",
    "unique_in_order",
    "vectors_coverage",
    "words_of",
]

#: Item coordinates that describe how a stimulus was located, not what it is.
_TECHNICAL = frozenset(
    {"char_start", "char_end", "n_subtokens", "token_start", "token_end", "n_tokens"}
)
_PROVENANCE_KEYS = (
    "model", "extraction", "suite", "emb_schema_version", "created", "oom_backoffs",
)


def _loaded(value: Any) -> Any:
    """An attribute as stored: JSON text parsed (netCDF keeps mappings as text), else as is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _attr(ds: xr.Dataset, key: str) -> Any:
    return _loaded(ds.attrs.get(key))


def suite_parameters(result: xr.Dataset) -> dict[str | None, dict[str, Any]]:
    """The suite parameters each model's store recorded, from a store Dataset's or a result's
    provenance attributes: ``{model: parameters}`` after :func:`emb.analyses.run_analysis`
    (``{None: parameters}`` for one Dataset); empty dicts where a store recorded none."""

    def params(attrs: Mapping[str, Any]) -> dict[str, Any]:
        suite = _loaded(attrs.get("suite"))
        found = _loaded(suite.get("parameters")) if isinstance(suite, Mapping) else None
        return dict(found) if isinstance(found, Mapping) else {}

    models = _loaded(result.attrs.get("models"))
    if not isinstance(models, Mapping) or not models:
        return {None: params(result.attrs)}
    return {str(m): params({**result.attrs, **(own if isinstance(own, Mapping) else {})})
            for m, own in models.items()}


def describe_source(ds: xr.Dataset) -> tuple[str, str, str]:
    """``(suite name, store location, model id)`` of a store Dataset, ``"?"`` where unknown."""
    suite = _attr(ds, "suite")
    suite_name = suite.get("name") if isinstance(suite, Mapping) else suite
    model = _attr(ds, "model")
    model_id = (model.get("model_id") or model.get("id")) if isinstance(model, Mapping) else model
    store = ds.encoding.get("source") or ds.attrs.get("store") or ds.attrs.get("source")
    return str(suite_name or "?"), str(store or "?"), str(model_id or "?")


def _vectors_record(ds: xr.Dataset) -> Mapping[str, Any]:
    """What a static store's extraction recorded about its suite's words (empty otherwise)."""
    suite = _attr(ds, "suite")
    params = suite.get("parameters", {}) if isinstance(suite, Mapping) else {}
    record = params.get("vectors", {}) if isinstance(params, Mapping) else {}
    return record if isinstance(record, Mapping) else {}


def vectors_coverage(ds: xr.Dataset) -> str | None:
    """A line naming the words a static store's suite left out (no vector), or None."""
    rec = _vectors_record(ds)
    if not rec.get("n_missing"):
        return None
    missing = list(rec.get("missing", []))
    suite, store, _ = describe_source(ds)
    return (
        f"{rec['n_missing']} of {rec.get('n_words')} words of suite {suite!r} in {store} have no "
        f"vector in {rec.get('file')} and were left out at extraction (--allow-missing): "
        f"{missing[:10]}{' …' if len(missing) > 10 else ''}; results use the words present"
    )


#: Built-in generators whose word lists an 'emb extract' option chooses: (flag, what it gives).
_WORD_OPTIONS = {
    "weat": ("--test FILE", "a test file (--test FILE, the weat_tests.json layout) that holds "
                             "these words"),
    "vast": ("--lexicon CSV --polar JSON", "a lexicon (--lexicon CSV) and/or polar words "
                                           "(--polar JSON: 'pleasant'/'unpleasant' lists) that hold "
                                           "these words"),
}


def _extract_hint(ds: xr.Dataset, setting: str | None = None) -> str:
    """What would add missing words: never a built-in suite that cannot hold them."""
    suite, store, model = describe_source(ds)
    rec = _vectors_record(ds)
    if rec:
        return (
            f"this store holds static vectors from {rec.get('file')}, in which "
            f"{rec.get('n_missing', 0)} words of the suite have no vector (left out at extraction; "
            "see the suite's parameters 'vectors.missing'): use words that have one"
        )
    info = _attr(ds, "suite")
    generator = info.get("generator") if isinstance(info, Mapping) else None
    command = (
        f"emb extract --model {model if model != '?' else 'MODEL'} --suite FILE "
        f"--store {store if store != '?' else 'STORE'}"
    )
    if generator:
        params = info.get("parameters") if isinstance(info, Mapping) else None
        if (setting == "random" and isinstance(params, Mapping)
                and params.get("missing_random")):
            return (
                f"the built-in '{generator}' suite found no corpus sentence for some words (its "
                "parameter 'missing_random' lists them); extract it with a larger --corpus, or "
                "leave the 'random' setting out"
            )
        if generator in _WORD_OPTIONS:
            flag, what = _WORD_OPTIONS[generator]
            new = f"{generator}_new"
            return (
                f"the store's {suite!r} group was made by the built-in '{generator}' generator with "
                f"the word lists it was given; its words are part of its definition, so extract the "
                f"suite again into a new group with {what}: 'emb extract --model "
                f"{model if model != '?' else 'MODEL'} --suite {generator} {flag} --name {new} "
                f"--store {store if store != '?' else 'STORE'}', then pass '--suite {new}' to "
                "'emb analyze'"
            )
        return (
            f"the store's {suite!r} group was made by the built-in '{generator}' generator, whose "
            "word lists cannot be extended; write a suite file that holds these words (see "
            f"'Stimulus suites' in the README), run '{command}' with it and pass its name to "
            "'emb analyze … --suite NAME'"
        )
    return (
        f"add them to the suite file that defined {suite!r} and re-run '{command} "
        "--overwrite' with that file (or extract a new suite file and pass "
        "'--suite NAME' to emb analyze)"
    )


def _where(ds: xr.Dataset) -> str:
    suite, store, _ = describe_source(ds)
    return f"suite {suite!r} in store {store}"


def item_values(ds: xr.Dataset, name: str) -> np.ndarray:
    """The values of the per-item coordinate or label ``name`` as a numpy array.

    Raises
    ------
    AnalysisError
        If the Dataset has no such per-item variable.
    """
    if name not in ds.variables or ds.variables[name].dims != (ITEM,):
        labels = sorted(str(k) for k, v in ds.variables.items() if v.dims == (ITEM,))
        raise AnalysisError(
            f"{_where(ds)} has no per-item label {name!r}; its labels are {names(labels, limit=40)}."
            f"{did_you_mean(name, labels)} Use a suite that defines it (see 'emb suites')"
        )
    return np.asarray(ds.variables[name].values)  # the variable's values (no DataArray built)


def text_column(values: Any) -> np.ndarray:
    """``values`` as an object array of ``str``: the values ``.astype(str)`` gives, without its
    fixed width.

    ``.astype(str)`` makes numpy's ``<U`` array, which holds every value at the width of the
    longest (4 bytes a character: one 100,000-character context among 4 million items asks for
    1.6 TB) and drops trailing NUL characters. An object array of ``str`` (what a store's text
    reads as) is handed back as it is, not copied; any other array is converted value by value
    as ``.astype(str)`` spells it (``str(v)``; bytes decoded, as UTF-8).
    """
    values = np.asarray(values)
    if values.dtype.kind == "O" and pd.api.types.infer_dtype(values, skipna=False) in ("string", "empty"):
        return values
    if values.dtype.kind in "OT":  # any object, or numpy's StringDType: one value at a time
        text = [v.decode() if isinstance(v, bytes) else str(v) for v in values.ravel().tolist()]
        return np.array(text, dtype=object).reshape(values.shape)
    return values.astype(str).astype(object)  # numbers, booleans, <U and bytes: bounded widths


def item_text(ds: xr.Dataset, name: str) -> np.ndarray:
    """The per-item label ``name`` as an object array of ``str`` (:func:`text_column`): the text
    a label compares, splits and groups by, at 8 bytes an item beside the strings themselves.

    Raises
    ------
    AnalysisError
        If the Dataset has no such per-item variable.
    """
    return text_column(item_values(ds, name))


def truthy(values: np.ndarray) -> np.ndarray:
    """Boolean view of a label column holding booleans, 0/1 or "true"/"false" strings."""
    values = np.asarray(values)
    if values.dtype == bool:
        return values
    if values.dtype.kind in "iuf":
        return np.nan_to_num(values.astype(np.float64)) != 0
    text = np.char.lower(values.astype(str))
    return np.isin(text, ["true", "1", "yes", "y", "t"])


def settings_present(ds: xr.Dataset) -> list[str]:
    """The settings of a Dataset, in order of first appearance."""
    return [str(v) for v in pd.unique(item_text(ds, "setting"))]


def _match(values: np.ndarray, wanted: Any) -> np.ndarray:
    many = isinstance(wanted, Collection) and not isinstance(wanted, str | bytes)
    if np.asarray(values).dtype == bool:  # a boolean label (store schema 4): "true"/"false" match it too
        spelt = {"true": True, "false": False}
        wanted = [spelt.get(w, w) for w in wanted] if many else spelt.get(wanted, wanted)
    if many:
        return np.isin(values, list(wanted))
    return values == wanted


def label_mask(
    ds: xr.Dataset,
    *,
    setting: str | Collection[str] | None = None,
    stimulus_set: str | Collection[str] | None = None,
    **labels: Any,
) -> np.ndarray:
    """Boolean mask over items matching ``setting``, ``stimulus_set`` and label values.

    A scalar matches by equality, a collection (list, tuple, set) by membership; ``None``
    (the default) does not filter.

    Raises
    ------
    AnalysisError
        If a label does not exist in the Dataset.
    """
    mask = np.ones(ds.sizes[ITEM], dtype=bool)
    filters = {"setting": setting, "stimulus_set": stimulus_set, **labels}
    for name, wanted in filters.items():
        if wanted is None:
            continue
        mask &= _match(item_values(ds, name), wanted)
    return mask


def _filters_text(filters: Mapping[str, Any]) -> str:
    parts = [f"{k}={plain(v)!r}" for k, v in filters.items() if v is not None]
    return f" ({', '.join(parts)})" if parts else ""


def _distinguishing_labels(ds: xr.Dataset, positions: np.ndarray) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, var in ds.variables.items():
        if var.dims != (ITEM,) or name in _TECHNICAL or name in (ITEM, "word"):
            continue
        vals = np.asarray(var.values)[positions]
        uniq = list(pd.unique(vals))
        if len(uniq) > 1:
            out[str(name)] = [v.item() if isinstance(v, np.generic) else v for v in uniq]
    return out


def select_words(
    ds: xr.Dataset,
    words: Iterable[str],
    *,
    setting: str,
    stimulus_set: str | Collection[str] | None = None,
    **labels: Any,
) -> xr.Dataset:
    """The items of ``words`` in one setting, in the order of ``words``, one item per word.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group (``emb.open_store(...).dataset(name)`` or ``xr.open_zarr``).
    words : iterable of str
        Words to pick, matched exactly (case-sensitive: names keep their capital).  A word
        listed twice is returned twice.
    setting : str
        The contextual setting (``bleached``, ``alone``, ``aligned`` …).
    stimulus_set : str or collection of str, optional
        Only items of this stimulus set (e.g. ``"pleasant"``).
    **labels
        Further label filters, e.g. ``test="WEAT1", role="X"`` or ``lexicon="bellezza"``;
        a collection matches any of its values.

    Returns
    -------
    xarray.Dataset
        ``ds.isel(item=...)``: lazy, with every variable and coordinate of ``ds``.

    Raises
    ------
    MissingStimuliError
        If some words have no item under these filters; the message names them (first 10 and
        the count), the suite and store, and the ``emb extract`` command that adds them.
    AnalysisError
        If a word has several items that differ (other contexts) under these filters; the
        message names the labels that tell them apart.  Items with the same word, context and
        span are the same stimulus (e.g. a word listed in two WEAT tests) and count once.

    Examples
    --------
    >>> from emb.analyses._examples import weat_dataset
    >>> ds = weat_dataset()
    >>> sel = select_words(ds, ["flower0", "flower1"], setting="bleached", test="WEAT1", role="X")
    >>> sel["word"].values.tolist(), sel.sizes["item"]
    (['flower0', 'flower1'], 2)
    """
    return ds.isel({ITEM: select_positions(ds, words, setting=setting, stimulus_set=stimulus_set,
                                           **labels)})


def select_positions(
    ds: xr.Dataset,
    words: Iterable[str],
    *,
    setting: str,
    stimulus_set: str | Collection[str] | None = None,
    **labels: Any,
) -> np.ndarray:
    """The item positions :func:`select_words` selects (same arguments, same checks and errors),
    as an integer array in the order of ``words``: to gather several selections in one indexing
    of a lazy array."""
    words = [str(w) for w in words]
    if not words:
        raise AnalysisError("no words given to select; pass at least one word")
    filters = {"setting": setting, "stimulus_set": stimulus_set, **labels}
    mask = label_mask(ds, setting=setting, stimulus_set=stimulus_set, **labels)
    positions = np.flatnonzero(mask)
    if positions.size == 0:
        present = settings_present(ds)
        raise MissingStimuliError(
            f"{_where(ds)} has no items{_filters_text(filters)} (settings present: "
            f"{names(present)}{did_you_mean(setting, present) if setting not in present else ''}),"
            f" so all {len(words)} words are missing: {names(words, limit=10)}; "
            f"{_extract_hint(ds, setting)}"
        )
    item_words = np.asarray(item_values(ds, "word"))[positions].astype(str)
    wanted = np.isin(item_words, words)
    positions, item_words = positions[wanted], item_words[wanted]
    lookup = dict(zip(item_words.tolist(), range(item_words.size), strict=True))
    if len(lookup) < item_words.size:
        # identical stimuli (same word, context and span) count once: keep the first
        keys = pd.DataFrame({"word": item_words})
        for name in ("context", "char_start", "char_end"):
            if name in ds.variables:
                keys[name] = np.asarray(ds[name].values)[positions]
        keep = ~keys.duplicated(keep="first").to_numpy()
        positions, item_words = positions[keep], item_words[keep]
        lookup = dict(zip(item_words.tolist(), range(item_words.size), strict=True))
    if len(lookup) < item_words.size:
        index = pd.Index(item_words)
        ambiguous = list(dict.fromkeys(index[index.duplicated()]))
        word = ambiguous[0]
        dup_positions = positions[item_words == word]
        differ = _distinguishing_labels(ds, dup_positions)
        hint = ", ".join(f"{k} (values {v})" for k, v in differ.items()) or "their context"
        raise AnalysisError(
            f"{len(ambiguous)} word(s) have several different items{_filters_text(filters)} in "
            f"{_where(ds)}, e.g. {word!r} with {dup_positions.size} items that differ in {hint}; "
            "pass that label as a filter to choose one"
            + (f" (words: {names(ambiguous, limit=10)})" if len(ambiguous) > 1 else "")
        )
    found = np.array([lookup.get(w, -1) for w in words], dtype=np.intp)  # unique words here
    missing = [w for w, f in zip(words, found, strict=True) if f < 0]
    if missing:
        missing = list(dict.fromkeys(missing))
        raise MissingStimuliError(
            f"{len(missing)} of {len(dict.fromkeys(words))} words are missing{_filters_text(filters)} "
            f"from {_where(ds)}: {names(missing, limit=10)}; {_extract_hint(ds, setting)}"
        )
    return positions[found]


def _without_pair_lists(suite: Any) -> Any:
    """A ``similarity`` suite's attributes with each benchmark's recorded pairs (thousands of
    words: docs/rules/sharing.md) cut to their count, source, licence and citation: a result's
    provenance names its inputs, the store keeps them."""
    if not isinstance(suite, Mapping) or suite.get("generator") != "similarity":
        return suite  # (the intersectional suite's "pairs" are its attribute pairs: kept)
    params = suite.get("parameters")
    record = params.get("pairs") if isinstance(params, Mapping) else None
    if not isinstance(record, Mapping):
        return suite
    short = {name: {k: v for k, v in cols.items() if k not in ("word1", "word2", "score")}
             | {"n_pairs": len(cols.get("score") or [])}
             if isinstance(cols, Mapping) else cols for name, cols in record.items()}
    return {**suite, "parameters": {**params, "pairs": short}}


def provenance_attrs(ds: xr.Dataset) -> dict[str, str]:
    """The store's provenance as JSON strings, for the attributes of an analysis result.

    Parameters
    ----------
    ds : xarray.Dataset
        A store suite group.

    Returns
    -------
    dict of str to str
        ``store`` (its location, when known) and ``model``, ``extraction``, ``suite``,
        ``emb_schema_version``, ``created`` and ``oom_backoffs`` (the runs that backed off out
        of memory, see :mod:`emb.store._backoffs`) as JSON strings (keys the store lacks are left
        out), so that netCDF can hold them.

    Examples
    --------
    >>> provenance_attrs(xr.Dataset(attrs={"model": {"id": "gpt2"}}))
    {'model': '{"id": "gpt2"}'}
    """
    out: dict[str, str] = {}
    source = ds.encoding.get("source") or ds.attrs.get("store")
    if source:
        out["store"] = str(source)
    for key in _PROVENANCE_KEYS:
        if key not in ds.attrs:
            continue
        value = _without_pair_lists(ds.attrs[key]) if key == "suite" else ds.attrs[key]
        out[key] = (
            value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        )
    return out


def words_of(ds: xr.Dataset, mask: np.ndarray) -> list[str]:
    """Distinct words of the items in ``mask``, in item order."""
    return list(dict.fromkeys(text_column(item_values(ds, "word")[mask]).tolist()))


def unique_in_order(values: Sequence[Any]) -> list[Any]:
    """Distinct values in order of first appearance, as plain Python values (a numpy scalar's
    ``.item()``: a message that lists them shows ``'WEAT10'``, never ``np.str_('WEAT10')``)."""
    return list(dict.fromkeys(v.item() if isinstance(v, np.generic) else v for v in values))


def parse_subset(
    name: str, wanted: str | Sequence[Any] | None, present: Sequence[Any], *, where: str = "suite"
) -> list[Any]:
    """The requested subset of ``present`` (all of it when ``wanted`` is None), validated once.

    Raises
    ------
    AnalysisError
        A requested value the suite/store lacks (listing what it has), or an empty request.
    """
    if wanted is None:
        return list(present)
    chosen = [wanted] if isinstance(wanted, str) else list(wanted)
    unknown = [w for w in chosen if w not in present]
    if unknown:
        raise AnalysisError(unknown_names(name, unknown, present, f"this {where}"))
    if not chosen:
        raise AnalysisError(f"{name} is empty; give at least one or leave it out")
    refuse_repeats(name, chosen)
    return chosen


def refuse_repeats(name: str, chosen: Sequence[Any]) -> None:
    """Refuse (:class:`AnalysisError`) a selection that names a value twice (``--setting
    bleached,bleached``): each would be computed twice under one label."""
    twice = [v for v in dict.fromkeys(chosen) if list(chosen).count(v) > 1]
    if twice:
        raise AnalysisError(f"{name} lists {twice} twice; give each once")


def plain_strings(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with numpy ``StringDType`` variables as object arrays (a shallow copy).

    zarr v3 hands variable-length strings back as ``StringDType``, which ``.astype(str)`` cannot
    cast (numpy 2); object arrays of ``str`` work everywhere. Only in-memory (numpy) variables
    are converted; the input is not modified.
    """
    changed = {}
    for name, var in ds.variables.items():
        if isinstance(var.dtype, np.dtypes.StringDType) and not var.chunks:
            changed[name] = var.copy(data=np.asarray(var.values).astype(object))
    if not changed:
        return ds
    coords = {k: v for k, v in changed.items() if k in ds.coords}
    data = {k: v for k, v in changed.items() if k not in ds.coords}
    out = ds.assign_coords(coords) if coords else ds
    return out.assign(data) if data else out


# -- the same words in every cell compared side by side ---------------------------------------------
@dataclass(frozen=True)
class CommonWords:
    """The words present in every cell of a comparison (settings, stores), and what each cell lost.

    Attributes
    ----------
    words : tuple of str
        The words present in every cell, in the order of the first cell that lists them.
    dropped : dict of str to tuple of str
        Per cell, its words that some other cell lacks (so left out of it).
    absent : dict of str to tuple of str
        Per cell, the words other cells have and it lacks (why the others were dropped).
    """

    words: tuple[str, ...]
    dropped: dict[str, tuple[str, ...]]
    absent: dict[str, tuple[str, ...]]

    @property
    def n_dropped(self) -> int:
        """Distinct words left out of some cell."""
        return len({w for ws in self.dropped.values() for w in ws})

    def note(self, what: str = "words", cell: str = "setting") -> str:
        """One line for a summary: ``compared on the 11,794 words present in every setting
        (2,071 dropped: absent from 'random')``."""
        head = f"compared on the {len(self.words):,} {what} present in every {cell}"
        if not self.n_dropped:
            return f"{head} (none dropped)"
        why = "; ".join(f"{len(ws):,} absent from {c!r}" for c, ws in self.absent.items() if ws)
        some = sorted({w for ws in self.absent.values() for w in ws})
        more = ", …" if len(some) > 5 else ""
        return f"{head} ({self.n_dropped:,} dropped: {why}, e.g. {', '.join(some[:5])}{more})"


def common_words(cells: Mapping[str, Iterable[str]]) -> CommonWords:
    """The words every cell of ``cells`` (cell name → its words) has: the one selection rule of
    every comparison of settings, poolings, layers or stores side by side (``word_set="common"``).

    Examples
    --------
    >>> c = common_words({"bleached": ["a", "b", "c"], "random": ["c", "a"]})
    >>> c.words, c.dropped
    (('a', 'c'), {'bleached': ('b',), 'random': ()})
    >>> print(c.note())
    compared on the 2 words present in every setting (1 dropped: 1 absent from 'random', e.g. b)
    """
    lists = {str(k): list(dict.fromkeys(str(w) for w in v)) for k, v in cells.items()}
    if not lists:
        return CommonWords(words=(), dropped={}, absent={})
    sets = {k: set(v) for k, v in lists.items()}
    shared = set.intersection(*sets.values())
    union = set.union(*sets.values())
    first = next(iter(lists.values()))
    order = [w for w in first if w in shared]
    return CommonWords(
        words=tuple(order),
        dropped={k: tuple(w for w in v if w not in shared) for k, v in lists.items()},
        absent={k: tuple(sorted(union - sets[k])) for k in lists},
    )


def polar_setting(ds: xr.Dataset, setting: str) -> str:
    """The setting whose polar items a setting uses: its own, but ``aligned`` for ``misaligned``
    when the store holds no misaligned polar items (the polar words keep aligned contexts)."""
    if setting == "misaligned" and not label_mask(
        ds, setting="misaligned", stimulus_set=["pleasant", "unpleasant"]
    ).any():
        return "aligned"
    return setting


@dataclass(frozen=True)
class ComparedWords:
    """The words a ``vast`` suite's settings are compared on, for one lexicon (``word_set``).

    ``lexicon`` and ``poles`` are None under ``per-setting`` (each setting its own words); under
    ``common`` they hold the lexicon words and the pleasant/unpleasant words present in every
    compared setting, and ``notes`` the summary lines saying what was dropped and why.
    """

    lexicon: frozenset[str] | None
    poles: dict[str, list[str]] | None
    notes: tuple[str, ...]
    n_dropped: int = 0


def compared_words(
    ds: xr.Dataset, lexicon: str, settings: Sequence[str], word_set: str
) -> ComparedWords:
    """The one same-words rule of the ``vast`` family (:func:`valnorm`, ``vast``, ``sc-weat``):
    with ``word_set="common"`` every setting is scored on the lexicon words and polar words
    present in all of ``settings`` (see :func:`emb.analyses._select.common_words`)."""
    WORD_SET.check(word_set, owner="the vast suite's analyses")
    lexicon, settings = str(lexicon), [str(s) for s in settings]  # plain text in the notes
    settings = [s for s in settings if label_mask(
        ds, setting=s, stimulus_set="lexicon", lexicon=lexicon).any()]
    if len(settings) < 2:
        return ComparedWords(lexicon=None, poles=None, notes=())
    words_col = item_values(ds, "word").astype(str)
    lex = common_words({s: words_col[label_mask(ds, setting=s, stimulus_set="lexicon",
                                                lexicon=lexicon)] for s in settings})
    if word_set == "per-setting":
        sizes = {s: len(lex.words) + len(lex.dropped[s]) for s in settings}
        notes = () if not lex.n_dropped else (
            f"lexicon {lexicon!r}: each setting on its own words (--word-set per-setting), "
            f"{', '.join(f'{s} {n:,}' for s, n in sizes.items())} lexicon words: a difference "
            "between settings mixes their contexts with their word lists",)
        return ComparedWords(lexicon=None, poles=None, notes=notes)
    poles: dict[str, list[str]] = {}
    notes = [f"lexicon {lexicon!r}: {lex.note('lexicon words')}"]
    for pole in ("pleasant", "unpleasant"):
        per: dict[str, np.ndarray] = {}
        for s in settings:
            ps = polar_setting(ds, s)
            mask = label_mask(ds, setting=ps, stimulus_set=pole, lexicon=lexicon)
            if not mask.any():
                mask = label_mask(ds, setting=ps, stimulus_set=pole)
            per[s] = words_col[mask]
        common = common_words(per)
        poles[pole] = list(common.words)
        if common.n_dropped:
            notes.append(f"lexicon {lexicon!r}: {common.note(f'{pole} polar words')}")
    return ComparedWords(lexicon=frozenset(lex.words), poles=poles, notes=tuple(notes),
                         n_dropped=lex.n_dropped)
