"""Every ``__all__`` in the package names things its module defines or imports, so that
``from fltrust.<module> import *`` works (a stale name there raises AttributeError)."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import fltrust

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(fltrust.__path__, prefix="fltrust.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    missing = [item for item in getattr(module, "__all__", ()) if not hasattr(module, item)]
    assert not missing, f"{name}.__all__ names {missing}, which the module does not define"
