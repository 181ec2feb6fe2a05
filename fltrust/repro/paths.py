"""Where the reproduction reads its inputs and writes its outputs: a checkout, or an installed wheel.

The reproduction has two kinds of files:

- **inputs**, read only: the paper configurations (``papers_repro/*/configs/*.yaml``), the papers'
  numbers (``papers_repro/*/reported.yaml``), the hand-written miss explanations
  (``papers_repro/fairness_analytics/misses.yaml``), the N-BaIoT stand-in comparison and the
  notebooks the batches execute (``notebooks/fairness/``, ``notebooks/federatedtrust/``);
- **outputs**: results, run folders, executed notebooks, RESULTS.md, figures and report.html
  (``papers_repro/<paper>/``, ``figures/``, ``runs/``), and the committed results that
  ``fltrust report`` reads.

In a checkout both live in the checkout. A wheel carries the inputs as package data under
``fltrust/_resources/`` (the same relative paths), copied there at build time by the build step of
``setup.py`` from the list ``[tool.fltrust] resources`` of ``pyproject.toml``: git holds each file
once, in the checkout, and an sdist holds them at the same paths, so a wheel built from it carries
them too. A wheel used outside a checkout writes its outputs under the current directory, laid out
as in a checkout (``runs/repro/<paper>-quick/`` for ``--quick``, ``papers_repro/<paper>/`` and
``figures/<paper>/`` for a full batch; ``--out`` elsewhere), never into ``site-packages``. The
committed results (and their figures) are files of the checkout and are not in the wheel: there,
``fltrust report`` reports what ``fltrust repro`` wrote under the current directory (with nothing
there, the page shows the papers' numbers and every condition as not run).

:func:`repo_root` is the one place that decides where outputs go, :func:`resource_root` where
inputs are read; every ``fltrust.repro`` module takes its folders from them. The output root is,
in this order:

1. the ``root`` argument;
2. ``$FLTRUST_REPO`` (it must be a checkout);
3. the checkout the package was imported from (a source tree or an editable install);
4. the current directory or its nearest parent that is a checkout (a wheel used from inside one);
5. else the current directory (a wheel used outside a checkout).

A checkout is a folder holding ``papers_repro/fairness_analytics/reported.yaml`` (:data:`MARKER`):
an input no output ever writes, so the current directory of a wheel user, which receives
``papers_repro/<paper>/results/``, does not pass for one. The input root is the output root when
that is a checkout, else the wheel's packaged copy, else (a bare copy of the package) the output
root, so that the first input read names the path it looked for.

Example
-------
::

    pip install fltrust-0.1.0-py3-none-any.whl
    cd /tmp/work && fltrust repro fairness --quick      # inputs from the wheel, outputs in /tmp/work
    FLTRUST_REPO=~/src/fltrust fltrust repro fairness   # or read and write a checkout from anywhere
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fltrust.config import ConfigError

__all__ = ["MARKER", "PACKAGED_RESOURCES", "REPO_ENV", "is_checkout", "repo_root", "resource_root", "write_configs"]

REPO_ENV = "FLTRUST_REPO"
"""Environment variable naming the checkout."""

MARKER = "papers_repro/fairness_analytics/reported.yaml"
"""The file that makes a directory a checkout (or the packaged copy of its inputs)."""

PACKAGED_RESOURCES = Path(__file__).resolve().parents[1] / "_resources"
"""The inputs inside an installed wheel (absent in a source tree): ``fltrust/_resources/``."""

_PACKAGE_CHECKOUT = Path(__file__).resolve().parents[2]
"""The folder above the ``fltrust`` package: the checkout in a source tree, ``site-packages`` in a wheel install."""


def is_checkout(folder: str | os.PathLike[str]) -> bool:
    """True when ``folder`` holds the reproduction's inputs (:data:`MARKER`)."""
    return (Path(folder) / MARKER).is_file()


def repo_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The folder whose ``papers_repro/``, ``figures/`` and ``runs/`` the reproduction writes (and reads results from).

    Parameters
    ----------
    root : str or path-like, optional
        Use this folder (``~`` is expanded); the default follows the order of the module docstring:
        ``$FLTRUST_REPO``, the package's own checkout, the current directory's checkout, the current
        directory.

    Returns
    -------
    Path
        An absolute path.

    Raises
    ------
    fltrust.config.ConfigError
        If ``$FLTRUST_REPO`` is set to a folder that is not a checkout.
    """
    if root is not None:
        return Path(root).expanduser().resolve()
    env = os.environ.get(REPO_ENV)
    if env:
        path = Path(env).expanduser().resolve()
        if not is_checkout(path):
            raise ConfigError(f"{REPO_ENV}={env} has no {MARKER}; set it to the fltrust checkout or unset it")
        return path
    if is_checkout(_PACKAGE_CHECKOUT):
        return _PACKAGE_CHECKOUT
    cwd = Path.cwd().resolve()
    return next((folder for folder in (cwd, *cwd.parents) if is_checkout(folder)), cwd)


def resource_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The folder whose ``papers_repro/`` inputs and ``notebooks/`` the reproduction reads.

    Parameters
    ----------
    root : str or path-like, optional
        As for :func:`repo_root`.

    Returns
    -------
    Path
        :func:`repo_root` when it is a checkout, else the wheel's :data:`PACKAGED_RESOURCES` when
        present, else :func:`repo_root`.
    """
    work = repo_root(root)
    return work if is_checkout(work) or not is_checkout(PACKAGED_RESOURCES) else PACKAGED_RESOURCES


def write_configs(folder: str | os.PathLike[str], configs: Iterable[tuple[str, dict[str, Any], str]]) -> list[Path]:
    """Write every ``(name, config, header)`` as ``folder/<name>.yaml`` (validated first), its header comment
    on top; returns the paths."""
    import yaml

    from fltrust.config import ExperimentConfig

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data, header in configs:
        ExperimentConfig.from_dict(data)  # validate before writing
        paths.append(folder / f"{name}.yaml")
        paths[-1].write_text(header + yaml.safe_dump(data, sort_keys=False, width=120))
    return paths
