"""``emb report``: one self-contained HTML page (opened in a real headless browser) or Markdown
with its figures beside it, built from checked sidecars."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from emb.cli.main import main
from emb.results.directory import ResultsError
from emb.results.report import build_report
from tests.analyses._synthetic import vast_dataset, weat_dataset, write_store

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")
#: The install line for the README's test command and .ci/run (Debian/Ubuntu).
CHROMIUM_INSTALL = "apt-get install -y chromium"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("report")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = write_store(root / "toy.zarr", {"vast": vast_dataset(n_words=60, n_layers=3),
                                                "weat": weat_dataset(n_layers=3)}, model_id="toy-model-id")
    out = {}
    for name, extra in (("weat", ["--correction", "holm", "--figure-format", "png",
                                  "--figure-format", "svg"]),
                        ("valnorm", ["--setting", "bleached"])):
        result = CliRunner().invoke(main, ["analyze", name, "--store", f"toy={store}", "--out",
                                           str(root / name), "--quiet", *extra])
        assert result.exit_code == 0, result.output
        out[name] = root / name
    out["root"] = root
    return out


def test_html_is_self_contained_with_headlines_figures_and_provenance(runs: dict[str, Path]) -> None:
    page = build_report([runs["weat"], runs["valnorm"]], runs["root"] / "r.html", title="Toy report")
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "<title>Toy report</title>" in text
    # every figure embedded, nothing fetched from elsewhere
    images = re.findall(r'<img [^>]*src="([^"]+)"', text)
    assert len(images) == 4 + 2  # weat: effect sizes + heat map per pooling; valnorm: curves + scatter
    assert all(src.startswith(("data:image/png;base64,", "data:image/svg+xml;base64,")) for src in images)
    assert not re.search(r'(src|href)="(https?:|file:|//)', text)
    # headline tables (pre-declared cell) and provenance of the store and the run
    assert "declared cell: top layer, setting &#x27;bleached&#x27;" in text
    assert "flowers vs insects / pleasant vs unpleasant" in text
    for needle in ("hash-weat-", "toy-model-id", "f00d", "emb analyze weat", "--correction holm",
                   "numpy", "Holm correction over", "analysed at"):
        assert needle in text, needle


def test_report_refuses_changed_or_missing_runs(runs: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="holds no emb results"):
        build_report([tmp_path], tmp_path / "r.html")
    copy = tmp_path / "copy"
    shutil.copytree(runs["valnorm"], copy)
    table = copy / "valnorm.csv"
    table.write_text(table.read_text() + "tampered\n")
    with pytest.raises(ResultsError, match="incomplete or was changed"):
        build_report([copy], tmp_path / "r.html")
    result = CliRunner().invoke(main, ["report", str(copy), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and result.output.strip().startswith("Error: ResultsError")


def test_markdown_with_figures_beside_it(runs: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(runs["root"]), "--format", "md", "--out",
                                       str(tmp_path / "supp.md")])
    assert result.exit_code == 0, result.output
    text = (tmp_path / "supp.md").read_text(encoding="utf-8")
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert len(links) == 6 and all((tmp_path / link).is_file() for link in links)
    assert all(link.startswith("supp_files/") and link.endswith(".png") for link in links)
    assert "| model | test | groups |" in text and "### Provenance of the stores" in text


def test_pdf_only_figures_are_linked_not_shown_as_images(runs: dict[str, Path], tmp_path: Path) -> None:
    store = next(runs["root"].glob("*.zarr"))
    out = tmp_path / "results" / "pdf"
    result = CliRunner().invoke(main, ["analyze", "valnorm", "--store", f"toy={store}", "--setting",
                                       "bleached", "--figure-format", "pdf", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    pdfs = sorted(p.name for p in out.glob("*.pdf"))
    assert len(pdfs) == 2
    page = build_report([out], tmp_path / "pages" / "r.html")
    text = page.read_text(encoding="utf-8")
    hrefs = re.findall(r'<a href="([^"]+\.pdf)"', text)
    assert sorted(Path(h).name for h in hrefs) == pdfs
    assert all(not h.startswith(("/", "file:")) and (page.parent / h).resolve().is_file() for h in hrefs)
    assert text.count('download="valnorm_') == 2  # an embedded copy travels with the page
    assert "<img" not in text
    # the Markdown page links the copied PDFs (image syntax would render a broken image)
    md = build_report([out], tmp_path / "supp.md")
    lines = md.read_text(encoding="utf-8")
    links = re.findall(r"(!?)\[[^]]*\]\(([^)]+\.pdf)\)", lines)
    assert len(links) == 2 and all(bang == "" for bang, _ in links)
    assert all((tmp_path / link).is_file() for _, link in links)


def test_layout_provenance_per_store_captions_and_options_used(runs: dict[str, Path],
                                                               tmp_path: Path) -> None:
    page = build_report([runs["weat"]], tmp_path / "r.html")
    text = page.read_text(encoding="utf-8")
    assert "overflow-wrap:anywhere" not in text  # no hash or model id broken mid-word
    # provenance transposed: one row per field, a column per store
    assert re.search(r'<table class="kv"><thead><tr><th></th><th>toy</th></tr>', text)
    assert '<th scope="row">fingerprint</th>' in text
    # captions are the figures' titles, recorded in the sidecar
    meta = json.loads((runs["weat"] / "weat.json").read_text(encoding="utf-8"))
    titles = meta["figure_titles"]
    assert set(titles) == set(meta["figures"]) and all(titles.values())
    captions = re.findall(r"<figcaption>(.*?) <span", text)
    assert captions == [html.escape(titles[k]) for k in meta["figures"]]
    # options: the one given, and every option the result recorded (defaults included)
    given = re.search(r'options given</th><td>([^<]*)</td>', text).group(1)
    used = re.search(r'options used</th><td>([^<]*)</td>', text).group(1)
    assert given == "correction = holm"
    for needle in ("correction = holm", "alternative = greater", "ddof = 1", "seed = 0"):
        assert needle in used, needle


def test_format_follows_the_page_suffix(runs: dict[str, Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", str(runs["valnorm"]), "--out", str(tmp_path / "s.md")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "s.md").read_text(encoding="utf-8").startswith("# emb results")


def _chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.mark.slow
def test_html_renders_in_a_headless_browser(runs: dict[str, Path], tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        message = f"no Chromium to render the report with; install it ({CHROMIUM_INSTALL})"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    page = build_report([runs["weat"], runs["valnorm"]], tmp_path / "r.html")
    shot = tmp_path / "shot.png"
    args = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
            "--window-size=1200,2000", "--hide-scrollbars", page.resolve().as_uri()]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert shot.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    from PIL import Image

    with Image.open(shot) as image:
        pixels = np.asarray(image.convert("RGB"))
    assert pixels.shape[:2] == (2000, 1200)
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    ink = (pixels.min(axis=-1) < 200).mean()
    assert len(colours) > 200, f"a blank-looking page: {len(colours)} distinct colours"
    assert ink > 0.03, f"almost nothing drawn: {ink:.1%} of the pixels"
    # the figures were decoded and drawn: the diverging heat-map reds are on the page
    red = (pixels[..., 0] > 150) & (pixels[..., 1] < 80) & (pixels[..., 2] < 80)
    assert red.sum() > 500


def test_markdown_never_deletes_a_figure_directory_emb_did_not_write(runs: dict[str, Path],
                                                                      tmp_path: Path) -> None:
    """'emb report -o myrep.md' rmtree'd an existing myrep_files/ (the user's notes gone) and
    ended in NotADirectoryError where myrep_files was a file."""
    page, assets = tmp_path / "myrep.md", tmp_path / "myrep_files"
    assets.mkdir()
    (assets / "notes.txt").write_text("mine")
    with pytest.raises(ResultsError, match="was not written by 'emb report'"):
        build_report([runs["weat"]], page)
    assert (assets / "notes.txt").read_text() == "mine" and not page.exists()
    result = CliRunner().invoke(main, ["report", str(runs["weat"]), "-o", str(page)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "myrep_files" in result.output and "move it away" in result.output
    shutil.rmtree(assets)
    assets.write_text("a file of mine")
    with pytest.raises(ResultsError, match="it is a file"):
        build_report([runs["weat"]], page)
    assert assets.read_text() == "a file of mine" and not page.exists()
    assets.unlink()
    # emb's own directory (its manifest lists exactly what it holds) is replaced on the next run
    build_report([runs["weat"]], page)
    first = sorted(p.name for p in assets.iterdir())
    assert ".emb-report.json" in first and len(first) == 5
    build_report([runs["valnorm"]], page)
    assert len([p for p in assets.iterdir() if p.suffix == ".png"]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    # ... unless something of the user's was put into it
    (assets / "mine.txt").write_text("mine")
    with pytest.raises(ResultsError, match=r"did not write \(mine.txt\)"):
        build_report([runs["weat"]], page)
    assert (assets / "mine.txt").read_text() == "mine"


@pytest.mark.parametrize("sidecar", [
    {"emb_results": 1},
    {"emb_results": 1, "analysis": "weat", "files": []},
    {"emb_results": 1, "analysis": "weat", "files": {}},
    {"emb_results": "1", "analysis": "weat", "files": {"weat.nc": "00"}},
    {"emb_results": 1, "analysis": "weat", "files": {"../weat.nc": "00"}},
    {"emb_results": 1, "analysis": "weat", "files": {"weat.nc": "00"}, "summary": ["x"]},
    {"emb_results": 1, "analysis": "weat", "files": {"weat.nc": "00"},
     "figures": {"f": ["../../secret.png"]}},
    {"emb_results": 99, "analysis": "weat", "files": {"weat.nc": "00"}},
])
def test_a_malformed_sidecar_is_one_clear_error(sidecar: dict, tmp_path: Path) -> None:
    """'emb report fake.json' with {"emb_results": 1} ended in a KeyError traceback."""
    fake = tmp_path / "fake.json"
    fake.write_text(json.dumps(sidecar))
    with pytest.raises(ResultsError, match="is not a valid emb results sidecar"):
        build_report([fake], tmp_path / "r.html")
    result = CliRunner().invoke(main, ["report", str(fake), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and result.output.startswith("Error: ResultsError: ")
    assert not (tmp_path / "r.html").exists()


def test_a_page_emb_did_not_write_is_never_replaced(runs: dict[str, Path], tmp_path: Path) -> None:
    for name in ("mine.html", "mine.md"):
        page = tmp_path / name
        page.write_text("my own notes\n")
        with pytest.raises(ResultsError, match="not a report emb wrote"):
            build_report([runs["weat"]], out=page)
        assert page.read_text() == "my own notes\n"
    page = tmp_path / "again.html"
    build_report([runs["weat"]], out=page)
    first = page.read_text()
    build_report([runs["weat"]], out=page)  # emb's own page: replaced
    assert page.read_text() != "" and "made by emb" in first


def test_a_shared_report_holds_no_absolute_local_path(runs: dict[str, Path], tmp_path: Path) -> None:
    """The page named the stores, results and command by their absolute paths (issue 24): a
    report is shared, so they are made relative to the page."""
    root = str(runs["root"].resolve())
    for page in (tmp_path / "page" / "r.html", tmp_path / "page" / "r.md"):
        build_report([runs["weat"], runs["valnorm"]], page)
        text = page.read_text(encoding="utf-8")
        assert root not in text and str(tmp_path) not in text, page.suffix
        rel = os.path.relpath(runs["root"].resolve() / "toy.zarr", page.parent.resolve())
        assert rel in text  # the store is still named, relative to the page
    assert "emb analyze weat" in text


def test_a_power_of_ten_below_float_range_is_a_superscript(runs: dict[str, Path],
                                                           tmp_path: Path) -> None:
    copy = tmp_path / "valnorm"
    shutil.copytree(runs["valnorm"], copy)
    sidecar = copy / "valnorm.json"
    meta = json.loads(sidecar.read_text())
    meta["summary"]["headline"] = ["bleached: r = 0.93, p ≈ 10^-680.4 (n = 13,865)"]
    sidecar.write_text(json.dumps(meta))
    text = build_report([copy], tmp_path / "r.html").read_text(encoding="utf-8")
    assert "p ≈ 10<sup>−680.4</sup> (n = 13,865)" in text and "10^-680.4" not in text
    markdown = build_report([copy], tmp_path / "r.md").read_text(encoding="utf-8")
    assert "10^-680.4" in markdown  # plain text stays plain


@pytest.mark.parametrize("name, fmt", [("r.pdf", None), ("r.txt", None), ("r.md", "html"),
                                       ("r.html", "md"), ("r", "html")])
def test_a_page_named_for_another_format_is_refused(runs: dict[str, Path], tmp_path: Path,
                                                    name: str, fmt: str | None) -> None:
    """'emb report -o r.pdf' wrote an HTML page into r.pdf."""
    page = tmp_path / name
    if Path(name).suffix:
        args = ["report", str(runs["weat"]), "-o", str(page), *(["--format", fmt] if fmt else [])]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"ends in {Path(name).suffix!r}" in result.output and not page.exists()
    else:  # no suffix at all: the user's choice, written as asked
        assert build_report([runs["weat"]], page, format=fmt) == page and page.exists()
