"""The shared RESULTS.md formatters and the template environment (fltrust.repro.markdown)."""

from __future__ import annotations

import math

import jinja2
import pandas as pd
import pytest

from fltrust.repro import markdown
from fltrust.repro.markdown import fmt, fmt_raw, lines, mark, render, table

TEMPLATES = {
    "fairness/results.md.j2", "fairness/misses.md.j2", "fairness/data_scale.md.j2", "fairness/authors.md.j2",
    "fairness/studies.md.j2",
    "trust/results.md.j2", "trust/dp.md.j2", "trust/extended.md.j2", "trust/ablation.md.j2", "trust/normalize.md.j2",
    "trust/n_baiot_standin.md.j2", "trust/n_baiot_summary.md.j2",
    "provenance.md.j2", "report.html.j2",
}


def test_fmt_rounds_signs_and_dashes():
    assert fmt(0.12345, 3) == "0.123" and fmt(0.12355, 2) == "0.12" and fmt(7, 0) == "7"
    assert fmt(0.05, 3, signed=True) == "+0.050" and fmt(-0.004, 2, signed=True) == "-0.00"
    assert fmt(None, 3) == fmt(math.nan, 2, signed=True) == "–"


def test_fmt_raw_keeps_four_significant_digits():
    assert fmt_raw(6603902) == "6.604e+06" and fmt_raw(0.123456) == "0.1235" and fmt_raw(12) == "12"
    assert fmt_raw(False) == "false" and fmt_raw("krum") == "krum" and fmt_raw(math.nan) == "–"


@pytest.mark.parametrize(("within", "strict", "expected"), [
    (True, True, "✓✓"), (True, False, "✓"), (True, None, "✓"), (True, math.nan, "✓"), (False, False, "✗"),
    (None, None, "–"), (math.nan, True, "–"),
])
def test_mark_is_the_verdict_of_both_papers(within, strict, expected):
    assert mark(within, strict) == expected


def test_mark_missing_text_is_configurable():
    assert mark(None, missing="") == "" and mark(False, missing="") == "✗"


def test_table_has_header_separator_and_rows_with_repeated_labels():
    frame = pd.DataFrame([["exp1", "0.5", "+0.01 ✗", "0.6", "–"]], columns=["exp", "a", "Δ", "b", "Δ"])
    assert table(frame).split("\n") == ["| exp | a | Δ | b | Δ |", "|---|---|---|---|---|",
                                        "| exp1 | 0.5 | +0.01 ✗ | 0.6 | – |"]
    assert table(frame.iloc[:0]) == "| exp | a | Δ | b | Δ |\n|---|---|---|---|---|"


def test_lines_undo_the_join_of_a_section():
    text = "## A\n\nsome text\n\n"
    assert lines(text) == ["## A", "", "some text", ""] and "\n".join(lines(text)) + "\n" == text
    assert lines("") == []


def test_every_template_ships_in_the_package():
    env = markdown._environment()
    assert set(env.list_templates(extensions=["j2"])) == TEMPLATES


def test_a_variable_the_writer_forgot_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError, match="dp"):
        render("trust/dp.md.j2")


def test_the_html_page_escapes_every_value_but_the_rendered_body():
    page = render("report.html.j2", title="A <b>", count=1, results_dir="r&d", figures_dir="f", figure_count=1,
                  body="<h1>kept</h1>", summary=[{"name": 'x"<y>.png', "data": "QUJD"}], groups={},
                  commands=["fltrust repro <x>"])
    assert "A &lt;b&gt;" in page and "r&amp;d" in page and "<h1>kept</h1>" in page
    assert 'alt="x&#34;&lt;y&gt;.png"' in page and "fltrust repro &lt;x&gt;" in page and "<b>" not in page


def test_markdown_is_not_html_escaped():
    frame = pd.DataFrame([["a < b & c"]], columns=["x"])
    text = "\n".join(lines(render("fairness/data_scale.md.j2", scale=frame)))
    assert "| a < b & c |" in text and "&lt;" not in text
