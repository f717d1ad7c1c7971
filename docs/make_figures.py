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


def main(argv: list[str]) -> None:
    from emb.analyses.registry import ANALYSES

    for name in argv or list(ANALYSES):
        for path in render(name):
            print(f"{path.relative_to(HERE)}  {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main(sys.argv[1:])
