"""The documentation site and the newcomer's README (issue 24).

The site (``mkdocs.yml``, ``docs/``) builds with warnings as errors; the README stays a short
newcomer's page whose test command is exactly what ``.ci/run`` runs; every section of the README
that the site replaced has its page; every analysis has a guide showing its figures, which are
the figures the analyses draw (``docs/make_figures.py``). The code examples themselves run in
``tests/test_docs_examples.py``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
FIGURES = DOCS / "figures"

#: Each section of the README before the site (its ``##``/``###`` headings and its bold paragraph
#: titles) -> the page that holds it now, under the same title.
MOVED = {
    "Extract": "extract.md",
    "Stimulus suites": "suites.md",
    "Static word vectors": "static-vectors.md",
    "CEAT: natural contexts from a corpus": "ceat-corpus.md",
    "Extraction at scale": "scale-out.md",
    "Large models": "large-models.md",
    "The memory plan": "large-models.md",
    "Layers": "large-models.md",
    "Identity": "large-models.md",
    "Out of memory": "large-models.md",
    "Storage per item": "large-models.md",
    "Families and BOS": "large-models.md",
    "On a GPU": "large-models.md",
    "The store": "store.md",
    "Layout and why": "store.md",
    "Precision": "store.md",
    "Compatibility": "store.md",
    "Crash safety": "robustness.md",
    "Validation": "robustness.md",
    "Every read verified": "robustness.md",
    "Errors and exit codes": "robustness.md",
    "One writer at a time": "robustness.md",
    "Shard writers": "robustness.md",
    "Object storage": "robustness.md",
    "Sharing a store": "sharing.md",
    "Servers that stop answering": "sharing.md",
    "Analyze": "analyze.md",
    "Outputs": "analyze.md",
    "Long runs": "analyze.md",
    "Where emb writes": "analyze.md",
    "Figures": "analyze.md",
    "Report": "analyze.md",
    "Statistics as reported": "statistics.md",
    "Small and empty word sets": "statistics.md",
    "Your own WEAT tests, on any suite": "analyses/weat.md",
    "CEAT": "analyses/ceat.md",
    "Measured": "measured.md",
    "Data packages and licences": "licences.md",
    "Development": "development.md",
}

#: Analysis (``emb analyze NAME``) -> its guide.
GUIDES = {
    "vast": "analyses/vast.md", "valnorm": "analyses/valnorm.md",
    "similarity": "analyses/similarity.md", "sc-weat": "analyses/sc-weat.md",
    "weat": "analyses/weat.md", "ceat": "analyses/ceat.md", "ibd": "analyses/ibd.md",
    "intersectional": "analyses/intersectional.md",
    "valence-subspace": "analyses/intersectional.md", "stereotype": "analyses/stereotype.md",
    "mac": "analyses/peers.md", "ect": "analyses/peers.md", "ripa": "analyses/peers.md",
    "rnsb": "analyses/peers.md", "ml-eat": "analyses/ml-eat.md",
    "seed-sensitivity": "analyses/robustness.md", "empirical-null": "analyses/robustness.md",
    "reliability": "analyses/robustness.md",
}


def _config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("tag:", lambda loader, suffix, node: None)
    return yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)


def _nav_pages(nav) -> list[str]:
    pages = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _build(config: Path, site: Path) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip('mkdocs-material is not installed (pip install -e ".[docs]")')
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # not -q: mkdocs' strict mode counts the warnings it logs, and -q logs none (a broken link passed)
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True, text=True, env=env, timeout=300)


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = _build(REPO / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stdout + done.stderr
    weat = (tmp_path / "site" / "analyses" / "weat" / "index.html").read_text(encoding="utf-8")
    assert "effect_sizes_last.png" in weat and "What to report" in weat
    assert (tmp_path / "site" / "figures" / "weat" / "effect_sizes_last.png").is_file()
    assert not (tmp_path / "site" / "make_figures.py").exists()
    html = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "site").rglob("*.html"))
    assert "fonts.googleapis.com" not in html  # no web font: the site reads offline


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("*.png"))
    page = tmp_path / "docs" / "index.md"
    page.write_text(page.read_text(encoding="utf-8") + "\n[gone](no-such-page.md)\n", encoding="utf-8")
    done = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stdout + done.stderr


def test_every_page_is_in_the_nav_and_a_rules_section_waits() -> None:
    nav = _config()["nav"]
    pages = _nav_pages(nav)
    assert len(pages) == len(set(pages))
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert set(pages) == on_disk, (set(pages) ^ on_disk)
    assert any(isinstance(e, dict) and "Rules" in e for e in nav)


def _readme() -> str:
    return (REPO / "README.md").read_text(encoding="utf-8")


def _commands(text: str) -> dict[str, str]:
    """The two set-up commands of a page: the bash blocks whose comment starts "# 1." / "# 2."."""
    found = re.findall(r"```bash\n# ([12])\. [^\n]*\n([^\n]+)\n```", text)
    return {number: command for number, command in found}


def test_the_readme_is_a_newcomers_page() -> None:
    readme = _readme()
    assert len(readme.splitlines()) <= 150
    headings = re.findall(r"^## (.+)$", readme, re.M)
    assert headings[:3] == ["Install", "The two commands", "Quickstart"]
    assert "two commands do all the set-up: one runs the main job on an embedded default" in readme
    quickstart = readme.split("## Quickstart")[1].split("\n## ")[0]
    assert len(re.findall(r"^emb ", quickstart, re.M)) >= 3 and "```python" in quickstart
    links = re.findall(r"\]\((docs/[^)]*)\)", readme)
    assert len(links) >= 15
    for target in links:
        assert (REPO / target).exists(), target


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = _commands(_readme())
    assert set(commands) == {"1", "2"}
    ci = [line for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == [commands["2"]]
    assert '-e ".[extract,test,docs,quantize]"' in commands["2"] and "bash .ci/tests.sh" in commands["2"]
    tests = (REPO / ".ci" / "tests.sh").read_text(encoding="utf-8")
    assert "python -m pytest -q -ra --durations=25" in tests and "bash .ci/lowest.sh --run" in tests
    assert _commands((DOCS / "getting-started.md").read_text(encoding="utf-8")) == commands


def test_the_docs_extra_declares_mkdocs_material_with_a_floor() -> None:
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    names = {re.split(r"[<>=]", r)[0]: r for r in extras["docs"]}
    assert set(names) == {"mkdocs", "mkdocs-material"} and all(">=" in r for r in names.values())
    plugins = _config().get("plugins", [])
    assert plugins == ["search"], "a plugin that fetches at build time would break offline builds"


@pytest.mark.parametrize("title", sorted(MOVED))
def test_every_section_of_the_old_readme_has_a_page(title: str) -> None:
    page = DOCS / MOVED[title]
    text = page.read_text(encoding="utf-8")
    as_heading = re.search(rf"^#+ {re.escape(title)}$", text, re.M)
    as_bold = f"**{title}.**" in text or f"**{title}**" in text
    assert as_heading or as_bold or title in text.splitlines()[0], f"{title!r} not in {MOVED[title]}"
    assert MOVED[title] in _nav_pages(_config()["nav"])


@pytest.mark.parametrize("name", sorted(GUIDES))
def test_every_analysis_has_a_guide(name: str) -> None:
    from emb.analyses.registry import ANALYSES

    assert set(GUIDES) == set(ANALYSES)
    text = (DOCS / GUIDES[name]).read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, re.M)
    for needed in ("The paper's definition and our defaults", "Run it", "What to report",
                   "How to read it", "Figures", "In Python"):
        assert needed in sections, f"{GUIDES[name]} lacks the section {needed!r}"
    assert f"emb analyze {name} " in text
    if "method" in ANALYSES[name].parameters():
        assert "`--reference`" in text, f"{GUIDES[name]} does not say what --reference changes"
    shown = re.findall(rf"\]\(\.\./figures/{re.escape(name)}/([\w.-]+\.png)\)", text)
    committed = sorted(p.name for p in (FIGURES / name).glob("*.png"))
    assert committed and sorted(set(shown)) == committed


def test_every_figure_is_small_and_shown() -> None:
    pngs = sorted(FIGURES.rglob("*.png"))
    assert len(pngs) >= 20
    guides = "".join((DOCS / g).read_text(encoding="utf-8") for g in set(GUIDES.values()))
    for png in pngs:
        assert png.stat().st_size <= 150_000, f"{png}: {png.stat().st_size} bytes"
        assert f"../figures/{png.parent.name}/{png.name}" in guides, f"{png} is shown nowhere"


@pytest.mark.slow
def test_the_committed_figures_are_the_ones_the_analyses_draw(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_figures", DOCS / "make_figures.py")
    make_figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_figures)
    from emb.analyses.registry import ANALYSES

    for name in ANALYSES:
        drawn = sorted(p.name for p in make_figures.render(name, tmp_path))
        committed = sorted(p.name for p in (FIGURES / name).glob("*.png"))
        assert drawn == committed, f"{name}: re-run python docs/make_figures.py {name}"
