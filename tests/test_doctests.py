"""The docstring examples (``>>>``) of every fltrust module run as tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import fltrust

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(fltrust.__path__, "fltrust.") if not info.name.endswith("__main__")
)
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def examples(name: str) -> list[doctest.DocTest]:
    return [t for t in doctest.DocTestFinder().find(importlib.import_module(name)) if t.examples]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, capsys):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in examples(name):
        runner.run(test)
    report = capsys.readouterr().out
    assert runner.failures == 0, report


def test_the_package_has_docstring_examples():
    # guards the test above against finding nothing (a renamed package, a broken walk)
    assert sum(len(t.examples) for name in MODULES for t in examples(name)) >= 50
