"""Where the reproduction's files are: one root (fltrust.repro.paths.repo_root)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fltrust.config import ConfigError
from fltrust.repro import batch, html_report, paths
from fltrust.repro.fairness import run as fairness_run
from fltrust.repro.trust import experiments as trust_experiments
from fltrust.repro.trust import report as trust_report
from fltrust.repro.paths import REPO_ENV, repo_root

CHECKOUT = Path(__file__).resolve().parents[2]


def _checkout(folder: Path) -> Path:
    (folder / "papers_repro").mkdir(parents=True)
    return folder


def test_the_source_tree_is_the_default(monkeypatch, tmp_path):
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.chdir(_checkout(tmp_path / "other"))  # another checkout as cwd: the package's own wins

    assert repo_root() == CHECKOUT
    assert {batch.REPO, fairness_run.REPO, trust_experiments.REPO, html_report.REPO} == {CHECKOUT}
    assert fairness_run.PAPER_DIR == CHECKOUT / "papers_repro" / "fairness_analytics"


def test_argument_then_environment_win(monkeypatch, tmp_path):
    chosen, named = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    monkeypatch.setenv(REPO_ENV, str(named))

    assert repo_root(chosen) == chosen and repo_root() == named


def test_an_environment_folder_without_papers_repro_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(REPO_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match=rf"^{REPO_ENV}={tmp_path} has no papers_repro/ folder; set it"):
        repo_root()


def test_an_installed_package_uses_the_checkout_around_the_cwd(monkeypatch, tmp_path):
    # Prepare: the package outside any checkout (site-packages of a wheel install)
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.setattr(paths, "_PACKAGE_CHECKOUT", tmp_path / "site-packages")
    checkout = _checkout(tmp_path / "work")
    (checkout / "notebooks" / "fairness").mkdir(parents=True)

    # Execute / Assert: from the checkout or any folder inside it; elsewhere the cwd itself
    monkeypatch.chdir(checkout / "notebooks" / "fairness")
    assert repo_root() == checkout
    monkeypatch.chdir(tmp_path)
    assert repo_root() == tmp_path


def test_a_copied_package_reads_the_checkout_named_by_the_environment(tmp_path):
    # Prepare: the package alone (what a wheel installs), no papers_repro/ next to it
    shutil.copytree(CHECKOUT / "fltrust", tmp_path / "site" / "fltrust", ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import fltrust; from fltrust.repro.fairness import run; from fltrust.repro.trust import report; "
            "print(fltrust.__file__); print(run.PAPER_DIR); print(report.load_reported()['tolerance'])")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), REPO_ENV: str(CHECKOUT)}

    # Execute: from a folder outside any checkout
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          check=False)

    # Assert: the copied package ran, with the paper folder and reported.yaml of the named checkout
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [str(tmp_path / "site" / "fltrust" / "__init__.py"),
                                           str(CHECKOUT / "papers_repro" / "fairness_analytics"),
                                           str(trust_report.load_reported()["tolerance"])]
