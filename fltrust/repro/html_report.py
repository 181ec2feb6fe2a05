"""One self-contained HTML page per paper: ``fltrust report``.

The page is what RESULTS.md says -- built by the same functions
(:func:`fltrust.repro.fairness.report.results_markdown`, :func:`fltrust.repro.trust.report.results_markdown`)
from the same result files, so the paper-vs-ours tables, the tolerance, the deviations and the
conditions not run are identical -- rendered to HTML by markdown-it-py (CommonMark with GitHub
tables, as GitHub shows RESULTS.md), followed by every figure of the paper embedded as a base64 PNG
and by the commands that regenerate the page.

Nothing is loaded from elsewhere: no external CSS, JavaScript, fonts or images, so the file can be
opened offline and sent by mail; Markdown cannot add any (raw HTML is escaped, images and links are
shown as text). By default figures are re-encoded as 256-colour PNGs (Pillow, already
installed with matplotlib) when that is smaller, which keeps a page with every figure mailable;
``compact_figures=False`` embeds the files byte for byte.

Default locations follow :mod:`fltrust.repro.batch`: the full reproduction reads
``papers_repro/<paper>/results/`` and ``figures/<fairness|trust>/`` and writes
``papers_repro/<paper>/report.html``; ``quick=True`` or ``batch_dir`` (the ``--out`` of
``fltrust repro``) read and write that batch folder instead.

Example
-------
::

    fltrust report                      # both papers
    fltrust report fairness --quick     # the page of `fltrust repro fairness --quick`
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt  # pinned in constraints.txt; arrives with flwr and codecarbon via rich

from fltrust.core.io import atomic_write_text
from fltrust.repro.batch import FIGURE_FOLDERS, REPO, _folders
from fltrust.repro.markdown import render

__all__ = ["PAPERS", "markdown_to_html", "report_html", "write_report", "write_reports"]


@dataclass(frozen=True)
class Paper:
    """One reproduced paper: its command name, its folder name and title."""

    key: str  # "fairness" / "trust": the argument of `fltrust repro` and `fltrust report`
    folder: str  # papers_repro/<folder>
    title: str
    summary_figures: tuple[str, ...]  # shown first, in this order


PAPERS = {
    "fairness": Paper("fairness", "fairness_analytics", "Federated Fairness Analytics (Dilley et al.)",
                      ("fairness_table3.png", "fairness_figure4.png")),
    "trust": Paper("trust", "federatedtrust", "FederatedTrust (Sánchez Sánchez et al.)",
                   ("trust_pillars.png",)),
}


def _paper(name: str) -> Paper:
    key = FIGURE_FOLDERS.get(name, name)  # the folder names are aliases of the keys
    if key not in PAPERS:
        raise ValueError(f"unknown paper {name!r}; choose one of {sorted(PAPERS)}")
    return PAPERS[key]


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (the page names no machine paths)."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


# -- markdown -> HTML ---------------------------------------------------------------------------

def _slug(text: str, used: set[str]) -> str:
    """A heading's ``id``: lower-case words joined by ``-``, numbered when the page has it already."""
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = base, 2
    while slug in used:
        slug, n = f"{base}-{n}", n + 1
    used.add(slug)
    return slug


def _heading_open(renderer, tokens, idx, options, env) -> str:
    """``<hN id="slug">``: every heading can be linked to (``env["slugs"]`` holds the ids of the page)."""
    tokens[idx].attrSet("id", _slug(tokens[idx + 1].content, env.setdefault("slugs", set())))
    return renderer.renderToken(tokens, idx, options, env)


def _link_close(renderer, tokens, idx, options, env) -> str:
    opening = next(t for t in reversed(tokens[:idx]) if t.type == "link_open")
    return "" if opening.markup == "autolink" else f" ({html.escape(str(opening.attrGet('href')), quote=False)})"


# CommonMark with GitHub tables; raw HTML and images are text, links are not followed
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "xhtmlOut": False}).enable("table").disable("image")
_MARKDOWN.add_render_rule("heading_open", _heading_open)
# the page links nowhere: [text](target) is shown as "text (target)"
_MARKDOWN.add_render_rule("link_open", lambda *_: "")
_MARKDOWN.add_render_rule("link_close", _link_close)
_MARKDOWN.add_render_rule("table_open", lambda *_: '<div class="table"><table>\n')  # wide tables scroll
_MARKDOWN.add_render_rule("table_close", lambda *_: "</table></div>\n")


def markdown_to_html(text: str) -> str:
    """Render the Markdown of the RESULTS.md writers to HTML (markdown-it-py: CommonMark and GitHub tables).

    Headings get ``id`` anchors, tables sit in a ``<div class="table">`` that scrolls sideways.
    Nothing in the result loads or links anything: raw HTML is escaped as text, an image is shown
    as its text, and a link as ``text (target)``.

    Parameters
    ----------
    text : str
        Markdown.

    Returns
    -------
    str
        An HTML fragment (no ``<html>`` or ``<body>``).

    Examples
    --------
    >>> print(markdown_to_html("## Not run <x>\\n\\nSee [RESULTS.md](RESULTS.md), `a<b`."))
    <h2 id="not-run-x">Not run &lt;x&gt;</h2>
    <p>See RESULTS.md (RESULTS.md), <code>a&lt;b</code>.</p>
    <BLANKLINE>
    """
    return _MARKDOWN.render(text, {})


# -- figures ----------------------------------------------------------------------------------

def _png_bytes(path: Path, compact: bool) -> bytes:
    """The PNG file, or its 256-colour re-encoding when ``compact`` and that is smaller."""
    raw = path.read_bytes()
    if not compact:
        return raw
    try:
        from PIL import Image

        with Image.open(io.BytesIO(raw)) as image:
            image.load()
            if image.mode in ("RGBA", "LA") or "transparency" in image.info:
                rgba = image.convert("RGBA")
                flat = Image.new("RGB", rgba.size, "white")
                flat.paste(rgba, mask=rgba.getchannel("A"))
            else:
                flat = image.convert("RGB")
        buffer = io.BytesIO()
        flat.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            buffer, format="PNG", optimize=True)
        small = buffer.getvalue()
    except Exception:  # noqa: BLE001 - not decodable by Pillow (or no Pillow): embed the file as it is
        return raw
    return small if len(small) < len(raw) else raw


def _ordered_figures(folder: Path, paper: Paper) -> list[Path]:
    files = sorted(folder.glob("*.png")) if folder.is_dir() else []
    first = [folder / name for name in paper.summary_figures if (folder / name) in files]
    return first + [f for f in files if f not in first]


def _figure(path: Path, compact: bool) -> dict[str, str]:
    """A figure of the page: its file name and its PNG, base64-encoded."""
    return {"name": path.name, "data": base64.b64encode(_png_bytes(path, compact)).decode("ascii")}


# -- the page ---------------------------------------------------------------------------------

def _markdown(paper: Paper, results_dir: Path, quick: bool) -> tuple[str, int]:
    """RESULTS.md text of ``results_dir`` built by the paper's writer, and the number of results."""
    if paper.key == "fairness":
        from fltrust.repro.fairness.authors import load_authors_runs
        from fltrust.repro.fairness.run import load_reported
        from fltrust.repro.fairness.report import load_results, results_markdown, summary_table

        results = load_results(results_dir)
        reported = load_reported()
        text = results_markdown(summary_table(results, reported), results, quick=quick, reported=reported,
                                authors=load_authors_runs())  # the authors' runs under the data root, as the summary notebook
        return text, len(results)
    from fltrust.repro.trust import report as trust_report

    from fltrust.repro.trust.normalize import load_without_normalize

    results = trust_report.load_results(results_dir)
    text = trust_report.results_markdown(results, quick=quick, reported=trust_report.load_reported(),
                                         ablation=trust_report.load_ablation(results_dir),
                                         without_normalize=load_without_normalize(results_dir))
    return text, len(results)


def regenerate_commands(paper: str, *, quick: bool = False, batch_dir: str | Path | None = None,
                        out: str | Path | None = None) -> list[str]:
    """The commands that regenerate the results, the figures and the page."""
    p = _paper(paper)
    options = (" --quick" if quick else "") + (f" --out {_shown(Path(batch_dir))}" if batch_dir else "")
    source = (" --quick" if quick else "") + (f" --from {_shown(Path(batch_dir))}" if batch_dir else "")
    page = f" --out {_shown(Path(out))}" if out else ""
    return [
        "# results, figures, RESULTS.md and this page (papermill batch; finished conditions are skipped)",
        f"python -m fltrust repro {p.key}{options}",
        "# this page only, from the results and figures already there",
        f"python -m fltrust report {p.key}{source}{page}",
    ]


def report_html(
    paper: str,
    *,
    results_dir: str | Path,
    figures_dir: str | Path,
    quick: bool = False,
    commands: Sequence[str] = (),
    compact_figures: bool = True,
) -> str:
    """The HTML page of ``paper`` ("fairness" or "trust") from a results and a figures folder.

    The page is the template ``templates/report.html.j2`` (style sheet included, every value escaped)
    around :func:`markdown_to_html` of the paper's RESULTS.md text and the figures, summary figures first.

    Raises
    ------
    fltrust.repro.results.ResultsError
        A result file is unreadable or incomplete (the message names it).
    """
    p = _paper(paper)
    results_dir, figures_dir = Path(results_dir), Path(figures_dir)
    text, count = _markdown(p, results_dir, quick)
    figures = _ordered_figures(figures_dir, p)
    groups: dict[str, list[dict[str, str]]] = {}  # <condition>_notions.png, exp1_paper.png, ... by condition
    for f in figures:
        if f.name not in p.summary_figures:
            groups.setdefault(f.stem.rsplit("_", 1)[0], []).append(_figure(f, compact_figures))
    return render("report.html.j2", title=p.title, count=count, results_dir=_shown(results_dir),
                  figures_dir=_shown(figures_dir), figure_count=len(figures), body=markdown_to_html(text),
                  summary=[_figure(f, compact_figures) for f in figures if f.name in p.summary_figures],
                  groups=groups, commands=list(commands))


def write_report(
    paper: str,
    out: str | Path | None = None,
    *,
    quick: bool = False,
    batch_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    figures_dir: str | Path | None = None,
    compact_figures: bool = True,
) -> Path:
    """Write the page of ``paper`` atomically and return its path.

    Parameters
    ----------
    paper : str
        ``"fairness"`` or ``"trust"`` (or the folder names ``fairness_analytics`` / ``federatedtrust``).
    out : str or Path, optional
        The HTML file (default: ``report.html`` in the batch folder, ``papers_repro/<paper>/`` for the
        full reproduction).
    quick, batch_dir
        Which batch to report on, as for ``fltrust repro <paper> [--quick] [--out batch_dir]``.
    results_dir, figures_dir : str or Path, optional
        Override the folders read.
    compact_figures : bool
        Re-encode figures as 256-colour PNGs when smaller (default) instead of embedding them as they are.
    """
    p = _paper(paper)
    folders = _folders(p.folder, quick, batch_dir)  # where `fltrust repro <paper>` wrote its results and figures
    path = Path(out) if out is not None else folders["base"] / "report.html"
    page = report_html(
        p.key,
        results_dir=results_dir or folders["results"],
        figures_dir=figures_dir or folders["figures"],
        quick=quick,
        commands=regenerate_commands(p.key, quick=quick, batch_dir=batch_dir, out=out),
        compact_figures=compact_figures,
    )
    atomic_write_text(path, page)
    return path


def write_reports(
    paper: str = "all",
    out: str | Path | None = None,
    *,
    quick: bool = False,
    batch_dir: str | Path | None = None,
    compact_figures: bool = True,
) -> list[Path]:
    """:func:`write_report` for one paper, or for both with ``paper="all"``.

    With ``"all"``, ``out`` is a folder receiving ``fairness_analytics.html`` and ``federatedtrust.html``
    and ``batch_dir`` is not allowed (a batch folder holds one paper).
    """
    if paper != "all":
        return [write_report(paper, out, quick=quick, batch_dir=batch_dir, compact_figures=compact_figures)]
    if batch_dir is not None:
        raise ValueError("--from names one paper's batch folder: give the paper (fairness or trust) too")
    return [
        write_report(key, None if out is None else Path(out) / f"{p.folder}.html", quick=quick,
                     compact_figures=compact_figures)
        for key, p in PAPERS.items()
    ]
