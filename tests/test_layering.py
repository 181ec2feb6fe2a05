"""The library's layers: every import points down this table, never up (README "Layout").

Each top-level module or package of ``fltrust`` sits in one layer; a module may import modules of
its own layer and of the layers above it in :data:`LAYERS`, never of a later layer. Every import
statement counts, at any depth: lazy imports inside functions and ``TYPE_CHECKING`` blocks too.
The metrics of both papers (``metrics``, ``trust``) and the run records (``runs``) sit just above
the first layer (the names, their registries, the settings and the core), so that no engine,
configuration or reproduction can reach into them from below. Import cycles are checked in ``tests/test_experiment.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "fltrust"

LAYERS: list[tuple[str, ...]] = [
    ("fltrust", "names", "registry", "settings", "core", "blas"),  # names and their registries, typed settings, plain records
    ("metrics", "trust", "runs"),                        # both papers' metrics; run folders
    ("config",),                                         # the YAML sections, typed
    ("data", "partition", "models"),                     # the components
    ("compatibility", "federation", "attacks", "faults"),  # a federation of them
    ("algorithms", "flower"),                            # strategies, aggregation, privacy; anyone's Flower app
    ("engines",),                                        # what runs the rounds
    ("experiment", "viz"),                               # the composition root; plots of plain tables
    ("repro", "demo", "cli", "__main__"),                # the reproductions and the command line
]
LAYER = {name: index for index, names in enumerate(LAYERS) for name in names}


def top_level(module: str) -> str | None:
    """``fltrust.a.b`` -> ``a`` (``fltrust`` itself for the package); None outside fltrust."""
    parts = module.split(".")
    if parts[0] != "fltrust":
        return None
    return parts[1] if len(parts) > 1 else "fltrust"


def imports(path: Path) -> set[str]:
    """Every absolute fltrust module a file imports (``from fltrust.a import b`` counts ``fltrust.a``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return {n for n in names if n == "fltrust" or n.startswith("fltrust.")}


def owner(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py") if len(relative.parts) > 1 or relative.name != "__init__.py" \
        else "fltrust"


def test_every_module_is_in_one_layer():
    names = {owner(p) for p in PACKAGE.rglob("*.py")}
    assert names - set(LAYER) == set(), "add the new module or package to LAYERS (and to the README's layout)"
    assert set(LAYER) - names == set(), "LAYERS names a module that no longer exists"


def test_no_import_points_up():
    arrows_up = []
    for path in PACKAGE.rglob("*.py"):
        source = owner(path)
        for target in map(top_level, imports(path)):
            if target is not None and LAYER[target] > LAYER[source]:
                arrows_up.append(f"{path.relative_to(PACKAGE.parent)} imports fltrust.{target} "
                                 f"(layer {LAYER[target]}, above its own layer {LAYER[source]})")
    assert arrows_up == []


@pytest.mark.parametrize("package", ["metrics", "trust"])
def test_the_metrics_import_only_the_first_layer(package):
    allowed = {*LAYERS[0], package}
    offenders = {str(p.relative_to(PACKAGE.parent)): sorted(t for t in map(top_level, imports(p)) if t not in allowed)
                 for p in (PACKAGE / package).rglob("*.py")}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_a_detected_arrow_up_is_reported(tmp_path):
    # the check can fail: a core module that imported an engine would be named
    fake = tmp_path / "fltrust" / "core" / "bad.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from fltrust.engines.inprocess import Engine\n")
    source, target = "core", top_level(next(iter(imports(fake))))
    assert LAYER[target] > LAYER[source]
