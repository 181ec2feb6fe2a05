"""Flower test set-up (see tests/flower_testing.py): the in-process Grid, tiny configurations, fixtures."""

from __future__ import annotations

import pytest

pytest.importorskip("flwr")

from flower_testing import FAIRNESS_KEYS, LocalGrid, compare_runs, run_local, tiny_config  # noqa: F401
from flower_testing import local_flower as _local_flower


@pytest.fixture
def local_flower(monkeypatch):
    """Make ``run.engine: flower`` run on a :class:`LocalGrid` instead of Ray (fast, same code)."""
    return _local_flower(monkeypatch)


@pytest.fixture
def compare():
    return compare_runs
