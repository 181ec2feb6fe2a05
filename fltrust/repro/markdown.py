"""Small Markdown helpers shared by the papers' RESULTS.md writers."""

from __future__ import annotations

import math
from typing import Any


def is_missing(value: Any) -> bool:
    """True for ``None`` and NaN (a value a table shows as a dash)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_number(value: Any, digits: int, *, signed: bool = False) -> str:
    """``value`` with ``digits`` decimals (``+`` sign when ``signed``); a dash when missing."""
    if is_missing(value):
        return "–"
    return f"{float(value):+.{digits}f}" if signed else f"{float(value):.{digits}f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]
