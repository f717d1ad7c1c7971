"""``emb analyze``: run a registered analysis on one or more stores and write its results.

The command parses, calls :func:`emb.analyses.run_analysis`, computes with a progress bar and
writes a tidy CSV, the labelled result (netCDF), a JSON sidecar with the parameters and each
store's provenance, and the figures (PNG). Defaults live in the analysis functions' signatures:
an option the user does not give is not passed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from emb.cli._errors import EmbCommand

__all__ = ["analyze"]


def _names_for(stores: Sequence[str], models: Sequence[Mapping[str, Any]]) -> list[str]:
    """One unique label per store: a hub model's id (``gpt2``), else the store's file name
    (``minilm`` for ``minilm.zarr``): local paths make unreadable labels."""
    names: list[str] = []
    for path, model in zip(stores, models, strict=True):
        stem = Path(path.rstrip("/")).name.removesuffix(".zip").removesuffix(".zarr")
        hub = model.get("source") == "hub" and model.get("model_id")
        base = str(hub or stem or model.get("model_id"))
        name, i = base, 2
        while name in names:
            name, i = f"{base} ({i})", i + 1
        names.append(name)
    return names


def _open_suite(store: Any, suite: str) -> Any:
    """The store's suite as a lazy Dataset, one dask chunk per (block of items × 1 layer × all
    poolings): what the layer-by-layer analyses read."""
    return store.dataset(suite, chunks="layer")


def _options(params: Mapping[str, Any]) -> dict[str, Any]:
    """Library keyword arguments from the click values the user gave (None/() = not given)."""
    mapping = {
        "seed": "seed",
        "ddof": "ddof",
        "n_permutations": "n_permutations",
        "correction": "correction",
        "correction_over": "correction_over",
        "alternative": "alternative",
        "lexicon": "lexicon",
        "settings": "settings",
        "poolings": "poolings",
        "ratings": "ratings",
        "tests": "tests",
        "k_max": "k_max",
        "nullify_layers": "nullify_layers",
        "n_subsets": "n_subsets",
        "words": "words",
        "attribute_a": "attribute_a",
        "attribute_b": "attribute_b",
    }
    out: dict[str, Any] = {}
    for key, target in mapping.items():
        value = params.get(key)
        if value is None or value == ():
            continue
        if isinstance(value, tuple):
            value = list(value)
            if key == "lexicon" and len(value) == 1:
                value = value[0]
            if key == "nullify_layers":
                value = [int(v) if v.lstrip("-").isdigit() else v for v in value]
        out[target] = value
    if params.get("reference"):
        out["method"] = "reference"
    if params.get("no_tokenization"):
        out["tokenization"] = False
    if params.get("no_nullification"):
        out["nullification"] = False
    if params.get("allow_missing"):
        out["allow_missing"] = True
    return out


def _flag(name: str) -> str:
    return {"method": "--reference", "tokenization": "--no-tokenization",
            "nullification": "--no-nullification", "lexicon": "--lexicon",
            "settings": "--setting", "poolings": "--pooling", "ratings": "--rating",
            "tests": "--test", "nullify_layers": "--nullify-layer", "words": "--word",
            "pairs": "--similarity", "similarity": "--similarity"}.get(
        name, "--" + name.replace("_", "-")
    )


def _netcdf_ready(result: Any) -> Any:
    """Plain unicode strings for string coordinates/variables; attrs as str or numbers."""
    import numpy as np

    out = result.copy()
    for name, var in list(out.variables.items()):
        if var.dtype.kind in "OT" or str(var.dtype).startswith("StringDType"):
            values = np.asarray(var.values).astype(object).astype(str)
            if name in out.coords:
                out = out.assign_coords({name: (var.dims, values)})
            else:
                out[name] = (var.dims, values, var.attrs)
    def clean(attrs: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: v if isinstance(v, str | int | float) and not isinstance(v, bool)
            else json.dumps(v, default=str, sort_keys=True)
            for k, v in attrs.items()
        }
    out.attrs = clean(out.attrs)
    for name in out.variables:
        out[name].attrs = clean(out[name].attrs)
        out[name].encoding = {}
    return out


def _compute(result: Any, scheduler: str | None, quiet: bool) -> Any:
    if scheduler:
        try:
            from dask.distributed import Client, progress
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise click.ClickException(
                "--scheduler needs dask.distributed: pip install 'emb[distributed]'"
            ) from err
        with Client(scheduler) as client:
            click.echo(f"computing on {client.dashboard_link or scheduler}", err=True)
            persisted = result.persist()
            if not quiet:
                progress(persisted)
                click.echo("", err=True)
            return persisted.compute()
    if quiet:
        return result.compute()
    from dask.diagnostics import ProgressBar

    with ProgressBar(out=click.get_text_stream("stderr")):
        return result.compute()


def _summary(name: str, table: Any) -> list[str]:
    """A few lines: the headline numbers of the tidy table."""
    import pandas as pd

    lines: list[str] = []
    if table.empty:
        return ["(no rows)"]
    if name in ("vast", "valnorm"):
        rows = table
        if "experiment" in rows:
            rows = rows[rows["experiment"] == "settings"]
        if "rating" in rows:
            rows = rows[rows["rating"].isin(["valence"]) | rows["rating"].isna()]
        pooling = "last" if (rows["pooling"] == "last").any() else rows["pooling"].iloc[0]
        rows = rows[(rows["pooling"] == pooling) & rows["r"].notna()]
        lines.append(f"highest VAST r per setting ({pooling} pooling):")
        keys = [k for k in ("model", "lexicon", "setting") if k in rows]
        for key, group in rows.groupby(keys, sort=False):
            best = group.loc[group["r"].idxmax()]
            top = group.loc[group["layer"].idxmax()]
            label = " / ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
            lines.append(
                f"  {label}: r = {best['r']:.3f} at layer {best['layer']}; "
                f"top layer {top['layer']}: r = {top['r']:.3f}"
            )
        if "experiment" in table and (table["experiment"] == "nullification").any():
            null = table[(table["experiment"] == "nullification") & (table["pooling"] == pooling)
                         & (table["rating"] == "valence") & (table["setting"] == "bleached")]
            for key, group in null.groupby(["model", "lexicon", "layer"], sort=False):
                g = group.dropna(subset=["r"])
                if g.empty:
                    continue
                k0 = g[g["k"] == 0]["r"]
                best = g.loc[g["r"].idxmax()]
                lines.append(
                    f"  nullified {key[0]} / {key[1]} layer {key[2]} (bleached): "
                    f"r = {float(k0.iloc[0]) if len(k0) else float('nan'):.3f} at k=0, "
                    f"{best['r']:.3f} at k={best['k']}"
                )
    elif name == "weat":
        rows = table.dropna(subset=["effect_size"])
        lines.append("largest |effect size| per test:")
        keys = [k for k in ("model", "test") if k in rows]
        for key, group in rows.groupby(keys, sort=False):
            best = group.loc[group["effect_size"].abs().idxmax()]
            label = " / ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
            lines.append(
                f"  {label}: d = {best['effect_size']:.2f} (p = {best['p']:.3g}) at layer "
                f"{best['layer']}, {best['setting']}, {best['pooling']} pooling"
            )
    elif name == "similarity":
        rows = table.dropna(subset=["rho"])
        for key, group in rows.groupby(["model", "dataset"], sort=False):
            best = group.loc[group["rho"].idxmax()]
            lines.append(
                f"  {key[0]} / {key[1]}: best rho = {best['rho']:.3f} at layer {best['layer']}, "
                f"k = {best['k']}, {best['pooling']} pooling (n = {best['n']})"
            )
    else:
        lines.append(f"{len(table)} rows; columns {', '.join(map(str, table.columns[:8]))}")
    del pd
    return lines


@click.command(cls=EmbCommand, context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="List the analyses and exit.")
@click.option("--store", "stores", multiple=True, help="Store path or URL; repeat for several models.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), help="Output directory.")
@click.option("--scheduler", default=None, help="dask.distributed scheduler address (default: local threads).")
@click.option("--seed", type=int, default=None, help="Seed of every random choice.")
@click.option("--ddof", type=int, default=None, help="Delta degrees of freedom of the standard deviations.")
@click.option("--n-permutations", type=int, default=None, help="[weat, sc-weat] random splits (0/exact when few).")
@click.option("--correction", type=click.Choice(["none", "holm", "bh"]), default=None,
              help="[weat, vast] multiple-comparison correction (p_adjusted beside p): across "
                   "tests for weat (see --correction-over), across layers for vast.")
@click.option("--correction-over", type=click.Choice(["test", "layer", "test+layer"]),
              default=None, help="[weat] the correction's family (default: test).")
@click.option("--alternative", type=click.Choice(["greater", "less", "two-sided"]), default=None,
              help="[weat, sc-weat] alternative hypothesis.")
@click.option("--reference", is_flag=True, help="Reproduce the authors' code (method='reference').")
@click.option("--lexicon", multiple=True, help="[vast, valnorm, sc-weat] lexicon name; repeatable.")
@click.option("--setting", "settings", multiple=True, help="Contextual setting; repeatable.")
@click.option("--pooling", "poolings", multiple=True, help="[vast, similarity] subword pooling; repeatable.")
@click.option("--rating", "ratings", multiple=True, help="[vast] valence/arousal/dominance; repeatable.")
@click.option("--test", "tests", multiple=True, help="[weat] test name (e.g. WEAT1); repeatable.")
@click.option("--k-max", type=int, default=None, help="[vast, similarity] nullify k = 0..K PCs.")
@click.option("--nullify-layer", "nullify_layers", multiple=True,
              help="[vast] layer number, 'top' or 'best'; repeatable.")
@click.option("--n-subsets", type=int, default=None, help="[vast] random subsets, tokenization experiment.")
@click.option("--no-tokenization", is_flag=True, help="[vast] skip the tokenization experiment.")
@click.option("--no-nullification", is_flag=True, help="[vast] skip the PC nullification sweep.")
@click.option("--similarity", "similarity_pairs", type=click.Path(exists=True), default=None,
              help="[vast, similarity] directory (or CSV) of word-similarity pairs; vast then reads "
                   "each store's 'similarity' suite too.")
@click.option("--allow-missing", is_flag=True,
              help="[vast, similarity] drop (and count) pairs with a word missing from the store.")
@click.option("--word", "words", multiple=True, help="[sc-weat] target word; repeatable.")
@click.option("--attribute-a", multiple=True, help="[sc-weat] attribute word of set A; repeatable.")
@click.option("--attribute-b", multiple=True, help="[sc-weat] attribute word of set B; repeatable.")
@click.option("--dpi", type=int, default=150, show_default=True, help="Resolution of the PNG figures.")
@click.option("--no-plots", is_flag=True, help="Do not draw figures.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def analyze(
    name: str | None,
    list_: bool,
    stores: tuple[str, ...],
    out_dir: str | None,
    scheduler: str | None,
    similarity_pairs: str | None,
    dpi: int,
    no_plots: bool,
    quiet: bool,
    **params: Any,
) -> None:
    """Run analysis NAME on the stores and write CSV, netCDF, JSON and PNG files to --out.

    \b
    emb analyze --list
    emb analyze vast --store gpt2.zarr --out results/ --lexicon bellezza --similarity data/similarity
    emb analyze weat --store gpt2.zarr --store bert.zarr --out results/ --correction holm
    """
    import inspect

    from emb.analyses import ANALYSES, run_analysis

    if list_:
        width = max(len(n) for n in ANALYSES)
        for analysis in ANALYSES.values():
            click.echo(f"{analysis.name:<{width}}  [{analysis.suite}] {analysis.description}")
        return
    if not name:
        raise click.UsageError("give an analysis NAME (see 'emb analyze --list')")
    if name not in ANALYSES:
        raise click.BadParameter(
            f"unknown analysis {name!r}; choose from {', '.join(sorted(ANALYSES))}",
            param_hint="NAME",
        )
    if not stores:
        raise click.UsageError("give at least one --store")
    if not out_dir:
        raise click.UsageError("give an output directory with --out")
    analysis = ANALYSES[name]
    options = _options(params)
    accepted = set(inspect.signature(analysis.function).parameters)
    if similarity_pairs is not None:
        if "pairs" not in accepted:
            raise click.UsageError(f"--similarity does not apply to analysis {name!r}")
        options["pairs"] = similarity_pairs
    if "settings" in options and "settings" not in accepted and "setting" in accepted:
        chosen = options.pop("settings")
        if len(chosen) != 1:
            raise click.UsageError(f"analysis {name!r} takes one --setting; got {len(chosen)}")
        options["setting"] = chosen[0]
    unknown = [k for k in options if k not in accepted]
    if unknown:
        raise click.UsageError(
            f"option(s) {', '.join(_flag(k) for k in unknown)} do not apply to analysis {name!r}"
        )

    from emb.store import open_store

    opened = [open_store(path) for path in stores]
    names = _names_for(stores, [s.model for s in opened])
    datasets = {n: _open_suite(s, analysis.suite) for n, s in zip(names, opened, strict=True)}
    per_model: dict[str, dict[str, Any]] = {}
    if name == "vast" and similarity_pairs is not None:
        per_model = {
            n: {"similarity": _open_suite(s, "similarity")}
            for n, s in zip(names, opened, strict=True)
        }

    lazy = run_analysis(name, datasets, per_model=per_model, **options)
    result = _compute(lazy, scheduler, quiet)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = name.replace("-", "_")
    table = analysis.tidy(result)
    csv_path = out / f"{stem}.csv"
    table.to_csv(csv_path, index=False)
    nc_path = out / f"{stem}.nc"
    _netcdf_ready(result).to_netcdf(nc_path)
    meta_path = out / f"{stem}.json"
    meta = {
        "analysis": name,
        "stores": dict(zip(names, stores, strict=True)),
        "options": {k: v for k, v in options.items()},
        "attrs": {k: _maybe_json(v) for k, v in result.attrs.items()},
    }
    meta_path.write_text(json.dumps(meta, indent=2, default=str) + "\n", encoding="utf-8")
    written = [csv_path, nc_path, meta_path]
    if not no_plots:
        for key, fig in analysis.plots(result).items():
            path = out / f"{stem}_{key}.png"
            fig.savefig(path, dpi=dpi)
            written.append(path)

    click.echo(f"{name} on {len(datasets)} store(s): {', '.join(names)}")
    for line in _summary(name, table):
        click.echo(line)
    click.echo(f"{len(table)} rows -> {csv_path}")
    for path in written[1:]:
        click.echo(f"wrote {path}")


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value.item() if hasattr(value, "item") else value


if __name__ == "__main__":  # pragma: no cover
    analyze(prog_name=os.path.basename(__file__))
