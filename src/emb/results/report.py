"""One page from several results directories: headline tables, every figure, full provenance.

:func:`build_report` reads the sidecars of ``emb analyze`` runs (checked by
:func:`emb.results.read_run`: a run whose files were changed is refused) and writes either one
self-contained HTML page (figures embedded as data URIs, no external resource, so it can be
mailed or attached as it is) or a Markdown page with the figures copied beside it (for a paper's
supplement). Each run shows its summary (the pre-declared headline, the short table, the notes),
its figures, its table files with their columns' descriptions, and the provenance of each store
(model id, revision, weight fingerprint, suite name and content hash, extraction settings) and of
the run (command line, time, package versions, options).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import math
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from emb._version import __version__
from emb.files.outputs import (
    Claim,
    check_space,
    claim,
    disk_full_message,
    is_disk_full,
    refuse_inside_store,
    remove_path,
    write_file,
)
from emb.results.directory import ResultsError, find_runs, make_dirs, remove_empty_dirs

__all__ = ["build_report"]

_CSS = """
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1100px;
padding:24px 32px;color:#1d1d1f;line-height:1.45;background:#fff}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.3em;border-bottom:2px solid #0072B2;
padding-bottom:4px;margin-top:2.2em}h3{font-size:1.05em;margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}th,td{border:1px solid #d0d0d0;
padding:3px 8px;text-align:left;vertical-align:top}th{background:#eef4fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.headline{background:#f3f8fc;border-left:4px solid #0072B2;padding:8px 14px;margin:.8em 0}
.headline p{margin:.2em 0}.notes{color:#444;font-size:.9em}figure{margin:1.2em 0}
figure img{max-width:100%;height:auto;border:1px solid #e4e4e4}figcaption{font-size:.85em;color:#555}
code{background:#f4f4f4;padding:1px 4px;border-radius:3px;font-size:.9em}
details{margin:.5em 0}summary{cursor:pointer;color:#0072B2}.meta{color:#555;font-size:.9em}
nav ul{columns:2}.scroll{overflow-x:auto;max-width:100%}td{max-width:60em;overflow-wrap:break-word}
table.kv th[scope=row]{white-space:nowrap;background:#f7f7f7;font-weight:600}
td.id{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.92em}
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "—"
        return f"{value:.3g}" if (abs(value) < 1e-3 and value != 0) else f"{value:.3f}"
    return str(value)


#: A data URI (kept whole), or an absolute POSIX path in the page's text (a store, a results
#: directory, an export): not after a word character, a colon, a dot or a slash (``1/100``,
#: ``ws353/simlex``, ``https://…`` are no paths), up to a space, quote, bracket or separator.
_PATH_OR_DATA = re.compile(r'(data:[^"\s)]*)|(?<![\w:/.])(/[^\s\'"<>|,;()\[\]]+)')
#: ``10^-680.4``: a power of ten below float range, as a summary writes it.
_POWER = re.compile(r"10\^(-?)(\d+(?:\.\d+)?)")


def shareable(text: str, page: Path) -> str:
    """``text`` with each absolute local path made relative to the page's directory (a report
    is shared: ``/home/me/runs/weat`` becomes ``runs/weat`` or ``../runs/weat``). A path counts
    as local when its first component exists on this machine; data URIs are left whole."""
    base = page.resolve().parent

    def relative(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        path = match.group(2)
        first = path.split("/")[1] if path.count("/") else ""
        if not first or not os.path.lexists("/" + first):
            return path
        return Path(os.path.relpath(path, base)).as_posix()

    return _PATH_OR_DATA.sub(relative, text)


def superscripts(text: str) -> str:
    """``10^-680.4`` in escaped HTML text as ``10<sup>−680.4</sup>`` (data URIs untouched: base64
    has no ``^``)."""
    return _POWER.sub(lambda m: f"10<sup>{'−' if m.group(1) else ''}{m.group(2)}</sup>", text)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text).strip("-").lower() or "run"


def _records_html(records: Sequence[Mapping[str, Any]]) -> str:
    if not records:
        return ""
    columns = list(dict.fromkeys(k for row in records for k in row))
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    rows = []
    for row in records:
        cells = []
        for c in columns:
            value = row.get(c)
            cls = ' class="num"' if isinstance(value, int | float) and not isinstance(value, bool) else ""
            cells.append(f"<td{cls}>{html.escape(_fmt(value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _records_md(records: Sequence[Mapping[str, Any]]) -> str:
    if not records:
        return ""
    columns = list(dict.fromkeys(k for row in records for k in row))

    def cell(value: Any) -> str:
        return _fmt(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in records]
    return "\n".join(lines)


def _figure_file(directory: Path, files: Sequence[str], fmt: str) -> Path | None:
    """The file of one figure to show: PNG for Markdown and HTML, else SVG (HTML embeds both)."""
    order = ("png", "svg") if fmt == "html" else ("png", "svg", "pdf")
    by_suffix = {Path(f).suffix.lstrip("."): f for f in files}
    for suffix in order:
        if suffix in by_suffix:
            return directory / by_suffix[suffix]
    return None


def _data_uri(path: Path) -> str:
    mime = {"png": "image/png", "svg": "image/svg+xml"}[path.suffix.lstrip(".")]
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


#: Provenance fields shown per store, in order; those holding identifiers are set in monospace.
_IDENTIFIERS = ("store", "model", "revision", "fingerprint", "suite hash")


def _store_fields(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per store label, the provenance a reader needs to find the same model and stimuli."""
    out = {}
    provenance = meta.get("provenance") or {
        label: {"store": path} for label, path in (meta.get("stores") or {}).items()
    }
    for label, entry in provenance.items():
        model = entry.get("model") if isinstance(entry.get("model"), Mapping) else {}
        suite = entry.get("suite") if isinstance(entry.get("suite"), Mapping) else {}
        extraction = entry.get("extraction") if isinstance(entry.get("extraction"), Mapping) else {}
        versions = extraction.get("versions") if isinstance(extraction.get("versions"), Mapping) else {}
        out[str(label)] = {
            "store": entry.get("store_path") or entry.get("store"),
            "model": model.get("model_id") or model.get("id"),
            "revision": model.get("revision"),
            "fingerprint": model.get("fingerprint"),
            "architecture": model.get("architecture"),
            "suite": suite.get("name"),
            "generator": suite.get("generator"),
            "suite hash": suite.get("content_hash"),
            "items": suite.get("n_items"),
            "dtype / stored": f"{extraction.get('dtype', '?')} / {extraction.get('storage_dtype', '?')}"
            if extraction else None,
            "extracted with": ", ".join(f"{k} {v}" for k, v in versions.items()) or None,
            "created": entry.get("created"),
        }
    return out


def _store_rows(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stores' provenance transposed: one row per field, one column per store (a wide
    table of hashes and paths cannot be read)."""
    stores = _store_fields(meta)
    fields = list(dict.fromkeys(k for entry in stores.values() for k in entry))
    return [{"field": f, **{label: entry.get(f) for label, entry in stores.items()}} for f in fields]


def _kv_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """A key/value table: the first column names the row, identifiers in monospace."""
    if not rows:
        return ""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{html.escape(str(c)) if i else ''}</th>" for i, c in enumerate(columns))
    body = []
    for row in rows:
        key = str(row.get(columns[0]))
        cls = ' class="id"' if key in _IDENTIFIERS else ""
        cells = "".join(f"<td{cls}>{html.escape(_fmt(row.get(c)))}</td>" for c in columns[1:])
        body.append(f'<tr><th scope="row">{html.escape(key)}</th>{cells}</tr>')
    return (f'<div class="scroll"><table class="kv"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _resolved_options(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The options the run used, as its result recorded them: the analysis' keyword options
    found among the result's attributes, and its ``parameters`` attribute where it keeps them
    there (defaults included, which the sidecar's ``options`` leaves out)."""
    from emb.analyses.registry import ANALYSES

    attrs = meta.get("attrs") if isinstance(meta.get("attrs"), Mapping) else {}
    analysis = ANALYSES.get(str(meta.get("analysis")))
    out: dict[str, Any] = {}
    if isinstance(attrs.get("parameters"), Mapping):
        out.update(attrs["parameters"])
    if analysis is not None:
        out.update({k: attrs[k] for k in analysis.parameters() if k in attrs})
    return {k: out[k] for k in sorted(out) if out[k] not in (None, "")}


def _options_text(options: Mapping[str, Any]) -> str:
    return "; ".join(f"{k} = {json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v}"
                     for k, v in options.items())


def _suite_text(suite: Any) -> Any:
    """The suite group(s) read: one name, or ``label=group`` per store (``--suite LABEL=NAME``)."""
    if isinstance(suite, Mapping):
        return ", ".join(f"{label}={group}" for label, group in suite.items())
    return suite


def _run_rows(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    versions = meta.get("versions") or {}
    return [
        {"field": "command", "value": meta.get("command") or "(Python API)"},
        {"field": "analysed at", "value": meta.get("analysed_at")},
        {"field": "suite group", "value": _suite_text(meta.get("suite"))},
        {"field": "options given", "value": _options_text(meta.get("options") or {})
         or "none (the analysis' defaults)"},
        {"field": "options used", "value": _options_text(_resolved_options(meta))
         or "not recorded by the analysis"},
        {"field": "output", "value": json.dumps(meta.get("output") or {}, sort_keys=True)},
        {"field": "versions", "value": ", ".join(f"{k} {v}" for k, v in versions.items())},
    ]


def _table_rows(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, info in (meta.get("tables") or {}).items():
        columns = info.get("columns") or {}
        described = "; ".join(f"{c}: {d}" for c, d in columns.items() if d)
        rows.append({"table": info.get("file", name), "rows": info.get("rows"),
                     "columns": ", ".join(columns), "described": described or None})
    return rows


def _figures(meta: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    figures = meta.get("figures")
    if isinstance(figures, Mapping) and figures:
        return [(k, list(v)) for k, v in figures.items()]
    stem = str(meta.get("analysis", "")).replace("-", "_")
    grouped: dict[str, list[str]] = {}
    for name in meta.get("files") or {}:
        path = Path(name)
        if path.suffix in (".png", ".svg", ".pdf") and path.stem.startswith(stem + "_"):
            grouped.setdefault(path.stem.removeprefix(stem + "_"), []).append(name)
    return list(grouped.items())


def _figure_caption(meta: Mapping[str, Any], key: str) -> str:
    """A figure's title as drawn on it (recorded in the sidecar), else its key."""
    titles = meta.get("figure_titles") if isinstance(meta.get("figure_titles"), Mapping) else {}
    return str(titles.get(key) or key.replace("_", " "))


def _href(path: Path, page: Path) -> str:
    """``path`` relative to the directory of ``page``, as a URL."""
    return urllib.parse.quote(Path(os.path.relpath(path.resolve(), page.resolve().parent)).as_posix())


def _file_links(directory: Path, files: Sequence[str], page: Path) -> str:
    return ", ".join(f'<a href="{html.escape(_href(directory / f, page))}">{html.escape(f)}</a>'
                     for f in files)


def _html_figure(directory: Path, meta: Mapping[str, Any], key: str, files: Sequence[str],
                 page: Path) -> str:
    """One figure: embedded (PNG, else SVG) with its title as caption and links to its files;
    a PDF-only figure as links to the file beside the results and to an embedded copy."""
    caption = html.escape(_figure_caption(meta, key))
    links = _file_links(directory, files, page)
    path = _figure_file(directory, files, "html")
    if path is not None:
        return (f'<figure><img alt="{caption}" src="{_data_uri(path)}">'
                f'<figcaption>{caption} <span class="meta">({links})</span></figcaption></figure>')
    pdfs = [f for f in files if f.endswith(".pdf")]
    embedded = "".join(
        f', <a download="{html.escape(f)}" href="data:application/pdf;base64,'
        f'{base64.b64encode((directory / f).read_bytes()).decode("ascii")}">embedded copy of {html.escape(f)}</a>'
        for f in pdfs if (directory / f).is_file())
    return (f'<figure class="pdf"><figcaption>{caption}</figcaption><p class="meta">PDF only (no '
            f"image to show here): open {links}{embedded}.</p></figure>")


def _html(runs: list[tuple[Path, dict[str, Any]]], title: str, page: Path) -> str:
    parts = [f"<h1>{html.escape(title)}</h1>",
             f'<p class="meta">{len(runs)} run(s); made by emb {html.escape(__version__)} on '
             f"{_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}.</p>"]
    overview = [{"run": f"{m['analysis']} ({', '.join(m.get('stores') or {})})",
                 "results": str(p.parent), "analysed at": m.get("analysed_at")} for p, m in runs]
    parts += ["<nav><h3>Runs</h3><ul>"] + [
        f'<li><a href="#{_slug(str(i) + row["run"])}">{html.escape(row["run"])}</a></li>'
        for i, row in enumerate(overview)] + ["</ul></nav>", _records_html(overview)]
    for i, (sidecar, meta) in enumerate(runs):
        summary = meta.get("summary") or {}
        anchor = _slug(str(i) + overview[i]["run"])
        parts.append(f'<h2 id="{anchor}">{html.escape(str(meta.get("analysis")))} — '
                     f'{html.escape(", ".join(meta.get("stores") or {}))}</h2>')
        parts.append(f"<p><strong>{html.escape(str(summary.get('title', '')))}</strong></p>")
        if summary.get("headline"):
            parts.append('<div class="headline">' + "".join(
                f"<p>{html.escape(str(line))}</p>" for line in summary["headline"]) + "</div>")
        parts.append(_records_html(summary.get("table") or []))
        if summary.get("notes"):
            parts.append('<ul class="notes">' + "".join(
                f"<li>{html.escape(str(n))}</li>" for n in summary["notes"]) + "</ul>")
        for key, files in _figures(meta):
            parts.append(_html_figure(sidecar.parent, meta, key, files, page))
        parts.append("<h3>Provenance of the stores</h3>" + _kv_html(_store_rows(meta)))
        parts.append("<h3>This run</h3>" + _kv_html(_run_rows(meta)))
        tables = _table_rows(meta)
        if tables:
            parts.append("<details><summary>Table files and their columns</summary>"
                         + _records_html(tables) + "</details>")
    body = "\n".join(p for p in parts if p)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n"
            f"<body>\n{body}\n</body></html>\n")


def _markdown(runs: list[tuple[Path, dict[str, Any]]], title: str,
              out: Path) -> tuple[str, dict[str, Path]]:
    """The Markdown page, and the figure files to copy beside it (name in ``<out stem>_files/``
    → source file)."""
    assets_name = _assets_dir(out).name
    copies: dict[str, Path] = {}
    lines = [f"# {title}", "",
             f"{len(runs)} run(s); made by emb {__version__} on "
             f"{_dt.datetime.now(_dt.UTC).isoformat(timespec='seconds')}.", ""]
    for i, (sidecar, meta) in enumerate(runs):
        summary = meta.get("summary") or {}
        lines += [f"## {meta.get('analysis')} — {', '.join(meta.get('stores') or {})}", "",
                  f"**{summary.get('title', '')}**", ""]
        lines += [f"> {line}  " for line in summary.get("headline") or []] + [""]
        table = _records_md(summary.get("table") or [])
        if table:
            lines += [table, ""]
        lines += [f"- {note}" for note in summary.get("notes") or []] + [""]
        for key, files in _figures(meta):
            path = _figure_file(sidecar.parent, files, "md")
            if path is None:
                continue
            name = f"{i:02d}_{path.name}"
            copies[name] = path
            caption = _figure_caption(meta, key).replace("[", "(").replace("]", ")")
            link = f"{assets_name}/{urllib.parse.quote(name)}"
            if path.suffix == ".pdf":  # not an image Markdown can show: a link to the file
                lines += [f"[{caption} (PDF)]({link})", ""]
            else:
                lines += [f"![{caption}]({link})", "", f"*{caption}*", ""]
        lines += ["### Provenance of the stores", "", _records_md(_store_rows(meta)), "",
                  "### This run", "", _records_md(_run_rows(meta)), ""]
        tables = _table_rows(meta)
        if tables:
            lines += ["### Table files", "", _records_md(tables), ""]
    return "\n".join(lines) + "\n", copies


#: The manifest emb writes into a Markdown page's figure directory: that directory is replaced by
#: the next report only while it holds exactly the files this manifest lists.
_ASSETS_MANIFEST = ".emb-report.json"


def _assets_dir(page: Path) -> Path:
    return page.with_name(page.stem + "_files")


def _check_assets(assets: Path) -> bool:
    """Whether ``assets`` exists as emb's own figure directory (to be replaced); False when it
    does not exist.

    Raises
    ------
    ResultsError
        Something else is in the way: a file, a link, a directory emb did not write (no manifest),
        or one holding files that its manifest does not list.
    """
    if not os.path.lexists(assets):
        return False
    fix = "move it away, or give another --out"
    if assets.is_symlink() or not assets.is_dir():
        raise ResultsError(
            f"cannot write the report's figures into {assets}: it is a "
            f"{'link' if assets.is_symlink() else 'file'}, not a directory emb wrote; {fix}"
        )
    try:
        manifest = json.loads((assets / _ASSETS_MANIFEST).read_text(encoding="utf-8"))
        listed = {str(n) for n in manifest["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        raise ResultsError(
            f"cannot write the report's figures into {assets}: that directory exists and was not "
            f"written by 'emb report' (it holds no {_ASSETS_MANIFEST}), so it is left as it is; "
            f"{fix}"
        ) from None
    present = {p.name for p in assets.iterdir()} - {_ASSETS_MANIFEST}
    foreign = sorted(present - listed)
    if foreign or any((assets / n).is_dir() or (assets / n).is_symlink() for n in present):
        raise ResultsError(
            f"cannot replace the report's figure directory {assets}: it holds files 'emb report' "
            f"did not write ({', '.join(foreign or sorted(present))}); {fix}"
        )
    return True


#: What a page of each format may be called (its file name's suffix).
_SUFFIXES = {"html": (".html", ".htm"), "md": (".md", ".markdown")}


def build_report(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str] | None = None,
    *,
    format: Literal["html", "md"] | None = None,  # noqa: A002 - the CLI's --format
    title: str = "emb results",
) -> Path:
    """Write one report page for every run found under ``paths``.

    Parameters
    ----------
    paths : sequence of path
        Results directories of ``emb analyze`` (searched recursively) or sidecar files.
    out : path, optional
        The page to write (default ``emb-report.html`` / ``emb-report.md``). The Markdown page's
        figures go into ``<out stem>_files/`` beside it, with a manifest (``.emb-report.json``)
        listing them: a later report replaces that directory only while it holds just those
        files (built beside it and swapped in); a file, or a directory emb did not write, in
        its place is refused.
    format : {"html", "md"}, optional
        ``html``: one self-contained file (figures as data URIs; a PDF-only figure linked, and
        embedded as a download). ``md``: Markdown + figure files. Default: ``md`` when ``out``
        ends in ``.md``, else ``html``.
    title : str
        The page's title.

    Returns
    -------
    Path
        The page written.

    Raises
    ------
    ResultsError
        No run found, a run whose files changed since it was written, an unknown format, a
        page or figure directory that cannot be written, or a ``<out stem>_files`` that is not
        emb's own.
    """
    if format is None:
        format = "md" if out is not None and Path(out).suffix.lower() == ".md" else "html"  # noqa: A001
    if format not in ("html", "md"):
        raise ResultsError(f"report format must be 'html' or 'md'; got {format!r}")
    suffix = Path(out).suffix.lower() if out is not None else ""
    if suffix and suffix not in _SUFFIXES[format]:  # r.pdf would hold an HTML page
        raise ResultsError(
            f"--out {os.fspath(out)!r} ends in {suffix!r}, but the report is a "  # type: ignore[arg-type]
            f"{'Markdown' if format == 'md' else 'HTML'} page; name it "
            f"{' or '.join(_SUFFIXES[format])} (for a PDF, print the HTML page: chromium "
            "--headless --print-to-pdf=report.pdf report.html)")
    if not paths:
        raise ResultsError("give at least one results directory (the --out of 'emb analyze')")
    runs = find_runs(paths)
    target = Path(out) if out is not None else Path(f"emb-report.{format}")
    refuse_inside_store(target, what="the report", error=ResultsError,
                        fix="give an --out outside the store")
    _check_page(target, format)
    copies: dict[str, Path] = {}
    assets = _assets_dir(target)
    if format == "html":  # a shared page: no absolute local path, powers of ten as such
        text = superscripts(shareable(_html(runs, title, target), target))
    else:
        text, copies = _markdown(runs, title, target)
        text = shareable(text, target)
    if copies:
        _check_assets(assets)
    created = make_dirs(target.parent, what="the report under")
    try:
        page = text.encode("utf-8")
        needed = len(page) + sum(p.stat().st_size for p in copies.values())
        check_space(target.parent, needed, what="the report", error=ResultsError,
                    fix="give another --out (nothing was written)")
        with claim(target, what="--out", error=ResultsError) as held:
            held.remove_leftovers()  # a killed report's temporaries
            _write_page(held, page, copies, format)
    except BaseException:
        remove_empty_dirs(created)
        raise
    return target


def _check_page(target: Path, format: str) -> None:  # noqa: A002 - the CLI's --format
    """Refuse a page path that is a directory, or a file emb did not write."""
    if target.is_dir():
        raise ResultsError(f"{target} is a directory; give the report's file name (e.g. {target / ('report.' + format)})")
    if os.path.lexists(target) and not _is_emb_report(target):
        raise ResultsError(
            f"{target} exists and is not a report emb wrote; emb does not replace files it did "
            "not write: move it or give another --out"
        )


def _write_page(held: Claim, page: bytes, copies: Mapping[str, Path], format: str) -> None:  # noqa: A002
    """Write the page (and, for Markdown, its figure directory) beside the target and swap them
    in, under the claim of the page: the page is replaced in one rename; the earlier figure
    directory (emb's own, checked again here) is moved aside into a temporary, the new one moved
    in, and the aside one removed. A kill at any step leaves the earlier page or the new one
    whole, and only emb's temporaries (removed by the next report to this page).

    Raises
    ------
    ResultsError
        The disk has no room for the page and its figures (the space needed said), or a write
        fails; nothing of this report is left then.
    """
    target = held.target
    assets = _assets_dir(target)
    _check_page(target, format)  # again, now that no other report writes it
    if copies:
        replace = _check_assets(assets)
    else:  # an earlier Markdown page's figures, emb's own, that this page does not use
        try:
            replace = format == "md" and _check_assets(assets)
        except ResultsError:
            replace = False  # not emb's: left alone
    needed = len(page) + sum(p.stat().st_size for p in copies.values())
    fix = "give another --out (nothing was written)"
    check_space(target.parent, needed, what="the report", error=ResultsError, fix=fix)
    temporaries: list[Path] = []
    aside: Path | None = None
    moved_in = page_in = False
    try:
        new_assets = None
        if copies:
            new_assets = held.temporary(directory=True)
            temporaries.append(new_assets)
            for name, source in copies.items():
                write_file(new_assets / name, source.read_bytes())
            write_file(new_assets / _ASSETS_MANIFEST, (json.dumps(
                {"emb_report": 1, "page": target.name, "files": sorted(copies)}, indent=1)
                + "\n").encode("utf-8"))
        page_tmp = held.temporary_name()
        temporaries.append(page_tmp)
        write_file(page_tmp, page)
        if replace:  # the earlier figures, emb's own: aside, then removed
            aside = held.temporary_name()
            os.rename(assets, aside)
            temporaries.append(aside)
        if new_assets is not None:
            os.rename(new_assets, assets)
            moved_in = True
        os.replace(page_tmp, target)
        page_in = True
    except OSError as err:
        if not page_in:  # the earlier page stays: so do its figures
            if moved_in:
                remove_path(assets)
            if aside is not None and not os.path.lexists(assets):
                os.rename(aside, assets)
        for path in temporaries:
            remove_path(path)
        if is_disk_full(err):
            raise ResultsError(disk_full_message(target.parent, needed, what="the report",
                                                 fix=fix)) from None
        raise ResultsError(f"cannot write the report {target}: {err.strerror or err}; give a "
                           "writable --out") from None
    finally:
        for path in temporaries:
            remove_path(path)


def _is_emb_report(path: Path) -> bool:
    """Whether the file at ``path`` is a page ``emb report`` wrote (its first lines say so)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    return path.is_file() and "run(s); made by emb " in head
