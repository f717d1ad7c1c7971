"""Render the figures of the analysis guides (docs/analyses/*.md) from the demo inputs.

Every analysis record carries a tiny seeded example input (``ANALYSES[name].example()``, built by
``emb.analyses._examples``: planted effects, no model, no torch). This script runs each analysis on
its example, draws its figures exactly as ``emb analyze`` does, and writes them as
``docs/figures/<analysis>/<figure>.png`` (96 dpi, each at most 150 KB). The PNGs are committed:
the site then builds in a second with no analysis run (``mkdocs build --strict`` in the tests), and
a change to a figure shows in review. Re-run this script after changing a figure:

    python docs/make_figures.py              # all analyses
    python docs/make_figures.py weat ceat    # some

``tests/test_docs_site.py`` checks that every figure the analyses draw has its PNG here and that
the guides show each one.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
FIGURES = HERE / "figures"
DPI = 96
MAX_BYTES = 150_000


def render(name: str, out: Path = FIGURES) -> list[Path]:
    """Run analysis ``name`` on its example input and write its figures as PNGs; their paths."""
    import matplotlib.pyplot as plt

    from emb.analyses.registry import get_analysis

    analysis = get_analysis(name)
    ds, options = analysis.example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.function(ds, **options).compute()
        figures = analysis.draw(result, **options)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, figure in figures.items():
        path = folder / f"{stem}.png"
        figure.savefig(path, dpi=DPI, metadata={"Software": None})
        plt.close(figure)
        if path.stat().st_size > MAX_BYTES:
            raise SystemExit(f"{path}: {path.stat().st_size} bytes, over {MAX_BYTES}")
        written.append(path)
    return written


def render_standardize(out: Path = FIGURES) -> Path:
    """VAST's valence curve (ValNorm r by layer, ``valence`` rating, ``bleached`` setting, ``last``
    pooling) of the example input with a common direction added to every vector, growing with the
    layer as in a transformer's upper layers, read as stored and with ``--standardize center``:
    the guide's picture of what removing each layer's mean vector does (``docs/analyses/vast.md``)."""
    import matplotlib.pyplot as plt
    import numpy as np
    import xarray as xr
    from matplotlib.figure import Figure

    from emb.analyses import _figure as fg
    from emb.analyses import run_analysis
    from emb.analyses.registry import get_analysis

    analysis = get_analysis("vast")
    ds, options = analysis.example()
    emb = ds["embedding"]
    direction = np.random.default_rng(0).normal(size=emb.sizes["feature"])
    scale = float(np.sqrt((emb.astype("float64") ** 2).sum("feature").mean()))
    layers = emb["layer"]
    offset = xr.DataArray(direction / np.linalg.norm(direction), dims="feature") * (
        3.0 * scale * layers / max(int(layers.max()), 1))
    ds = ds.assign(embedding=(emb + offset).astype(emb.dtype).transpose(*emb.dims))
    kwargs = {k: v for k, v in options.items() if not isinstance(v, xr.Dataset)}
    per_model = {"example": {k: v for k, v in options.items() if isinstance(v, xr.Dataset)}}
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for how in ("none", "center"):
            runs[how] = run_analysis(analysis, {"example": ds}, per_model=per_model,
                                     standardize=how, **kwargs).compute()
    labels = {"none": "as stored", "center": "--standardize center"}
    with matplotlib.rc_context(fg._RC):
        fig = Figure(figsize=(fg.PAGE_WIDTH, 2.5), layout="constrained")
        curves, base = fig.subplots(1, 2)
        for k, (how, res) in enumerate(runs.items()):
            r = res["r"].sel(model="example", rating="valence", setting="bleached",
                             pooling="last").isel(lexicon=0)
            x = res["layer"].values
            curves.plot(x, np.asarray(r.values, float), color=fg.PALETTE[k], marker="o", ms=3,
                        label=labels[how])
            name = "anisotropy" if how == "none" else "anisotropy_standardized"
            b = res[name].sel(model="example", pooling="last")
            base.plot(x, np.asarray(b.values, float), color=fg.PALETTE[k], marker="o", ms=3,
                      label=labels[how])
        curves.set(xlabel="layer", ylabel="ValNorm r (valence)")
        curves.set_title("VAST's valence curve (bleached, last pooling)", fontsize=8)
        base.set(xlabel="layer", ylabel="mean cosine, random word pairs")
        base.set_title("the layer's anisotropy", fontsize=8)
        for ax in (curves, base):
            ax.grid(alpha=0.3)
            ax.axhline(0, color="0.55", lw=0.6)
            ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        handles, names_ = base.get_legend_handles_labels()
        fig.legend(handles, names_, loc="outside lower center", frameon=False, ncols=2)
        fig.suptitle("The example input with a common direction growing with the layer (planted)")
        folder = out / "anisotropy"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "vast_standardize.png"
        fig.savefig(path, dpi=DPI, metadata={"Software": None})
        plt.close(fig)
    if path.stat().st_size > MAX_BYTES:
        raise SystemExit(f"{path}: {path.stat().st_size} bytes, over {MAX_BYTES}")
    return path


def main(argv: list[str]) -> None:
    from emb.analyses.registry import ANALYSES

    for name in [a for a in argv if a != "anisotropy"] if argv else list(ANALYSES):
        for path in render(name):
            print(f"{path.relative_to(HERE)}  {path.stat().st_size // 1024} KiB")
    if not argv or "anisotropy" in argv:
        path = render_standardize()
        print(f"{path.relative_to(HERE)}  {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main(sys.argv[1:])
