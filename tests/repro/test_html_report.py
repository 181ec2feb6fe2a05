"""``fltrust report``: one self-contained HTML page per paper (fltrust.repro.html_report).

The pages are built from copies of committed result files (in the repository) and one small figure,
in temporary folders: nothing committed is written.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fltrust import cli
from fltrust.repro import batch, html_report
from fltrust.repro.results import ResultsError
from fltrust.repro.html_report import markdown_to_html, write_report

REPO = Path(__file__).resolve().parents[2]
PAPERS = {  # paper -> (committed results folder, two result files, a figure that must come first)
    "fairness": ("papers_repro/fairness_analytics/results", ["fedavg_nslkdd_100c_iid", "ditto_nslkdd_100c_niid"],
                 "fairness_table3.png"),
    "trust": ("papers_repro/federatedtrust/results", ["exp1", "exp4"], "trust_pillars.png"),
}


class _Collector(HTMLParser):
    """Table rows (cell texts) and every URL-valued attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.urls: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.urls += [value or "" for name, value in attrs if name in {"src", "href", "action", "poster", "data"}]
        if tag == "tr":
            self.rows.append([])
        elif tag in {"td", "th"}:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in {"td", "th"} and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _png(path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1, 2], [0.3, 0.7, 0.5])
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=40)
    plt.close(fig)
    return path


@pytest.fixture(params=sorted(PAPERS))
def batch_folder(request, tmp_path) -> tuple[str, Path]:
    """A batch folder like `fltrust repro <paper> --out DIR` leaves: results/ (2 files), figures/ (2 PNGs)."""
    paper = request.param
    results, names, summary_figure = PAPERS[paper]
    (tmp_path / "results").mkdir()
    for name in names:
        shutil.copy(REPO / results / f"{name}.json", tmp_path / "results")
    _png(tmp_path / "figures" / f"{names[0]}_extra.png")
    _png(tmp_path / "figures" / summary_figure)
    return paper, tmp_path


def test_page_has_the_table_rows_embedded_figures_and_no_external_reference(batch_folder):
    # Prepare
    paper, folder = batch_folder
    names = PAPERS[paper][1]

    # Execute
    path = write_report(paper, batch_dir=folder)

    # Assert: the page is in the batch folder and carries RESULTS.md's tables, row for row
    assert path == folder / "report.html" and path.is_file()
    page = path.read_text(encoding="utf-8")
    parsed = _Collector()
    parsed.feed(page)
    markdown = html_report._markdown(html_report.PAPERS[paper], folder / "results", False)[0]
    markdown_rows = [line for line in markdown.splitlines() if line.startswith("| ") and line.endswith(" |")]
    assert len(parsed.rows) == len(markdown_rows) > 0
    cells = {cell for row in parsed.rows for cell in row}
    if paper == "fairness":
        assert set(names) <= cells  # the per-condition table names both conditions
        assert any(row[0] == "NSL-KDD (100C)" and row[1].startswith("0.50 / ") for row in parsed.rows)
        assert "Deviations from the paper's setting" in page
    else:
        assert any(row[:2] == ["Trust score", "0.57"] for row in parsed.rows)
        assert "Known inconsistencies in the paper" in page and "SYNTHETIC DATA" in page

    # every figure embedded as a decodable PNG, the paper's summary figure first
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert [name for name, _ in images] == [PAPERS[paper][2], f"{names[0]}_extra.png"]
    assert all(base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n") for _, data in images)

    # self-contained: every URL is an inline image; nothing refers to the network or to local files
    assert parsed.urls and all(url.startswith("data:image/png;base64,") for url in parsed.urls)
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", page, flags=re.IGNORECASE)
    assert "<script" not in page and '<link' not in page
    assert str(REPO) not in page and str(folder) in page  # machine paths only for folders outside the repo

    # the commands that regenerate it
    assert f"python -m fltrust repro {paper} --out {folder}" in page
    assert f"python -m fltrust report {paper} --from {folder}" in page


def test_default_location_is_the_paper_folder(monkeypatch, tmp_path):
    # Prepare: the paper folder of the full reproduction, redirected to a temporary folder
    monkeypatch.setattr(batch, "REPO", tmp_path)
    (tmp_path / "papers_repro" / "federatedtrust").mkdir(parents=True)
    _png(tmp_path / "figures" / "trust" / "trust_pillars.png")

    # Execute
    path = write_report("trust")

    # Assert: papers_repro/<paper>/report.html, figures from figures/<paper>/, "not run" without results
    assert path == tmp_path / "papers_repro" / "federatedtrust" / "report.html"
    page = path.read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "None: all five experiments" not in page
    assert "exp1, exp2, exp3, exp4, exp5" in page  # the experiments not run


def test_cli_report_and_repro_write_the_page(monkeypatch, tmp_path, capsys):
    # Prepare: a batch folder with one fairness result; the batch itself is replaced by a no-op
    (tmp_path / "results").mkdir()
    shutil.copy(REPO / PAPERS["fairness"][0] / "fedavg_nslkdd_100c_iid.json", tmp_path / "results")
    _png(tmp_path / "figures" / "fairness_figure4.png")
    monkeypatch.setattr(batch, "run_fairness_batch", lambda **kwargs: [])

    # Execute: `fltrust report fairness --from DIR --out FILE`, then `fltrust repro fairness --out DIR`
    assert cli.main(["report", "fairness", "--from", str(tmp_path), "--out", str(tmp_path / "page.html")]) == 0
    assert cli.main(["repro", "fairness", "--out", str(tmp_path)]) == 0

    # Assert: both pages, the same content apart from the --out of the page command
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'page.html'}" in out and f"report: {tmp_path / 'report.html'}" in out
    first = (tmp_path / "page.html").read_text(encoding="utf-8")
    second = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert first.replace(f" --out {tmp_path / 'page.html'}", "") == second
    assert "fedavg_nslkdd_100c_iid" in first and first.count("data:image/png;base64,") == 1


def test_cli_report_all_needs_a_paper_for_a_batch_folder(tmp_path, capsys):
    (tmp_path / "results").mkdir()  # a batch folder (a folder without results/ is refused before this check)
    assert cli.main(["report", "--from", str(tmp_path)]) == 2
    assert "give the paper" in capsys.readouterr().err


def test_a_broken_result_file_is_named(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "exp1.json").write_text(json.dumps({"experiment": "exp1"}))
    with pytest.raises(ResultsError, match="exp1.json"):
        write_report("trust", batch_dir=tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_markdown_is_rendered_escaped_and_links_nowhere():
    text = "\n".join([
        "# Title <x>",
        "",
        "Generated by `fltrust repro a<b` and **bold** text,",
        "continued [see](RESULTS.md), *italic*, 2 * 3 * 4.",
        "",
        "> **⚠ QUICK** run",
        "> second line",
        "",
        "| a | b |",
        "|---|---|",
        "| 1 & 2 | `x` |",
        "",
        "- one",
        "- two",
        "",
        "<script>alert(1)</script> ![figure](https://example.org/x.png) <https://example.org>",
        "",
        "## Title <x>",
    ])
    rendered = markdown_to_html(text)
    flat = " ".join(rendered.split())  # line breaks inside a paragraph or a table do not show in HTML
    assert '<h1 id="title-x">Title &lt;x&gt;</h1>' in flat and '<h2 id="title-x-2">Title &lt;x&gt;</h2>' in flat
    assert ("<p>Generated by <code>fltrust repro a&lt;b</code> and <strong>bold</strong> text, "
            "continued see (RESULTS.md), <em>italic</em>, 2 * 3 * 4.</p>") in flat
    assert "<blockquote> <p><strong>⚠ QUICK</strong> run second line</p> </blockquote>" in flat
    assert '<div class="table"><table> <thead> <tr> <th>a</th> <th>b</th> </tr> </thead>' in flat
    assert "<td>1 &amp; 2</td> <td><code>x</code></td>" in flat and "</table></div>" in flat
    assert "<ul> <li>one</li> <li>two</li> </ul>" in flat
    # raw HTML is text, an image is not loaded, a link is not followed
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in flat and "<script" not in flat
    assert "<img" not in flat and "href" not in flat and "!figure (https://example.org/x.png)" in flat
    assert flat.endswith("https://example.org</p> <h2 id=\"title-x-2\">Title &lt;x&gt;</h2>")
