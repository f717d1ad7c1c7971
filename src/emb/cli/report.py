"""``emb report RESULTS_DIR…``: one HTML (or Markdown) page from the outputs of ``emb analyze``."""

from __future__ import annotations

import click

from emb.cli._errors import EmbCommand

__all__ = ["report"]


@click.command(cls=EmbCommand, context_settings={"help_option_names": ["-h", "--help"],
                                                 "show_default": True})
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--out", "-o", default=None, metavar="FILE",
              help="The page to write  [default: emb-report.html, or emb-report.md]")
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default=None,
              help="html: one self-contained page (figures embedded); md: Markdown with the "
                   "figures copied into <FILE stem>_files/ beside it, for a paper's supplement  "
                   "[default: md for an --out ending in .md, else html]")
@click.option("--title", default="emb results", help="The page's title.")
def report(results: tuple[str, ...], out: str | None, fmt: str | None, title: str) -> None:
    """Headline tables, every figure and the provenance of each store and run, on one page.

    RESULTS are --out directories of 'emb analyze' (searched recursively) or their sidecar
    .json files; every run's files are checked against its sidecar first.
    """
    from emb.results.report import build_report

    path = build_report(list(results), out, format=fmt, title=title)  # type: ignore[arg-type]
    click.echo(f"wrote {path}")
