"""Shared test set-up: data root, vendored golden inputs, quiet plotting, fast torch.

Tests never read files outside the repository, except the real datasets of the ``realdata`` tests:

- the FederatedTrust example inputs of the golden vectors are vendored in ``tests/trust/golden/``
  (fixture ``golden_dir``);
- the data root is ``$FLTRUST_DATA``, else ``../shared/datasets`` when it exists (``$FLTRUST_SHARED``
  moves ``../shared``), else ``./data`` -- the same rule as the Makefile (fixture ``data_root``).

Real-data tests (marker ``realdata``) are deselected, with one summary line, when the data root holds
no real dataset at all (a bare clone), and skip when only some files are missing, except on CI (``CI=true``):
there a missing data root or data file FAILS the test, so that a CI machine without the data cannot
pass silently. Deselect them explicitly with ``-m "not realdata"`` if that is what you want.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FLTRUST_SHARED", REPO.parent / "shared"))
GOLDEN = REPO / "tests" / "trust" / "golden"
CI = os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}
OTHER_MACHINE = "other machine kind:"
"""How a ``realdata`` test's skip reason starts when the data is present but the machine is of another
kind than the test needs (kept a skip under ``CI=true``)."""
CI_HINT = "CI=true requires the real data: set FLTRUST_DATA to the data root (or deselect with -m 'not realdata')"

# Point the kit at the real datasets beside the repo (never copied into it) unless told otherwise.
if "FLTRUST_DATA" not in os.environ and (SHARED / "datasets").is_dir():
    os.environ["FLTRUST_DATA"] = str(SHARED / "datasets")
# Figures of the pytest process itself go to files; notebooks executed by papermill do not inherit
# this (fltrust.repro.batch.execute_notebook removes MPLBACKEND for the kernel: inline figures).
os.environ.setdefault("MPLBACKEND", "Agg")


def missing_real_data(message: str) -> None:
    """Skip the test because real data is missing -- or, with ``CI=true``, fail it (one line)."""
    if CI:
        pytest.fail(f"{message}; {CI_HINT}", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def fairness_rounds():
    """Per-round fairness notions of two repeats x 6 rounds, as a condition's result holds them:
    F_T of repeat r in round k = 0.4 + 0.1 r + 0.01 k (the plot tests' frame)."""
    import pandas as pd

    rows = []
    for repeat in range(2):
        for k in range(1, 7):
            rows.append({"repeat": repeat, "round": k, "f_j": 0.2, "f_g": 0.6, "f_r": 0.3 + 0.02 * k,
                         "f_o": 0.9, "F_T": 0.4 + 0.1 * repeat + 0.01 * k,
                         "mean_local_accuracy": 0.9, "aux_accuracy": 0.85})
    return pd.DataFrame(rows)


@pytest.fixture(scope="session")
def golden_dir() -> Path:
    """The vendored FederatedTrust example inputs (``tests/trust/golden/``, see its README)."""
    if not (GOLDEN / "factsheet.json").is_file():
        pytest.fail(f"vendored golden-vector inputs missing from {GOLDEN}; restore them with git", pytrace=False)
    return GOLDEN


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The real data root; skips when it does not exist (fails with ``CI=true``)."""
    root = Path(os.environ.get("FLTRUST_DATA", REPO / "data"))
    if not root.is_dir():
        missing_real_data(f"data root {root} not found")
    return root


@pytest.fixture(scope="session")
def require_real():
    """``require_real(path)``: return ``path`` when it exists, else skip (fail with ``CI=true``) naming it."""

    def check(path: Path) -> Path:
        if not Path(path).exists():
            missing_real_data(f"real data file {path} not found")
        return Path(path)

    return check


REAL_DATASETS = ("cifar10", "femnist", "nsl_kdd", "n_baiot", "ffa_results")  # folders; ffa_results: the fairness authors' runs


def _no_real_data() -> Path | None:
    """The data root when it holds none of the real datasets (a bare clone), else None."""
    root = Path(os.environ.get("FLTRUST_DATA", REPO / "data"))
    return None if any((root / name).is_dir() for name in REAL_DATASETS) else root


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without any real dataset (and not on CI), the ``realdata`` tests are deselected, and said so.

    They are not skipped one by one: a bare clone has nothing for them to read. With ``CI=true`` they
    stay selected and fail; with some datasets present, the missing ones skip individually.
    """
    root = _no_real_data()
    if CI or root is None:
        return
    real = [item for item in items if item.get_closest_marker("realdata")]
    if real:
        config.hook.pytest_deselected(items=real)
        items[:] = [item for item in items if not item.get_closest_marker("realdata")]
        config._fltrust_no_data = (len(real), root)  # reported in the terminal summary


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    info = getattr(config, "_fltrust_no_data", None)
    if info:
        terminalreporter.write_line(f"{info[0]} realdata tests deselected: no real dataset under {info[1]} "
                                    "(set FLTRUST_DATA to run them)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """With ``CI=true``, a skipped ``realdata`` test (its files are missing) is reported as failed.

    A skip whose reason starts with :data:`OTHER_MACHINE` stays a skip: the data is there, but the test
    checks something only this kind of machine can show (a bit-identical rerun needs the recorded kernels).
    """
    outcome = yield
    report = outcome.get_result()
    if not (CI and report.skipped and item.get_closest_marker("realdata")) or hasattr(report, "wasxfail"):
        return
    if call.excinfo is None or not call.excinfo.errisinstance(pytest.skip.Exception):
        return
    reason = str(call.excinfo.value.msg if hasattr(call.excinfo.value, "msg") else call.excinfo.value)
    if reason.startswith(OTHER_MACHINE):
        return
    report.outcome = "failed"
    report.longrepr = f"real data missing: {reason}; {CI_HINT}"
