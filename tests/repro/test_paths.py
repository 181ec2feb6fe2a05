"""Where the reproduction's files are: outputs under repo_root, inputs under resource_root (fltrust.repro.paths)."""

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
from fltrust.repro.paths import MARKER, REPO_ENV, is_checkout, repo_root, resource_root

CHECKOUT = Path(__file__).resolve().parents[2]


def _checkout(folder: Path) -> Path:
    (folder / MARKER).parent.mkdir(parents=True)
    (folder / MARKER).write_text("tolerance: 0.1\n")
    return folder


def test_the_source_tree_is_the_default(monkeypatch, tmp_path):
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.chdir(_checkout(tmp_path / "other"))  # another checkout as cwd: the package's own wins

    assert repo_root() == CHECKOUT and resource_root() == CHECKOUT
    assert {batch.REPO, fairness_run.REPO, trust_experiments.REPO, html_report.REPO} == {CHECKOUT}
    assert fairness_run.PAPER_DIR == fairness_run.PAPER_INPUTS == CHECKOUT / "papers_repro" / "fairness_analytics"
    assert trust_experiments.PAPER_DIR == trust_experiments.PAPER_INPUTS == CHECKOUT / "papers_repro" / "federatedtrust"
    assert batch.NOTEBOOKS == CHECKOUT / "notebooks"


def test_argument_then_environment_win(monkeypatch, tmp_path):
    chosen, named = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    monkeypatch.setenv(REPO_ENV, str(named))

    assert repo_root(chosen) == chosen and repo_root() == named


def test_an_environment_folder_without_papers_repro_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(REPO_ENV, str(tmp_path))
    (tmp_path / "papers_repro").mkdir()  # a folder of outputs (results/, RESULTS.md) is not a checkout
    with pytest.raises(ConfigError, match=rf"^{REPO_ENV}={tmp_path} has no {MARKER}; set it"):
        repo_root()


def test_an_installed_package_uses_the_checkout_around_the_cwd(monkeypatch, tmp_path):
    # Prepare: the package outside any checkout (site-packages of a wheel install)
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.setattr(paths, "_PACKAGE_CHECKOUT", tmp_path / "site-packages")
    monkeypatch.setattr(paths, "PACKAGED_RESOURCES", _checkout(tmp_path / "site-packages" / "fltrust" / "_resources"))
    checkout = _checkout(tmp_path / "work")
    (checkout / "notebooks" / "fairness").mkdir(parents=True)

    # Execute / Assert: from the checkout or any folder inside it, the checkout for both
    monkeypatch.chdir(checkout / "notebooks" / "fairness")
    assert repo_root() == checkout and resource_root() == checkout
    # elsewhere outputs go to the cwd and inputs come from the wheel's packaged copy
    monkeypatch.chdir(tmp_path)
    assert repo_root() == tmp_path and resource_root() == paths.PACKAGED_RESOURCES


def test_a_folder_of_wheel_outputs_is_not_taken_for_a_checkout(monkeypatch, tmp_path):
    # Prepare: a wheel install; the cwd holds what a full batch and `fltrust report` wrote there
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.setattr(paths, "_PACKAGE_CHECKOUT", tmp_path / "site-packages")
    monkeypatch.setattr(paths, "PACKAGED_RESOURCES", _checkout(tmp_path / "site-packages" / "fltrust" / "_resources"))
    work = tmp_path / "work"
    for folder in ("papers_repro/fairness_analytics/results", "figures/fairness", "runs/repro"):
        (work / folder).mkdir(parents=True)
    (work / "papers_repro" / "fairness_analytics" / "report.html").write_text("<html></html>")
    monkeypatch.chdir(work)

    # Execute / Assert: the next command still reads the packaged inputs and writes to the cwd
    assert not is_checkout(work)
    assert repo_root() == work and resource_root() == paths.PACKAGED_RESOURCES


def test_a_bare_package_reads_and_writes_the_cwd(monkeypatch, tmp_path):
    # a copy of the package without packaged inputs: the first input read names a path under the cwd
    monkeypatch.delenv(REPO_ENV, raising=False)
    monkeypatch.setattr(paths, "_PACKAGE_CHECKOUT", tmp_path / "site")
    monkeypatch.setattr(paths, "PACKAGED_RESOURCES", tmp_path / "site" / "fltrust" / "_resources")
    monkeypatch.chdir(tmp_path)
    assert repo_root() == resource_root() == tmp_path


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
