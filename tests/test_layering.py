"""Layering of the settings, the configuration and FederatedTrust: who may import whom.

``fltrust.config`` builds the typed settings (:mod:`fltrust.settings`) and must not import
``fltrust.trust``; ``fltrust.trust`` takes settings and :class:`~fltrust.trust.inputs.TrustInputs`,
never an experiment configuration. Checked on the source (every import statement, at any depth).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fltrust"


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("package", "forbidden"), [("config", "fltrust.trust"), ("trust", "fltrust.config")])
def test_a_package_does_not_import_the_other(package, forbidden):
    offenders = {str(path.relative_to(PACKAGE.parent)): sorted(n for n in imported(path)
                                                               if n == forbidden or n.startswith(forbidden + "."))
                 for path in (PACKAGE / package).rglob("*.py")}
    assert {path: names for path, names in offenders.items() if names} == {}
