"""Shared test set-up: data root, shared specs folder, quiet plotting, fast torch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FLTRUST_SHARED", REPO.parent / "shared"))

# Point the kit at the real datasets beside the repo (never copied into it) unless told otherwise.
if "FLTRUST_DATA" not in os.environ and (SHARED / "datasets").is_dir():
    os.environ["FLTRUST_DATA"] = str(SHARED / "datasets")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The read-only ../shared folder (specs, papers, datasets); skips when absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared folder {SHARED} not found (set FLTRUST_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real data root; skips when it does not exist."""
    root = Path(os.environ.get("FLTRUST_DATA", REPO / "data"))
    if not root.is_dir():
        pytest.skip(f"data root {root} not found")
    return root
