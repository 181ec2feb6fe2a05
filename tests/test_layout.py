"""The test tree: pytest imports test modules outside a package by their file name alone
(rootdir-relative, the subfolders' ``conftest`` imports rely on it), so two such files with one
name stop the whole collection with "import file mismatch"."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_two_top_level_test_modules_share_a_name() -> None:
    names = [p.name for p in TESTS.rglob("test_*.py") if not (p.parent / "__init__.py").is_file()]
    assert len(names) > 50  # the walk found the suite
    assert [n for n, count in Counter(names).items() if count > 1] == []
