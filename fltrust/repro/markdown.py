"""Cell formatting and the Jinja2 templates shared by the papers' RESULTS.md writers.

Each RESULTS.md is a template shipped in the package (``fltrust/repro/templates/<paper>/*.md.j2``)
rendered by :func:`render` over the tables that the writers build in Python as pandas DataFrames
of display strings (the column labels are the table's header). The templates hold the prose and
the layout; this module holds the only cell formatters, used by both papers and by the templates
as filters:

================  ==============================================================================
:func:`fmt`       a number with a fixed number of decimals; a dash when missing
:func:`fmt_raw`   a raw FactSheet value (4 significant digits, ``true``/``false``, text as is)
:func:`mark`      the verdict of a paper-vs-ours comparison: ✓✓, ✓, ✗, or the missing text
:func:`table`     a DataFrame as the lines of a GitHub Markdown table (filter ``table``)
================  ==============================================================================

Example
-------
>>> import pandas as pd
>>> frame = pd.DataFrame([["exp1", fmt(0.5612, 3), fmt(-0.004, 3, signed=True) + " " + mark(True)]],
...                      columns=["experiment", "ours", "Δ"])
>>> print(table(frame))
| experiment | ours | Δ |
|---|---|---|
| exp1 | 0.561 | -0.004 ✓ |
"""

from __future__ import annotations

import math
from functools import cache
from collections.abc import Iterable
from typing import Any

import jinja2
import pandas as pd

__all__ = ["DASH", "fmt", "fmt_raw", "grouped", "is_missing", "lines", "mark", "render", "table"]

DASH = "–"
"""What a table shows for a missing value (an en dash)."""


def is_missing(value: Any) -> bool:
    """True for ``None`` and NaN (a value a table shows as a dash).

    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0)
    (True, True, False)
    """
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt(value: Any, digits: int, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals, a ``+`` sign when ``signed``; a dash when missing.

    Parameters
    ----------
    value : number or None
        The value; ``None`` and NaN are missing.
    digits : int
        Decimals (both papers state theirs: FederatedTrust scores 2 or 3, fairness F_T 3).
    signed : bool
        Always show the sign (a difference Δ).

    Returns
    -------
    str

    Examples
    --------
    >>> fmt(0.5, 3), fmt(0.0, 2, signed=True), fmt(None, 2)
    ('0.500', '+0.00', '–')
    """
    if is_missing(value):
        return DASH
    return f"{float(value):+.{digits}f}" if signed else f"{float(value):.{digits}f}"


def fmt_raw(value: Any) -> str:
    """A raw metric value as a FactSheet holds it: 4 significant digits, ``true``/``false``, text as is.

    >>> fmt_raw(8452), fmt_raw(1.91234), fmt_raw(True), fmt_raw("FedAvg"), fmt_raw(None)
    ('8452', '1.912', 'true', 'FedAvg', '–')
    """
    if is_missing(value):
        return DASH
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def mark(within: Any, strict: Any = None, *, missing: str = DASH) -> str:
    """The verdict of one paper-vs-ours comparison.

    Parameters
    ----------
    within : bool or None
        |Δ| is within the paper's tolerance; None or NaN where there is nothing to compare
        (no paper value, a condition not run).
    strict : bool or None, optional
        |Δ| is within the tighter band (the fairness paper's ±0.05); gives ✓✓ when true.
    missing : str
        Returned when ``within`` is missing (default: a dash).

    Returns
    -------
    str
        ``"✓✓"`` (within the strict band), ``"✓"`` (within the tolerance), ``"✗"`` (outside),
        or ``missing``.

    Examples
    --------
    >>> mark(True), mark(False), mark(True, strict=True), mark(True, strict=False), mark(None), mark(None, missing="")
    ('✓', '✗', '✓✓', '✓', '–', '')
    """
    if is_missing(within):
        return missing
    if not is_missing(strict) and bool(strict):
        return "✓✓"
    return "✓" if bool(within) else "✗"


def table(frame: pd.DataFrame) -> str:
    """The lines of a GitHub-flavoured Markdown table: header = the column labels, cells as they are.

    Parameters
    ----------
    frame : pandas.DataFrame
        Display strings (repeated column labels are allowed, e.g. one ``Δ`` per mode).

    Returns
    -------
    str
        Header, separator and one line per row, joined by newlines (no trailing newline).
    """
    header = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in frame.itertuples(index=False, name=None)]
    return "\n".join(lines)


@cache
def _environment() -> jinja2.Environment:
    """The templates of ``fltrust/repro/templates`` (package data, so a wheel has them too).

    Markdown is not HTML, so nothing in a ``*.md.j2`` template is escaped; an HTML template
    (``*.html.j2``, the page of :mod:`fltrust.repro.html_report`) escapes every variable not marked
    ``|safe``. A name the writer did not pass is an error
    (``StrictUndefined``), never an empty string. Block tags on their own line leave no blank
    line (``trim_blocks``, ``lstrip_blocks``) and the file's final newline is kept.
    """
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("fltrust.repro", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["html.j2"], default_for_string=False, default=False),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(fmt=fmt, fmt_raw=fmt_raw, mark=mark, table=table)
    return env


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` (relative to ``fltrust/repro/templates``) with ``context``.

    Parameters
    ----------
    name : str
        E.g. ``"trust/results.md.j2"``.
    **context
        The template's variables; one it uses but is not given raises ``jinja2.UndefinedError``.

    Returns
    -------
    str
        The rendered text.
    """
    return _environment().get_template(name).render(**context)


def lines(text: str) -> list[str]:
    """The lines of a rendered section whose text ends with a newline (``""`` gives ``[]``).

    A section's lines, joined by newlines and followed by one, are its text again:
    ``"\\n".join(lines(t)) + "\\n" == t`` for every non-empty ``t`` that ends with a newline.

    >>> lines("## A\\n\\ntext\\n\\n")
    ['## A', '', 'text', '']
    """
    return text.removesuffix("\n").split("\n") if text else []


def grouped(pairs: Iterable[tuple[Any, str]]) -> dict[Any, list[str]]:
    """The names of ``(key, name)`` pairs by key, each name once, both in first-seen order.

    >>> grouped([("a", "x"), ("b", "y"), ("a", "x"), ("a", "z")])
    {'a': ['x', 'z'], 'b': ['y']}
    """
    out: dict[Any, dict[str, None]] = {}
    for key, name in pairs:
        out.setdefault(key, {})[name] = None
    return {key: list(names) for key, names in out.items()}
