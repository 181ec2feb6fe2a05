"""Flower test set-up: the fixtures and helpers are in tests/flower_testing.py."""

import pytest

pytest.importorskip("flwr")
from flower_testing import compare_fixture, local_flower_fixture  # noqa: F401 - fixtures
