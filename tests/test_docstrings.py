"""The public functions of ``fltrust.algorithms``, ``fltrust.engines``, ``fltrust.core``, ``fltrust.flower``,
``fltrust.metrics`` and ``fltrust.trust`` document their parameters.

Public means: not starting with ``_``, defined in the module (not imported into it) and, where the
module has ``__all__``, listed there; methods count when their class is public and they are defined
in that class. A function with two or more parameters (``self``/``cls`` not counted) needs a
numpy-style ``Parameters`` section naming each of them; a section never names a parameter the
signature lacks; every public function and method of ``fltrust.flower`` has a docstring. The
papers' metrics (:data:`STRICT`) hold the full rule: a docstring on every public function, a
``Parameters`` section for every parameter, and a ``Returns`` (or ``Yields``) section whenever the
return annotation is not ``None``.
Docstrings are read with :func:`inspect.getdoc`, so an override without one inherits its base's.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

PACKAGES = ("fltrust.algorithms", "fltrust.engines", "fltrust.core", "fltrust.flower", "fltrust.metrics", "fltrust.trust")
STRICT = ("fltrust.metrics", "fltrust.trust")
"""Packages whose every public function documents all its parameters and what it returns."""
SECTION = re.compile(r"^Parameters\n-+\n(?P<body>.*?)(?=^\S[^\n]*\n-+\n|\Z)", re.M | re.S)
RETURNS = re.compile(r"^(?:Returns|Yields)\n-+\n\S", re.M)


def modules(package: str) -> list[ModuleType]:
    if package in ("fltrust.flower", "fltrust.engines"):
        pytest.importorskip("flwr")
    root = importlib.import_module(package)
    return [root] + [importlib.import_module(i.name) for i in pkgutil.walk_packages(root.__path__, package + ".")]


def public_functions(module: ModuleType) -> Iterator[tuple[str, Callable]]:
    listed = getattr(module, "__all__", None)
    for name, obj in vars(module).items():
        if name.startswith("_") or (listed is not None and name not in listed):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            yield f"{module.__name__}.{name}", obj
        elif inspect.isclass(obj):
            for method_name, method in vars(obj).items():
                if isinstance(method, (staticmethod, classmethod)):
                    method = method.__func__
                if not method_name.startswith("_") and inspect.isfunction(method):
                    # bound to the class so that getdoc can inherit a base class's docstring
                    yield f"{module.__name__}.{name}.{method_name}", getattr(obj, method_name)


def parameter_names(function: Callable) -> list[str]:
    """The parameters a docstring must name: not ``self``/``cls``, and not private ones (``_name``), such
    as the ``_ray_trace_ctx`` keyword Ray adds to the methods of a class it turns into an actor."""
    names = list(inspect.signature(inspect.unwrap(function)).parameters)
    names = names[1:] if names and names[0] in ("self", "cls") else names
    return [name for name in names if not name.startswith("_")]


def returns_something(function: Callable) -> bool:
    """Whether the return annotation is neither absent nor ``None`` (``-> None`` documents itself)."""
    annotation = inspect.signature(inspect.unwrap(function)).return_annotation
    return annotation not in (inspect.Signature.empty, None, "None")


def documented_names(doc: str) -> set[str] | None:
    """The names a numpy-style ``Parameters`` section lists (``a, b : int`` lists two); None without one."""
    found = SECTION.search(doc)
    if found is None:
        return None
    names: set[str] = set()
    for line in found["body"].splitlines():
        if line and not line[0].isspace():
            names.update(part.strip().lstrip("*") for part in line.split(" : ")[0].split(","))
    return names


def problems(package: str, found_modules: list[ModuleType]) -> list[str]:
    found = []
    for module in found_modules:
        for qualname, function in public_functions(module):
            doc = inspect.getdoc(function) or ""
            params = parameter_names(function)
            documented = documented_names(doc)
            strict = package in STRICT
            if (package == "fltrust.flower" or strict) and not doc:
                found.append(f"{qualname}: no docstring")
            if len(params) >= (1 if strict else 2) and documented is None:
                found.append(f"{qualname}: no Parameters section for {', '.join(params)}")
            if strict and returns_something(function) and not RETURNS.search(doc):
                found.append(f"{qualname}: no Returns section")
            elif documented is not None:
                missing = [p for p in params if p not in documented]
                stale = sorted(documented - set(params))
                if missing:
                    found.append(f"{qualname}: Parameters does not name {', '.join(missing)}")
                if stale:
                    found.append(f"{qualname}: Parameters names {', '.join(stale)}, not in the signature")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_public_functions_document_their_parameters(package):
    found = problems(package, modules(package))
    assert not found, f"{len(found)} docstring problems in {package}:\n" + "\n".join(found)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_walk_finds_multi_argument_functions(package):
    # guards the test above against finding nothing (a renamed package, a broken filter)
    multi = [q for m in modules(package) for q, f in public_functions(m) if len(parameter_names(f)) >= 2]
    assert len(multi) >= 10, multi


def test_documented_names_reads_a_numpy_section():
    doc = inspect.cleandoc(
        """Summary.

        Parameters
        ----------
        a, b : int
            Two numbers.
        *rest
            More.
        c
            Indented lines below a name are its description: not_a_name : str

        Returns
        -------
        out : int
        """
    )
    assert documented_names(doc) == {"a", "b", "rest", "c"}
    assert documented_names("Summary without a section.") is None


def test_problems_names_an_undocumented_parameter():
    module = ModuleType("fltrust.engines.fake")

    def covered(x, y):
        """Add.

        Parameters
        ----------
        x, y : float
            Summands.
        """

    def partial(x, y):
        """Add.

        Parameters
        ----------
        x : float
            First summand.
        z : float
            Gone.
        """

    def bare(x, y):
        """Add."""

    for function in (covered, partial, bare):
        function.__module__ = module.__name__
        setattr(module, function.__name__, function)
    assert problems("fltrust.engines", [module]) == [
        "fltrust.engines.fake.partial: Parameters does not name y",
        "fltrust.engines.fake.partial: Parameters names z, not in the signature",
        "fltrust.engines.fake.bare: no Parameters section for x, y",
    ]


def test_problems_asks_the_metrics_for_every_parameter_and_the_return_value():
    module = ModuleType("fltrust.metrics.fake")

    def one(x) -> float:
        """Half.

        Parameters
        ----------
        x : float
            A number.
        """

    def none(x) -> None:
        """Nothing."""

    for function in (one, none):
        function.__module__ = module.__name__
        setattr(module, function.__name__, function)
    assert problems("fltrust.metrics", [module]) == [
        "fltrust.metrics.fake.one: no Returns section",
        "fltrust.metrics.fake.none: no Parameters section for x",
    ]
    assert problems("fltrust.core", [module]) == []


def test_problems_asks_flower_for_a_docstring():
    module = ModuleType("fltrust.flower.fake")

    def silent(x):
        pass

    silent.__module__ = module.__name__
    module.silent = silent
    assert problems("fltrust.flower", [module]) == ["fltrust.flower.fake.silent: no docstring"]
    assert problems("fltrust.engines", [module]) == []
