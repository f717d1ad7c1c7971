"""Every figure of every registered analysis, on a multi-layer store and on a one-layer static
store: no text outside the canvas once saved, and no axes without data (issue 24).

The static store is each analysis' example made static the way ``emb extract`` on word vectors
makes it: one layer (0), one pooling (``static``), one vector per word whatever its context, and
every word one "subtoken" (a whole-word lookup).
"""

from __future__ import annotations

import io
import re
import warnings
from typing import Any

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection, PathCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.patches import Patch

from emb.analyses import ANALYSES, run_analysis


def static_store(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as a static-vectors store holds it (see the module docstring)."""
    one = ds.isel(layer=[0], pooling=[0]).assign_coords(pooling=["static"])
    words = [str(w) for w in one["word"].values]
    first: dict[str, int] = {}
    rows = [first.setdefault(w, i) for i, w in enumerate(words)]
    vectors = np.asarray(one["embedding"].values)[rows]
    ones = np.ones(len(words), dtype=np.asarray(one["n_subtokens"].values).dtype)
    out = one.assign(embedding=(one["embedding"].dims, vectors))
    out = out.assign_coords(n_subtokens=("item", ones))
    if "token_start" in out.coords and "token_end" in out.coords:
        out = out.assign_coords(token_end=("item", np.asarray(out["token_start"].values) + 1))
    attrs = {k: (dict(v) if isinstance(v, dict) else v) for k, v in ds.attrs.items()}
    attrs["model"] = {**attrs.get("model", {}), "model_type": "static", "n_layers": 0,
                      "last_layer": "the static vectors themselves (layer 0 is the only layer)",
                      "architecture": "static word vectors"}
    attrs["extraction"] = {**attrs.get("extraction", {}), "poolings": ["static"]}
    out.attrs = attrs
    return out


def _inputs(name: str, kind: str) -> tuple[xr.Dataset, dict[str, Any]]:
    ds, options = ANALYSES[name].example()
    if kind == "static":
        ds = static_store(ds)
        options = {k: static_store(v) if isinstance(v, xr.Dataset) else v for k, v in options.items()}
    return ds, options


#: The two stores of a "mixed" run: a contextual model and static word vectors side by side.
MIXED = ("ctx", "w2v")


def _run(name: str, kind: str) -> xr.Dataset:
    """The analysis' example run on the ``kind`` of store: ``layers`` and ``static`` as one model
    ``m``; ``mixed`` as two, ``ctx`` (the multi-layer store, poolings last/mean…) and ``w2v``
    (the static store: layer 0, pooling ``static``), each with its own suites where an option
    is one (``emb analyze NAME --store ctx=a.zarr --store w2v=b.zarr``)."""
    analysis = ANALYSES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind != "mixed":
            ds, options = _inputs(name, kind)
            return run_analysis(analysis, {"m": ds}, **options).compute()
        (ctx, ctx_options), (w2v, w2v_options) = _inputs(name, "layers"), _inputs(name, "static")
        shared = {k: v for k, v in ctx_options.items() if not isinstance(v, xr.Dataset)}
        per_model = {MIXED[0]: {k: v for k, v in ctx_options.items() if k not in shared},
                     MIXED[1]: {k: v for k, v in w2v_options.items() if k not in shared}}
        return run_analysis(analysis, dict(zip(MIXED, (ctx, w2v), strict=True)),
                            per_model=per_model, **shared).compute()


def _colored(artist: Any) -> bool:
    """A colour-mapped artist (a heat map's cells, an image) draws data only where a value is
    finite: a map of NaN is an empty panel with a colour bar (intersectional's Table 2 on static
    vectors); an artist without a mapped array draws what it holds."""
    array = artist.get_array()
    if array is None:
        return True
    values = np.ma.masked_invalid(np.ma.asarray(array, dtype=float))
    return bool(values.count())


def _holds_data(coll: Collection) -> bool:
    """A scatter draws its finite offsets (its one path is the marker); other collections draw
    paths with vertices (an empty ``fill_between`` has none, only a default offset: the empty
    panel of a static store in valence-subspace's figure counted as data)."""
    if isinstance(coll, PathCollection):
        offsets = np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)
        return bool(np.isfinite(offsets).all(axis=1).any())
    return any(len(path.vertices) for path in coll.get_paths())


def _data_artists(ax: Any) -> list[Any]:
    """What an axes draws of data: lines and patches in data coordinates (not a reference line
    across the axes), collections with something in them, images."""
    found: list[Any] = []
    for line in ax.get_lines():
        if line.get_visible() and line.get_transform() is ax.transData:
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            if np.isfinite(x).any() and np.isfinite(y).any():
                found.append(line)
    for coll in ax.collections:
        if isinstance(coll, Collection) and coll.get_visible() and _holds_data(coll) \
                and _colored(coll):
            found.append(coll)
    found += [p for p in ax.patches if isinstance(p, Patch) and p.get_visible()
              and p.get_data_transform() is ax.transData]
    found += [im for im in ax.images if isinstance(im, AxesImage) and im.get_visible() and _colored(im)]
    found += [t for t in ax.tables if t.get_visible()]
    return found


#: Words that describe a shaded area (a band of a curve).
_SHADED = re.compile(r"\b(shaded|shading|bands?)\b", re.IGNORECASE)


def _texts(fig: Figure) -> list[tuple[str, str]]:
    """(where, text) of every visible text of a figure: suptitle, figure texts, legends, axes
    titles, labels and texts."""
    out = []
    if fig._suptitle is not None:
        out.append(("title", fig._suptitle.get_text()))
    out += [("text", t.get_text()) for t in fig.texts]
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    for leg in legends:
        out += [("legend", leg.get_title().get_text())]
        out += [("legend", t.get_text()) for t in leg.get_texts()]
    for ax in fig.axes:
        if ax.get_visible():
            out += [("axes", t) for t in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel())]
            out += [("axes", t.get_text()) for t in ax.texts]
    return [(w, " ".join(t.split())) for w, t in out if t.strip()]


def _settings_apart(fig: Figure, settings: list[str]) -> list[str]:
    """The settings a figure labels each on its own (a legend entry, a panel title, a tick)."""
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    for ax in fig.axes:
        if ax.get_visible():
            labels += [ax.get_title(), *(t.get_text() for t in ax.get_xticklabels())]
    labels = [" ".join(t.split()) for t in labels]
    return [s for s in settings if any(re.search(rf"(?<![\w-]){re.escape(s)}(?![\w=-])", t)
                                       and " = " not in t for t in labels)]


def words_for_what_is_drawn(fig: Figure) -> list[str]:
    """A figure that draws no shaded area (a one-layer figure whose bands became error bars)
    must not speak of one, and a legend entry of an error bar ("bar: …") shows no shaded patch."""
    problems = []
    shaded = any(isinstance(c, PolyCollection) and c.get_visible() for ax in fig.axes
                 if ax.get_visible() for c in ax.collections)
    if not shaded:
        problems += [f"{where} {text[:70]!r} speaks of shading, but nothing is shaded"
                     for where, text in _texts(fig) if _SHADED.search(text)]
    for leg in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        for handle, text in zip(leg.legend_handles, leg.get_texts(), strict=False):
            if text.get_text().startswith("bar:") and isinstance(handle, Patch) and handle.get_visible():
                problems.append(f"legend {text.get_text()[:50]!r} shows a shaded patch for a bar")
    return problems


def figure_problems(fig: Figure, *, one_layer: bool = False) -> list[str]:
    """Text outside the saved canvas, visible axes without data and, on a one-layer store
    (``one_layer``), a continuous layer axis and words for a shading not drawn (each one line)."""
    canvas_ = FigureCanvasAgg(fig)
    # measured after the save's (constrained) layout, at a screen resolution: small text is
    # relatively wider at low dpi (glyph advances round up), so what fits here fits in print
    fig.set_dpi(100)
    fig.savefig(io.BytesIO(), format="png", dpi=100)
    renderer = canvas_.get_renderer()
    canvas = fig.bbox
    problems = []
    parts: list[tuple[str, Any]] = [(f"axes {ax.get_title()[:50]!r}", ax) for ax in fig.axes
                                    if ax.get_visible()]
    parts += [(f"legend {(leg.get_title().get_text() or '')[:40]!r}", leg) for leg in fig.legends]
    parts += [(f"text {t.get_text()[:50]!r}", t) for t in fig.texts if t.get_text().strip()]
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.append((f"title {fig._suptitle.get_text()[:50]!r}", fig._suptitle))
    tol = 1.0  # pixels
    # a figure by layer: panels whose x label was left out (all but the lowest) count too
    layered = any("layer" in ax.get_xlabel() for ax in fig.axes if ax.get_visible())
    for what, artist in parts:
        box = artist.get_tightbbox(renderer) if hasattr(artist, "get_tightbbox") else \
            artist.get_window_extent(renderer)
        if box is None:
            continue
        if (box.x0 < canvas.x0 - tol or box.y0 < canvas.y0 - tol or box.x1 > canvas.x1 + tol
                or box.y1 > canvas.y1 + tol):
            problems.append(f"{what} outside the canvas ({box.x0:.0f}..{box.x1:.0f} x "
                            f"{box.y0:.0f}..{box.y1:.0f} in {canvas.width:.0f} x {canvas.height:.0f})")
    for ax in fig.axes:
        if not ax.get_visible() or ax.get_label() == "<colorbar>" or ax.get_subplotspec() is None \
                and not ax.get_title():
            continue
        if not _data_artists(ax):
            problems.append(f"axes {ax.get_title()[:60]!r} draws no data")
        if one_layer and ("layer" in ax.get_xlabel() or (layered and not ax.get_xlabel())):
            lo, hi = sorted(ax.get_xlim())
            shown = [label.get_text() for t, label in zip(ax.get_xticks(), ax.get_xticklabels(),
                                                          strict=True) if lo <= t <= hi]
            numbers = [t for t in shown if t.replace("\u2212", "-").lstrip("-").replace(".", "", 1).isdigit()]
            if len(numbers) > 1:  # one layer on a number line (a 'mean' column beside it is fine)
                problems.append(f"axes {ax.get_title()[:60]!r} draws one layer on a continuous "
                                f"axis ({', '.join(numbers)})")
    if one_layer:
        problems += words_for_what_is_drawn(fig)
    return problems


CASES = [(name, kind) for name in ANALYSES for kind in ("layers", "static", "mixed")]


def test_every_family_is_drawn_here() -> None:
    """The cases are the registry's: the families added later (peers, ML-EAT, robustness) are
    drawn on both stores like the first ones."""
    drawn = {name for name, _ in CASES}
    assert {"mac", "ect", "ripa", "rnsb", "ml-eat", "seed-sensitivity", "empirical-null",
            "reliability"} <= drawn
    assert drawn == set(ANALYSES)


def _static_only(key: str) -> bool:
    """A figure of a mixed run that draws the static store alone (its pooling, or its model)."""
    return key.endswith(("_static", f"_{MIXED[1]}"))


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_every_figure_fits_its_canvas_and_draws_data(name: str, kind: str) -> None:
    analysis = ANALYSES[name]
    result = _run(name, kind)
    figures = analysis.draw(result)
    summary = analysis.report_summary(result, analysis.report_tables(result))
    notes = summary.notes
    assert figures or any("no figure" in n for n in notes), \
        f"{name} draws no figure on the {kind} store, and its summary does not say why"
    if kind == "mixed":  # the declared cell reports each store (at its own pooling), or says why not
        table = summary.table if summary.table is not None else None
        reported = set(table["model"].astype(str)) if table is not None and "model" in table else set()
        reported |= {m for m in MIXED if re.search(rf"\b{m}\b", " ".join(summary.headline))}
        for model in set(MIXED) - reported:
            assert any(model in n and "no effect size" in n for n in notes), \
                (name, f"{model} is in no headline or summary table", summary.headline)
    problems = {key: figure_problems(fig, one_layer=kind == "static"
                                     or (kind == "mixed" and _static_only(key)))
                for key, fig in figures.items()}
    assert not any(problems.values()), {k: v for k, v in problems.items() if v}
    if kind == "mixed":  # each store drawn somewhere, and only the static one's settings agree
        texts = " ".join(" ".join([t for _, t in _texts(fig)] + [
            t.get_text() for ax in fig.axes for t in ax.get_xticklabels()]) for fig in figures.values())
        assert all(re.search(rf"\b{m}\b", texts) for m in MIXED), (name, "a store is drawn nowhere")
        said = [n for n in notes if "identical numbers" in n]
        assert all(n.startswith(f"{MIXED[1]}: ") for n in said), (name, said)
        for key, fig in figures.items():  # a caption of the static store's settings: where drawn
            full = " ".join(t for _, t in _texts(fig))
            drawn = re.sub(r"\([^()]*identical numbers[^()]*\)", "", full)
            assert f"{MIXED[1]}: settings" not in full or re.search(rf"\b{MIXED[1]}\b", drawn), \
                (name, key, f"captions the settings of {MIXED[1]}, which it does not draw")
        return
    settings = [str(s) for s in result["setting"].values] if "setting" in result.dims else []
    said = [n for n in notes if "identical numbers" in n]
    if kind == "static" and len(settings) > 1:  # static vectors: every setting the same numbers
        assert said and all(s in said[0] for s in settings), (name, notes)
        for key, fig in figures.items():
            apart = _settings_apart(fig, settings)
            assert len(apart) < 2 or "identical" in " ".join(t for _, t in _texts(fig)), \
                f"{name} {key} draws settings {apart} apart and does not say they are identical"
    else:
        assert not said, (name, said)


def test_a_static_store_draws_settings_as_categories_and_says_why_they_agree() -> None:
    """On static vectors VAST's settings figure was one layer on a continuous axis from -0.045
    to 0.045, its aligned and misaligned curves identical without a word, and the tokenization
    figure three empty panels titled "n = ? per set" (issue 24)."""
    analysis = ANALYSES["vast"]
    ds, options = _inputs("vast", "static")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis(analysis, {"m": ds}, **options).compute()
    figures = analysis.draw(result)
    assert not [k for k in figures if k.startswith("tokenization")]
    fig = figures["settings_toy"]
    fig.savefig(io.BytesIO(), format="png", dpi=60)
    (ax,) = [a for a in fig.axes if a.get_visible()]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["bleached =\naligned =\nmisaligned =\nrandom\n(n = 60)"]
    r = float(result["r"].sel(lexicon="toy", rating="valence", setting="aligned").squeeze())
    (bar,) = [c for c in ax.containers]
    np.testing.assert_allclose(bar.lines[0].get_ydata(), [r])  # the point is the aligned r
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert any("identical numbers" in " ".join(t.split()) for t in texts)
    notes = analysis.report_summary(result, analysis.tables(result)).notes
    assert any("bleached = aligned = misaligned = random: identical numbers" in n for n in notes)
    assert any(n.startswith("tokenization experiment: no figure") for n in notes)


def test_a_one_layer_grid_is_categorical_in_every_row() -> None:
    """Only the lowest panel of a column keeps its 'layer' label: the panels above it were drawn
    on a continuous axis from -0.045 to 0.045 (word2vec's WEAT figure, eight tests)."""
    from emb.analyses.weat import _figures as weat_figures

    ds, options = _inputs("weat", "static")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_analysis("weat", {"m": ds}, **options).compute()
    many = xr.concat([result.assign_coords(test=[f"{t}_{i}" for t in result["test"].values])
                      for i in range(3)], dim="test")
    fig = weat_figures.weat_effect_sizes(many, pooling="static")
    labels = [ax.get_xlabel() for ax in fig.axes if ax.get_visible()]
    assert "" in labels and any("layer" in label for label in labels)  # rows above the lowest
    assert not figure_problems(fig, one_layer=True)
