"""The wheel, installed outside any checkout: it carries the reproduction's inputs and writes under the cwd.

The wheel is built the way ``python -m build`` builds it (an sdist first, then the wheel from the
unpacked sdist, so the sdist is checked to hold what a wheel build needs), with this environment's
setuptools and no download. It is installed with ``--no-deps`` into a fresh virtual environment
whose only other content is a ``.pth`` file adding this environment's ``site-packages`` behind the
venv's own: the wheel's ``fltrust`` is the one imported, and the pinned stack is not installed twice.
Then ``fltrust demo`` (synthetic stand-ins: an empty data root), ``fltrust repro fairness --quick``
(papermill kernels; the demo runs the same notebooks in-process, and all five trust experiments
too, so ``fltrust repro trust --quick`` executes nothing the demo does not) and ``fltrust report``
run in a folder outside the checkout; the batch runs after the report has written
``papers_repro/<paper>/report.html`` there, so a folder of outputs is shown not to pass for a checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
RESOURCE_PREFIX = "fltrust/_resources/"
CONDITION = "fedavg_nslkdd_100c_iid"
WRITTEN_BY_COMMANDS = ("papers_repro", "notebooks", "figures", "runs")
"""Checkout folders a command resolving its paths wrongly would write into."""


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{command} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _source_copy(target: Path) -> Path:
    """The checkout's files (tracked, and untracked ones git does not ignore), copied to ``target``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=CHECKOUT,
                            capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the packaging test builds from the checkout's git-listed files")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_bytes(source.read_bytes())
    return target


def _build_wheel(tmp_path: Path) -> Path:
    """sdist from a copy of the checkout, then the wheel from the unpacked sdist (no isolation, no index)."""
    source = _source_copy(tmp_path / "source")
    dist = tmp_path / "dist"
    dist.mkdir()
    sdist_name = _run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                       "print(build_meta.build_sdist(sys.argv[1]))", str(dist)], cwd=source).split()[-1]
    with tarfile.open(dist / sdist_name) as archive:
        archive.extractall(tmp_path / "sdist", filter="data")
    unpacked = next((tmp_path / "sdist").iterdir())
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
          "-w", str(dist), str(unpacked)], cwd=tmp_path)
    return next(dist.glob("fltrust-*.whl"))


def _venv_with_this_stack(folder: Path) -> tuple[Path, Path]:
    """A venv whose site-packages adds this environment's behind its own (``site.addsitedir``);
    returns its python and its site-packages."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], cwd=folder.parent)
    python = folder / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        cwd=folder).strip())
    (purelib / "_fltrust_test_stack.pth").write_text(f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")
    return python, purelib


def _files(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def _checkout_files_changed_since(start_ns: int) -> list[str]:
    changed = []
    for name in WRITTEN_BY_COMMANDS:
        folder = CHECKOUT / name
        if folder.is_dir():
            changed += [path for path, mtime in _files(folder).items() if mtime >= start_ns]
    return changed


def test_the_wheel_lists_every_input_of_the_reproduction(tmp_path):
    # Prepare / Execute
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    patterns = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["fltrust"]["resources"]

    # Assert: every file of every resource glob is in the wheel at its checkout path, and nothing else is
    matches = {pattern: sorted(CHECKOUT.glob(pattern)) for pattern in patterns}
    assert [pattern for pattern, files in matches.items() if not files] == []
    expected = {RESOURCE_PREFIX + str(p.relative_to(CHECKOUT)) for files in matches.values() for p in files}
    assert {n for n in names if n.startswith(RESOURCE_PREFIX)} == expected
    for needed in ("papers_repro/fairness_analytics/misses.yaml", "papers_repro/federatedtrust/reported.yaml",
                   "papers_repro/federatedtrust/n_baiot_standin_vs_real.md", f"papers_repro/fairness_analytics/configs/"
                   f"{CONDITION}.yaml", "notebooks/federatedtrust/summary.ipynb"):
        assert RESOURCE_PREFIX + needed in names
    # the RESULTS.md templates and the demo configs are the package's own data
    assert any(n.startswith("fltrust/repro/templates/") for n in names) and "fltrust/configs/demo/cifar10.yaml" in names
    # metadata: license file and expression, Python version, extras
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    for line in ("License-Expression: MIT", "Requires-Python: >=3.11", "Provides-Extra: flower", "Provides-Extra: docs",
                 "Provides-Extra: dev", "Classifier: Programming Language :: Python :: 3.11"):
        assert line in metadata.splitlines()


@pytest.mark.slow
def test_an_installed_wheel_runs_the_demo_and_the_reproduction_outside_a_checkout(tmp_path):
    # Prepare: the wheel in a fresh venv; an empty data root (synthetic stand-ins); a folder outside the checkout
    start_ns = time.time_ns()
    wheel = _build_wheel(tmp_path)
    python, purelib = _venv_with_this_stack(tmp_path / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FLTRUST_REPO", "PYTHONSTARTUP")}
    env.update(FLTRUST_DATA=str(tmp_path / "no-data"), FLTRUST_CACHE=str(tmp_path / "cache"))
    (tmp_path / "no-data").mkdir()
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], cwd=tmp_path, env=env)
    work = tmp_path / "work"
    work.mkdir()
    site = Path(_run([str(python), "-c", "import fltrust, pathlib; print(pathlib.Path(fltrust.__file__).parent)"],
                     cwd=work, env=env).strip())
    assert site == purelib / "fltrust"  # the wheel's package, not this checkout's nor this environment's
    installed = _files(site)
    fltrust = str(tmp_path / "venv" / "bin" / "fltrust")

    # Execute: the demo, both papers' reports (which write papers_repro/<paper>/report.html under the cwd),
    # then a quick fairness batch in kernels from that same folder
    demo = _run([fltrust, "demo", "--device", "cpu"], cwd=work, env=env, timeout=1500)
    report = _run([fltrust, "report"], cwd=work, env=env)
    batch = _run([fltrust, "repro", "fairness", "--quick", "--conditions", CONDITION, "--device", "cpu"], cwd=work, env=env)

    # Assert: everything under the cwd, from the packaged inputs; nothing into site-packages or the checkout
    assert "demo complete" in demo and "SYNTHETIC stand-ins were used for" in demo
    for paper in ("fairness", "trust"):
        assert (work / "runs" / "demo" / paper / "report.html").is_file()
        assert (work / "runs" / "demo" / paper / "RESULTS.md").is_file()
    assert not list(work.glob("runs/demo/*/notebooks/*.error.txt"))
    quick = work / "runs" / "repro" / "fairness_analytics-quick"
    result = json.loads((quick / "results" / f"{CONDITION}.json").read_text())
    assert result["complete"] and result["synthetic"] and result["quick"]
    assert (quick / "notebooks" / f"{CONDITION}.ipynb").is_file() and (quick / "RESULTS.md").is_file()
    assert "fairness conditions: 1 run, 0 already complete, 0 failed" in batch  # the packaged config and notebook
    for folder in ("fairness_analytics", "federatedtrust"):
        assert f"wrote {work / 'papers_repro' / folder / 'report.html'}" in report.splitlines()
    assert _files(site) == installed
    assert _checkout_files_changed_since(start_ns) == []
